"""Facts worth keeping (cognition/facts.py, issue 28 item 5): sentences, fragments, near-duplicates,
and the extractor's output on two hand-labelled LoCoMo dev conversations."""

from __future__ import annotations

import importlib.util
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.cognition.consolidation.extraction import TurnText, extract, fact_hash
from mnemo.cognition.consolidation.facts import canonical_value, content_words, is_fragment, reads_as_sentence, sentence

ROOT = Path(__file__).resolve().parents[2]
DEV = Path(os.environ.get("LOCOMO_DEV", ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"))
AT = datetime(2024, 9, 21, 10, 0, tzinfo=UTC)

NAME = st.sampled_from(["Maya", "Jon", "Caroline", "Anna Lena"])
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=9).filter(
    lambda w: not is_fragment("x", w) and not w.endswith(("s", "u", "i"))  # (-ss, -us, -is keep their s)
)


@pytest.mark.parametrize(
    ("attribute", "value", "expected"),
    [
        ("sister", "Lena", "Maya's sister is Lena"),
        ("has", "sister", "Maya has a sister"),
        ("has", "dog", "Maya has a dog"),
        ("number of children", "3", "Maya has 3 children"),
        ("from", "Sweden", "Maya is from Sweden"),
        ("interested in", "pottery", "Maya is interested in pottery"),
        ("going to", "a conference", "Maya is going to a conference"),
        ("been to", "Paris", "Maya has been to Paris"),
        ("favourite food", "pasta", "Maya's favourite food is pasta"),
        ("lives in", "Munich", "Maya lives in Munich"),
        ("age", "34", "Maya is 34 years old"),
    ],
)
def test_a_fact_is_stored_as_a_sentence(attribute: str, value: str, expected: str) -> None:
    assert sentence("Maya", attribute, value) == expected
    assert reads_as_sentence("Maya", expected)


@pytest.mark.parametrize(
    "text", ["Maya has sister", "Maya sister Lena", "Maya from Sweden", "Maya going to Rome", "Maya been to Paris"]
)
def test_the_old_fragments_do_not_read_as_sentences(text: str) -> None:
    assert not reads_as_sentence("Maya", text)


@given(NAME, st.sampled_from(["likes", "went to", "lives in", "sister", "has", "from", "going to"]), WORD)
def test_every_rendered_fact_reads_as_a_sentence(entity: str, attribute: str, word: str) -> None:
    text = sentence(entity, attribute, word)
    assert text.startswith(entity) and word in text
    assert reads_as_sentence(entity, text)


@pytest.mark.parametrize("value", ["", "   ", "the", "to the", "my", "it", "a lot of the"])
def test_cut_off_or_empty_values_are_fragments(value: str) -> None:
    assert is_fragment("went to", value)
    assert not reads_as_sentence("Maya", f"Maya went to {value}")


@given(NAME, st.lists(WORD, min_size=1, max_size=4))
def test_articles_case_and_plurals_do_not_make_a_new_fact(entity: str, words: list[str]) -> None:
    plain = " ".join(words)
    dressed = "The " + " ".join(w.upper() if i % 2 else w for i, w in enumerate(words)) + "s"
    assert canonical_value(entity, plain) == canonical_value(entity, dressed)
    assert fact_hash(entity, "likes", plain) == fact_hash(entity, "likes", dressed)
    assert fact_hash(entity, "likes", plain) != fact_hash(entity, "dislikes", plain)


def test_the_speakers_own_possessive_does_not_make_a_new_fact() -> None:
    assert fact_hash("Melanie", "took", "Melanie's kids to the park") == fact_hash("Melanie", "took", "kids to park")
    assert content_words("Melanie", "her kids to the park") == {"kid", "park"}


def test_a_named_relation_makes_its_bare_mention_redundant() -> None:
    said = extract([TurnText("Maya", "user", "My sister Lena lives in Hamburg and I have a dog.", AT)])
    texts = {sentence(f.entity, f.attribute, f.value) for f in said.facts}
    assert "Maya's sister is Lena" in texts
    assert "Maya has a sister" not in texts


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fact_extraction", ROOT / "benchmarks" / "fact_extraction.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fact_extraction"] = module
    spec.loader.exec_module(module)
    return module


def test_the_extractor_on_two_hand_labelled_dev_conversations() -> None:
    """Precision and recall against tests/data/expected_facts.jsonl (conv-26, conv-30): no fragment,
    and the precision-first extractor stays precise (figures: benchmarks/fact_extraction.py)."""
    assert DEV.is_file(), f"the LoCoMo dev split is read from {DEV} (../shared beside the repository)"
    bench = _benchmark()
    labels = bench.load_labels()
    assert {label.conversation for label in labels} == {"conv-26", "conv-30"} and len(labels) >= 300
    found = bench.extracted(DEV, {"conv-26", "conv-30"})
    score = bench.score(found, labels)
    assert score.fragments == ()
    assert score.extracted >= 60
    assert score.precision >= 0.70, score
    assert score.recall >= 0.15, score
