"""How fast the inspector's pages answer on a scope of 100,000 memories.

    .venv/bin/python benchmarks/inspector_pages.py --home HOME [--source bench/perf] [--runs 7]

``HOME`` holds a scope of turns (e.g. the 100,000-turn archive ``benchmarks/backup_restore.py``
or ``mnemo bench perf`` builds). Once, every turn of ``--source`` is copied into ``bench/memories``
as an episodic memory with its vector and BM25 postings (statuses and weights varied). Then
``mnemo serve`` runs on that home as its own process, a client signs in like a browser and times
each page (the whole HTML response, server side included, over HTTP on this machine): the overview,
the first memory page and one 10,000 rows deep, a search, filters, a memory, a recall explained,
episodes, the audit trail and curation. Prints the median and the slowest of ``--runs`` loads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

MNEMO = str(Path(sys.executable).with_name("mnemo"))
TARGET = "memories"


async def prepare(home: Path, source: str) -> dict[str, Any]:
    """The memories scope (copied once), a token, and a memory id and a deep page key to visit."""
    from mnemo import AsyncArchive, Scope, Settings

    archive = await AsyncArchive.open(Settings(home=home))
    try:
        probes, origin = archive.inspect.probes(), Scope.parse(source)
        entity, target = origin.entity_id, Scope(origin.entity_id, TARGET)
        if await probes.memory_count(target) == 0:
            print(f"copying the turns of {source} into {target} ...", flush=True)
            copied = await probes.copy_turns_as_memories(origin, TARGET)
            print(f"copied {copied:,} memories", flush=True)
        deep = await probes.memory_at(target, 10_000)
        total = await probes.memory_count(target)
        assert deep is not None
        token, _ = await archive.access.create_token(entity, label="inspector benchmark")
        return {"entity": entity, "token": token, "deep": f"{deep[0].isoformat()}|{deep[1]}", "memory": str(deep[1]),
                "count": total}  # fmt: skip
    finally:
        await archive.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sign_in(client: httpx.Client, token: str) -> None:
    form = client.get("/ui/login").text
    nonce = form.split('name="nonce" value="')[1].split('"')[0]
    done = client.post("/ui/login", data={"token": token, "nonce": nonce})
    if done.status_code != 303:
        raise SystemExit(f"sign-in failed: {done.status_code} {done.text[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--source", default="bench/perf", help="The scope whose turns become the memories.")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    facts = asyncio.run(prepare(args.home, args.source))
    base = f"/ui/s/{facts['entity']}/{TARGET}"
    pages = [
        ("overview", "/ui/"),
        ("memories, first page", f"{base}/memories"),
        ("memories, 10,000 rows in", f"{base}/memories?after={quote(facts['deep'], safe='')}"),
        ("search 'dinner'", f"{base}/memories?q=dinner"),
        ("filter kind+status", f"{base}/memories?kind=episodic&status=archived"),
        ("filter date range", f"{base}/memories?since=2023-05-01&until=2023-06-01"),
        ("a memory", f"{base}/memory/{facts['memory']}"),
        ("recall explained", f"{base}/recall?q=What+did+Caroline+research"),
        ("episodes", f"{base}/episodes"),
        ("audit", f"{base}/audit"),
        ("curation", f"{base}/curation"),
    ]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")} | {"MNEMO_HOME": str(args.home)}
    server = subprocess.Popen([MNEMO, "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            for _ in range(600):
                try:
                    if client.get("/health").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            sign_in(client, facts["token"])
            print(f"{facts['count']:,} memories in {facts['entity']}/{TARGET}; {args.runs} loads per page\n")
            print(f"{'page':28} {'median ms':>10} {'slowest ms':>11} {'bytes':>9}")
            for label, path in pages:
                first = client.get(path)
                if first.status_code != 200:
                    raise SystemExit(f"{path}: {first.status_code} {first.text[:300]}")
                took = []
                for _ in range(args.runs):
                    started = time.perf_counter()
                    client.get(path).raise_for_status()
                    took.append((time.perf_counter() - started) * 1000)
                print(
                    f"{label:28} {statistics.median(took):10.1f} {max(took):11.1f} {len(first.content):9,}", flush=True
                )
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
