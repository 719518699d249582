"""The token operations without HTTP: each refusal is the domain error of its kind, says
where in the request it is, and leaves every table as it was (service/problems.py turns
it into the problem the routes' tests see)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from sqlalchemy import Engine

from placed.operations import change_scope, tokens
from placed.operations.errors import Conflict, Forbidden, Invalid, NotFound, OperationError
from placed.store import accounts, domains, schema
from placed.store.claims import Actor
from placed.store.database import make_engine, writing

from .service_support import table_digest


@pytest.fixture
def engine(database: str) -> Iterator[Engine]:
    root = schema.upgrade(database).root_token
    assert root is not None
    made = make_engine(database)
    with writing(made) as session:
        domains.create(session, "D1")
        domains.create(session, "D1a", "D1")
        domains.create(session, "D2")
        accounts.create(session, "A1", "D1a")
        accounts.create(session, "A2", "D2")
    yield made
    made.dispose()


def rule(actor: Actor) -> tokens.ReachRule:
    def reach(
        parents: Mapping[str, str | None], homes: Mapping[str, str]
    ) -> change_scope.TokenReach:
        return change_scope.token_reach(actor, parents, homes)

    return reach


ROOT = Actor("root", "root-admin", "r1")
D1_ADMIN = Actor("d1", "domain-admin", "r2", "D1")


@pytest.mark.parametrize(
    ("actor", "role", "scope", "refused", "kind", "where"),
    [
        (D1_ADMIN, "agent", "h1", Forbidden, "forbidden", None),
        (D1_ADMIN, "user", "A2", Forbidden, "forbidden", None),  # another domain's account
        (D1_ADMIN, "user", "nobody", Forbidden, "forbidden", None),  # as if it might exist
        (ROOT, "user", "nobody", Conflict, "invalid-scope", "/scope"),
        (ROOT, "domain-admin", None, Invalid, "invalid-scope", "/scope"),
        (D1_ADMIN, "domain-admin", None, Invalid, "invalid-scope", "/scope"),
    ],
)
def test_a_refused_token_is_a_domain_error_and_writes_nothing(
    engine: Engine,
    actor: Actor,
    role: str,
    scope: str | None,
    refused: type[OperationError],
    kind: str,
    where: str | None,
) -> None:
    before = table_digest(engine)
    with pytest.raises(refused) as raised:
        tokens.create(engine, actor, rule(actor), role, scope, "", None)
    assert raised.value.kind == kind
    pointers = [w.pointer for w in raised.value.where] if raised.value.where else None
    assert pointers == ([where] if where else None)
    assert table_digest(engine) == before


def test_a_domain_admin_manages_its_subtree_s_tokens_only(engine: Engine) -> None:
    made, text = tokens.create(engine, D1_ADMIN, rule(D1_ADMIN), "user", "A1", "", 60)
    assert text.startswith("plc_") and made["expires"] is not None
    other, _ = tokens.create(engine, ROOT, rule(ROOT), "user", "A2", "", None)
    seen = {row["accessor"] for row in tokens.listed(engine, D1_ADMIN, rule(D1_ADMIN))}
    assert made["accessor"] in seen and other["accessor"] not in seen
    with pytest.raises(NotFound):  # another domain's token is not there for it
        tokens.revoke(engine, D1_ADMIN, rule(D1_ADMIN), other["accessor"])
    revoked = tokens.revoke(engine, D1_ADMIN, rule(D1_ADMIN), made["accessor"])
    assert revoked["revoked"] is not None
    assert tokens.look_up(engine, text) is None


def test_the_last_root_admin_token_stays(engine: Engine) -> None:
    (root,) = [r for r in tokens.listed(engine, ROOT, rule(ROOT)) if r["role"] == "root-admin"]
    before = table_digest(engine)
    with pytest.raises(Conflict) as raised:
        tokens.revoke(engine, ROOT, rule(ROOT), root["accessor"])
    assert raised.value.kind == "last-root-admin"
    assert table_digest(engine) == before
