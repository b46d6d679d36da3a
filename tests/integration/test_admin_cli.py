"""Administration of scopes, grants and tokens: the archive's listings and the ``mnemo scopes``,
``grant``, ``revoke``, ``grants`` and ``token list`` commands, against a real test database."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from mnemo import (
    Archive,
    AsyncArchive,
    InvalidContentError,
    InvalidScopeError,
    Scope,
    ScopeSummary,
    TokenInfo,
    UnknownScopeError,
)
from tests.conftest import snapshot
from tests.integration.test_cli import run

ALICE = Scope("alice", "private")


@pytest.fixture
def env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return {"MNEMO_DATABASE_URL": database_url, "MNEMO_HOME": str(tmp_path), "MNEMO_ENTITY": "cli"}


# --- the archive ------------------------------------------------------------------------


async def test_scopes_counts_each_chamber_and_filters_by_entity(archive: AsyncArchive) -> None:
    await archive.remember(ALICE, "Alice hides the spare key under the mat")
    await archive.remember(ALICE, "Alice's bike is green")
    await archive.record_turn(ALICE, "s1", "user", "I bought a new bike")
    await archive.record_turn(Scope("alice", "work"), "s1", "user", "Standup is at ten")
    await archive.create_scope(Scope("bob"))

    every = await archive.scopes()
    by_scope = {s.scope: s for s in every}
    assert [s.scope for s in every] == [Scope("alice", "private"), Scope("alice", "work"), Scope("bob")]
    private = by_scope[ALICE]
    assert isinstance(private, ScopeSummary)
    assert (private.turns, private.memories, private.blocks, private.facts) == (1, 2, 0, 0)
    assert (by_scope[Scope("alice", "work")].turns, by_scope[Scope("alice", "work")].memories) == (1, 0)
    empty = by_scope[Scope("bob")]
    assert (empty.turns, empty.memories, empty.blocks, empty.facts) == (0, 0, 0, 0)
    assert isinstance(private.last_write, datetime) and private.last_write.tzinfo is not None
    assert empty.last_write >= private.last_write  # an empty scope's last write is its creation

    assert [s.scope for s in await archive.scopes("alice")] == [ALICE, Scope("alice", "work")]
    assert await archive.scopes("nobody") == []
    with pytest.raises(InvalidScopeError):
        await archive.scopes("bad entity")


async def test_grants_lists_grantees_and_refuses_unknown_scopes(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ALICE, "Alice's diary")
    assert await archive.grants(ALICE) == []
    assert await archive.grant(ALICE, "carol") is True
    assert await archive.grant(ALICE, "bob") is True
    assert await archive.grants(ALICE) == ["bob", "carol"]
    assert await archive.revoke(ALICE, "carol") is True
    assert await archive.grants(ALICE) == ["bob"]
    with pytest.raises(UnknownScopeError, match="alice/nowhere"):
        await archive.grants(Scope("alice", "nowhere"))
    before = snapshot(database_url)
    with pytest.raises(InvalidContentError, match="owns scope"):
        await archive.grant(ALICE, "alice")
    assert snapshot(database_url) == before


def test_tokens_lists_without_secrets(sync_archive: Archive) -> None:
    assert sync_archive.tokens("dave") == []
    token, first = sync_archive.create_token("dave", label="laptop")
    _, second = sync_archive.create_token("dave", namespace="work")
    sync_archive.create_token("erin")
    assert sync_archive.revoke_token("dave", first)

    listed = sync_archive.tokens("dave")
    assert [t.id for t in listed] == [first, second]
    assert all(isinstance(t, TokenInfo) for t in listed)
    assert (listed[0].label, listed[0].namespace) == ("laptop", None)
    assert listed[0].revoked_at is not None and listed[0].revoked_at >= listed[0].created_at
    assert (listed[1].namespace, listed[1].revoked_at) == ("work", None)
    assert token not in repr(listed)
    with pytest.raises(InvalidScopeError):
        sync_archive.tokens("bad entity")


# --- the command line -------------------------------------------------------------------


def test_cli_scopes_table_and_json(env: dict[str, str], sync_archive: Archive) -> None:
    sync_archive.remember(Scope("alice", "home"), "Alice waters the ferns on Sundays")
    sync_archive.record_turn(Scope("alice", "home"), "s1", "user", "ferns again")
    sync_archive.create_scope(Scope("bob", "lab"))

    code, out, _ = run(env, "scopes", "--json")
    data = json.loads(out)
    assert code == 0 and [row["scope"] for row in data] == ["alice/home", "bob/lab"]
    assert {k: data[0][k] for k in ("turns", "memories", "blocks", "facts")} == {
        "turns": 1,
        "memories": 1,
        "blocks": 0,
        "facts": 0,
    }
    assert datetime.fromisoformat(data[0]["last_write"]).tzinfo is not None

    code, out, _ = run(env, "scopes", "--entity", "bob", "--json")
    assert code == 0 and [row["scope"] for row in json.loads(out)] == ["bob/lab"]
    code, out, _ = run(env, "scopes")
    assert code == 0 and "alice/home" in out and "bob/lab" in out and "memories" in out
    code, out, err = run(env, "scopes", "-e", "ghost")
    assert code == 0 and out == "" and "no scopes of ghost" in err
    code, _, err = run(env, "scopes", "-e", "bad entity")
    assert code == 1 and "invalid entity_id" in err


def test_cli_grant_grants_revoke(env: dict[str, str], sync_archive: Archive, database_url: str) -> None:
    sync_archive.remember(ALICE, "Alice's [b]secret[/b] recipe")
    code, out, _ = run(env, "grant", "bob", "-e", "alice", "-n", "private")
    assert code == 0 and "granted bob read access to alice/private" in out
    code, out, _ = run(env, "grant", "bob", "-e", "alice", "-n", "private", "--json")
    assert code == 0 and json.loads(out) == {"scope": "alice/private", "grantee": "bob", "granted": False}
    assert run(env, "grant", "b[o]b", "-e", "alice", "-n", "private")[0] == 1  # refused: invalid id
    assert run(env, "grant", "a.b+c@d", "-e", "alice", "-n", "private")[0] == 0
    code, out, _ = run(env, "grants", "-e", "alice", "-n", "private")
    assert code == 0 and out.splitlines() == ["a.b+c@d", "bob"]
    code, out, _ = run(env, "grants", "-e", "alice", "-n", "private", "--json")
    assert code == 0 and json.loads(out) == {"scope": "alice/private", "grantees": ["a.b+c@d", "bob"]}
    assert sync_archive.grants(ALICE) == ["a.b+c@d", "bob"]

    code, out, _ = run(env, "revoke", "bob", "-e", "alice", "-n", "private")
    assert code == 0 and "revoked bob's read access to alice/private" in out
    assert sync_archive.grants(ALICE) == ["a.b+c@d"]
    code, _, err = run(env, "revoke", "bob", "-e", "alice", "-n", "private")
    assert code == 1 and "bob has no grant on alice/private" in err

    before = snapshot(database_url)
    for args, message in (
        (("grant", "alice", "-e", "alice", "-n", "private"), "owns scope"),
        (("grant", "bob", "-e", "alice", "-n", "nowhere"), "does not exist"),
        (("grant", "bad id", "-e", "alice", "-n", "private"), "invalid entity_id"),
        (("grant", "bob", "-e", "alice", "-n", "bad ns"), "invalid namespace"),
        (("revoke", "bad id", "-e", "alice", "-n", "private"), "invalid entity_id"),
        (("grants", "-e", "alice", "-n", "nowhere"), "does not exist"),
        (("grants", "-e", "bad entity"), "invalid entity_id"),
    ):
        code, _, err = run(env, *args)
        assert code == 1 and message in err and err.startswith("error:"), (args, err)
    assert snapshot(database_url) == before
    code, out, err = run(env, "grants", "-e", "cli", "-n", "default")  # MNEMO_ENTITY; scope not created yet
    assert code == 1 and "cli/default does not exist" in err


def test_cli_grants_of_a_scope_without_any(env: dict[str, str], sync_archive: Archive) -> None:
    sync_archive.create_scope(Scope("cli"))
    code, out, err = run(env, "grants")  # scope from MNEMO_ENTITY and the default namespace
    assert code == 0 and out == "" and "no grants on cli/default" in err
    code, out, _ = run(env, "grants", "--json")
    assert code == 0 and json.loads(out) == {"scope": "cli/default", "grantees": []}


def test_cli_token_list_never_prints_secrets(env: dict[str, str], sync_archive: Archive) -> None:
    code, out, err = run(env, "token", "create", "dave", "--label", "[red]laptop[/red]", "--json")
    created = json.loads(out)
    code, out, _ = run(env, "token", "create", "dave", "-n", "work", "--json")
    second = json.loads(out)
    assert run(env, "token", "revoke", "dave", created["id"])[0] == 0

    code, out, _ = run(env, "token", "list", "dave", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == [created["id"], second["id"]]
    assert set(rows[0]) == {"id", "namespace", "label", "created_at", "revoked_at"}
    assert rows[0]["label"] == "[red]laptop[/red]" and rows[0]["revoked_at"] is not None
    assert rows[1]["namespace"] == "work" and rows[1]["revoked_at"] is None
    assert created["token"] not in out and second["token"] not in out

    code, out, _ = run(env, "token", "list", "dave")
    assert code == 0 and created["id"] in out and second["id"] in out
    assert "[red]laptop[/red]" in out  # stored text printed literally, not as markup
    assert created["token"] not in out and second["token"] not in out
    code, out, err = run(env, "token", "list", "nobody")
    assert code == 0 and out == "" and "no tokens for nobody" in err
    code, _, err = run(env, "token", "list", "bad entity")
    assert code == 1 and "invalid entity_id" in err
    assert uuid.UUID(created["id"])
