"""How fast the command line and the MCP server answer: each command run as a new process.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--turns 2000] [--locomo path/to/locomo.json]

In a throw-away ``MNEMO_HOME`` holding a scope of ``--turns`` LoCoMo-like turns (or a sample
conversation without ``--locomo``), it times, as the user would type them:

- ``mnemo --help``, and ``mnemo status`` / ``recall`` / ``remember`` opening the archive themselves;
- the same three while ``mnemo serve`` runs on that home (found through ``MNEMO_HOME``);
- ``mnemo mcp`` (stdio) from start to the answer of MCP's ``initialize``, through the SDK client,
  and to the first ``recall`` tool result.

Prints the median and every run, in seconds. Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MNEMO = str(Path(sys.executable).with_name("mnemo"))


def _time(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mnemo {' '.join(args)} failed: {done.stderr.strip()}")
    return took


def _series(label: str, args: list[str], env: dict[str, str], runs: int, report: dict[str, object]) -> None:
    times = [_time(args, env) for _ in range(runs)]
    report[label] = {"median_s": round(statistics.median(times), 3), "runs_s": [round(t, 3) for t in times]}
    print(f"{label:40s} median {statistics.median(times):6.3f} s  runs {[round(t, 2) for t in times]}", flush=True)


async def _mcp(env: dict[str, str]) -> tuple[float, float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=MNEMO, args=["mcp", "--entity", "bench"], env=env)
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        await session.call_tool("recall", {"query": "what did Caroline paint?", "k": 5})
        first = time.perf_counter() - started
    return ready, first


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _seed(env: dict[str, str], locomo: Path | None, turns: int, home: Path) -> None:
    if locomo is not None:
        from mnemo.bench.perf import build_corpus

        corpus, _ = build_corpus(locomo, turns)
        path = home.parent / "turns.jsonl"
        path.write_text(
            "\n".join(json.dumps({"session": t.session_id, "speaker": t.speaker, "content": t.content}) for t in corpus)
        )
    else:
        path = Path(__file__).resolve().parents[1] / "src/mnemo/data/sample_conversation.jsonl"
    subprocess.run([MNEMO, "import", str(path), "--entity", "bench"], env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--locomo", type=Path)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="mnemo-startup-"))
    home = base / "home"
    env = {**os.environ, "MNEMO_HOME": str(home)}
    report: dict[str, object] = {}
    try:
        _seed(env, args.locomo, args.turns, home)
        recall = ["recall", "what did Caroline paint?", "--entity", "bench", "--read-only"]
        remember = ["remember", "Caroline likes watercolours", "--entity", "bench"]
        _series("mnemo --help", ["--help"], env, args.runs, report)
        direct = {**env, "MNEMO_USE_SERVICE": "0"}
        _series("status, opening the archive", ["status"], direct, args.runs, report)
        _series("recall, opening the archive", recall, direct, args.runs, report)
        _series("remember, opening the archive", remember, direct, args.runs, report)
        port = _free_port()
        server = subprocess.Popen(
            [MNEMO, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 120
            while not (home / "service.json").exists():
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("mnemo serve did not announce itself")
                time.sleep(0.1)
            _series("status, through mnemo serve", ["status"], env, args.runs, report)
            _series("recall, through mnemo serve", recall, env, args.runs, report)
            _series("remember, through mnemo serve", remember, env, args.runs, report)
        finally:
            server.terminate()
            server.wait(timeout=60)
        ready, first = zip(*(asyncio.run(_mcp(direct)) for _ in range(args.runs)), strict=True)
        for label, times in (("mcp: initialize answered", ready), ("mcp: first recall answered", first)):
            report[label] = {"median_s": round(statistics.median(times), 3), "runs_s": [round(t, 3) for t in times]}
            print(f"{label:40s} median {statistics.median(times):6.3f} s  runs {[round(t, 2) for t in times]}")
        print(json.dumps({"cores": os.cpu_count(), **report}, indent=2))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
