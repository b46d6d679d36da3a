"""Learn recall's head fusion from LoCoMo-format data, cross-validated by conversation (issue 32 item 3),
and measure session spreading (item 1).

    .venv/bin/python benchmarks/learn_fusion.py path/to/locomo.json --dump pools.pkl [--ship model.json]

1. **Dump** (skipped when ``--dump`` exists): every conversation goes into a fresh scope through the
   real write path; every question is recalled read-only with the hand-set order
   (``ranker="hand"``, no spreading), and the head of each recall is captured as the learned stage
   sees it (:mod:`mnemo.recall.learned`: candidates, :data:`~mnemo.cognition.scoring.ranker.FEATURES`,
   sessions), with each candidate labelled by whether it is one of the question's evidence turns.
2. **Cross-validation by conversation**: for each conversation, a pairwise logistic model
   (``C=1``, non-negative weights, fitted with SciPy's L-BFGS-B; every evidence candidate against
   every other candidate of the same question, each pair weighted LambdaRank-style by the gap in
   gain between their hand-set places, standardised features) is trained on the other
   conversations and tested on it; the
   session-spreading penalty is chosen on the training conversations from a fixed grid
   (:data:`PENALTIES`) by their R@10. Reported per fold and as the mean of the folds: R@5 / R@10
   overall (categories 1-4), per category, and on the questions whose evidence sits in two or
   more sessions, for the hand-set order, hand + spreading, learned, learned + spreading.
3. **Ship** (``--ship``): the model and penalty fitted on all conversations, as the JSON
   ``mnemo.recall.learned.load_ranker`` reads (``mnemo/data/ranker.json`` in the package).

The recall figures here rank the head only (the top ``blend_depth`` of the hand-set order, 100),
before the cognitive blend; ``mnemo bench locomo`` measures the whole pipeline, lab and lived.
Deterministic (the logistic fit is).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from mnemo import AsyncArchive, Refusal, Scope, Settings
from mnemo.bench.locomo import CATEGORIES, load_locomo
from mnemo.cognition.scoring.ranker import FEATURES, Ranker, spread_sessions

PENALTIES = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
"""The session-spreading penalties tried (standard deviations of the head's scores per candidate
of a session already placed)."""
C = 1.0
"""The logistic model's inverse L2 regularisation: scikit-learn's default, not tuned."""


# --- 1. dump -------------------------------------------------------------------------------------
async def dump(path: Path, limit: int | None, k: int) -> dict[str, list]:
    conversations = load_locomo(path)[:limit]
    rows: dict[str, list] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="mnemo-fusion-") as home:
        settings = Settings(home=Path(home), scoring="deterministic", ranker="hand", spread_sessions=False)
        archive = await AsyncArchive.open(settings)
        try:
            for n, conv in enumerate(conversations):
                scope = Scope("fusion", conv.sample_id)
                turns = await archive.import_turns(scope, conv.turns)
                dia = {t.id: str(t.metadata.get("dia_id")) for t in turns}
                for q in conv.questions:
                    with archive.inspect.probes().capturing() as capture:
                        result = await archive.recall(scope, q.text, k, read_only=True, kinds=("turn",))
                    if not capture.pools:
                        continue
                    pool = capture.pools[-1]
                    wanted = set(q.evidence)
                    rows["conv"].append(n)
                    rows["category"].append(q.category)
                    rows["evidence"].append(len(wanted))
                    rows["sessions_of_evidence"].append(len({e.split(":")[0] for e in wanted}))
                    rows["matrix"].append(pool.matrix)
                    rows["label"].append(np.array([dia.get(i) in wanted for i in pool.ids]))
                    rows["found_ids"].append(np.array([dia.get(i, "") for i in pool.ids]))
                    hits = result.candidates if isinstance(result, Refusal) else result.hits
                    rows["pipeline"].append(sum(str(h.metadata.get("dia_id")) in wanted for h in hits[:10]))
                    rows["support"].append(capture.support[-1] if capture.support else {})
                    rows["session"].append(np.array([pool.sessions.get(i, "") for i in pool.ids]))
                print(f"dumped {conv.sample_id} ({n + 1}/{len(conversations)})", file=sys.stderr)
        finally:
            await archive.close()
    return dict(rows)


# --- 2. train and evaluate ------------------------------------------------------------------------
def fit(data: dict[str, list], which: Sequence[int]) -> Ranker:
    """A pairwise logistic model (L2, ``C``) with non-negative weights over standardised features:
    every evidence candidate of a question against every other candidate of it, each pair weighted
    by how far apart their places in the hand-set order are in gain, ``|1/log2(1+r_a) - 1/log2(1+r_b)|``
    (LambdaRank's weighting: an error near the top costs more than one far down)."""
    stacked = np.concatenate([data["matrix"][i] for i in which])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0)
    scale[scale < 1e-9] = 1.0
    diffs, weights = [], []
    for i in which:
        z = (data["matrix"][i] - mean) / scale
        label = data["label"][i].astype(bool)
        if label.any() and (~label).any():
            gain = 1.0 / np.log2(2.0 + np.arange(len(label)))  # the pool is in the hand-set order
            diffs.append((z[label][:, None, :] - z[~label][None, :, :]).reshape(-1, z.shape[1]))
            weights.append(np.abs(gain[label][:, None] - gain[~label][None, :]).reshape(-1))
    x = np.concatenate(diffs)
    weight = np.concatenate(weights)
    weight /= weight.mean()

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = x @ w
        value = float((weight * np.logaddexp(0.0, -margin)).sum() + 0.5 / C * (w @ w))
        gradient = -(x * (weight / (1.0 + np.exp(margin)))[:, None]).sum(axis=0) + w / C
        return value, gradient

    found = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * x.shape[1])
    return Ranker(FEATURES, tuple(mean.tolist()), tuple(scale.tolist()), tuple(float(w) for w in found.x))


