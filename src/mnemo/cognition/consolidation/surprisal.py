"""Per-turn surprisal: how unexpected a text is given everything seen before it.

Seed: cognitive-plan §3.2 (flux analysis monitors per-turn "perplexity" with a
moving average). mnemo works in surprisal, bits per token; perplexity is
``2 ** surprisal``. :mod:`mnemo.cognition.consolidation.flux` turns a series of these values
into flux arcs.

Two sources of surprisal share the :class:`SurpriseModel` protocol:

* :class:`NGramModel`, an offline incremental word n-gram model with
  interpolated Kneser-Ney smoothing. It needs no network and no weights, keeps
  its counts in dicts (O(tokens) per update and per score), and its state is a
  JSON-serialisable dict so the caller can persist one model per scope and go
  on learning the next night.
* :class:`LogprobSurprise`, an adapter over per-token log-probabilities from
  an LLM endpoint that falls back to an offline model when the endpoint fails.

Scoring never changes a model; :func:`score_stream` scores each text against
the history before it and only then observes it (prequential scoring).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BOS",
    "EOS",
    "UNK",
    "LogprobSurprise",
    "NGramModel",
    "SurpriseModel",
    "score_stream",
    "sentences",
    "tokenize",
]

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
"""Key of the unknown-word slot in :meth:`NGramModel.next_token_distribution`.

