"""The conversation in view: a token-budgeted FIFO whose pruned messages pass the exit gate.

Seed: cognitive-plan §3.3 (adaptive FIFO: the budget follows intensity; pruned messages go through
the exit gate before they leave, at most one embedding per 5 s during a burst; after pruning,
context assembly runs again). The sizing rules are pure (:mod:`mnemo.cognition.mind.window_sizing`); this
class holds the messages and talks to the archive.

Every message entered the entry gate when it arrived (``AsyncArchive.observe``); the ones it kept
wait in the scope's scratch buffer under their ``item_id``. When a message leaves the window, its
item is handed to the exit gate (``AsyncArchive.flush(items=...)``), which persists, reinforces,
keeps buffering or drops it: the message's last chance to become memory. One exit pass embeds its
whole batch in one call; the passes are rate-limited, so during a burst the leaving messages queue
up (``leaving``) and go together on the next allowed pass, or when the agent closes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

from mnemo.archive import AsyncArchive
from mnemo.cognition.mind.actions import USER
from mnemo.cognition.mind.window_sizing import RateLimit, prune_count
from mnemo.models import FlushReport, Scope

__all__ = ["ContextWindow", "Message"]


@dataclass(frozen=True, slots=True)
class Message:
    """One message in view."""

    role: Literal["input", "output"]
    """``input``: what the agent attended to (the user's message or an internal one); ``output``: its answer."""
    text: str
    source: str
    """The input's source tag, or who produced the output (``system1``, ``system2``, ``offline``)."""
    tokens: int
    item_id: uuid.UUID | None
    """The scratch item the entry gate kept it as; None when the gate skipped it as chatter."""


@dataclass
class ContextWindow:
    """The messages in view, oldest first, within a token budget (see the module docstring)."""

    archive: AsyncArchive
    scope: Scope
    max_tokens: int = 4000
    """The model context the agent may use at full intensity: conversation plus memory block."""
    limiter: RateLimit = field(default_factory=RateLimit)
    clock: Callable[[], float] = time.monotonic
    messages: list[Message] = field(default_factory=list)
    leaving: list[Message] = field(default_factory=list)
    """Pruned messages whose exit pass the rate limit holds back."""
    exits: list[FlushReport] = field(default_factory=list)
    """The exit gate's reports on pruned messages, oldest first."""
    pruned: int = 0
    """Messages pruned so far."""

    def __post_init__(self) -> None:
        if self.max_tokens < 64:
            raise ValueError(f"max_tokens must be >= 64, not {self.max_tokens}")

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    def count(self, text: str) -> int:
        return self.archive.embeddings.count_tokens([text])[0]

    def budget(self, share: float) -> tuple[int, int]:
        """(conversation limit, memory reserve) at this share of the maximum: a quarter of the
        budget is kept for the memory block."""
        effective = int(self.max_tokens * share)
        reserve = effective // 4
        return effective - reserve, reserve

    def gate_share(self) -> float:
        """The share of the inputs in view that the entry gate kept (1.0 with none in view)."""
        inputs = [m for m in self.messages if m.role == "input"]
        return sum(1 for m in inputs if m.item_id is not None) / len(inputs) if inputs else 1.0

    async def make_room(self, incoming: int, share: float, focus: str) -> list[Message]:
        """Prune the oldest messages until ``incoming`` more tokens fit the conversation limit at
        this share; the pruned go to the exit gate (rate-limited). Returns the pruned."""
        limit, _ = self.budget(share)
        drop = prune_count([m.tokens for m in self.messages] + [incoming], limit)
        gone, self.messages = self.messages[:drop], self.messages[drop:]
        self.leaving += gone
        self.pruned += len(gone)
        await self.drain(focus)
        return gone

    def memory_budget(self, share: float, incoming: int) -> int:
        """What the memory block may use after pruning: the budget the conversation leaves, at least
        the reserve."""
        limit, reserve = self.budget(share)
        return max(reserve, limit + reserve - self.tokens - incoming)

    def add(self, message: Message) -> None:
        self.messages.append(message)

    async def drain(self, focus: str | None, *, force: bool = False) -> FlushReport | None:
        """Hand the leaving messages' scratch items to the exit gate in one pass, when the rate
        limit allows (always with ``force``)."""
        items = [m.item_id for m in self.leaving if m.item_id is not None]
        if not self.leaving or not (force or self.limiter.take(self.clock())):
            return None
        self.leaving = []
        if not items:  # all were chatter the entry gate skipped: nothing left to decide
            return None
        report = await self.archive.flush(self.scope, attention=focus, items=items)
        self.exits.append(report)
        return report

    async def close(self, focus: str | None = None) -> FlushReport | None:
        """Graceful shutdown: everything still in view or leaving passes the exit gate now."""
        self.leaving += self.messages
        self.messages = []
        return await self.drain(focus, force=True)

    def history(self) -> list[ModelMessage]:
        """The messages in view as a Pydantic AI message history (from the first input on); inputs
        that are not the user's carry their source tag."""
        out: list[ModelMessage] = []
        for m in self.messages:
            if m.role == "input":
                text = m.text if m.source == USER else f"[{m.source}] {m.text}"
                out.append(ModelRequest(parts=[UserPromptPart(text)]))
            elif out:
                out.append(ModelResponse(parts=[TextPart(m.text)]))
        return out