def ranking(data: dict[str, list], i: int, model: Ranker, penalty: float) -> list[int]:
    scores = model.scores(data["matrix"][i])
    order = sorted(range(len(scores)), key=lambda n: (-scores[n], n))
    sessions = {n: s for n, s in enumerate(data["session"][i]) if s}
    return spread_sessions(order, dict(enumerate(scores.tolist())), sessions, penalty, 10)


def recall_at(data: dict[str, list], i: int, order: Sequence[int], k: int) -> float:
    if not data["evidence"][i]:
        return 1.0  # a question without evidence scores 1, as in `mnemo bench locomo`
    label = data["label"][i]
    return float(sum(bool(label[n]) for n in order[:k])) / int(data["evidence"][i])


def evaluate(data: dict[str, list], which: Sequence[int], model: Ranker, penalty: float) -> dict[str, float]:
    return summarise(data, {i: ranking(data, i, model, penalty) for i in which})


def summarise(data: dict[str, list], orders: Mapping[int, Sequence[int]]) -> dict[str, float]:
    """R@5 / R@10 of each question's order, by category, overall and for evidence in 2+ sessions."""
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for i, order in orders.items():
        pair = (recall_at(data, i, order, 5), recall_at(data, i, order, 10), recall_at(data, i, order, 1))
        cat = int(data["category"][i])
        groups[CATEGORIES[cat]].append(pair)
        groups["overall 1-5"].append(pair)
        if cat != 5:
            groups["overall 1-4"].append(pair)
            if int(data["sessions_of_evidence"][i]) >= 2:
                groups["evidence in 2+ sessions"].append(pair)
    return {
        f"{g} R@{k}": round(100 * float(np.mean([p[n] for p in v])), 1)
        for g, v in groups.items()
        for n, k in ((2, 1), (0, 5), (1, 10))
    } | {f"{g} n": len(v) for g, v in groups.items()}


def choose_penalty(data: dict[str, list], which: Sequence[int], model: Ranker) -> float:
    return max(PENALTIES, key=lambda p: (evaluate(data, which, model, p)["overall 1-5 R@10"], -p))


