"""The night cycle end to end on small hand-made conversations (issue 5)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from mnemo import AsyncArchive, InvalidContentError, Scope, Settings, UnknownItemError
from mnemo.embed import Embeddings
from tests.conftest import snapshot
from tests.night_data import BREAKTHROUGH, START, arc_conversation, record

pytestmark = pytest.mark.future_nights  # nights run days or weeks ahead of the clock

ME = Scope("alice", "night")


def rows(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, args).fetchall()  # type: ignore[arg-type]


async def test_arc_becomes_a_block_with_the_breakthrough_verbatim(archive: AsyncArchive, database_url: str) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, START)
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=1))

    assert report.turns_scored == len(texts)
    assert report.arcs == 1
    surprisal = rows(
        database_url,
        "SELECT turn_number, surprisal, flux_state FROM mnemo.turns WHERE entity_id = %s ORDER BY turn_number",
        ME.entity_id,
    )
    assert all(s is not None and s >= 0 for _, s, _ in surprisal)
    spike_turn = 16  # the first turn about Kubernetes
    assert surprisal[spike_turn][1] > 3 * surprisal[spike_turn - 1][1]  # type: ignore[operator]
    assert surprisal[spike_turn][2] == "spike"
    assert {state for _, _, state in surprisal} <= {"baseline", "spike", "resolution", "stable"}

    blocks = rows(
        database_url,
        """SELECT kind, first_turn, last_turn, prose, coherence_gain, ties_weight, salience_scores, memory_id
           FROM mnemo.blocks WHERE entity_id = %s AND kind <> 'compound' ORDER BY first_turn""",
        ME.entity_id,
    )
    covered = [n for b in blocks for n in range(b[1], b[2] + 1)]  # type: ignore[arg-type, operator]
    assert covered == list(range(len(texts)))  # every turn in exactly one block, in order
    arc = [b for b in blocks if b[0] == "arc"]
    assert len(arc) == 1
    _, first, last, prose, gain, weight, salience, memory_id = arc[0]
    assert first <= spike_turn - 2 and last >= spike_turn + 5  # type: ignore[operator]  # margins
    live = "\n".join(z["content"] for z in prose["live_zones"])  # type: ignore[index]
    assert BREAKTHROUGH in live  # the resolution is kept verbatim
    assert gain > 0  # the arc ended less perplexed than its baseline
    assert 0 <= weight <= 1  # type: ignore[operator]
    assert set(salience) >= {"utterance_level", "exchange_level", "theme_level", "composite"}  # type: ignore[arg-type]

    # The block is searchable: recall finds its memory row, which names the block. (Over turns and
    # memories, the raw turns it quotes come first and a block with nothing new to quote is left out.)
    result = await archive.recall(ME, "why was the Postgres replica evicted?", k=5, read_only=True, kinds=("memory",))
    block_hits = [h for h in result.hits if h.metadata.get("block_id")]
    assert block_hits and block_hits[0].id == memory_id


async def test_second_run_does_nothing_twice(archive: AsyncArchive, database_url: str) -> None:
    await record(archive, ME, "s1", arc_conversation(), START)
    first = await archive.night_cycle(ME, as_of=START + timedelta(hours=1))
    counts = rows(
        database_url,
        """SELECT (SELECT count(*) FROM mnemo.blocks), (SELECT count(*) FROM mnemo.facts),
                  (SELECT sum(mention_count) FROM mnemo.facts), (SELECT count(*) FROM mnemo.memories)""",
    )
    second = await archive.night_cycle(ME, as_of=START + timedelta(hours=2))
    assert first.blocks > 0 and second.blocks == 0 and second.turns_scored == 0 and second.facts_new == 0
    again = rows(
        database_url,
        """SELECT (SELECT count(*) FROM mnemo.blocks), (SELECT count(*) FROM mnemo.facts),
                  (SELECT sum(mention_count) FROM mnemo.facts), (SELECT count(*) FROM mnemo.memories)""",
    )
    assert again == counts


async def test_session_ending_mid_arc_is_continued_by_the_next_session(
    archive: AsyncArchive, database_url: str
) -> None:
    from tests.night_data import ROUTINE, SPIKE

    await record(archive, ME, "s1", ROUTINE + ROUTINE + SPIKE[:3], START)
    await record(archive, ME, "s2", [SPIKE[0], *SPIKE[3:], *ROUTINE[:6]], START + timedelta(hours=3))
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=5))
    assert report.open_arcs >= 1
    assert report.continuations == 1
    linked = rows(
        database_url,
        """SELECT a.session_id, b.session_id, a.parent_metablock_id = b.parent_metablock_id
           FROM mnemo.blocks a JOIN mnemo.blocks b ON b.id = a.continued_by AND b.continues_from = a.id""",
    )
    assert linked == [("s1", "s2", True)]
    meta = rows(database_url, "SELECT kind, prose FROM mnemo.blocks WHERE kind = 'compound'")
    assert len(meta) == 1 and len(meta[0][1]["constituent_blocks"]) == 2  # type: ignore[index]
    assert rows(database_url, "SELECT link_type FROM mnemo.links WHERE link_type = 'continues'") == [("continues",)]


async def test_unknown_scope_and_stage_are_refused(archive: AsyncArchive) -> None:
    from mnemo import UnknownScopeError

    with pytest.raises(UnknownScopeError):
        await archive.night_cycle(Scope("nobody", "here"))
    await record(archive, ME, "s1", arc_conversation()[:4], START)
    with pytest.raises(ValueError, match="unknown night stages"):
        await archive.night_cycle(ME, stages=("surprisal", "dreaming"))


async def test_retention_removes_covered_raw_turns_and_keeps_the_blocks(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    # Blocks stay hot two cycles past their raw turns (a normal user's go cold with them).
    archive = await AsyncArchive.open(
        settings.model_copy(update={"retention_block_cycles": (2, 2, 6)}), embeddings=embeddings
    )
    try:
        await _retention_keeps_the_blocks(archive, database_url)
    finally:
        await archive.close()


async def _retention_keeps_the_blocks(archive: AsyncArchive, database_url: str) -> None:
    texts = arc_conversation()
    await record(archive, ME, "s1", texts, START)
    stages = ("surprisal", "blocks", "retention")
    # The night that cuts s1 into blocks keeps its raw turns (they arrived just now) and says so.
    first = await archive.night_cycle(ME, stages=stages)
    assert first.turns_removed == 0 and first.turns_kept == len(texts)
    await record(archive, ME, "s2", ["A brand new turn that no night has seen yet."], START + timedelta(days=3))
    # Two days later s1 is past the normal tier's raw retention (one cycle from arrival).
    report = await archive.night_cycle(ME, as_of=datetime.now(UTC) + timedelta(days=2), stages=stages)
    assert report.turns_removed == len(texts) and report.blocks_archived == 0
    left = rows(database_url, "SELECT session_id FROM mnemo.turns WHERE entity_id = %s", ME.entity_id)
    assert left == [("s2",)]  # only covered by a block of this night, if any: kept
    for table in rows(database_url, "SELECT table_name FROM vectors.spaces"):
        assert rows(
            database_url,
            f"SELECT count(*) FROM vectors.{table[0]} WHERE item_kind = 'turn' AND entity_id = %s",  # noqa: S608
            ME.entity_id,
        ) == [(1,)]
    result = await archive.recall(ME, "why was the Postgres replica evicted?", k=5, read_only=True, expand=True)
    assert result.hits and all(h.metadata.get("block_id") for h in result.hits)  # blocks and their lines
    assert any(BREAKTHROUGH in h.content for h in result.hits)


async def test_forgetting_a_turn_removes_the_blocks_and_facts_that_copied_it(
    archive: AsyncArchive, database_url: str
) -> None:
    from tests.integration.test_forget import find_anywhere

    await record(archive, ME, "s1", arc_conversation(), START)
    await archive.night_cycle(ME, as_of=START + timedelta(hours=1))
    (turn_id,) = rows(database_url, "SELECT id FROM mnemo.turns WHERE content = %s", BREAKTHROUGH)[0]
    assert find_anywhere(database_url, "node disk causes the eviction")
    assert rows(database_url, "SELECT key FROM mnemo.night_state") == [("surprisal.ngram",)]
    await archive.forget(ME, uuid.UUID(str(turn_id)))
    assert find_anywhere(database_url, "node disk causes the eviction") == {}
    assert rows(database_url, "SELECT key FROM mnemo.night_state") == []  # the n-gram counts learnt it
    await record(archive, ME, "s2", ["Back to pasta with tomato sauce."], START + timedelta(hours=2))
    report = await archive.night_cycle(ME, as_of=START + timedelta(hours=3))
    assert report.turns_scored == 1
    state = rows(database_url, "SELECT value FROM mnemo.night_state")[0][0]
    assert "disk" not in str(state) and "pasta" in str(state)  # rebuilt from the turns that remain


async def test_facts_dedup_and_a_new_value_closes_the_old_one(archive: AsyncArchive, database_url: str) -> None:
    await record(
        archive,
        ME,
        "s1",
        ["I live in Lisbon.", "Nice.", "I love hiking in the mountains.", "Cool.", "I work at Acme as an engineer."],
        START,
    )
    await record(
        archive,
        ME,
        "s2",
        [
            "I moved to Porto last month.",
            "Big change!",
            "I love hiking in the mountains.",
            "Same.",
            "I no longer work at Acme.",
        ],
        START + timedelta(days=40),
    )
    report = await archive.night_cycle(ME, as_of=START + timedelta(days=40, hours=1), stages=("surprisal", "knowledge"))
    assert report.facts_new >= 4 and report.facts_repeated >= 1 and report.facts_closed >= 2

    alice = await archive.knowledge.facts(ME, "alice")  # entity names are matched normalised
    now = {(f.attribute, f.value) for f in alice.current}
    past = {(f.attribute, f.value) for f in alice.past}
    assert ("lives in", "Porto") in now and ("lives in", "Lisbon") in past
    assert ("works at", "Acme") in past and not any(a == "works at" for a, _ in now)
    hiking = next(f for f in alice.current if f.value == "hiking in the mountains")
    assert hiking.mention_count == 2 and len(hiking.provenance) == 2
    lisbon = next(f for f in alice.past if f.value == "Lisbon")
    assert lisbon.valid_to is not None and lisbon.valid_to >= lisbon.valid_from  # type: ignore[operator]

    # The closed fact's memory is superseded by the new one: what says Porto (the fact, or the turn
    # it was read from, which stands for it) outranks it.
    result = await archive.recall(ME, "where does Alice live?", k=5, read_only=True)
    texts = [h.content for h in result.hits]
    porto = next(n for n, t in enumerate(texts) if "Porto" in t)
    assert porto < texts.index("Alice lives in Lisbon")
    triples = rows(database_url, "SELECT object, valid_to IS NULL FROM mnemo.triples WHERE predicate = 'lives in'")
    assert sorted(triples) == [("Lisbon", False), ("Porto", True)]  # type: ignore[type-var]

    with pytest.raises(UnknownItemError):
        await archive.knowledge.facts(ME, "Nobody Atall")


async def test_curation_is_staged_inspectable_and_applied_once(archive: AsyncArchive, database_url: str) -> None:
    anchor = await archive.remember(ME, "Alice is vegetarian", kind="preference", anchored=True)
    clash = await archive.remember(ME, "Alice is not vegetarian", kind="preference", status="candidate")
    fresh = await archive.remember(ME, "Alice plays the cello on Sundays", status="candidate")
    before = snapshot(database_url)

    dry = await archive.knowledge.curate(ME, dry_run=True)
    assert dry.version is None and snapshot(database_url) == before  # nothing written
    verdicts = {v.memory_id: v.classification.verdict for v in dry.changes}
    assert verdicts[clash.id] == "quarantine"
    assert verdicts[fresh.id] == "keep"  # candidate -> active
    assert anchor.id not in verdicts  # anchored, already active: kept, no change

    staged = await archive.knowledge.curate(ME, apply=False)
    assert staged.version == 1 and not staged.applied
    status = dict(rows(database_url, "SELECT id, status FROM mnemo.memories"))
    assert status[clash.id] == "candidate"  # staged, not applied
    assert await archive.knowledge.apply_curation(ME, 1) >= 2  # clash quarantined, fresh kept (candidate -> active)
    status = dict(rows(database_url, "SELECT id, status FROM mnemo.memories"))
    assert status[clash.id] == "quarantined" and status[fresh.id] == "active" and status[anchor.id] == "active"
    with pytest.raises(InvalidContentError, match="already applied"):
        await archive.knowledge.apply_curation(ME, 1)
    with pytest.raises(UnknownItemError):
        await archive.knowledge.apply_curation(ME, 7)
    result = await archive.recall(ME, "is Alice vegetarian?", k=5, read_only=True)
    assert clash.id not in [h.id for h in result.hits]  # quarantined memories are not recalled


async def test_decay_is_audited_spares_anchors_and_halves_once(archive: AsyncArchive, database_url: str) -> None:
    old = await archive.remember(ME, "The wifi password was hunter2")
    anchor = await archive.remember(ME, "My name is Alice", anchored=True)
    later = START + timedelta(days=400)
    first = await archive.night_cycle(ME, as_of=later, stages=("decay",))
    second = await archive.night_cycle(ME, as_of=later + timedelta(days=1), stages=("decay",))
    assert first.decayed_deep == 1 and second.decayed_deep == 0 and second.decayed_light == 1
    changes = rows(
        database_url,
        "SELECT memory_id, gain, reason FROM traces.weight_changes WHERE reason = 'decay' ORDER BY at",
    )
    assert [(m, g) for m, g, _ in changes] == [(old.id, 1.0), (old.id, 0.01)]
    assert anchor.id not in {m for m, _, _ in changes}
    history = await archive.inspect.why(ME, old.id)
    assert history.center < 0.2  # Beta(1, 4) -> Beta(1, 5) and a little more


async def test_insights_lower_their_sources_and_trace_back(archive: AsyncArchive, database_url: str) -> None:
    sources = [
        await archive.remember(ME, text)
        for text in (
            "Alice prefers simple deployment tools over complex infrastructure.",
            "Alice prefers simple deployment tools rather than complex infrastructure.",
            "Alice prefers simple deployment tools to complex infrastructure.",
        )
    ]
    await archive.remember(ME, "The office plant needs water on Fridays.")
    report = await archive.night_cycle(ME, stages=("insights",))
    assert report.insights == 1 and report.narratives == 1
    ((insight_id, content),) = rows(database_url, "SELECT id, content FROM mnemo.memories WHERE kind = 'insight'")
    assert str(content).startswith("Insight: ")
    chain = await archive.knowledge.why_do_i_believe(ME, insight_id)  # type: ignore[arg-type]
    assert {b.id for b in chain} == {s.id for s in sources}
    for source in sources:
        history = await archive.inspect.why(ME, source.id)
        assert history.changes[-1].reason == "insight"
        assert history.center < 0.2  # lowered, not deleted
    (story_id,) = rows(database_url, "SELECT id FROM mnemo.memories WHERE kind = 'narrative'")[0]
    story_chain = await archive.knowledge.why_do_i_believe(ME, story_id)  # type: ignore[arg-type]
    assert [b.depth for b in story_chain][:1] == [1] and {b.id for b in story_chain} >= {s.id for s in sources}


def _llm() -> tuple[object, list[str]]:
    """A FunctionModel standing in for a configured LLM: it answers each night-cycle agent by its
    instructions and records which agents were called."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    calls: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        instructions = info.instructions or ""
        if info.output_tools:  # structured extraction
            calls.append("extract")
            facts = [
                {
                    "entity": "Alice",
                    "attribute": "owns",
                    "value": "a red kayak",
                    "confidence": 0.9,
                    "source": 0,
                    "kind": "fact",
                },
                {
                    "entity": "Alice",
                    "attribute": "owns",
                    "value": "a ghost",
                    "confidence": 3.0,
                    "source": 99,
                    "kind": "fact",
                },  # out of range: must be dropped
            ]
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"facts": facts, "triples": []})])
        if "summarise" in instructions:
            calls.append("summary")
            return ModelResponse(parts=[TextPart("LLM summary of routine dinner talk.")])
        if "identity narrative" in instructions:
            calls.append("narrative")
            return ModelResponse(parts=[TextPart("I came to love pasta because of many dinners.")])
        calls.append("insight")
        return ModelResponse(parts=[TextPart("I eat pasta a lot.")])

    return FunctionModel(respond), calls


