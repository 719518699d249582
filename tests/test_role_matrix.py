"""The role matrix as data (tests/data/role_matrix.yaml): every route of the app has a
rule and a row; each row's example, sent as every kind of caller, is served to the
callers the row allows and refused to the others, and a refusal writes nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.service import create_app
from placed.service.auth import Public, Rule, route_rules
from placed.store import accounts, domains, locations, targets
from placed.store.credentials import parse
from placed.store.database import writing
from placed.store.tables import ROLES

from .service_support import bearer, issue, served, table_digest

MATRIX = Path(__file__).resolve().parent / "data" / "role_matrix.yaml"
# Each caller: its role (None: no live token) and how to make its Authorization header.
CALLERS: dict[str, str | None] = {
    "none": None,
    "bad": None,
    "revoked": None,
    "expired": None,
    "root-admin": "root-admin",
    "domain-admin": "domain-admin",
    "domain-admin elsewhere": "domain-admin",
    "user": "user",
    "user elsewhere": "user",
    "agent": "agent",
}
ROW_KEYS = {"route", "allowed", "hidden", "path", "json", "params", "setup"}


@dataclass(frozen=True)
class Row:
    method: str
    template: str
    allowed: frozenset[str]
    hidden: dict[str, int]
    path: str
    json: Any
    params: dict[str, Any] | None
    # A request sent as the root-admin before each caller's (what a DELETE removes, made
    # again): (method, path, json).
    setup: tuple[str, str, Any] | None


def rows() -> list[Row]:
    found = []
    for entry in yaml.safe_load(MATRIX.read_text()):
        unknown = set(entry) - ROW_KEYS
        assert not unknown, f"{entry.get('route')}: unknown keys {sorted(unknown)}"
        method, template = entry["route"].split(" ", 1)
        allowed = entry["allowed"]
        if allowed == "anyone":
            chosen = set(CALLERS)
        elif allowed == "any token":
            chosen = {name for name, role in CALLERS.items() if role is not None}
        else:
            chosen = set(allowed)
        hidden = dict(entry.get("hidden") or {})
        named = chosen | set(hidden)
        assert named <= set(CALLERS), f"{entry['route']}: unknown callers {named - set(CALLERS)}"
        found.append(
            Row(
                method,
                template,
                frozenset(chosen),
                hidden,
                entry.get("path", template),
                entry.get("json"),
                entry.get("params"),
                (
                    (*entry["setup"]["route"].split(" ", 1), entry["setup"].get("json"))
                    if entry.get("setup")
                    else None
                ),
            )
        )
    return found


ROWS = rows()


def test_every_route_of_the_app_has_a_rule_and_a_row() -> None:
    rules = route_rules(create_app())
    assert rules, "no route found: route_rules is not reading the app"
    without_rule = sorted(route for route, rule in rules.items() if rule is None)
    assert not without_rule, f"routes without a rule (auth.allow or auth.public): {without_rule}"
    listed = {(row.method, row.template) for row in ROWS}
    missing = sorted(set(rules) - listed)
    assert not missing, f"routes without a row in {MATRIX.name}: {missing}"
    stale = sorted(listed - set(rules))
    assert not stale, f"rows of {MATRIX.name} for routes the app does not have: {stale}"


@pytest.mark.parametrize("row", ROWS, ids=[f"{row.method} {row.template}" for row in ROWS])
def test_each_row_agrees_with_the_rule_its_route_declares(row: Row) -> None:
    rule = route_rules(create_app())[(row.method, row.template)]
    if isinstance(rule, Public):
        assert row.allowed == set(CALLERS), "a public route is for anyone"
        return
    assert isinstance(rule, Rule)
    roles = {CALLERS[name] for name in row.allowed}
    assert None not in roles, "a route with a rule serves no caller without a live token"
    assert roles == set(rule.roles), (sorted(str(r) for r in roles), sorted(rule.roles))


def test_an_unknown_role_is_no_rule() -> None:
    from placed.service.auth import allow

    with pytest.raises(ValueError, match="roles among"):
        allow("admin")
    assert set(ROLES) == {"root-admin", "domain-admin", "user", "agent"}


@dataclass
class World:
    app: FastAPI
    headers: dict[str, dict[str, str]]
    victim: str


def world(url: str) -> World:
    app, root = served(url)
    with writing(app.state.database) as session:
        domains.create(session, "eng")
        domains.create(session, "eng-web", parent="eng")
        domains.create(session, "sales")
        accounts.create(session, "acme", "eng-web")
        accounts.create(session, "globex", "sales")
        # In a zone, so that GET /v1/usage has a level to sum (a level the world does
        # not have is a 404, which would read here as the route hiding itself).
        locations.create(session, "z1", kind="zone")
        targets.create(session, "h1", {"cpu": 4}, location="z1")
    root_parts = parse(root)
    assert root_parts is not None
    texts = {
        "bad": f"plc_{root_parts.accessor}_{'x' * 43}",
        "revoked": issue(app, "user", "acme", revoked=True),
        "expired": issue(app, "user", "acme", expired=True),
        "root-admin": root,
        "domain-admin": issue(app, "domain-admin", "eng"),
        "domain-admin elsewhere": issue(app, "domain-admin", "sales"),
        "user": issue(app, "user", "acme"),
        "user elsewhere": issue(app, "user", "globex"),
        "agent": issue(app, "agent", "h1"),
    }
    victim = parse(issue(app, "user", "acme"))
    assert victim is not None
    headers = {name: bearer(text) for name, text in texts.items()}
    headers["none"] = {}
    return World(app, headers, victim.accessor)


def fill(value: Any, world: World) -> Any:
    """The example with its placeholders filled in."""
    text = json.dumps(value).replace("{victim}", world.victim)
    return json.loads(text)


def test_every_route_serves_whom_its_row_allows_and_refuses_the_rest(database: str) -> None:
    found = world(database)
    client = TestClient(found.app)
    engine = found.app.state.database
    wrong = []
    for row in ROWS:
        path = fill(row.path, found)
        for caller in CALLERS:
            if row.setup is not None:
                method, where_to, body = row.setup
                made = client.request(
                    method, where_to, json=body, headers=found.headers["root-admin"]
                )
                assert made.status_code < 500, made.text
            before = table_digest(engine)
            answer = client.request(
                row.method,
                path,
                json=fill(row.json, found),
                params=row.params,
                headers=found.headers[caller],
            )
            where = f"{row.method} {row.template} as {caller}: {answer.status_code}"
            if caller in row.allowed:
                if answer.status_code in (401, 403, 404) or answer.status_code >= 500:
                    wrong.append(f"{where}, expected to be served: {answer.text[:200]}")
                continue
            expected = row.hidden.get(caller, 401 if CALLERS[caller] is None else 403)
            if answer.status_code != expected:
                wrong.append(f"{where}, expected {expected}: {answer.text[:200]}")
                continue
            kind = {401: "unauthenticated", 403: "forbidden", 404: "not-found"}[expected]
            assert answer.headers["content-type"] == "application/problem+json", where
            assert answer.json()["type"] == f"urn:placed:problem:{kind}", where
            if expected == 401:
                assert answer.headers["www-authenticate"] == "Bearer", where
            if table_digest(engine) != before:
                wrong.append(f"{where}: the refusal changed the database")
    assert not wrong, "\n".join(wrong)
