"""``mnemo bench updates``: does recall name what is current? (issue 40 item 1, the benchmark).

Over the hand-labelled lives (``tests/data/lives/``, one JSON file per person; the format is in
that folder's README): every life goes into its own scope (entity: the person's first name,
case- and accent-folded) through the real write path, each turn dated its session's date plus
2 minutes per turn. Every question is then asked in three stages, on the same scopes:

1. ``turns``: right after the import, read-only deterministic recall (bench locomo's lab pass);
2. ``night``: after a night cycle run now (the lives end before today), the same recall;
3. ``lived``: ``rounds`` rounds of the owner's mutating recall with the archive's default
   (stochastic) scoring, each recall seeded from the seed, round, life and question; then a night
   8 days later, then one more lived round (asked as of that night), which is the stage's score.
   The earlier rounds are reported beside it.

A hit *names* a value when its content holds one of the value strings as whole words, case- and
accent-folded. It names the current value when it names a current one (even if it names a stale
one too), the stale value when it names a stale one and no current one. A refused recall has no
hits. The metrics (per question type): ``changed``: ``current_first`` (among the hits naming a
value the first names the current one), ``stale_above`` (a stale-naming hit above every
current-naming one, also when none is), ``current_top5``, ``current_first_turns`` (the same as
current_first over the evidence turns the hits stand for); ``unchanged``: ``value_top1``,
``value_top5``; ``past``: ``past_first``; ``never``: ``refused``; and ``answerable_refused``, the
share of changed, unchanged and past questions refused.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import time
import unicodedata
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo.archive import AsyncArchive
from mnemo.bench.locomo import LATER, bench_settings
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.errors import MalformedImportError
from mnemo.models import Hit, RecallResult, Refusal, Scope, TurnInput

__all__ = ["STAGES", "Life", "Seen", "fold", "judge", "load_lives", "names", "run_updates", "summarize"]

K = 10
STAGES = ("turns", "night", "lived")
TYPES = ("changed", "unchanged", "past", "never")
METRICS: dict[str, tuple[str, ...]] = {
    "changed": ("current_first", "stale_above", "current_top5", "current_first_turns"),
    "unchanged": ("value_top1", "value_top5"),
    "past": ("past_first",),
    "never": ("refused",),
}
TURN_SPACING = timedelta(minutes=2)
Progress = Callable[[str, int, int], None]
Step = Callable[[], None]


# --- the lives -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Life:
    """One person's life as the benchmark imports it: the turns (each with its ``<session>:<n>`` ref)
    and the labelled questions."""

    person: str
    entity: str
    turns: tuple[TurnInput, ...]
    questions: tuple[Mapping[str, Any], ...]
    source: str


def fold(text: str) -> str:
    """Case- and accent-folded text: "José" and "JOSE" are "jose"."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def load_lives(path: Path) -> list[Life]:
    """The lives in ``path``: one life file, or every ``*.json`` in a folder (in name order)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise MalformedImportError(f"no life files (*.json) in {path}", path=str(path))
    lives = [_life(f) for f in files]
    seen: dict[str, int] = {}
    for i, life in enumerate(lives):  # two people of one first name: the second is "<name>-2"
        seen[life.entity] = seen.get(life.entity, 0) + 1
        if seen[life.entity] > 1:
            lives[i] = Life(life.person, f"{life.entity}-{seen[life.entity]}", life.turns, life.questions, life.source)
    return lives


def _life(file: Path) -> Life:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        user, other = str(data["user"]), str(data.get("other", "Assistant"))
        turns = [
            _turn(session, n, role, text, user if role == "user" else other)
            for session in data["sessions"]
            for n, (role, text) in enumerate(session["turns"], start=1)
        ]
        questions = tuple(data["questions"])
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedImportError(f"{file.name}: not a life file ({exc})", path=str(file)) from exc
    refs = {str(t.metadata["ref"]) for t in turns}
    for q in questions:
        if q.get("type") not in TYPES:
            raise MalformedImportError(f"{file.name}: question {q.get('id')!r} has no known type", path=str(file))
        missing = [r for key in ("current", "stale", "evidence") for r in q.get(key, ()) if r not in refs]
        if missing:
            raise MalformedImportError(f"{file.name}: {q['id']} names no such turn {missing}", path=str(file))
    entity = re.sub(r"[^a-z0-9_.:@+-]+", "-", fold(user.split()[0])).strip("-") or "person"
    return Life(str(data.get("person", user)), entity, tuple(turns), questions, file.name)


def _turn(session: Mapping[str, Any], n: int, role: str, text: str, speaker: str) -> TurnInput:
    """Turn ``n`` (1-based) of ``session``: dated the session's date plus 2 minutes per turn before it."""
    start = datetime.fromisoformat(str(session["date"]))
    sid = str(session["session"])
    return TurnInput(
        session_id=sid,
        role=role,
        content=str(text),
        speaker=speaker,
        created_at=start + TURN_SPACING * (n - 1),
        turn_number=n,
        metadata={"ref": f"{sid}:{n}"},
    )


