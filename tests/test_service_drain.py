"""Draining several targets in one change (POST /v1/targets:drain) and a drain's check
that nothing changed since its preview (expected_revision, on it and on
/v1/targets/{name}/drain): one plan with every drained target already in maintenance,
so none takes another's units; a stale revision is a 409 and writes nothing. On SQLite
and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from placed.service import create_app
from placed.store import schema
from placed.store.database import make_engine
from tests.service_support import table_digest

YAML = {"content-type": "application/yaml"}

# Four hosts of 4 cpu: drained alone, h1 sends units to h3 and h3 to h1 (checked below,
# so the test means something); drained together their five small units find room for
# four on h2 (h4 is full), and the fifth stays where it is.
RACKS = """
version: 1
name: racks
inventory:
  - {id: h1, kind: host, capacity: {cpu: 4}}
  - {id: h2, kind: host, capacity: {cpu: 4}}
  - {id: h3, kind: host, capacity: {cpu: 4}}
  - {id: h4, kind: host, capacity: {cpu: 4}}
workloads:
  - name: db
    units: 6
    resources: {cpu: 1}
  - name: big
    units: 1
    resources: {cpu: 3}
"""


@pytest.fixture
def world(database: str) -> Iterator[tuple[TestClient, Engine]]:
    root = schema.upgrade(database).root_token
    engine = make_engine(database)
    try:
        with TestClient(create_app(database=engine)) as client:
            client.headers["authorization"] = f"Bearer {root}"
            answer = client.post("/v1/apply", content=RACKS, headers=YAML)
            assert answer.status_code == 200, answer.text
            yield client, engine
    finally:
        engine.dispose()


def where(client: TestClient) -> dict[str, str | None]:
    items = client.get("/v1/placements", params={"limit": 1000}).json()["items"]
    return {item["unit"]: item["target"] for item in items}


def events_after(client: TestClient, after: int) -> list[dict[str, Any]]:
    answer = client.get("/v1/events", params={"after": after, "limit": 1000})
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def last_event(client: TestClient) -> int:
    items = client.get("/v1/events", params={"limit": 1000}).json()["items"]
    return int(items[-1]["id"]) if items else 0


def test_targets_drained_together_never_take_each_others_units(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    before = where(client)
    alone = {
        name: client.post(f"/v1/targets/{name}/drain", params={"dry_run": "true"}).json()
        for name in ("h1", "h3")
    }
    assert "h3" in {m["to"] for m in alone["h1"]["moves"]}
    assert "h1" in {m["to"] for m in alone["h3"]["moves"]}
    rows = table_digest(engine)
    tried = client.post(
        "/v1/targets:drain", params={"dry_run": "true"}, json={"targets": ["h1", "h3", "h1"]}
    )
    assert tried.status_code == 200, tried.text
    preview = tried.json()
    assert table_digest(engine) == rows
    assert preview["dry_run"] is True
    assert preview["revision"] == alone["h1"]["revision"]  # the revision it saw
    assert preview["targets"] == [
        {"target": "h1", "admin_state": "maintenance", "changed": True},
        {"target": "h3", "admin_state": "maintenance", "changed": True},
    ]
    leaving = {unit for unit, host in before.items() if host in ("h1", "h3")}
    assert {m["unit"] for m in preview["moves"]} | {r["unit"] for r in preview["refused"]} == (
        leaving
    )
    assert {m["to"] for m in preview["moves"]} == {"h2"}
    assert all(m["why"].startswith(f"{m['from']} is drained") for m in preview["moves"])
    [stays] = preview["refused"]
    assert stays["target"] == before[stays["unit"]]
    # Confirmed at the preview's revision: the same moves, in one transaction.
    seen = last_event(client)
    done = client.post(
        "/v1/targets:drain",
        params={"expected_revision": preview["revision"]},
        json={"targets": ["h1", "h3"], "reason": "racks"},
    )
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["moves"] == preview["moves"] and body["refused"] == preview["refused"]
    assert body["dry_run"] is False and body["revision"] > preview["revision"]
    after = where(client)
    for name in ("h1", "h3"):
        assert client.get(f"/v1/targets/{name}").json()["admin_state"] == "maintenance"
    assert {u for u, h in after.items() if h in ("h1", "h3")} == {stays["unit"]}
    recorded = events_after(client, seen)
    assert len({e["request_id"] for e in recorded}) == 1  # one change
    heads = [e for e in recorded if e["kind"] == "target.maintenance"]
    assert [e["subject"] for e in heads] == ["h1", "h3"]
    assert all(e["details"]["batch"] and e["details"]["reason"] == "racks" for e in heads)
    assert sum(e["details"]["refused"] for e in heads) == 1
    moved = {e["subject"]: e["details"]["to"] for e in recorded if e["kind"] == "unit.moved"}
    assert moved == {m["unit"]: m["to"] for m in body["moves"]}
    [refused] = [e for e in recorded if e["kind"] == "migration.refused"]
    assert (refused["subject"], refused["target"]) == (stays["unit"], stays["target"])
    # Drained again: nothing moves; the unit that stays is refused again, and told so.
    seen = last_event(client)
    again = client.post("/v1/targets:drain", json={"targets": ["h3", "h1"]}).json()
    assert [t["changed"] for t in again["targets"]] == [False, False]
    assert again["moves"] == [] and again["refused"] == body["refused"]
    assert [e["kind"] for e in events_after(client, seen)] == ["migration.refused"]
    assert where(client) == after


def test_a_stale_expected_revision_is_refused_and_changes_nothing(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    one = client.post("/v1/targets/h1/drain", params={"dry_run": "true"}).json()
    many = client.post(
        "/v1/targets:drain", params={"dry_run": "true"}, json={"targets": ["h1", "h3"]}
    ).json()
    assert one["revision"] == many["revision"]
    # Something changes between the preview and its confirmation.
    assert client.post("/v1/targets/h4/down").status_code == 200
    rows = table_digest(engine)
    for path, body in (
        ("/v1/targets/h1/drain", {"reason": "stale"}),
        ("/v1/targets:drain", {"targets": ["h1", "h3"]}),
    ):
        for dry in ("false", "true"):
            stale = client.post(
                path, params={"expected_revision": one["revision"], "dry_run": dry}, json=body
            )
            assert stale.status_code == 409, stale.text
            assert stale.headers["content-type"].startswith("application/problem+json")
            assert stale.json()["type"] == "urn:placed:problem:revision-changed"
            assert table_digest(engine) == rows
    assert client.get("/v1/targets/h1").json()["admin_state"] == "up"
    # At the revision now seen, the single drain goes through, in its own shape.
    current = client.post("/v1/targets/h1/drain", params={"dry_run": "true"}).json()
    assert current["revision"] > one["revision"]
    done = client.post(
        "/v1/targets/h1/drain",
        params={"expected_revision": current["revision"]},
        json={"reason": "fresh"},
    )
    assert done.status_code == 200, done.text
    assert done.json()["target"] == "h1" and done.json()["changed"] is True
    assert done.json()["moves"] == current["moves"]
    assert all(r["target"] == "h1" for r in done.json()["refused"])


def test_a_bad_drain_is_a_problem_and_changes_nothing(world: tuple[TestClient, Engine]) -> None:
    client, engine = world
    rows = table_digest(engine)
    missing = client.post("/v1/targets:drain", json={"targets": ["h1", "nope", "nah"]})
    assert missing.status_code == 404
    assert "'nope' (and 1 more)" in missing.json()["detail"]
    bodies: list[dict[str, Any]] = [
        {},
        {"targets": []},
        {"targets": ["x" * 256]},
        {"targets": [""]},
        {"targets": ["h1"], "down": []},
        {"targets": ["h1"], "reason": "r" * 256},
        {"targets": [f"h{i}" for i in range(1001)]},
        {"targets": "h1"},
    ]
    for body in bodies:
        refused = client.post("/v1/targets:drain", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert refused.headers["content-type"].startswith("application/problem+json")
    for revision in (-1, 2**63, "soon"):
        refused = client.post(
            "/v1/targets:drain", params={"expected_revision": revision}, json={"targets": ["h1"]}
        )
        assert refused.status_code == 422, refused.text
    assert table_digest(engine) == rows
