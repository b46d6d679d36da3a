"""The night cycle's pure parts (no database; the cycle end to end: tests/integration/test_night.py)."""

from __future__ import annotations

import numpy as np


def test_clusters_are_complete_linkage_and_never_join_conflicting_items() -> None:
    from mnemo.night.insights import clusters

    angles = np.radians([0.0, 12.0, 24.0, 90.0])  # cosines 0.978 (0-1, 1-2), 0.914 (0-2)
    v = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    assert clusters(v, 0.95) == [[0, 1]]  # 2 is close to 1 but not to 0: complete linkage keeps it out
    assert clusters(v, 0.9) == [[0, 1, 2]]
    assert clusters(v, 0.9, lambda i, j: {i, j} == {0, 1}) == [[0, 2]]  # an update is not a pattern
