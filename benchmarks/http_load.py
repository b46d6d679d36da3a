"""HTTP recall latency under load: 8 concurrent clients for 60 s against ``mnemo serve`` on 127.0.0.1.

    .venv/bin/python benchmarks/http_load.py path/to/locomo10.json [--size 10000]
        [--clients 8] [--seconds 60]

Builds a scope of ``--size`` turns (LoCoMo sentences re-attributed to many speakers, as
``mnemo bench perf`` does; vectors cached under MNEMO_HOME/bench-cache), creates a bearer
token, starts the real app under uvicorn in this process's background thread, and has each
client post ``/v1/recall`` (k = 10) with LoCoMo questions back to back. Prints p50/p95/p99
latency and throughput. Runs in a throw-away embedded database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from mnemo import AsyncArchive, Scope, Settings
from mnemo.bench.perf import VectorCache, build_corpus
from mnemo.embed import load_embedder
from mnemo.interfaces.http import create_app
from mnemo.write.importer import import_turns


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    embeddings = load_embedder()
    turns, questions = build_corpus(args.locomo, args.size)
    cache_home = Path(os.environ.get("MNEMO_HOME", tempfile.gettempdir())) / "bench-cache"
    vectors = await VectorCache(cache_home, embeddings).get([embeddings.turn_text(t.content, t.speaker) for t in turns])
    with tempfile.TemporaryDirectory(prefix="mnemo-http-") as home:
        settings = Settings(home=Path(home), scoring="deterministic")
        archive = await AsyncArchive.open(settings, embeddings=embeddings)
        try:
            for start in range(0, len(turns), 5000):
                await import_turns(
                    archive.runtime, Scope("load"), turns[start : start + 5000], vectors=vectors[start : start + 5000]
                )
            token, _ = await archive.create_token("load")
        finally:
            await archive.close()

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(
            uvicorn.Config(create_app(settings, embeddings=embeddings), host="127.0.0.1", port=port, log_level="error")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:  # noqa: ASYNC110  (uvicorn exposes a flag, not an event)
            await asyncio.sleep(0.05)

        rng = random.Random(args.seed)
        latencies: list[float] = []
        errors = 0
        deadline = time.perf_counter() + args.seconds

        async def client() -> None:
            nonlocal errors
            async with httpx.AsyncClient(
                base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as c:
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    r = await c.post("/v1/recall", json={"query": rng.choice(questions), "k": 10})
                    latencies.append((time.perf_counter() - started) * 1000)
                    errors += r.status_code != 200

        # the client loop runs here while uvicorn serves in its own thread (and event loop)
        await asyncio.gather(*(client() for _ in range(args.clients)))
        server.should_exit = True
        thread.join(timeout=30)

    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 1)

    print(
        json.dumps(
            {
                "memories": args.size,
                "clients": args.clients,
                "seconds": args.seconds,
                "requests": len(latencies),
                "errors": errors,
                "requests_per_s": round(len(latencies) / args.seconds, 1),
                "p50_ms": pct(0.50),
                "p95_ms": pct(0.95),
                "p99_ms": pct(0.99),
                "cores": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