def cross_validate(data: dict[str, list]) -> dict[str, object]:
    convs = sorted(set(int(c) for c in data["conv"]))
    hand = Ranker.hand_set()
    folds = []
    pooled: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for held in convs:
        train = [i for i, c in enumerate(data["conv"]) if int(c) != held]
        test = [i for i, c in enumerate(data["conv"]) if int(c) == held]
        learned = fit(data, train)
        p_hand = choose_penalty(data, train, hand)
        p_learned = choose_penalty(data, train, learned)
        for name, model, penalty in (
            ("hand", hand, 0.0),
            ("learned", learned, 0.0),
            ("learned + spread", learned, p_learned),
        ):
            pooled[name] |= {i: ranking(data, i, model, penalty) for i in test}
        folds.append(
            {
                "held out": held,
                "penalty (hand)": p_hand,
                "penalty (learned)": p_learned,
                "hand": evaluate(data, test, hand, 0.0),
                "hand + spread": evaluate(data, test, hand, p_hand),
                "learned": evaluate(data, test, learned, 0.0),
                "learned + spread": evaluate(data, test, learned, p_learned),
                "weights": dict(zip(FEATURES, (round(w, 3) for w in learned.weights), strict=True)),
            }
        )
    systems = ("hand", "hand + spread", "learned", "learned + spread")
    keys = [k for k in folds[0]["hand"] if k.endswith(("R@1", "R@5", "R@10"))]  # type: ignore[union-attr]
    means = {s: {k: round(float(np.nanmean([f[s].get(k, np.nan) for f in folds])), 1) for k in keys} for s in systems}  # type: ignore[union-attr]
    # every question ranked by the model that never saw its conversation, scored together (as the bench pools)
    every = {name: summarise(data, orders) for name, orders in pooled.items()}
    return {"folds": folds, "mean of folds": means, "pooled over folds": every}


def ship(data: dict[str, list], out: Path, report: dict[str, object]) -> Ranker:
    everything = list(range(len(data["conv"])))
    model = fit(data, everything)
    penalty = choose_penalty(data, everything, model)
    means = report["mean of folds"]["learned + spread"]  # type: ignore[index]
    pooled = report["pooled over folds"]["learned"]  # type: ignore[index]
    note = (
        f"pairwise logistic (C={C}, non-negative weights, pairs weighted by gain) on LoCoMo dev, "
        f"{len(everything)} questions; "
        f"cross-validated by conversation: R@1/R@5/R@10 overall {pooled['overall 1-5 R@1']}/"
        f"{pooled['overall 1-5 R@5']}/{pooled['overall 1-5 R@10']} pooled, {means['overall 1-5 R@5']}/"
        f"{means['overall 1-5 R@10']} R@5/R@10 mean of folds (head re-ranked before the blend); penalty chosen from "
        f"{list(PENALTIES)} by R@10"
    )
    shipped = Ranker(model.features, model.mean, model.scale, model.weights, penalty, note)
    out.write_text(shipped.to_json() + "\n", encoding="utf-8")
    return shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--dump", type=Path, required=True, help="the captured heads (made when missing)")
    parser.add_argument("--ship", type=Path, help="write the model fitted on every conversation here")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument("--conversations", type=int)
    parser.add_argument("--k", type=int, default=50, help="hits asked for (the head is max(blend_depth, k))")
    args = parser.parse_args()
    if not args.dump.exists():
        args.dump.write_bytes(pickle.dumps(asyncio.run(dump(args.locomo, args.conversations, args.k))))
    data = pickle.loads(args.dump.read_bytes())  # the file this script wrote
    report = cross_validate(data)
    if args.ship:
        report["shipped"] = json.loads(ship(data, args.ship, report).to_json())
    text = json.dumps(report, indent=1)
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    for system, figures in report["pooled over folds"].items():  # type: ignore[attr-defined]
        print(
            system, {k: v for k, v in figures.items() if "overall 1-5" in k or "2+" in k or "multi" in k or "open" in k}
        )


if __name__ == "__main__":
    main()
