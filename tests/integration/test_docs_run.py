"""Every code block of README.md and docs/ runs (issue 30, item 9: "so the docs cannot drift").

Each page gets a fresh ``MNEMO_HOME`` and ``HOME`` under the test's temporary directory and a
working directory where ``src/`` and ``examples/`` are the clone's (the pages name them). Blocks run
in document order: python blocks in one interpreter per page (``runpy``, a fresh ``__main__`` each,
so the embedding model loads once per page), bash blocks with ``bash -e -o pipefail``, the
virtualenv's ``bin`` first on ``PATH``. A block passes when it exits 0; the first that does not
fails the page with its output. The conventions (``not run`` markers, data and output blocks) are
in tests/docs_blocks.py and checked statically in tests/unit/test_docs_site.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO

import pytest

from tests.docs_blocks import ROOT, RUN, Block, blocks, pages

pytestmark = pytest.mark.slow

BLOCK_TIMEOUT = 300  # seconds; the longest block (a CLI tour that loads the model per command) takes ~60
PORT_WAIT = 120  # seconds to wait for a port a block serves on to be free (another test may hold it)

_DRIVER = """
import os, runpy, sys, traceback
results = os.fdopen(int(sys.argv[1]), "w", buffering=1)
for line in sys.stdin:
    outcome = "ok"
    try:
        runpy.run_path(line.strip(), run_name="__main__")
    except SystemExit as stop:
        outcome = "ok" if stop.code in (None, 0) else "failed"
    except BaseException:
        traceback.print_exc()
        outcome = "failed"
    sys.stdout.flush()
    sys.stderr.flush()
    results.write(outcome + "\\n")
"""


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in RUN and b.not_run is None]


PAGES = [page for page in pages() if _runnable(page)]


class PageRun:
    """One page's world: its home, its working directory, its log, its python interpreter."""

    def __init__(self, page: Path, tmp: Path) -> None:
        self.page, self.tmp = page, tmp
        self.work = tmp / "work"
        self.work.mkdir()
        (tmp / "user").mkdir()
        for name in ("src", "examples"):
            (self.work / name).symlink_to(ROOT / name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
        env.update(
            MNEMO_HOME=str(tmp / "home"),
            MNEMO_MODEL_CACHE=os.environ["MNEMO_MODEL_CACHE"],  # conftest's: the model is exported once
            HOME=str(tmp / "user"),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        )
        self.env = env
        self.log_path = tmp / "output.log"
        self.log: IO[str] = self.log_path.open("w+", encoding="utf-8")
        self.python: subprocess.Popen[str] | None = None
        self.results: IO[str] | None = None

    def __enter__(self) -> PageRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.python is not None:
            assert self.python.stdin is not None
            self.python.stdin.close()
            try:
                self.python.wait(timeout=60)
            finally:
                _kill_group(self.python.pid)
        if self.results is not None:
            self.results.close()
        self.log.close()

    def run(self, block: Block, n: int) -> tuple[bool, str]:
        """Run one block; whether it succeeded, and what it printed."""
        start = self.log.seek(0, os.SEEK_END)
        _wait_for_free_ports(block.code)
        began = time.monotonic()
        if block.lang == "python":
            ok = self._python(self.work / f"block_{n}.py", block.code)
        else:
            ok = self._bash(self.work / f"block_{n}.sh", block.code)
        self.log.write(f"\n[{block.where}: {time.monotonic() - began:.1f} s]\n")
        self.log.flush()
        self.log.seek(start)
        return ok, self.log.read()

    def _python(self, path: Path, code: str) -> bool:
        path.write_text(code, encoding="utf-8")
        if self.python is None:
            read, write = os.pipe()
            self.python = subprocess.Popen(
                [sys.executable, "-u", "-c", _DRIVER, str(write)],
                **self._spawn(),
                stdin=subprocess.PIPE,
                pass_fds=(write,),
                text=True,
            )
            os.close(write)
            self.results = os.fdopen(read, encoding="utf-8")
        assert self.python.stdin is not None and self.results is not None
        self.python.stdin.write(f"{path}\n")
        self.python.stdin.flush()
        ready, _, _ = select.select([self.results], [], [], BLOCK_TIMEOUT)
        if not ready:
            _kill_group(self.python.pid)
            self.log.write(f"\n*** timed out after {BLOCK_TIMEOUT} s ***\n")
            return False
        return self.results.readline().strip() == "ok"

    def _bash(self, path: Path, code: str) -> bool:
        path.write_text(code, encoding="utf-8")
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", str(path)], **self._spawn(), stdin=subprocess.DEVNULL)
        try:
            return proc.wait(timeout=BLOCK_TIMEOUT) == 0
        except subprocess.TimeoutExpired:
            self.log.write(f"\n*** timed out after {BLOCK_TIMEOUT} s ***\n")
            return False
        finally:
            if proc.returncode != 0:  # a failed block may leave a server it started in the background
                _kill_group(proc.pid)

    def _spawn(self) -> dict[str, object]:
        self.log.flush()
        return {
            "cwd": self.work,
            "env": self.env,
            "stdout": self.log,
            "stderr": subprocess.STDOUT,
            "start_new_session": True,
        }


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)


def _wait_for_free_ports(code: str) -> None:
    """A block that serves on a fixed port (as the docs show it) waits until nobody else listens there."""
    for port in {int(p) for p in re.findall(r"--port (\d+)", code)}:
        deadline = time.monotonic() + PORT_WAIT
        while _listening(port):
            assert time.monotonic() < deadline, f"port {port} stayed busy for {PORT_WAIT} s"
            time.sleep(1)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    runnable = _runnable(page)
    with PageRun(page, tmp_path) as run:
        for n, block in enumerate(runnable):
            ok, output = run.run(block, n)
            assert ok, f"{block.where}: the {block.lang} block failed; it printed:\n{output[-6000:]}"