# --- scoring (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One hit as the scoring sees it: its kind, content, score, and the turns (``<session>:<n>``)
    it stands for (a turn or line: itself; a block: the lines it quotes; a memory: its sources)."""

    kind: str
    content: str
    score: float
    refs: frozenset[str] = frozenset()


def names(content: str, values: Collection[str]) -> bool:
    """Whether ``content`` holds one of ``values`` as whole words, case- and accent-folded
    ("Kiel" is not in "Kielder")."""
    text = fold(content)
    return any(re.search(rf"(?<!\w){re.escape(fold(v).strip())}(?!\w)", text) for v in values if v.strip())


def _first(labels: Sequence[str | None]) -> str | None:
    return next((label for label in labels if label is not None), None)


def _labels(hits: Sequence[Seen], wanted: Collection[str], other: Collection[str]) -> list[str | None]:
    """Per hit: "wanted" when it names a wanted value (even beside another), "other" when it names
    only another value, None when it names neither."""
    return ["wanted" if names(h.content, wanted) else "other" if names(h.content, other) else None for h in hits]


def _turn_labels(hits: Sequence[Seen], wanted: Collection[str], other: Collection[str]) -> list[str | None]:
    """The same as :func:`_labels` over the evidence turns each hit stands for."""
    return ["wanted" if h.refs & set(wanted) else "other" if h.refs & set(other) else None for h in hits]


def judge(question: Mapping[str, Any], hits: Sequence[Seen], refused: bool) -> dict[str, bool]:
    """One question's metrics over its hits, best first (a refused recall has none)."""
    kind = question["type"]
    hits = () if refused else hits
    if kind == "never":
        return {"refused": refused}
    if kind == "unchanged":
        named = [names(h.content, question["values"]) for h in hits]
        return {"value_top1": any(named[:1]), "value_top5": any(named[:5]), "refused": refused}
    if kind == "past":
        first = _first(_labels(hits, question["values"], question.get("other_values", ())))
        return {"past_first": first == "wanted", "refused": refused}
    labels = _labels(hits, question["current_values"], question["stale_values"])
    return {
        "current_first": _first(labels) == "wanted",
        "stale_above": _first(labels) == "other",
        "current_top5": "wanted" in labels[:5],
        "current_first_turns": _first(_turn_labels(hits, question["current"], question["stale"])) == "wanted",
        "refused": refused,
    }


def _figure(flags: Sequence[bool]) -> dict[str, Any]:
    count = sum(flags)
    return {"pct": round(100 * count / len(flags), 1) if flags else None, "count": count, "n": len(flags)}


def summarize(rows: Sequence[tuple[str, Mapping[str, bool]]]) -> dict[str, Any]:
    """Per question type, each metric as a percentage with its count; and ``answerable_refused``:
    the changed, unchanged and past questions refused. ``rows``: (type, :func:`judge`'s metrics)."""
    out: dict[str, Any] = {}
    for kind in TYPES:
        judged = [m for t, m in rows if t == kind]
        out[kind] = {"n": len(judged)} | {metric: _figure([m[metric] for m in judged]) for metric in METRICS[kind]}
    out["answerable_refused"] = _figure([m["refused"] for t, m in rows if t != "never"])
    return out


# --- the harness -----------------------------------------------------------------------------


@dataclass
class Placed:
    """A life in its scope: its turns' ids -> refs, and (after a night) its memories' ids -> the refs
    of the turns they were made from."""

    life: Life
    scope: Scope
    refs: dict[str, str]
    sources: dict[str, frozenset[str]]


@dataclass(frozen=True)
class Answer:
    """One recall of one question: what the scoring sees, and whether (and why) it was refused."""

    seen: tuple[Seen, ...]
    refused: bool
    message: str | None


async def _place(archive: AsyncArchive, life: Life, namespace: str) -> Placed:
    scope = Scope(life.entity, namespace)
    stored = await archive.import_turns(scope, life.turns)
    refs = {str(t.id): str(t.metadata.get("ref")) for t in stored}
    return Placed(life, scope, refs, {})


