"""The chaos soak, short: 60 s of writers, mutating readers and nights while ``mnemo serve`` and
``mnemo worker`` are killed with SIGKILL (at least twice, the service at least once) and started
again, the writers sending every unacknowledged write again (with its idempotency key) until it is
acknowledged. ``benchmarks/chaos.py`` checks the books itself; this test holds it to every promise of
correctness (nothing lost, nothing twice, no 500); the waits are the benchmark's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_acknowledged_writes_survive_kills(tmp_path: Path) -> None:
    out = tmp_path / "chaos.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "chaos.py"), "--seconds", "60", "--kill-every", "15", "22",
         "--seed", "7", "--retry-unacked", "--json", str(out)],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert out.exists(), done.stderr[-3000:]
    report = json.loads(out.read_text())
    # the soak's promises of correctness hold in every run; its waits are a speed figure (one
    # full-suite run once saw 8 requests stall ~31 s at once), so they are the benchmark's
    # to report and fail on (benchmarks/chaos.py), not this test's (DEVELOPERS: no timed tests)
    timing = {"a request waited 30 s or more", "the service waited out its pool time-out"}
    assert [f for f in report["failures"] if f not in timing] == [], (report, done.stderr[-3000:])
    assert sum(report["kills"].values()) >= 2 and report["kills"].get("serve", 0) >= 1
    # the kills reached the clients (connections refused while the service was down), yet nothing
    # acknowledged was lost, nothing stored twice or in part, and no client ever saw a 500
    assert any(key.endswith("connection") or "Error" in key for key in report["answers"]), report["answers"]
    assert report["acknowledged"] > 50 and report["acknowledged_found"] == report["acknowledged"]
    assert report["answers"].get("recall 200", 0) > 20
    # every write was acknowledged in the end, once: the retries of those whose reply a kill cut off
    # stored nothing twice (issue 39 item 3)
    assert report["unacknowledged"] == 0 and report["duplicated_count"] == 0 and report["retries"] > 0
    assert not any(key.split()[-1].startswith("5") and key.split()[-1] != "503" for key in report["answers"])
