"""Precision and recall of the offline fact extractor against hand-labelled facts (issue 28 item 5).

    python benchmarks/fact_extraction.py LOCOMO_DEV_JSON [LABELS_JSONL]

The labels (``tests/data/expected_facts.jsonl``, how they were made: ``expected_facts.md``) name
each fact by conversation, ``dia_id``, speaker, predicate and object. An extracted fact matches a
label of the same turn and speaker when their content words overlap: at least half of the label's
object words are in the extracted fact's value and predicate, and at least half of the extracted
value's words are in the label's predicate and object (words compared in
:func:`mnemo.cognition.consolidation.facts.canonical_value` form, relation words by their base: "kids" =
"child"). Precision: extracted facts that match a label; recall: labels some extracted fact
matches. A fragment is a fact whose stored sentence does not read as one
(:func:`mnemo.cognition.consolidation.facts.reads_as_sentence`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mnemo.bench.locomo import load_locomo
from mnemo.cognition.consolidation.extraction import FactCandidate, TurnText, extract
from mnemo.cognition.consolidation.facts import content_words, reads_as_sentence, sentence
from mnemo.cognition.text.patterns import RELATIONS

LABELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "expected_facts.jsonl"


@dataclass(frozen=True, slots=True)
class Label:
    conversation: str
    dia_id: str
    entity: str
    predicate: str
    object: str
    kind: str


@dataclass(frozen=True, slots=True)
class Found:
    conversation: str
    dia_id: str
    fact: FactCandidate

    @property
    def sentence(self) -> str:
        return sentence(self.fact.entity, self.fact.attribute, self.fact.value)


@dataclass(frozen=True, slots=True)
class Score:
    extracted: int
    labels: int
    precision: float
    recall: float
    fragments: tuple[str, ...]


def load_labels(path: Path = LABELS) -> list[Label]:
    return [Label(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def extracted(dataset: Path, conversations: Iterable[str]) -> list[Found]:
    """Every positive fact the offline extractor reads in the named conversations' turns."""
    wanted = set(conversations)
    out: list[Found] = []
    for conv in load_locomo(dataset):
        if conv.sample_id not in wanted:
            continue
        turns = [TurnText(t.speaker, t.role, t.content, t.created_at) for t in conv.turns]
        for fact in extract(turns).facts:
            if not fact.negated:
                out.append(Found(conv.sample_id, str(conv.turns[fact.source].metadata["dia_id"]), fact))
    return out


def _words(entity: str, text: str) -> set[str]:
    return {RELATIONS.get(w, w) for w in content_words(entity, text)}


def _overlap(part: set[str], whole: set[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def matches(found: Found, label: Label) -> bool:
    if (found.conversation, found.dia_id) != (label.conversation, label.dia_id):
        return False
    if found.fact.entity.casefold() != label.entity.casefold():
        return False
    entity = label.entity
    value = _words(entity, found.fact.value)
    label_object = _words(entity, label.object)
    said = value | _words(entity, found.fact.attribute)
    labelled = label_object | _words(entity, label.predicate)
    return _overlap(label_object, said) >= 0.5 and _overlap(value, labelled) >= 0.5


def is_sentence(found: Found) -> bool:
    """The fact's stored sentence reads as one (:func:`mnemo.cognition.consolidation.facts.reads_as_sentence`)."""
    return reads_as_sentence(found.fact.entity, found.sentence)


def score(found: Sequence[Found], labels: Sequence[Label]) -> Score:
    by_turn: dict[tuple[str, str], list[Label]] = {}
    for label in labels:
        by_turn.setdefault((label.conversation, label.dia_id), []).append(label)
    hit_labels: set[Label] = set()
    correct = 0
    for f in found:
        matched = [lab for lab in by_turn.get((f.conversation, f.dia_id), []) if matches(f, lab)]
        correct += bool(matched)
        hit_labels.update(matched)
    return Score(
        extracted=len(found),
        labels=len(labels),
        precision=correct / len(found) if found else 0.0,
        recall=len(hit_labels) / len(labels) if labels else 0.0,
        fragments=tuple(f.sentence for f in found if not is_sentence(f)),
    )


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    labels = load_labels(Path(argv[1]) if len(argv) > 1 else LABELS)
    found = extracted(Path(argv[0]), {label.conversation for label in labels})
    s = score(found, labels)
    print(f"extracted {s.extracted} facts, {s.labels} labelled")
    print(f"precision {100 * s.precision:.1f}%  recall {100 * s.recall:.1f}%  fragments {len(s.fragments)}")
    for text in s.fragments:
        print("  fragment:", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