async def _night(archive: AsyncArchive, p: Placed, as_of: datetime | None, totals: dict[str, Any]) -> datetime:
    """The night cycle of ``p``'s scope (``as_of`` None: now); its memories' sources are refreshed."""
    from mnemo.bench.locomo import _dia_ids

    report = await archive.night_cycle(p.scope, as_of=as_of)
    for key in ("blocks", "facts_new", "insights", "turns_removed", "blocks_migrated"):
        totals[key] = totals.get(key, 0) + int(getattr(report, key))
    totals["seconds"] = round(totals.get("seconds", 0.0) + report.seconds, 2)
    provenance = await archive.inspect.probes().provenance(p.scope)
    p.sources = {str(m): frozenset(_dia_ids(src, provenance, p.refs)) for m, (src, _) in provenance.items()}
    return report.as_of


def _seen(hit: Hit, p: Placed) -> Seen:
    if hit.excerpt:
        refs = frozenset(p.refs[str(line.turn_id)] for line in hit.excerpt if str(line.turn_id) in p.refs)
    elif str(hit.id) in p.refs:
        refs = frozenset({p.refs[str(hit.id)]})
    else:
        refs = p.sources.get(str(hit.id), frozenset())
    kind = f"memory:{hit.memory_kind}" if hit.item_kind == "memory" else hit.item_kind
    return Seen(kind, hit.content, float(hit.score), refs)


async def _ask(archive: AsyncArchive, p: Placed, question: str, draws: str | None, as_of: datetime | None) -> Answer:
    """Read-only (``draws`` None), or the owner's mutating recall with its draws seeded from ``draws``."""
    seed = None if draws is None else random.Random(draws).getrandbits(62)
    result: RecallResult | Refusal = await archive.recall(
        p.scope, question, K, read_only=draws is None, as_of=as_of, seed=seed
    )
    refused = isinstance(result, Refusal)
    message = result.message if isinstance(result, Refusal) else None
    return Answer(tuple(_seen(h, p) for h in result.hits), refused, message)


async def _pass(
    archive: AsyncArchive,
    placed: Sequence[Placed],
    step: Step,
    *,
    draws: tuple[int, int] | None = None,
    as_of: datetime | None = None,
) -> list[Answer]:
    """Every life's questions, in order; ``draws`` (seed, round): lived, else read-only."""
    answers = []
    for i, p in enumerate(placed):
        for j, q in enumerate(p.life.questions):
            key = None if draws is None else f"{draws[0]}:{draws[1]}:{i}:{j}"
            answers.append(await _ask(archive, p, str(q["question"]), key, as_of))
            step()
    return answers


@dataclass
class _Run:
    """What a run gathers: per stage its answers (the lived stage's scored round), the earlier lived
    rounds', what the nights did, and the seconds each stage took."""

    answers: dict[str, list[Answer]]
    rounds: list[list[Answer]]
    nights: dict[str, dict[str, Any]]
    seconds: dict[str, float]


async def _lab(archive: AsyncArchive, placed: Sequence[Placed], stages: Collection[str], step: Step, run: _Run) -> None:
    """The read-only stages: ``turns`` right after the import, ``night`` after a night run now."""
    if "turns" in stages:
        started = time.perf_counter()
        run.answers["turns"] = await _pass(archive, placed, step)
        run.seconds["turns"] = round(time.perf_counter() - started, 1)
    if "night" in stages:
        started, run.nights["night"] = time.perf_counter(), {}
        for p in placed:
            run.nights["night"]["as_of"] = (await _night(archive, p, None, run.nights["night"])).isoformat()
            step()
        run.answers["night"] = await _pass(archive, placed, step)
        run.seconds["night"] = round(time.perf_counter() - started, 1)


async def _lived(
    archive: AsyncArchive, placed: Sequence[Placed], rounds: int, seed: int, step: Step, run: _Run
) -> None:
    """``rounds`` lived rounds now, a night 8 days after the first night (or now), one scored round then."""
    started = time.perf_counter()
    for r in range(1, rounds + 1):
        run.rounds.append(await _pass(archive, placed, step, draws=(seed, r)))
    first = run.nights.get("night", {}).get("as_of")
    later = (datetime.fromisoformat(first) if first else datetime.now().astimezone()) + LATER
    run.nights["lived"] = {"as_of": later.isoformat()}
    for p in placed:
        await _night(archive, p, later, run.nights["lived"])
        step()
    run.answers["lived"] = await _pass(archive, placed, step, draws=(seed, rounds + 1), as_of=later)
    use: dict[str, int] = {}
    for p in placed:  # what use has left in the scopes: reinforcements by recall, accesses
        for key, value in (await archive.inspect.probes().use(p.scope.entity_id, [p.scope.namespace])).items():
            use[key] = use.get(key, 0) + int(value)
    run.nights["lived"]["use"] = use
    run.seconds["lived"] = round(time.perf_counter() - started, 1)