async def test_llm_path_summarises_and_extracts_through_the_model(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    model, calls = _llm()
    archive = await AsyncArchive.open(settings, embeddings=embeddings, llm=model, night_verbatim_tokens=0)
    try:
        await record(archive, ME, "s1", arc_conversation(), START)
        report = await archive.night_cycle(
            ME, as_of=START + timedelta(hours=1), stages=("surprisal", "blocks", "knowledge")
        )
    finally:
        await archive.close()
    assert {"extract", "summary"} <= set(calls)
    assert report.facts_new == 1  # the model's fact; its out-of-range one was dropped
    facts = rows(database_url, "SELECT attribute, value, provenance FROM mnemo.facts")
    assert [(a, v) for a, v, _ in facts] == [("owns", "a red kayak")]
    first_turn = rows(database_url, "SELECT id FROM mnemo.turns WHERE turn_number = 0")[0][0]
    assert facts[0][2] == [first_turn]
    summaries = [
        z["summary"]
        for (prose,) in rows(database_url, "SELECT prose FROM mnemo.blocks")
        for z in prose["dead_zone_summaries"]  # type: ignore[index]
    ]
    assert "LLM summary of routine dinner talk." in summaries


async def test_llm_outage_falls_back_to_the_offline_path(
    settings: Settings, embeddings: Embeddings, database_url: str
) -> None:
    from pydantic_ai.models.function import FunctionModel

    def broken(*_: object) -> object:
        raise RuntimeError("the model is down")

    archive = await AsyncArchive.open(settings, embeddings=embeddings, llm=FunctionModel(broken))
    try:
        await record(archive, ME, "s1", ["I live in Lisbon.", "Nice.", "I love hiking in the mountains."], START)
        report = await archive.night_cycle(ME, as_of=START + timedelta(hours=1))
    finally:
        await archive.close()
    assert report.facts_new >= 2  # the offline patterns
    assert ("lives in", "Lisbon") in rows(database_url, "SELECT attribute, value FROM mnemo.facts")


async def test_dual_embedding_and_thematic_links(settings: Settings, embeddings: Embeddings, database_url: str) -> None:
    archive = await AsyncArchive.open(
        settings, embeddings=embeddings, block_embedder="bundled", block_embedder_truncate_dim=128
    )
    try:
        texts = arc_conversation()
        await record(archive, ME, "s1", texts, START)
        await record(archive, ME, "s2", texts, START + timedelta(days=2))  # the same themes again
        await archive.night_cycle(ME, as_of=START + timedelta(days=2, hours=1), stages=("surprisal", "blocks"))
        blocks = rows(database_url, "SELECT memory_id FROM mnemo.blocks WHERE kind <> 'compound'")
        native = rows(database_url, "SELECT item_id, slug FROM vectors.native_128")
        assert sorted(m for (m,) in blocks) == sorted(i for i, _ in native)  # every block, in the second space
        assert {slug for _, slug in native} == {"sentence-transformers:all-MiniLM-L6-v2@128:128"}
        thematic = rows(
            database_url,
            """SELECT a.session_id, b.session_id, l.strength FROM mnemo.links l
               JOIN mnemo.blocks a ON a.id = l.source_id JOIN mnemo.blocks b ON b.id = l.target_id
               WHERE l.link_type = 'thematic'""",
        )
        assert ("s2", "s1") in {(a, b) for a, b, _ in thematic}  # the second night's blocks find the first's
        assert all(s >= 0.8 for _, _, s in thematic)  # type: ignore[operator]
        # The active space is unchanged: recall still searches the 384-d vectors only.
        result = await archive.recall(
            ME, "why was the Postgres replica evicted?", k=3, kinds=("memory",), read_only=True
        )
        assert result.hits[0].metadata.get("block_id") and "evict" in result.hits[0].content.lower()
        (turn_id,) = rows(
            database_url, "SELECT id FROM mnemo.turns WHERE session_id = 's1' AND content = %s", BREAKTHROUGH
        )[0]
        await archive.forget(ME, uuid.UUID(str(turn_id)))  # its block goes, in both spaces
        assert len(rows(database_url, "SELECT 1 FROM vectors.native_128")) == len(native) - 1
    finally:
        await archive.close()


async def test_curator_asks_the_llm_when_the_heuristics_see_no_contradiction(
    settings: Settings, embeddings: Embeddings
) -> None:
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    asked: list[str] = []

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        asked.append(prompt)
        verdict = "fish" in prompt  # the model knows a vegan diet rules out eating fish every day
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"response": verdict})])

    archive = await AsyncArchive.open(settings, embeddings=embeddings, llm=FunctionModel(judge))
    try:
        await archive.remember(ME, "Alice follows a strict vegan diet", kind="preference", anchored=True)
        fish = await archive.remember(ME, "Alice eats grilled fish with her diet every day", status="candidate")
        tea = await archive.remember(ME, "Alice drinks green tea with her diet every morning", status="candidate")
        result = await archive.knowledge.curate(ME, dry_run=True)
    finally:
        await archive.close()
    verdicts = {v.memory_id: v.classification.verdict for v in result.changes}
    assert verdicts[fish.id] == "quarantine" and verdicts[tea.id] == "keep"
    assert any("fish" in p for p in asked)  # the heuristics saw no negation or new value: the model decided


