"""Administration of scopes, grants and tokens: the archive's listings and the ``mnemo scopes``,
``grant``, ``revoke``, ``grants`` and ``token list`` commands, and token expiry (``create_token(
expires_at=...)``, ``token create --expires``), against a real test database."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import shlex
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import httpx
import psycopg
import pytest

from mnemo import (
    Archive,
    AsyncArchive,
    AuthenticationError,
    InvalidContentError,
    InvalidScopeError,
    Scope,
    ScopeSummary,
    TokenInfo,
    UnknownScopeError,
)
from mnemo.access.control import token_hash
from mnemo.config import Settings
from mnemo.embed import Embeddings
from mnemo.interfaces.http import create_app
from mnemo.interfaces.mcp import _Opening, _TokenVerifier
from mnemo.store import migrate
from mnemo.store import tokens as token_rows
from tests.conftest import snapshot
from tests.integration.test_cli import run
from tests.integration.test_http import serve

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
    await archive.access.create_scope(Scope("bob"))

    every = await archive.access.scopes()
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

    assert [s.scope for s in await archive.access.scopes("alice")] == [ALICE, Scope("alice", "work")]
    assert await archive.access.scopes("nobody") == []
    with pytest.raises(InvalidScopeError):
        await archive.access.scopes("bad entity")


async def test_grants_lists_grantees_and_refuses_unknown_scopes(archive: AsyncArchive, database_url: str) -> None:
    await archive.remember(ALICE, "Alice's diary")
    assert await archive.access.grants(ALICE) == []
    assert await archive.access.grant(ALICE, "carol") is True
    assert await archive.access.grant(ALICE, "bob") is True
    assert await archive.access.grants(ALICE) == ["bob", "carol"]
    assert await archive.access.revoke(ALICE, "carol") is True
    assert await archive.access.grants(ALICE) == ["bob"]
    with pytest.raises(UnknownScopeError, match="alice/nowhere"):
        await archive.access.grants(Scope("alice", "nowhere"))
    before = snapshot(database_url)
    with pytest.raises(InvalidContentError, match="owns scope"):
        await archive.access.grant(ALICE, "alice")
    assert snapshot(database_url) == before


def test_tokens_lists_without_secrets(sync_archive: Archive) -> None:
    assert sync_archive.access.tokens("dave") == []
    token, first = sync_archive.access.create_token("dave", label="laptop")
    _, second = sync_archive.access.create_token("dave", namespace="work")
    sync_archive.access.create_token("erin")
    assert sync_archive.access.revoke_token("dave", first)

    listed = sync_archive.access.tokens("dave")
    assert [t.id for t in listed] == [first, second]
    assert all(isinstance(t, TokenInfo) for t in listed)
    assert (listed[0].label, listed[0].namespace) == ("laptop", None)
    assert listed[0].revoked_at is not None and listed[0].revoked_at >= listed[0].created_at
    assert (listed[1].namespace, listed[1].revoked_at) == ("work", None)
    assert token not in repr(listed)
    with pytest.raises(InvalidScopeError):
        sync_archive.access.tokens("bad entity")


# --- the command line -------------------------------------------------------------------


def test_cli_scopes_table_and_json(env: dict[str, str], sync_archive: Archive) -> None:
    sync_archive.remember(Scope("alice", "home"), "Alice waters the ferns on Sundays")
    sync_archive.record_turn(Scope("alice", "home"), "s1", "user", "ferns again")
    sync_archive.access.create_scope(Scope("bob", "lab"))

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
    assert code == 0 and json.loads(out) == {"grantee": "bob", "created": False}
    assert run(env, "grant", "b[o]b", "-e", "alice", "-n", "private")[0] == 1  # refused: invalid id
    assert run(env, "grant", "a.b+c@d", "-e", "alice", "-n", "private")[0] == 0
    code, out, _ = run(env, "grants", "-e", "alice", "-n", "private")
    assert code == 0 and out.splitlines() == ["a.b+c@d", "bob"]
    code, out, _ = run(env, "grants", "-e", "alice", "-n", "private", "--json")
    assert code == 0 and json.loads(out) == {"scope": "alice/private", "grantees": ["a.b+c@d", "bob"]}
    assert sync_archive.access.grants(ALICE) == ["a.b+c@d", "bob"]

    code, out, _ = run(env, "revoke", "bob", "-e", "alice", "-n", "private")
    assert code == 0 and "revoked bob's read access to alice/private" in out
    assert sync_archive.access.grants(ALICE) == ["a.b+c@d"]
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


def test_cli_errors_name_the_command_that_fixes_them_and_that_command_works(
    env: dict[str, str], sync_archive: Archive
) -> None:
    sync_archive.remember(ALICE, "Alice keeps the spare key under the mat")
    read = ("recall", "spare key", "-e", "alice", "-n", "private", "--as-entity", "bob")
    for args, fix in (
        (read, "mnemo grant bob -e alice -n private"),
        (("export", "alice/private", "--as", "bob"), "mnemo grant bob -e alice -n private --export"),
    ):
        code, _, err = run(env, *args)
        assert code == 1 and f"`{fix}`" in err, err
        assert "grant(" not in err and "Scope(" not in err and "=True" not in err and "POST" not in err
        code, out, err = run(env, *shlex.split(fix)[1:])
        assert code == 0 and "granted bob" in out, err
        code, _, err = run(env, *args)
        assert code == 0, err
    sync_archive.record_turn(ALICE, "s1", "user", "Nobody came to the party.")  # a turn the night has not read
    code, _, err = run(env, "facts", "Nobody", "-e", "alice", "-n", "private")
    assert code == 1 and "`mnemo night -e alice -n private`" in err and "night_cycle(" not in err


def test_cli_grants_of_a_scope_without_any(env: dict[str, str], sync_archive: Archive) -> None:
    sync_archive.access.create_scope(Scope("cli"))
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
    assert set(rows[0]) == {"id", "namespace", "label", "created_at", "revoked_at", "expires_at", "expired"}
    assert (rows[0]["expires_at"], rows[0]["expired"]) == (None, False)
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


# --- token expiry (issue 12, "expiry on create") ----------------------------------------


def expire_now(url: str, token_id: uuid.UUID | str) -> None:
    """Move a token's expiry into the past, as time passing would (no sleeping)."""
    with psycopg.connect(url) as conn:
        done = conn.execute(
            "UPDATE mnemo.tokens SET expires_at = now() - interval '1 second' WHERE id = %s", (str(token_id),)
        )
        assert done.rowcount == 1


