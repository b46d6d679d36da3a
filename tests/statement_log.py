"""Every statement the tests' archives send, checked against DESIGN §7's single-entity rule.

tests/conftest.py installs :class:`RecordingCursor` as the cursor class of every connection a
:class:`~mnemo.store.pool.Store` opens (its pool and its start-up connection), so
``conn.execute``, ``cursor.execute``, ``executemany`` (each parameter set is a statement),
pipelined statements and ``COPY`` (checked with the rows it sent) all pass through
:func:`tests.single_entity.check` before they go to the server; each is attributed to the test
running and to the innermost mnemo function that sent it. At the end of the run the conftest
prints the counts and fails the run (exit status 1) when any statement broke the rule, listing
each one once with the tests that sent it, so the check holds for any subset of the tests.

Not covered: statements sent by another process (the CLI and ``mnemo serve``/``mnemo worker``
run as subprocesses by some tests), procrastinate's own connections (schema ``queue``, not a
chamber of entity rows) and ``pg_dump``/``pg_restore``; the statements the tests themselves send
through plain psycopg connections (to look at rows) are not mnemo's and are not recorded.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from tests.single_entity import Verdict, check, placeholders

__all__ = ["LOG", "Log", "RecordingCursor", "Sent"]


@dataclass(frozen=True)
class Sent:
    """One statement as sent, and the check's verdict on it."""

    sql: str
    site: str
    test: str
    verdict: Verdict


@dataclass
class Log:
    """What the run's archives sent: counts and the statements that broke the rule."""

    test: str = "(no test)"  # the test running; set by tests/conftest.py
    sent: int = 0
    checked: int = 0  # statements naming a mnemo/vectors table
    allowed: Counter[str] = field(default_factory=Counter)  # by ALLOWED key
    distinct: set[str] = field(default_factory=set)  # texts of the checked statements
    violations: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (statement, problem) -> tests
    listeners: list[list[Sent]] = field(default_factory=list)

    def record(self, query: Any, params: Any, context: Any, rows: Sequence[Sequence[Any]] = ()) -> None:
        text = query.as_string(context) if isinstance(query, sql.Composable) else query
        site = _site()
        try:
            statement, values = placeholders(text, params)
            verdict = check(statement, values, site, rows)
        except Exception as exc:  # a checker that cannot judge a statement fails the run too
            statement = text if isinstance(text, str) else bytes(text).decode()
            verdict = Verdict(touches=True, problem=f"the checker failed: {type(exc).__name__}: {exc}")
        self.sent += 1
        if verdict.touches:
            self.checked += 1
            self.distinct.add(statement)
        if verdict.allowed:
            self.allowed[verdict.allowed] += 1
        if verdict.problem:
            key = (normalise(statement), verdict.problem)
            self.violations.setdefault(key, set()).add(f"{self.test} <- {site}")
        for listener in self.listeners:
            listener.append(Sent(statement, site, self.test, verdict))

    @contextmanager
    def listen(self) -> Iterator[list[Sent]]:
        """Collect the statements sent inside the block (tests/integration/test_single_entity.py)."""
        sent: list[Sent] = []
        self.listeners.append(sent)
        try:
            yield sent
        finally:
            self.listeners.remove(sent)

    def summary(self) -> list[str]:
        lines = [
            f"single-entity rule (DESIGN §7): {self.sent} statements sent by mnemo, {self.checked} of them "
            f"naming mnemo/vectors tables checked ({len(self.distinct)} distinct), "
            f"{sum(self.allowed.values())} allowed by design, {len(self.violations)} distinct violations"
        ]
        lines += [f"  allowed: {site} x{count}" for site, count in sorted(self.allowed.items())]
        for (statement, problem), tests in sorted(self.violations.items()):
            lines.append(f"VIOLATION: {problem}\n    {statement}")
            lines += [f"    sent by {t}" for t in sorted(tests)[:5]]
        if self.violations:
            lines.append("the run fails: these statements break DESIGN §7 (bind one entity, or allow the sender)")
        return lines


LOG = Log()


class RecordingCursor(psycopg.AsyncCursor[Any]):
    """A cursor that shows each statement to :data:`LOG` before sending it."""

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        LOG.record(query, params, self)
        return await super().execute(query, params, **kwargs)

    async def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
        params_seq = list(params_seq)
        for params in params_seq:
            LOG.record(query, params, self)
        await super().executemany(query, params_seq, **kwargs)

    @asynccontextmanager
    async def copy(self, statement: Any, params: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        rows: list[Sequence[Any]] = []
        async with super().copy(statement, params, **kwargs) as copy:
            write_row = copy.write_row

            async def recorded(row: Sequence[Any]) -> None:
                rows.append(row)
                await write_row(row)

            copy.write_row = recorded  # type: ignore[method-assign]
            yield copy
        LOG.record(statement, params, self, rows)

    async def stream(self, query: Any, params: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        LOG.record(query, params, self)
        async for row in super().stream(query, params, **kwargs):
            yield row


def _site() -> str:
    """The innermost public mnemo function on the stack (not the pool's): where the statement was
    written. A private helper (``_rows``) runs what its caller wrote, so the caller is named."""
    frame = sys._getframe(2)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("mnemo.") and module != "mnemo.store.pool" and not frame.f_code.co_name.startswith("_"):
            return f"{module}.{frame.f_code.co_qualname}"
        frame = frame.f_back  # type: ignore[assignment]
    return "(outside mnemo)"


def normalise(statement: str, limit: int = 600) -> str:
    text = re.sub(r"\s+", " ", statement).strip()
    return text if len(text) <= limit else text[:limit] + " ..."
