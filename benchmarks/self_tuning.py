"""Self-tuning and the safety set on planted workloads (issue 31).

    .venv/bin/python benchmarks/self_tuning.py [--seed 0] [--train 40] [--test 60] [--json out.json]

1. **Self-tuning raises recall of what gets used.** Six topics of ten notes each, written from
   small word lists so a topic's notes are about equally relevant to a question about it; in each
   topic two notes are pinned (``anchored``: a heavy Beta weight) and only pinned notes are ever
   used. So one blend component, the weight, predicts use. Two scopes get the same notes and the
   same training questions, each answered with ``feedback`` naming the pinned hits used; then one
   scope reflects (the night's inner stage: the alphas move toward the component that contributed,
   behind the Two-Gate guardrail) and the other does not. Both answer the same held-out questions;
   the figure is recall@5 of the topic's pinned notes. Lived: the defaults (mutating recall,
   stochastic scoring, seeded per question); lab: read-only recall, deterministic scoring.
2. **The safety set stops a runaway loop.** One memory is recalled three times a night, night after
   night, with no new evidence (an agent ruminating), and the inner stage runs after each night:
   with the circuit breaker in shadow mode it only logs, and the weight keeps climbing; enforced, it
   pauses the memory after ``circuit_breaker_cycles`` nights and the weight stops.

Everything runs offline in a temporary home with the bundled model; every draw is seeded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from mnemo import AsyncArchive, RecallResult, Scope

TOPICS = {
    "garden": (["tomatoes", "beans", "basil", "carrots", "lettuce", "squash"], ["bed", "fence", "trellis", "patio"]),
    "kitchen": (["knives", "pans", "spices", "flour", "jars", "kettle"], ["drawer", "shelf", "cupboard", "counter"]),
    "car": (["tyres", "brakes", "oil", "battery", "wipers", "lights"], ["garage", "service", "check", "winter"]),
    "travel": (["passport", "tickets", "luggage", "charger", "maps", "visa"], ["trip", "airport", "hotel", "station"]),
    "health": (["vitamins", "inhaler", "glasses", "plasters", "tablets", "cream"], ["cabinet", "bag", "desk", "shelf"]),
    "money": (["rent", "savings", "invoice", "taxes", "pension", "budget"], ["account", "folder", "app", "bank"]),
}
NOTES = 10
PINNED = 2
ASPECTS = ("what to remember", "the details", "what matters", "the plan", "anything useful", "the latest")


def _notes(rng: random.Random) -> list[tuple[str, str, bool]]:
    """``(topic, text, pinned)`` for every note: NOTES per topic, PINNED of them pinned."""
    out = []
    for topic, (things, places) in TOPICS.items():
        pinned = set(rng.sample(range(NOTES), PINNED))
        for n in range(NOTES):
            text = f"{topic.title()} note {n}: the {rng.choice(things)} by the {rng.choice(places)} need attention."
            out.append((topic, text, n in pinned))
    return out


def _question(rng: random.Random) -> tuple[str, str]:
    topic = rng.choice(list(TOPICS))
    return topic, f"About my {topic}: {rng.choice(ASPECTS)}? ({rng.randrange(10_000)})"


async def _scope(archive: AsyncArchive, scope: Scope, notes: list[tuple[str, str, bool]]) -> dict[str, set[str]]:
    pinned: dict[str, set[str]] = {t: set() for t in TOPICS}
    for topic, text, pin in notes:
        memory = await archive.remember(scope, text, anchored=pin)
        if pin:
            pinned[topic].add(str(memory.id))
    return pinned


async def _train(archive: AsyncArchive, scope: Scope, rounds: int, seed: int, lived: bool) -> int:
    """Questions answered with feedback naming the pinned hits used; returns how many had one."""
    rng = random.Random(seed)
    told = 0
    for n in range(rounds):
        _, text = _question(rng)
        found = await archive.recall(scope, text, 10, read_only=not lived, seed=seed * 1000 + n)
        if not isinstance(found, RecallResult) or found.outcome_id is None:
            continue
        used = [h.id for h in found if h.weight > 0.9]
        if used:
            await archive.inner.feedback(scope, found.outcome_id, 1.0, used=used)
            told += 1
    return told


async def _test(archive: AsyncArchive, scope: Scope, pinned: dict[str, set[str]], rounds: int, seed: int,
                lived: bool) -> float:  # fmt: skip
    """Mean recall@5 of the question's topic's pinned notes over held-out questions."""
    rng = random.Random(seed + 7919)
    scores = []
    for n in range(rounds):
        topic, text = _question(rng)
        found = await archive.recall(scope, text, 5, read_only=not lived, seed=seed * 1000 + 500 + n)
        top = {str(h.id) for h in found} if isinstance(found, RecallResult) else set()
        scores.append(len(top & pinned[topic]) / len(pinned[topic]))
    return sum(scores) / len(scores)


async def tuning(home: Path, seed: int, train: int, test: int, lived: bool) -> dict[str, Any]:
    """Recall@5 of the used items, untuned and tuned, on identical scopes with the same seed."""
    scoring = "stochastic" if lived else "deterministic"
    archive = await AsyncArchive.open(home=home, scoring=scoring, tuning_min_outcomes=12)
    try:
        notes = _notes(random.Random(seed))
        result: dict[str, Any] = {"pass": "lived" if lived else "lab"}
        for mode in ("untuned", "tuned"):
            scope = Scope("bench", f"{mode}-{'lived' if lived else 'lab'}-{seed}")
            pinned = await _scope(archive, scope, notes)
            told = await _train(archive, scope, train, seed, lived)
            if mode == "tuned":
                done = await archive.inner.reflect(scope)
                result["tuning"] = {k: done["tuning"][k] for k in ("samples", "alphas_applied", "quality_before",
                                                                   "quality_after")}  # fmt: skip
                result["alphas"] = (await archive.inner.life(scope)).alphas
            result[mode] = await _test(archive, scope, pinned, test, seed, lived)
            result[f"{mode}_feedback"] = told
        return result
    finally:
        await archive.close()


async def runaway(home: Path, seed: int, nights: int, enforced: bool) -> dict[str, Any]:
    """A memory recalled three times a night without new evidence; the inner stage after each night."""
    checks = ("two_gate", "circuit_breaker") if enforced else ("two_gate",)
    archive = await AsyncArchive.open(home=home, safety_enforced=checks)
    try:
        scope = Scope("bench", f"runaway-{'enforced' if enforced else 'shadow'}-{seed}")
        target = await archive.remember(scope, "Maya waters the tomato seedlings every morning before work.")
        for text in ("The car needs new tyres before winter.", "The passport expires next spring."):
            await archive.remember(scope, text)
        centres = []
        for night in range(nights):
            for n in range(3):
                await archive.recall(scope, f"When does Maya water the seedlings? ({n})", 1, seed=seed * 100 + night)
            await archive.inner.reflect(scope)
            history = await archive.inspect.why(scope, target.id)
            centres.append(round(history.center, 4))
        events = [e for e in (await archive.inner.life(scope)).safety if e.check == "circuit_breaker"]
        blocked = sum(1 for c in (await archive.inspect.why(scope, target.id)).changes if c.blocked)
        return {
            "mode": "enforced" if enforced else "shadow", "centres": centres, "breaker_events": len(events),
            "enforced_events": sum(e.enforced for e in events), "blocked_changes": blocked,
        }  # fmt: skip
    finally:
        await archive.close()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        report: dict[str, Any] = {"seed": args.seed, "train": args.train, "test": args.test}
        report["tuning"] = [await tuning(home, args.seed, args.train, args.test, lived) for lived in (True, False)]
        report["runaway"] = [await runaway(home, args.seed, args.nights, enforced) for enforced in (False, True)]
    return report


def _print(report: dict[str, Any]) -> None:
    print(f"seed {report['seed']}: {report['train']} training questions, {report['test']} held out")
    for r in report["tuning"]:
        tuned = r["tuning"]
        print(
            f"  {r['pass']:5s} recall@5 of the used (pinned) notes: untuned {r['untuned']:.3f}, tuned {r['tuned']:.3f} "
            f"(alphas applied: {tuned['alphas_applied']}; held-out quality {tuned['quality_before']:.3f} -> "
            f"{tuned['quality_after']:.3f}; weight alpha {r['alphas'].get('weight', 0):.2f})"
        )
    for r in report["runaway"]:
        print(f"  runaway, breaker {r['mode']:8s}: centre by night {r['centres']}; {r['breaker_events']} breaker events"
              f" ({r['enforced_events']} enforced), {r['blocked_changes']} reinforcements blocked")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, default=40)
    parser.add_argument("--test", type=int, default=60)
    parser.add_argument("--nights", type=int, default=8)
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    done = asyncio.run(main(ns))
    _print(done)
    if ns.json:
        ns.json.write_text(json.dumps(done, indent=2, default=str))