def forged(entity: str) -> str:
    """A well-formed token for ``entity`` that was never issued."""
    encoded = base64.urlsafe_b64encode(entity.encode()).decode().rstrip("=")
    return f"mn1.{encoded}.{secrets.token_urlsafe(32)}"


class _Ready:
    """The MCP verifier's archive source, already open (the test's own archive)."""

    def __init__(self, archive: AsyncArchive) -> None:
        self.archive = archive

    async def get(self) -> AsyncArchive:
        return self.archive


async def test_an_expired_token_is_refused_like_an_unknown_one(archive: AsyncArchive, database_url: str) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    token, token_id = await archive.access.create_token("dave", label="ci", expires_at=soon)
    lasting, _ = await archive.access.create_token("dave")
    who = await archive.access.verify_token(token)
    assert (who.entity_id, who.namespace, who.token_id) == ("dave", None, token_id)
    verifier = _TokenVerifier(cast(_Opening, _Ready(archive)))
    granted = await verifier.verify_token(token)
    assert granted is not None and granted.client_id == "dave"
    [listed, forever] = await archive.access.tokens("dave")
    assert listed.expires_at == soon and listed.expired is False
    assert (forever.expires_at, forever.expired) == (None, False)

    expire_now(database_url, token_id)
    with pytest.raises(AuthenticationError) as expired:
        await archive.access.verify_token(token)
    with pytest.raises(AuthenticationError) as unknown:
        await archive.access.verify_token(forged("dave"))
    assert str(expired.value) == str(unknown.value) == "unknown or expired bearer token"
    assert await verifier.verify_token(token) is None  # MCP refuses it too
    assert (await archive.access.verify_token(lasting)).entity_id == "dave"  # the other token still works
    [listed, forever] = await archive.access.tokens("dave")
    assert listed.expired is True and listed.expires_at is not None and listed.expires_at < datetime.now(UTC)
    assert forever.expired is False


async def test_an_expiry_in_the_past_is_refused_at_create(archive: AsyncArchive, database_url: str) -> None:
    before = snapshot(database_url)
    for when in (datetime.now(UTC) - timedelta(seconds=1), datetime(2001, 1, 1)):  # naive: taken as UTC
        with pytest.raises(InvalidContentError, match="is not in the future"):
            await archive.access.create_token("dave", expires_at=when)
    with pytest.raises(InvalidContentError, match="expires_at must be a datetime"):
        await archive.access.create_token("dave", expires_at=cast(Any, 30))
    assert snapshot(database_url) == before
    # naive future times are UTC, as every time mnemo takes
    _, token_id = await archive.access.create_token("dave", expires_at=datetime(2999, 1, 1, 12))
    [info] = await archive.access.tokens("dave")
    assert info.id == token_id and info.expires_at == datetime(2999, 1, 1, 12, tzinfo=UTC)


