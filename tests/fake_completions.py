"""A fake OpenAI-compatible completions server on 127.0.0.1 that echoes and scores the prompt, for the
surprisal-endpoint tests (tests/unit/test_logprobs.py and tests/integration/test_logprobs.py)."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAKE_BITS = 0.5 / math.log(2.0)  # -0.5 nats per token


class FakeCompletions:
    """Answers POST /v1/completions like an OpenAI-compatible server asked to echo and score the prompt.

    Each whitespace-separated word of the prompt is one token; the first has no log-probability, every other
    one -0.5 (or ``fixed`` as given). ``mode`` makes it misbehave; ``fail_if`` fails only prompts containing
    that string; ``delay`` sleeps before answering. Every request is kept in ``requests``.
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.fail_if: str | None = None
        self.fixed: list[Any] | None = None
        self.delay = 0.0
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes]:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
        if self.delay:
            time.sleep(self.delay)
        prompt = str(body.get("prompt", ""))
        mode = self.mode if self.fail_if is None or self.fail_if in prompt else "ok"
        if path != "/v1/completions":
            return 404, "application/json", b'{"error": "not found"}'
        if mode == "500":
            return 500, "application/json", b'{"error": {"message": "model crashed"}}'
        if mode == "garbage":
            return 200, "text/html", b"<html>not json</html>"
        tokens = prompt.split()
        values: list[Any] = self.fixed if self.fixed is not None else [None] + [-0.5] * (len(tokens) - 1)
        logprobs: dict[str, Any] = {"tokens": tokens, "token_logprobs": values, "top_logprobs": None}
        text = prompt
        if mode == "missing":
            del logprobs["token_logprobs"]
        elif mode == "nan":
            logprobs["token_logprobs"] = [None, -0.5, float("nan")]
        elif mode == "positive":
            logprobs["token_logprobs"] = [None, -0.5, 0.7]
        elif mode == "string":
            logprobs["token_logprobs"] = [None, "-0.5"]
        elif mode == "empty":
            logprobs["token_logprobs"] = [None]
        elif mode == "noecho":  # a server that ignores echo and scores a generated token only
            text, logprobs["token_logprobs"] = " Sure", [-0.1]
        elif mode == "nochoices":
            return 200, "application/json", json.dumps({"object": "text_completion", "choices": []}).encode()
        choice = {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": "length"}
        return 200, "application/json", json.dumps({"object": "text_completion", "choices": [choice]}).encode()


class QuietServer(ThreadingHTTPServer):
    """Says nothing when a client hangs up early (a timed-out request); any other error is printed."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(state: FakeCompletions) -> Iterator[str]:
    """Serve ``state`` on a free port of 127.0.0.1 until the block ends; yields the base URL (``.../v1``).
    The ``fake`` fixture in tests/conftest.py wraps this."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, ctype, payload = state.answer(self.path, dict(self.headers.items()), json.loads(raw))
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and hung up before the (delayed) answer: nobody to tell

        def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
            pass

    server = QuietServer(("127.0.0.1", 0), Handler)
    # A short poll interval: shutdown() at the end of each test waits for one poll.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
