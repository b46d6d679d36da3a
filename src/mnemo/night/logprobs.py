"""Turn surprisal from an LLM endpoint's token log-probabilities, with the n-gram model as fallback.

Seed: memory-architecture §3.2 (Flux Analysis, night cycle stage 1: perplexity
monitoring with a moving average; seed file
``/work/shared/seeds/000_1f5324b31fb36c83.txt``). The seed measures perplexity
with a language model; mnemo's offline default is the scope's own n-gram model
(:mod:`mnemo.night.surprise`). When ``MNEMO_SURPRISAL_ENDPOINT`` names an
OpenAI-compatible API, each turn is scored by that model instead: a
``/completions`` request with ``echo`` and ``logprobs`` and no generated tokens
returns the log-probability of every token of the text itself (vLLM and the
classic OpenAI completions API answer it this way; a server that does not echo
the prompt is rejected). The first token has no context and no log-probability.

A turn the endpoint cannot score (HTTP error, timeout, malformed answer) falls
back to the n-gram model (:class:`~mnemo.cognition.consolidation.surprisal.LogprobSurprise`);
after :data:`MAX_CONSECUTIVE_FAILURES` failures in a row the endpoint is not
asked again in that run, so an endpoint that is down costs a few timeouts, not
one per turn. A run asks through one HTTP client (:class:`SurpriseFactory`),
closed when its surprisal stage ends. :func:`mnemo.night.surprise.score_turns` logs one warning per run
with the number of turns the fallback scored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import httpx

from mnemo.cognition.consolidation.surprisal import LogprobSurprise, NGramModel, SurpriseModel
from mnemo.config import Settings
from mnemo.errors import EndpointError

__all__ = [
    "MAX_CONSECUTIVE_FAILURES",
    "SurprisalEndpointError",
    "SurpriseFactory",
    "endpoint_logprobs",
    "surprise_factory",
]

MAX_CONSECUTIVE_FAILURES = 3
_SNIPPET = 200  # characters of an error response quoted in the exception


class SurprisalEndpointError(EndpointError):
    """The surprisal endpoint did not return usable token log-probabilities for a text."""


def _token_logprobs(body: Any, text: str) -> list[float]:
    try:
        choice = body["choices"][0]
        values = choice["logprobs"]["token_logprobs"]
    except (KeyError, IndexError, TypeError):
        raise SurprisalEndpointError("answer lacks choices[0].logprobs.token_logprobs") from None
    if not isinstance(values, list):
        raise SurprisalEndpointError(f"token_logprobs is {type(values).__name__}, not a list")
    echoed = choice.get("text")
    if isinstance(echoed, str) and not echoed.startswith(text):
        raise SurprisalEndpointError("the endpoint did not echo the prompt, so it cannot score the text's own tokens")
    start = 0
    while start < len(values) and values[start] is None:  # the first token(s) have no context
        start += 1
    out: list[float] = []
    for v in values[start:]:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v > 1e-6:
            raise SurprisalEndpointError(f"token log-probability {v!r} is not a finite number <= 0")
        out.append(float(v))
    if not out:
        raise SurprisalEndpointError("the endpoint returned no token log-probabilities")
    return out


def endpoint_logprobs(
    base_url: str,
    model: str | None,
    *,
    api_key: str | None = None,
    timeout: float = 30.0,
    client: httpx.Client | None = None,
) -> Callable[[str], list[float]]:
    """A callable that returns the natural-log probability of each token of a text, from ``{base_url}/completions``.

    It POSTs ``{"model": model, "prompt": text, "max_tokens": 0, "echo": true, "logprobs": 0,
    "temperature": 0}`` (``model`` is left out when None) with ``Authorization: Bearer <api_key>`` when a
    key is given, and returns ``choices[0].logprobs.token_logprobs`` without its leading ``None``\\ s.
    Raises :class:`SurprisalEndpointError` on a transport error or timeout, a non-2xx status, a body that is
    not JSON, missing fields, a prompt that was not echoed, a non-finite or non-numeric value, or no values at
    all. Without ``client`` each call opens and closes its own connection (safe from any thread).
    """
    url = base_url.rstrip("/") + "/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def logprobs(text: str) -> list[float]:
        payload: dict[str, Any] = {"prompt": text, "max_tokens": 0, "echo": True, "logprobs": 0, "temperature": 0}
        if model is not None:
            payload = {"model": model} | payload
        try:
            if client is not None:
                response = client.post(url, json=payload, headers=headers, timeout=timeout)
            else:
                with httpx.Client(timeout=timeout) as own:
                    response = own.post(url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            raise SurprisalEndpointError(f"{url}: {type(exc).__name__}: {exc}") from exc
        if not response.is_success:
            raise SurprisalEndpointError(f"{url}: HTTP {response.status_code}: {response.text[:_SNIPPET]}")
        try:
            body = response.json()
        except ValueError:
            raise SurprisalEndpointError(f"{url}: the answer is not JSON: {response.text[:_SNIPPET]!r}") from None
        try:
            return _token_logprobs(body, text)
        except SurprisalEndpointError as exc:
            raise SurprisalEndpointError(f"{url}: {exc}") from None

    return logprobs


def surprise_factory(settings: Settings) -> SurpriseFactory | None:
    """None without ``settings.surprisal_endpoint``; else a :class:`SurpriseFactory` for one night-cycle run."""
    if not settings.surprisal_endpoint:
        return None
    key = settings.surprisal_api_key.get_secret_value() if settings.surprisal_api_key is not None else None
    return SurpriseFactory(
        settings.surprisal_endpoint, settings.surprisal_model, api_key=key, timeout=settings.surprisal_timeout
    )


class SurpriseFactory:
    """Makes the surprise models of one night-cycle run; close it when the run is done with it.

    Each model wraps the scope's n-gram model in a :class:`LogprobSurprise` over :func:`endpoint_logprobs`
    with the n-gram model as fallback (it also keeps learning, so the offline model stays current). The
    models one factory makes share one HTTP client (opened at the first request, so one connection pool
    serves the whole run) and one breaker: after :data:`MAX_CONSECUTIVE_FAILURES` failures in a row the
    endpoint is not called again and every further turn goes to the fallback. Models are called from a
    worker thread, one at a time.
    """

    def __init__(self, base_url: str, model: str | None, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self._url = base_url
        self._model = model
        self._key = api_key
        self._timeout = timeout
        self._client: httpx.Client | None = None
        self._ask: Callable[[str], list[float]] | None = None
        self._consecutive = 0
        self._last: Exception | None = None

    def __call__(self, ngram: NGramModel) -> SurpriseModel:
        return LogprobSurprise(self._guarded, fallback=ngram)

    def _guarded(self, text: str) -> list[float]:
        if self._consecutive >= MAX_CONSECUTIVE_FAILURES:
            raise SurprisalEndpointError(
                f"not asked after {self._consecutive} failures in a row in this run (last: {self._last})"
            )
        if self._ask is None:
            self._client = httpx.Client(timeout=self._timeout)
            self._ask = endpoint_logprobs(
                self._url, self._model, api_key=self._key, timeout=self._timeout, client=self._client
            )
        try:
            values = self._ask(text)
        except Exception as exc:
            self._consecutive += 1
            self._last = exc
            raise
        self._consecutive = 0
        return values

    def close(self) -> None:
        """Close the run's HTTP client (its models then open a new one if asked again)."""
        if self._client is not None:
            self._client.close()
        self._client = self._ask = None

    def __enter__(self) -> SurpriseFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