def test_http_answers_an_expired_token_exactly_as_an_unknown_one(
    settings: Settings, embeddings: Embeddings, sync_archive: Archive, database_url: str
) -> None:
    live, _ = sync_archive.access.create_token("erin", expires_at=datetime.now(UTC) + timedelta(minutes=5))
    stale = forged("erin")  # issued through the store layer with an expiry already past

    async def store_expired() -> None:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await token_rows.create_token(
                conn, "erin", token_hash(stale), uuid.uuid4(), None, None, datetime.now(UTC) - timedelta(days=1)
            )

    asyncio.run(store_expired())
    with serve(create_app(settings, embeddings=embeddings)) as url, httpx.Client(base_url=url, timeout=30) as c:

        def status(token: str) -> httpx.Response:
            return c.get("/v1/status", headers={"Authorization": f"Bearer {token}"})

        assert status(live).status_code == 200 and status(live).json()["entity"] == "erin"
        expired, unknown = status(stale), status(forged("erin"))
        assert expired.status_code == unknown.status_code == 401
        assert expired.json() == unknown.json() and expired.json()["error"]["code"] == "unauthenticated"
        assert expired.headers.get("www-authenticate") == unknown.headers.get("www-authenticate")


def test_cli_token_create_expires_and_list_marks_expired(
    env: dict[str, str], sync_archive: Archive, database_url: str
) -> None:
    start = datetime.now(UTC)
    code, out, _ = run(env, "token", "create", "dave", "--expires", "30d", "--json")
    month = json.loads(out)
    end = datetime.now(UTC)
    expires = datetime.fromisoformat(month["expires_at"])
    assert code == 0 and start + timedelta(days=30) <= expires <= end + timedelta(days=30)
    code, out, err = run(env, "token", "create", "dave", "--expires", "90m", "--label", "short")
    assert code == 0 and out.startswith("mn1.") and "valid until" in err
    code, out, _ = run(env, "token", "create", "dave", "--json")
    assert code == 0 and json.loads(out)["expires_at"] is None

    before = snapshot(database_url)
    for bad, reason in (
        ("0", "is zero"),
        ("0d", "is zero"),
        ("12", "has no unit"),
        ("-1d", "is negative"),
        ("2 weeks", "not a duration"),
        ("soon", "not a duration"),
        ("9999w", "longer than 100 years"),
    ):
        code, out, err = run(env, "token", "create", "dave", "--expires", bad)
        assert code == 2 and out == "" and "--expires" in err and reason in err, (bad, err)
    assert snapshot(database_url) == before  # nothing created

    expire_now(database_url, month["id"])
    code, out, _ = run(env, "token", "list", "dave", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0 and len(rows) == 3
    assert rows[month["id"]]["expired"] is True
    assert datetime.fromisoformat(rows[month["id"]]["expires_at"]) < datetime.now(UTC)
    [short] = [r for r in rows.values() if r["label"] == "short"]
    assert short["expired"] is False and datetime.fromisoformat(short["expires_at"]) > datetime.now(UTC)
    code, out, _ = run(env, "token", "list", "dave")
    assert code == 0 and "expires" in out and out.count("EXPIRED") == 1 and out.count("never") == 1
    [expired_line] = [line for line in out.splitlines() if month["id"] in line]
    assert "EXPIRED" in expired_line


async def test_a_database_migrated_before_0008_gains_token_expiry(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Databases made by the previous release have 0009 (turn arrival) but not 0008: it still applies.
    every = migrate.load_migrations()
    monkeypatch.setattr(migrate, "load_migrations", lambda: [m for m in every if m.version != 8])
    async with await psycopg.AsyncConnection.connect(empty_database_url, autocommit=True) as conn:
        assert 9 in await migrate.apply_migrations(conn)
        monkeypatch.setattr(migrate, "load_migrations", lambda: every)
        assert await migrate.apply_migrations(conn) == [8]
        cur = await conn.execute(
            """SELECT is_nullable FROM information_schema.columns
               WHERE table_name = 'tokens' AND column_name = 'expires_at'"""
        )
        assert await cur.fetchall() == [("YES",)]
