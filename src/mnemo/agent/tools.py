"""System 1's tools: the actions it may take, System 2 as a tool, and its own docs.

Seeds: cognitive-plan §3.4 (the output may imply an action: a communication, checked against the
input's source before delivery, or an internal action that updates the agent's state), §3.6
(System 2 is called as a tool by System 1, which stays in the driver's seat), §4.10 (reading its
own docs). A tool only notes what System 1 asked for; the loop checks and carries out the actions
after the model call, so nothing leaves the agent unchecked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_ai import ModelRetry

from mnemo.errors import MnemoError

if TYPE_CHECKING:
    from mnemo.agent.loop import Agent, _Run

__all__ = ["system1_tools"]


def system1_tools(agent: Agent, run: _Run) -> list[Any]:
    """The tools System 1 gets for this input."""
    tools: list[Any] = _actions(run)
    if agent.system2 is not None:
        tools.append(_consult(agent, run))
    if agent.docs is not None:
        tools += _docs(agent, run)
    return tools


def _actions(run: _Run) -> list[Any]:
    def tell_user(message: str) -> str:
        """Send the user a message of your own (not needed to answer the user: your answer is sent).
        It is delivered only if its source and your confidence pass the check."""
        run.intents.append(("communication", message))
        return "queued for the source check"

    def note_for_later(thought: str) -> str:
        """Keep a thought to come back to: it competes for attention in a later cycle."""
        run.intents.append(("internal", thought))
        return "noted"

    return [tell_user, note_for_later]


def _consult(agent: Agent, run: _Run) -> Any:
    async def consult_system2(question: str) -> str:
        """Ask System 2, a slower and stronger reasoner, when you are unsure or the stakes are high.
        Returns its answer and why; you still give the final answer."""
        opinion = await agent._second_opinion(
            run, f"(System 1 asked for help: {question})", "", "asked for help", question
        )
        run.tools.append(("consult_system2", True))
        run.escalations.append("system1_request")
        return f"{opinion.answer}\n(System 2's reasoning: {opinion.explanation})"

    return consult_system2


def _docs(agent: Agent, run: _Run) -> list[Any]:
    docs = agent.docs
    assert docs is not None

    def list_docs(path: str = "") -> list[str]:
        """List a docs directory (``""``: the roots)."""
        try:
            found = docs.list(path)
        except MnemoError as exc:  # the model is told why, and may try another path
            run.tools.append(("list_docs", False))
            raise ModelRetry(str(exc)) from exc
        run.tools.append(("list_docs", True))
        return found

    def read_doc(path: str) -> str:
        """Read a text file of the docs, e.g. ``docs/notes.md``."""
        try:
            text = docs.read(path)
        except MnemoError as exc:
            run.tools.append(("read_doc", False))
            raise ModelRetry(str(exc)) from exc
        run.tools.append(("read_doc", True))
        return text

    return [list_docs, read_doc]
