"""HTTP recall under load: 1 client, then 8 concurrent clients, against ``mnemo serve`` on 127.0.0.1.

    .venv/bin/python benchmarks/http_load.py path/to/locomo10.json [--size 10000]
        [--clients 8] [--seconds 60] [--memories] [--rounds 1]

Builds a scope of ``--size`` turns (LoCoMo sentences re-attributed to many speakers, as
``mnemo bench perf`` does, with their token embeddings; vectors cached under
MNEMO_HOME/bench-cache), creates a bearer token, starts the real service (``mnemo serve``) as its
own process, and has each client post ``/v1/recall`` (k = 10) with LoCoMo questions back to back,
first alone (the single-client figure), then ``--clients`` at once. Prints p50/p95/p99 latency
and throughput of both. Runs in a throw-away embedded database.

``--memories``: the scope holds ``--size`` memories (LoCoMo sentences, remembered one by one)
instead of turns, so every recall mutates what it returns (an access, a reinforcement, co-access
links) and suppresses its near misses, as an agent's recalls do; ``--rounds`` repeats the
concurrent phase, each round reported with its non-2xx answers (the concurrency check of
issue 27: 8 clients, mutating, 3 x 20 s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.perf import VectorCache, build_corpus
from mnemo.embed import load_embedder


async def _build_memories(locomo: Path, size: int, home: Path) -> tuple[str, list[str]]:
    turns, questions = build_corpus(locomo, size)
    async with await AsyncArchive.open(Settings(home=home), embeddings=load_embedder()) as archive:
        for turn in turns:
            await archive.remember(Scope("load"), f"{turn.speaker}: {turn.content}")
        token, _ = await archive.access.create_token("load")
    return token, questions


async def _build(locomo: Path, size: int, home: Path) -> tuple[str, list[str]]:
    embeddings = load_embedder()
    turns, questions = build_corpus(locomo, size)
    cache_home = Path(os.environ.get("MNEMO_HOME", tempfile.gettempdir())) / "bench-cache"
    texts = [embeddings.turn_text(t.content, t.speaker) for t in turns]
    vectors, tokens = await VectorCache(cache_home, embeddings).get_with_tokens(texts)
    archive = await AsyncArchive.open(Settings(home=home), embeddings=embeddings)
    try:
        for start in range(0, len(turns), 5000):
            end = start + 5000
            await archive.import_turns(
                Scope("load"),
                turns[start:end],
                vectors=vectors[start:end],
                token_vectors=tokens[start:end],
            )
        token, _ = await archive.access.create_token("load")
    finally:
        await archive.close()
    return token, questions


async def _load(port: int, token: str, questions: list[str], clients: int, seconds: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    latencies: list[float] = []
    errors = 0
    failures = 0
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        nonlocal errors, failures
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as c:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                r = await c.post("/v1/recall", json={"query": rng.choice(questions), "k": 10})
                latencies.append((time.perf_counter() - started) * 1000)
                errors += r.status_code != 200
                failures += r.status_code >= 500

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    took = time.perf_counter() - started
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1)

    return {
        "clients": clients,
        "seconds": round(took, 1),
        "requests": len(latencies),
        "non_2xx": errors,
        "5xx": failures,
        "requests_per_s": round(len(latencies) / took, 1),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memories", action="store_true", help="memories (mutating recall) instead of turns")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to run the concurrent phase")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="mnemo-http-") as base:
        home = Path(base) / "home"
        build = _build_memories if args.memories else _build
        token, questions = await build(args.locomo, args.size, home)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "MNEMO_HOME": str(home), "MNEMO_SCORING": "deterministic"}
        mnemo = str(Path(sys.executable).with_name("mnemo"))
        server = subprocess.Popen(  # noqa: ASYNC220 (started once, before any client runs)
            [mnemo, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 120
            while not (home / "service.json").exists():  # announced once the archive and the model are loaded
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("mnemo serve did not start")
                await asyncio.sleep(0.1)
            await _load(port, token, questions, args.clients, 5.0, args.seed)  # warm-up
            single = await _load(port, token, questions, 1, args.seconds / 2, args.seed)
            many = [
                await _load(port, token, questions, args.clients, args.seconds, args.seed + r)
                for r in range(args.rounds)
            ]
        finally:
            server.terminate()
            server.wait(timeout=60)
    report = {
        "items": args.size,
        "kind": "memories (mutating recall)" if args.memories else "turns",
        "cores": os.cpu_count(),
        "single": single,
        "concurrent": many[0] if args.rounds == 1 else many,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
