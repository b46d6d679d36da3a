"""How long a backup and a restore of a large archive take, and how big the file is.

    .venv/bin/python benchmarks/backup_restore.py --locomo path/to/locomo.json [--turns 100000]
        [--cache DIR] [--home DIR] [--runs 3]

Builds (once, in ``--home``, default a temporary directory) an archive of ``--turns`` LoCoMo
turns in one scope as ``mnemo bench perf`` does (corpus vectors and token embeddings cached in
``--cache``), runs one night over a slice of it so blocks, facts and the cortex exist, then times
``mnemo backup FILE`` and ``mnemo restore FILE`` into a fresh home, each as a new process (what a
user types), ``--runs`` times. Prints the file size, the row counts, and the median and every
run in seconds. Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MNEMO = str(Path(sys.executable).with_name("mnemo"))


async def build(home: Path, locomo: Path, turns: int, cache: Path) -> None:
    from mnemo import AsyncArchive, Scope, Settings
    from mnemo.bench.perf import VectorCache, build_corpus
    from mnemo.embed import load_embedder

    embeddings = load_embedder()
    corpus, _ = build_corpus(locomo, turns)
    texts = [embeddings.turn_text(t.content, t.speaker) for t in corpus]
    vectors, tokens = await VectorCache(cache, embeddings).get_with_tokens(texts)
    archive = await AsyncArchive.open(Settings(home=home), embeddings=embeddings)
    try:
        scope = Scope("bench", "perf")
        for start in range(0, turns, 20_000):
            end = start + 20_000
            await archive.import_turns(
                scope, corpus[start:end], vectors=vectors[start:end], token_vectors=tokens[start:end]
            )
        side = Scope("bench", "night")  # a scope small enough for one night: blocks, facts, cortex
        await archive.import_turns(side, corpus[:600], vectors=vectors[:600], token_vectors=tokens[:600])
        await archive.night_cycle(side)
    finally:
        await archive.close()


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([MNEMO, *args], env=env, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mnemo {' '.join(args)} failed: {done.stderr.strip()}")
    return took, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "mnemo-bench-cache")
    parser.add_argument("--home", type=Path, default=None, help="Reuse (or build once in) this home.")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="mnemo-backup-bench-"))
    if not (home / "pgdata").exists():
        print(f"building {args.turns:,} turns in {home} ...", flush=True)
        args.cache.mkdir(parents=True, exist_ok=True)
        asyncio.run(build(home, args.locomo, args.turns, args.cache))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")} | {"MNEMO_HOME": str(home)}
    work = Path(tempfile.mkdtemp(prefix="mnemo-backup-files-"))
    backups, restores, size, counts = [], [], 0, {}
    try:
        for run in range(args.runs):
            file = work / "archive.backup"
            took, _ = timed(["backup", str(file), "--json"], env)
            backups.append(took)
            size = file.stat().st_size
            target = work / f"restored-{run}"
            took, out = timed(["--home", str(target), "restore", str(file), "--json"], env)
            restores.append(took)
            counts = json.loads(out)["manifest"]["counts"]
            shutil.rmtree(target, ignore_errors=True)
            print(f"run {run + 1}: backup {backups[-1]:.1f} s, restore {restores[-1]:.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = {k: v for k, v in counts.items() if v}
    print(json.dumps({"turns": counts.get("mnemo.turns"), "rows": sum(counts.values()), "file_bytes": size,
                      "backup_s": {"median": statistics.median(backups), "runs": backups},
                      "restore_s": {"median": statistics.median(restores), "runs": restores},
                      "tables": rows}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
