"""``make test`` installs the browser its inspector tests drive (issue 27): chromium alone, without
the packages Debian merely recommends beside it (printer tools, and more)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_apt_install_make_runs_or_suggests_skips_recommended_packages() -> None:
    dry = subprocess.run(["make", "-n", "browser"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    installs = re.findall(r"apt-get install[^;)}\n]*", dry.stdout)
    assert len(installs) >= 2  # the one it runs as root, the one it tells everyone else to run
    assert all("--no-install-recommends" in line and "chromium" in line for line in installs), installs


def test_wheel_check_runs_the_ci_script_with_the_checkouts_python() -> None:
    """Issue 30 item 8: ``make wheel-check`` builds with the checkout's virtualenv (it has ``build``)."""
    dry = subprocess.run(["make", "-n", "wheel-check"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert f"PY={ROOT}/.venv/bin/python BASE_PY=python3 .ci/wheel-check" in dry.stdout