async def test_night_refuses_a_one_connection_pool(settings: Settings, embeddings: Embeddings) -> None:
    from mnemo import ConfigurationError

    archive = await AsyncArchive.open(settings, embeddings=embeddings, pool_max_size=1)
    try:
        await record(archive, ME, "s1", ["I live in Lisbon."], START)
        with pytest.raises(ConfigurationError, match="pool_max_size >= 2"):
            await archive.night_cycle(ME)
    finally:
        await archive.close()


async def test_a_negation_without_a_value_ends_the_open_fact(archive: AsyncArchive) -> None:
    await record(archive, ME, "s1", ["I work at the bank.", "Nice."], START)
    await record(archive, ME, "s2", ["I quit my job yesterday.", "Oh no."], START + timedelta(days=10))
    report = await archive.night_cycle(ME, as_of=START + timedelta(days=11), stages=("surprisal", "knowledge"))
    alice = await archive.knowledge.facts(ME, "Alice")
    assert report.facts_closed == 1 and not alice.current
    (bank,) = alice.past
    assert (bank.attribute, bank.value) == ("works at", "bank")
    assert bank.valid_to is not None and bank.valid_to.date() == (START + timedelta(days=9)).date()  # "yesterday"


async def test_a_move_opens_the_new_place_and_closes_only_the_old_one(archive: AsyncArchive, database_url: str) -> None:
    """ "I moved from Freising to Munich last week" states the new place and ends the old one in one
    turn: the turn that says Munich never closes Munich (fact and relation), Freising ends when the
    move happened."""
    await record(archive, ME, "s1", ["I live in Freising, it is quiet.", "Sounds peaceful."], START)
    said = START + timedelta(days=20)
    moved = ["I moved from Freising to Munich city centre last week.", "Congratulations!"]
    await record(archive, ME, "s2", moved, said)
    await archive.night_cycle(ME, as_of=said + timedelta(hours=1), stages=("surprisal", "knowledge"))
    alice = await archive.knowledge.facts(ME, "Alice")
    now = {(f.attribute, f.value): f for f in alice.current}
    past = {(f.attribute, f.value): f for f in alice.past}
    munich = now[("lives in", "Munich city centre")]
    assert munich.valid_to is None and munich.valid_from is not None
    assert munich.valid_from.date() == (said - timedelta(days=7)).date()  # "last week"
    freising = past[("lives in", "Freising")]
    assert freising.valid_to is not None and freising.valid_to.date() == munich.valid_from.date()
    triples = rows(
        database_url, "SELECT object, valid_to IS NULL FROM mnemo.triples WHERE predicate = 'lives in' ORDER BY 1"
    )
    assert ("Munich city centre", True) in triples and ("Munich city centre", False) not in triples