The tokenizer never produces ``<s>``, ``</s>`` or ``<unk>`` (``<`` and ``>`` are
tokens of their own), so these cannot collide with real tokens.
"""

_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+(?:'[^\W_]+)*|[^\w\s]|_")
_TERMINAL = frozenset({".", "!", "?"})
_STATE_KIND = "ngram"
_STATE_VERSION = 1


def tokenize(text: str) -> list[str]:
    """Lowercase tokens: numbers (``3.14``, ``1,000``), words (with inner apostrophes), single punctuation marks.

    Whitespace is dropped; the result depends on ``text`` only.
    """
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def sentences(tokens: Sequence[str]) -> list[list[str]]:
    """Split tokens into sentences after each run of ``.``, ``!`` or ``?`` (the marks stay in the sentence)."""
    out: list[list[str]] = []
    current: list[str] = []
    for i, tok in enumerate(tokens):
        current.append(tok)
        if tok in _TERMINAL and (i + 1 == len(tokens) or tokens[i + 1] not in _TERMINAL):
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


@runtime_checkable
class SurpriseModel(Protocol):
    """Something that says how surprising a text is and can learn from texts."""

    def surprisal(self, text: str) -> float:
        """Bits per token of ``text`` given everything observed so far; 0.0 for a text without tokens.

        Does not change the model.
        """
        ...

    def observe(self, text: str) -> None:
        """Add ``text`` to the history."""
        ...


class NGramModel:
    """Incremental word n-gram model with interpolated Kneser-Ney smoothing.

    Each text is tokenized (:func:`tokenize`) and split into sentences
    (:func:`sentences`); each sentence is padded with ``order - 1`` ``<s>`` and
    ends with ``</s>``, which is predicted like a word.

    Probabilities (Chen & Goodman's interpolated Kneser-Ney, one absolute
    discount ``D`` for every order):

    * highest order, raw counts: ``P(w|h) = (max(c(hw) - D, 0) + D * N1+(h.) * P_lower(w|h')) / c(h.)``
    * lower orders use continuation counts ``N1+(.hw)`` (how many distinct
      words precede ``hw``) in place of ``c(hw)``;
    * below the unigram level, a uniform distribution over the vocabulary plus
      one unknown slot, so the full next-token distribution (vocabulary +
      unknown) sums to 1 and an unseen word gets a finite, high surprisal.

    A context that was never seen passes its mass straight to the next lower
    order. The unknown slot stands for ``oov_types`` unseen word types sharing
    its mass equally, so an unseen token costs ``-log2 P(<unk>) + log2(oov_types)``
    bits. That keeps a fresh model from calling its first text unsurprising
    (with ``oov_types=1`` a text scored by an empty model has surprisal 0).

    Surprisal is averaged over the predicted events: every token plus one
    ``</s>`` per sentence.
    """

    __slots__ = (
        "_cont",
        "_counts",
        "_discount",
        "_oov_bits",
        "_oov_types",
        "_order",
        "_tokens_seen",
        "_total",
        "_types",
        "_vocab",
    )

    def __init__(self, order: int = 3, discount: float = 0.75, oov_types: int = 1000) -> None:
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1, not {order!r}")
        if not (isinstance(discount, int | float) and 0.0 < discount <= 1.0):
            raise ValueError(f"discount must be in (0, 1], not {discount!r}")
        if isinstance(oov_types, bool) or not isinstance(oov_types, int) or oov_types < 1:
            raise ValueError(f"oov_types must be an int >= 1, not {oov_types!r}")
        self._order = order
        self._discount = float(discount)
        self._oov_types = oov_types
        self._oov_bits = math.log2(oov_types)
        # Highest-order n-gram -> raw count.
        self._counts: dict[tuple[str, ...], int] = {}
        # Lower-order k-gram (1 <= k < order) -> continuation count N1+(.g).
        self._cont: dict[tuple[str, ...], int] = {}
        # Context -> sum of the counts that follow it, and number of distinct words that follow it.
        # The highest order's contexts have length order-1, the lower orders' are shorter, so one dict serves both.
        self._total: dict[tuple[str, ...], int] = {}
        self._types: dict[tuple[str, ...], int] = {}
        self._vocab: dict[str, None] = {}
        self._tokens_seen = 0

    # -- properties -------------------------------------------------------------------------------------------

    @property
    def order(self) -> int:
        return self._order

    @property
    def discount(self) -> float:
        return self._discount

    @property
    def oov_types(self) -> int:
        return self._oov_types

    @property
    def tokens_seen(self) -> int:
        """Tokens observed so far (sentence boundaries not counted)."""
        return self._tokens_seen

    @property
    def vocabulary_size(self) -> int:
        """Distinct predictable tokens seen, ``</s>`` included."""
        return len(self._vocab)

    # -- learning ---------------------------------------------------------------------------------------------

    def _padded(self, sentence: list[str]) -> list[str]:
        return [BOS] * (self._order - 1) + sentence + [EOS]

    def _add(self, gram: tuple[str, ...], count: int) -> None:
        """Add ``count`` occurrences of a highest-order n-gram and update the lower orders' continuation counts."""
        before = self._counts.get(gram, 0)
        self._counts[gram] = before + count
        ctx = gram[:-1]
        self._total[ctx] = self._total.get(ctx, 0) + count
        if before:
            return
        self._types[ctx] = self._types.get(ctx, 0) + 1
        self._vocab.setdefault(gram[-1], None)
        # A new n-gram is one more distinct predecessor for its (n-1)-suffix; if that suffix is new too,
        # it is one more distinct predecessor for its own suffix, and so on down to the unigram.
        g = gram[1:]
        while g:
            seen = self._cont.get(g, 0)
            self._cont[g] = seen + 1
            ctx = g[:-1]
            self._total[ctx] = self._total.get(ctx, 0) + 1
            if seen:
                break
            self._types[ctx] = self._types.get(ctx, 0) + 1
            g = g[1:]

    def observe(self, text: str) -> None:
        n = self._order
        for sentence in sentences(tokenize(text)):
            seq = self._padded(sentence)
            for i in range(n - 1, len(seq)):
                self._add(tuple(seq[i - n + 1 : i + 1]), 1)
            self._tokens_seen += len(sentence)

    # -- scoring ----------------------------------------------------------------------------------------------

    def _prob(self, word: str, context: tuple[str, ...]) -> float:
        """P(word | context) with ``context`` exactly ``order - 1`` tokens; for an unseen word, P(<unk> slot)."""
        d = self._discount
        p = 1.0 / (len(self._vocab) + 1)
        top = self._order
        for k in range(1, top + 1):
            h = context[len(context) - (k - 1) :] if k > 1 else ()
            total = self._total.get(h, 0)
            if not total:
                continue
            table = self._counts if k == top else self._cont
            c = table.get((*h, word), 0)
            p = (max(c - d, 0.0) + d * self._types[h] * p) / total
        return p

    def _context(self, context: Sequence[str]) -> tuple[str, ...]:
        n = self._order - 1
        if n == 0:
            return ()
        tail = tuple(context[-n:])
        return (BOS,) * (n - len(tail)) + tail

    def next_token_distribution(self, context: Sequence[str] = ()) -> dict[str, float]:
        """The full next-token distribution after ``context`` (padded with ``<s>``): vocabulary plus ``UNK``.

        Sums to 1 up to rounding. O(vocabulary); meant for inspection and tests, not for scoring.
        """
        ctx = self._context(context)
        dist = {w: self._prob(w, ctx) for w in self._vocab}
        dist[UNK] = self._prob(UNK, ctx)
        return dist

    def token_surprisals(self, text: str) -> list[float]:
        """Bits for each predicted event of ``text`` (its tokens and one ``</s>`` per sentence), in order."""
        n = self._order
        out: list[float] = []
        for sentence in sentences(tokenize(text)):
            seq = self._padded(sentence)
            for i in range(n - 1, len(seq)):
                word = seq[i]
                bits = -math.log2(self._prob(word, tuple(seq[i - n + 1 : i])))
                if word not in self._vocab:
                    bits += self._oov_bits
                out.append(bits)
        return out

    def surprisal(self, text: str) -> float:
        bits = self.token_surprisals(text)
        return math.fsum(bits) / len(bits) if bits else 0.0

    # -- persistence ------------------------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot: the parameters and the highest-order n-gram counts.

        Everything else (continuation counts, totals, vocabulary) is derived from those counts on load.
        """
        return {
            "kind": _STATE_KIND,
            "version": _STATE_VERSION,
            "order": self._order,
            "discount": self._discount,
            "oov_types": self._oov_types,
            "tokens_seen": self._tokens_seen,
            "ngrams": [[list(gram), count] for gram, count in self._counts.items()],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> NGramModel:
        """Rebuild a model from :meth:`to_state` output; raises ``ValueError`` on a malformed state."""
        if state.get("kind") != _STATE_KIND or state.get("version") != _STATE_VERSION:
            raise ValueError(f"not an n-gram model state of version {_STATE_VERSION}")
        try:
            model = cls(order=state["order"], discount=state["discount"], oov_types=state["oov_types"])
            tokens_seen = state["tokens_seen"]
            ngrams = state["ngrams"]
        except KeyError as exc:
            raise ValueError(f"n-gram model state lacks {exc.args[0]!r}") from None
        if isinstance(tokens_seen, bool) or not isinstance(tokens_seen, int) or tokens_seen < 0:
            raise ValueError("tokens_seen must be an int >= 0")
        for item in ngrams:
            if not (isinstance(item, list | tuple) and len(item) == 2):
                raise ValueError("each n-gram entry must be [tokens, count]")
            tokens, count = item
            if (
                not isinstance(tokens, list | tuple)
                or len(tokens) != model._order
                or not all(isinstance(t, str) and t != UNK for t in tokens)
            ):
                raise ValueError(f"n-gram {tokens!r} is not {model._order} strings other than {UNK!r}")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"n-gram count must be an int >= 1, not {count!r}")
            gram = tuple(tokens)
            if gram in model._counts:
                raise ValueError(f"n-gram {tokens!r} appears twice")
            model._add(gram, count)
        model._tokens_seen = tokens_seen
        return model


def score_stream(model: SurpriseModel, texts: Iterable[str]) -> list[float]:
    """Prequential scores: the surprisal of each text given the history before it; each text is observed after."""
    out: list[float] = []
    for text in texts:
        out.append(model.surprisal(text))
        model.observe(text)
    return out


def _iter_logprobs(values: Sequence[float]) -> Iterator[float]:
    for v in values:
        lp = float(v)
        if not math.isfinite(lp) or lp > 1e-6:
            raise ValueError(f"log-probability {v!r} is not a finite value <= 0")
        yield min(lp, 0.0)


class LogprobSurprise:
    """Surprisal from per-token natural-log probabilities, e.g. those an LLM endpoint returns.

    ``surprisal(text) = -mean(logprobs(text)) / ln 2`` bits per token. ``observe`` feeds only the fallback
    model (the LLM has its own prior). When ``logprobs`` raises, or returns a value that is not a finite
    log-probability (NaN, infinite, positive), the fallback model answers instead, so a flaky endpoint
    degrades to the offline model; ``last_used_fallback`` and ``failures`` tell the caller when that happened.
    The two sources are on different scales (LLM subword tokens vs n-gram words), so a series that mixes them
    is not comparable turn to turn.
    """

    __slots__ = ("_fallback", "_logprobs", "failures", "last_error", "last_used_fallback")

    def __init__(
        self,
        logprobs: Callable[[str], Sequence[float]],
        fallback: SurpriseModel | None = None,
    ) -> None:
        self._logprobs = logprobs
        self._fallback: SurpriseModel = fallback if fallback is not None else NGramModel()
        self.failures = 0
        self.last_used_fallback = False
        self.last_error: Exception | None = None

    @property
    def fallback(self) -> SurpriseModel:
        return self._fallback

    def surprisal(self, text: str) -> float:
        if not tokenize(text):
            self.last_used_fallback = False
            return 0.0
        try:
            lps = list(_iter_logprobs(self._logprobs(text)))
        except Exception as exc:
            self.failures += 1
            self.last_used_fallback = True
            self.last_error = exc
            return self._fallback.surprisal(text)
        self.last_used_fallback = False
        if not lps:
            return 0.0
        return -math.fsum(lps) / len(lps) / math.log(2.0)

    def observe(self, text: str) -> None:
        self._fallback.observe(text)