async def run_updates(
    path: Path,
    *,
    embeddings: Embeddings,
    overrides: Mapping[str, Any] | None = None,
    database_url: str | None = None,
    rounds: int = 3,
    seed: int = 0,
    stages: Collection[str] = STAGES,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the benchmark on the lives in ``path``; returns every figure (what ``--json`` writes)."""
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    if not stages or set(stages) - set(STAGES):
        raise ValueError(f"stages must be some of {', '.join(STAGES)}")
    lives = load_lives(path)
    questions = sum(len(life.questions) for life in lives)
    passes = ("turns" in stages) + ("night" in stages) + ("lived" in stages) * (rounds + 1)
    total, done = questions * passes + len(lives) * (("night" in stages) + ("lived" in stages)), 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress("updates", done, total)

    run = _Run({}, [], {}, {})
    namespace = f"bench-updates-{uuid.uuid4().hex[:8]}"  # a database that is kept holds each run apart
    with tempfile.TemporaryDirectory(prefix="mnemo-updates-") as home:
        lab, lived = bench_settings(Path(home), database_url, overrides, live=True, seed=seed)
        assert lived is not None
        archive = await AsyncArchive.open(lab, embeddings=embeddings)
        try:
            placed = [await _place(archive, life, namespace) for life in lives]
            await _lab(archive, placed, stages, step, run)
        finally:
            await archive.close()
        if "lived" in stages:
            archive = await AsyncArchive.open(lived, embeddings=embeddings)
            try:
                await _lived(archive, placed, rounds, seed, step, run)
            finally:
                await archive.close()
    return _report(path, lives, lab, lived, embeddings, run, rounds=rounds, seed=seed)


def _top(answer: Answer) -> dict[str, Any]:
    return {
        "refused": answer.refused,
        "message": answer.message,
        "top": [[s.kind, s.content[:80], round(s.score, 4)] for s in answer.seen[:5]],
    }


def _stage(lives: Sequence[Life], answers: Sequence[Answer]) -> dict[str, Any]:
    """A stage's figures overall and per life, and per question its metrics."""
    asked = [(life, q) for life in lives for q in life.questions]
    rows = [(str(q["type"]), judge(q, a.seen, a.refused)) for (_, q), a in zip(asked, answers, strict=True)]
    per_life = {
        life.person: summarize([row for (owner, _), row in zip(asked, rows, strict=True) if owner is life])
        for life in lives
    }
    return {"overall": summarize(rows), "lives": per_life, "judged": [m for _, m in rows]}


def _report(
    path: Path, lives: Sequence[Life], lab: Settings, lived: Settings, embeddings: Embeddings, run: _Run, **knobs: Any
) -> dict[str, Any]:
    """The JSON of a run (``--json``): settings, per stage the figures, per question the top hits."""
    stages = {name: _stage(lives, answers) for name, answers in run.answers.items()}
    rounds = [_stage(lives, answers) for answers in run.rounds]
    questions = []
    for i, (life, q) in enumerate([(owner, q) for owner in lives for q in owner.questions]):
        row: dict[str, Any] = {"life": life.person, **q}  # its labels beside what recall returned
        row["stages"] = {n: {"metrics": stages[n]["judged"][i]} | _top(run.answers[n][i]) for n in run.answers}
        if rounds:
            row["lived_rounds"] = [r["judged"][i] for r in rounds]
        questions.append(row)
    out_stages: dict[str, Any] = {}
    for name, figures in stages.items():
        out_stages[name] = {k: v for k, v in figures.items() if k != "judged"} | {"seconds": run.seconds[name]}
        if name in run.nights:
            out_stages[name]["nights"] = run.nights[name]
    if "lived" in out_stages:
        out_stages["lived"]["rounds"] = [r["overall"] for r in rounds]
    hidden = {"home", "database_url"}
    return {
        "dataset": str(path),
        "lives": {
            life.person: {"entity": life.entity, "file": life.source, "turns": len(life.turns)} for life in lives
        },
        "questions_n": sum(len(life.questions) for life in lives),
        "embedder": str(embeddings.slug),
        "knobs": knobs | {"k": K, "stages": list(run.answers), "lived_scoring": lived.scoring},
        "settings": {k: v for k, v in lab.model_dump(mode="json").items() if k not in hidden},
        "stages": out_stages,
        "questions": questions,
    }
