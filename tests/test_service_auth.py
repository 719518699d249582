"""Tokens over HTTP: every way a token fails is one 401; a role a route does not allow
is a 403; /v1/tokens creates (the secret shown once), lists (never a secret) and
revokes, a domain-admin within its subtree only; each change writes its event."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, get_args

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.operations.scopes import accounts_in, domain_of_account, subtree
from placed.service import create_app
from placed.service import tokens as token_routes
from placed.service.auth import Caller, TrustedTokens
from placed.store import accounts, domains, events, targets
from placed.store import tokens as store_tokens
from placed.store.credentials import parse
from placed.store.database import reading, writing
from placed.store.tables import ROLES, now

from .service_support import bearer, issue, served, table_digest

PROBLEM = "application/problem+json"


@dataclass
class Setup:
    app: FastAPI
    client: TestClient
    root: str

    def create(self, token: str, **body: Any) -> httpx.Response:
        answer: httpx.Response = self.client.post("/v1/tokens", json=body, headers=bearer(token))
        return answer

    def listed(self, token: str) -> list[dict[str, Any]]:
        answer = self.client.get("/v1/tokens", headers=bearer(token))
        assert answer.status_code == 200, answer.text
        items = answer.json()["items"]
        assert isinstance(items, list)
        return items

    def digest(self) -> str:
        return table_digest(self.app.state.database)


@pytest.fixture
def setup(database: str) -> Setup:
    """ROOT > eng > eng-web (account acme), ROOT > sales (account globex); target h1."""
    app, root = served(database)
    with writing(app.state.database) as session:
        domains.create(session, "eng")
        domains.create(session, "eng-web", parent="eng")
        domains.create(session, "sales")
        accounts.create(session, "acme", "eng-web")
        accounts.create(session, "globex", "sales")
        targets.create(session, "h1", {"cpu": 4})
    return Setup(app, TestClient(app), root)


def accessor(text: str) -> str:
    parts = parse(text)
    assert parts is not None
    return parts.accessor


def assert_problem(answer: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    body = answer.json()
    assert body["type"] == f"urn:placed:problem:{kind}"
    assert body["request_id"] == answer.headers["x-request-id"]
    assert isinstance(body, dict)
    return body


def test_every_way_a_token_fails_is_the_same_401(setup: Setup) -> None:
    root_accessor = accessor(setup.root)
    headers: dict[str, dict[str, str]] = {
        "no header": {},
        "empty": {"Authorization": ""},
        "no token after Bearer": {"Authorization": "Bearer "},
        "another scheme": {"Authorization": f"Basic {setup.root}"},
        "not a token": {"Authorization": "Bearer hello"},
        "malformed": {"Authorization": "Bearer plc_xyz_!!"},
        "unknown accessor": bearer(f"plc_{'0' * 16}_{'a' * 43}"),
        "wrong secret": bearer(f"plc_{root_accessor}_{'a' * 43}"),
        "expired": bearer(issue(setup.app, "root-admin", expired=True)),
        "revoked": bearer(issue(setup.app, "root-admin", revoked=True)),
    }
    bodies = {}
    for name, given in headers.items():
        answer = setup.client.get("/v1/tokens", headers=given)
        body = assert_problem(answer, 401, "unauthenticated")
        assert answer.headers["www-authenticate"] == "Bearer", name
        body.pop("request_id")
        bodies[name] = body
    # One body for all of them: the answer never says which it was.
    assert len({str(body) for body in bodies.values()}) == 1, bodies
    assert "plc_" in bodies["no header"]["detail"]
    # The same token, live, is served.
    assert setup.client.get("/v1/tokens", headers=bearer(setup.root)).status_code == 200


def test_the_token_is_checked_before_a_malformed_body_is_answered(setup: Setup) -> None:
    def send(token: str | None) -> httpx.Response:
        headers = {"content-type": "application/json", **(bearer(token) if token else {})}
        answer: httpx.Response = setup.client.post(
            "/v1/tokens", content=b"{not json", headers=headers
        )
        return answer

    answer = send(None)
    assert_problem(answer, 401, "unauthenticated")
    assert answer.headers["www-authenticate"] == "Bearer"
    assert_problem(send(issue(setup.app, "user", "acme")), 403, "forbidden")
    assert_problem(send(setup.root), 422, "invalid-request")


def test_a_live_token_whose_role_the_route_does_not_allow_is_403(setup: Setup) -> None:
    user = issue(setup.app, "user", "acme")
    agent = issue(setup.app, "agent", "h1")
    body = assert_problem(setup.client.get("/v1/tokens", headers=bearer(user)), 403, "forbidden")
    assert "root-admin, domain-admin" in body["detail"] and "user" in body["detail"]
    assert "www-authenticate" not in setup.client.get("/v1/tokens", headers=bearer(user)).headers
    before = setup.digest()
    refused = setup.create(agent, role="agent", scope="h1")
    assert_problem(refused, 403, "forbidden")
    assert setup.digest() == before
    # Any token may plan.
    plan = setup.client.post("/v1/plan", json={"inventory": [{"id": "h1"}]}, headers=bearer(agent))
    assert plan.status_code == 200, plan.text


def test_root_creates_a_token_shown_once_lists_it_without_secrets_and_revokes_it(
    setup: Setup,
) -> None:
    answer = setup.create(setup.root, role="user", scope="acme", description="CI of acme")
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert set(made) == {
        *("accessor", "role", "scope", "description", "created", "expires", "revoked"),
        "token",
    }
    assert (made["role"], made["scope"], made["description"]) == ("user", "acme", "CI of acme")
    assert made["expires"] is None and made["revoked"] is None
    text = made["token"]
    assert accessor(text) == made["accessor"]
    # The new token works.
    planned = setup.client.post("/v1/plan", json={"inventory": []}, headers=bearer(text))
    assert planned.status_code == 200, planned.text

    listing = setup.client.get("/v1/tokens", headers=bearer(setup.root))
    secret = text.split("_", 2)[2]
    assert secret not in listing.text and "token" not in listing.json()["items"][0]
    items = listing.json()["items"]
    assert [item["accessor"] for item in items] == [accessor(setup.root), made["accessor"]]
    assert all("secret" not in str(item) for item in items)

    revoked = setup.client.delete(f"/v1/tokens/{made['accessor']}", headers=bearer(setup.root))
    assert revoked.status_code == 200, revoked.text
    assert revoked.json()["revoked"] is not None
    assert secret not in revoked.text
    refused = setup.client.post("/v1/plan", json={"inventory": []}, headers=bearer(text))
    assert_problem(refused, 401, "unauthenticated")
    # Again: nothing changes, the first time stays.
    before = setup.digest()
    again = setup.client.delete(f"/v1/tokens/{made['accessor']}", headers=bearer(setup.root))
    assert again.status_code == 200 and again.json()["revoked"] == revoked.json()["revoked"]
    assert setup.digest() == before
    unknown = setup.client.delete(f"/v1/tokens/{'f' * 16}", headers=bearer(setup.root))
    assert_problem(unknown, 404, "not-found")


def test_creating_and_revoking_write_their_events_in_the_same_transaction(setup: Setup) -> None:
    created = setup.create(setup.root, role="user", scope="acme")
    made = created.json()
    revoked = setup.client.delete(f"/v1/tokens/{made['accessor']}", headers=bearer(setup.root))
    setup.client.delete(f"/v1/tokens/{made['accessor']}", headers=bearer(setup.root))
    with reading(setup.app.state.database) as session:
        found = [e for e in events.after(session) if e.subject == made["accessor"]]
        assert [e.kind for e in found] == ["token.created", "token.revoked"]
        for event, answer in zip(found, (created, revoked), strict=True):
            assert event.actor_accessor == accessor(setup.root)
            assert event.actor_role == "root-admin"
            assert event.request_id == answer.headers["x-request-id"]
            assert (event.account, event.domain) == ("acme", "eng-web")
            assert made["token"] not in str(event.details)
        assert found[0].details["role"] == "user"


def test_a_domain_admin_creates_within_its_subtree_only(setup: Setup) -> None:
    eng = issue(setup.app, "domain-admin", "eng")
    for body in (
        {"role": "domain-admin", "scope": "eng"},  # its own domain
        {"role": "domain-admin", "scope": "eng-web"},
        {"role": "user", "scope": "acme"},
    ):
        assert setup.create(eng, **body).status_code == 201, body
    before = setup.digest()
    for body in (
        {"role": "user", "scope": "globex"},
        {"role": "domain-admin", "scope": "sales"},
        {"role": "domain-admin", "scope": "ROOT"},
        {"role": "root-admin"},
        {"role": "agent", "scope": "h1"},
        # A name that does not exist is answered as one outside: nothing leaks.
        {"role": "domain-admin", "scope": "nowhere"},
        {"role": "user", "scope": "eng-web"},  # a domain is no account
    ):
        assert_problem(setup.create(eng, **body), 403, "forbidden")
    assert setup.digest() == before


def test_a_scope_that_does_not_fit_is_a_4xx_at_scope(setup: Setup) -> None:
    before = setup.digest()
    for body, status, detail in (
        # Well-formed, naming what the world does not have: a conflict with it.
        ({"role": "user", "scope": "nobody"}, 409, "there is no account 'nobody'"),
        ({"role": "agent", "scope": "h9"}, 409, "there is no target 'h9'"),
        ({"role": "domain-admin", "scope": "acme"}, 409, "there is no domain 'acme'"),
        # Not the shape the role takes (the schema says so too).
        ({"role": "root-admin", "scope": "eng"}, 422, "takes no scope"),
        ({"role": "user"}, 422, "needs a scope: the account it acts for"),
    ):
        found = assert_problem(setup.create(setup.root, **body), status, "invalid-scope")
        assert found["errors"][0]["pointer"] == "/scope"
        assert detail in found["errors"][0]["detail"], found
    for bad, pointer in (
        ({"role": "admin"}, "/role"),
        ({"role": "user", "scope": "acme", "expires_in_s": 11 * 366 * 86400}, "/expires_in_s"),
        ({"role": "user", "scope": "acme", "expires_in_s": 0}, "/expires_in_s"),
        ({"role": "user", "scope": "acme", "secret": "mine"}, "/secret"),
    ):
        found = assert_problem(setup.create(setup.root, **bad), 422, "invalid-request")
        assert pointer in [e.get("pointer") for e in found["errors"]], found
    assert setup.digest() == before


def test_an_expiring_token_expires_when_it_says(setup: Setup) -> None:
    made = setup.create(setup.root, role="agent", scope="h1", expires_in_s=3600).json()
    created, expires = (datetime.fromisoformat(made[k]) for k in ("created", "expires"))
    assert expires - created == timedelta(seconds=3600)


def test_a_domain_admin_lists_and_revokes_the_tokens_of_its_subtree(setup: Setup) -> None:
    eng = issue(setup.app, "domain-admin", "eng")
    inside = {
        accessor(eng),
        accessor(issue(setup.app, "domain-admin", "eng-web")),
        accessor(issue(setup.app, "user", "acme")),
    }
    outside = {
        accessor(issue(setup.app, "domain-admin", "sales")),
        accessor(issue(setup.app, "user", "globex")),
        accessor(issue(setup.app, "agent", "h1")),
        accessor(issue(setup.app, "domain-admin", "ROOT")),
        accessor(setup.root),
    }
    assert {item["accessor"] for item in setup.listed(eng)} == inside
    assert {item["accessor"] for item in setup.listed(setup.root)} >= inside | outside
    before = setup.digest()
    for other in outside:
        answer = setup.client.delete(f"/v1/tokens/{other}", headers=bearer(eng))
        body = assert_problem(answer, 404, "not-found")
        assert other in body["detail"]
    assert setup.digest() == before
    web_user = next(i for i in setup.listed(eng) if i["role"] == "user")["accessor"]
    assert setup.client.delete(f"/v1/tokens/{web_user}", headers=bearer(eng)).status_code == 200
    # Its own token too: from then on it is refused.
    itself = setup.client.delete(f"/v1/tokens/{accessor(eng)}", headers=bearer(eng))
    assert itself.status_code == 200
    assert_problem(setup.client.get("/v1/tokens", headers=bearer(eng)), 401, "unauthenticated")


def test_without_a_database_a_token_cannot_be_checked() -> None:
    client = TestClient(create_app())
    answer = client.post("/v1/plan", json={}, headers=bearer(f"plc_{'0' * 16}_{'a' * 43}"))
    assert_problem(answer, 503, "not-ready")
    assert_problem(client.post("/v1/plan", json={}), 401, "unauthenticated")


def test_the_schema_documents_the_rules(setup: Setup) -> None:
    schema = setup.client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    tokens = schema["paths"]["/v1/tokens"]
    for operation in (tokens["get"], tokens["post"]):
        assert {"401", "403"} <= set(operation["responses"])
        assert operation["security"] == [{"bearer": []}]
        assert "Roles: root-admin, domain-admin." in operation["description"]
    assert "403" not in schema["paths"]["/v1/plan"]["post"]["responses"]
    assert "401" in schema["paths"]["/v1/plan"]["post"]["responses"]
    assert schema["paths"]["/healthz"]["get"]["security"] == []
    assert "404" in schema["paths"]["/v1/tokens/{accessor}"]["delete"]["responses"]
    assert "NewToken" in schema["components"]["schemas"]


def test_the_request_model_offers_the_stores_roles() -> None:
    role = token_routes.TokenRequest.model_fields["role"].annotation
    assert get_args(role) == ROLES


def test_scopes_follow_the_domain_tree(setup: Setup) -> None:
    with reading(setup.app.state.database) as session:
        assert subtree(session, "eng") == {"eng", "eng-web"}
        assert subtree(session, "ROOT") == {"ROOT", "eng", "eng-web", "sales"}
        assert subtree(session, "nowhere") == set()
        assert accounts_in(session, subtree(session, "eng")) == {"acme"}
        assert accounts_in(session, set()) == set()
        assert domain_of_account(session, "globex") == "sales"
        assert domain_of_account(session, "nobody") is None


def test_a_token_revoked_elsewhere_is_trusted_here_only_for_the_trust_window(
    setup: Setup,
) -> None:
    """What another replica revokes (or `placed token revoke` on the database) this
    process learns when its trust in the token runs out."""
    setup.app.state.trusted_tokens = TrustedTokens(seconds=0.3)
    made = setup.create(setup.root, role="user", scope="acme").json()
    text = made["token"]
    planned = setup.client.post("/v1/plan", json={"inventory": []}, headers=bearer(text))
    assert planned.status_code == 200, planned.text
    with writing(setup.app.state.database) as session:
        assert store_tokens.revoke(session, made["accessor"])
    still = setup.client.post("/v1/plan", json={"inventory": []}, headers=bearer(text))
    assert still.status_code == 200, "trusted from the first check"
    time.sleep(0.4)
    refused = setup.client.post("/v1/plan", json={"inventory": []}, headers=bearer(text))
    assert_problem(refused, 401, "unauthenticated")


def test_trust_never_outlives_the_tokens_expiry() -> None:
    trusted = TrustedTokens(seconds=60)
    caller = Caller("a" * 16, "user", "acme")
    trusted.keep("plc_x_expired", caller, now() - timedelta(seconds=1))
    assert trusted.get("plc_x_expired") is None
    trusted.keep("plc_x_soon", caller, now() + timedelta(seconds=0.2))
    assert trusted.get("plc_x_soon") == caller
    time.sleep(0.3)
    assert trusted.get("plc_x_soon") is None
    trusted.keep("plc_x_later", caller, None)
    trusted.forget(caller.accessor or "")
    assert trusted.get("plc_x_later") is None
