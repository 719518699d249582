"""The service's world: apply, down and up, claims, on SQLite and PostgreSQL, through the
API as a client sees it. What the service moves is what `placed simulate` says."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from placed.engine.planner import Planner
from placed.engine.rebalance import simulate
from placed.service import create_app, documents
from placed.spec import load_spec
from placed.store import claims, definitions, schema
from placed.store import world as world_rows
from placed.store.database import make_engine, reading, writing
from placed.store.tables import Base

ROOT = Path(__file__).resolve().parent.parent
IRONIC = ROOT / "examples" / "ironic-service.yaml"
YAML = {"content-type": "application/yaml"}
BIN = Path(sys.executable).parent


@pytest.fixture
def world(database: str) -> Iterator[tuple[TestClient, Engine]]:
    done = schema.upgrade(database)
    engine = make_engine(database)
    client = TestClient(create_app(database=engine))
    client.headers["authorization"] = f"Bearer {done.root_token}"
    try:
        yield client, engine
    finally:
        engine.dispose()


def digest(engine: Engine) -> str:
    """Every row of every table, in a stable order."""
    found = hashlib.sha256()
    with reading(engine) as session:
        for table in Base.metadata.sorted_tables:
            rows = session.execute(select(table)).all()
            lines = sorted(json.dumps([str(v) for v in row], sort_keys=True) for row in rows)
            found.update(f"{table.name}:{len(lines)}:".encode())
            for line in lines:
                found.update(line.encode())
    return found.hexdigest()


def apply(client: TestClient, text: str, **params: Any) -> Any:
    return client.post("/v1/apply", content=text, headers=YAML, params=params)


def where(client: TestClient) -> dict[str, str | None]:
    items = client.get("/v1/placements").json()["items"]
    return {item["unit"]: item["target"] for item in items}


def test_apply_plans_and_a_second_apply_changes_nothing(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    first = apply(client, IRONIC.read_text(), source="ironic-service.yaml")
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["documents"] == ["ironic-conductors"]
    assert [c["kind"] for c in body["changes"]] == ["unit.placed"] * 3
    planned = {p["unit"]: p["target"] for p in body["placements"]}
    assert (
        where(client)
        == planned
        == {
            "node1/0": "conductor1",
            "node2/0": "conductor1",
            "node3/0": "conductor1",
        }
    )
    before = digest(engine)
    again = apply(client, IRONIC.read_text(), source="ironic-service.yaml")
    assert again.status_code == 200
    assert again.json()["changes"] == [] and again.json()["revision"] == body["revision"]
    assert digest(engine) == before
    kinds = [e["kind"] for e in client.get("/v1/events").json()["items"]]
    assert [k for k in kinds if k.startswith(("token.", "unit."))] == [
        "token.created",
        "unit.placed",
        "unit.placed",
        "unit.placed",
    ]
    # The first apply's audit trail, once: the second wrote nothing.
    assert kinds.count("document.applied") == 1
    assert kinds.count("workload.created") == 3


def test_down_and_up_move_what_simulate_says(world: tuple[TestClient, Engine]) -> None:
    client, _ = world
    assert apply(client, IRONIC.read_text()).status_code == 200
    planner = Planner(load_spec(IRONIC))
    expected = {m.unit: m.destination for m in simulate(planner, ["conductor1"], []).moves}
    down = client.post("/v1/targets/conductor1/down", json={"reason": "maintenance window"})
    assert down.status_code == 200, down.text
    assert down.json()["changed"] is True
    assert {m["unit"]: m["to"] for m in down.json()["moves"]} == expected
    assert where(client) == expected
    target = client.get("/v1/targets/conductor1").json()
    assert target["admin_state"] == "down"
    # Down again: nothing moves, nothing is written.
    twice = client.post("/v1/targets/conductor1/down")
    assert twice.json()["changed"] is False and twice.json()["moves"] == []
    up = client.post("/v1/targets/conductor1/up")
    assert up.status_code == 200
    assert {m["to"] for m in up.json()["moves"]} == {"conductor1"}
    assert set(where(client).values()) == {"conductor1"}
    events = client.get("/v1/events", params={"after": 0, "limit": 100}).json()["items"]
    kinds = [e["kind"] for e in events]
    assert kinds.count("target.down") == 1 and kinds.count("target.up") == 1
    down_event = next(e for e in events if e["kind"] == "target.down")
    assert down_event["details"]["reason"] == "maintenance window"
    # Each move is an event after the target's, naming where from and where to.
    moved = [e for e in events if e["kind"] == "unit.moved"]
    assert len(moved) == 6
    assert all(e["details"]["from"] and e["details"]["to"] for e in moved)
    paged = client.get("/v1/events", params={"kind": "unit.", "limit": 2}).json()
    assert len(paged["items"]) == 2
    rest = client.get("/v1/events", params={"kind": "unit.", "after": paged["next_cursor"]})
    assert [e["id"] for e in rest.json()["items"]] == [
        e["id"] for e in events if e["kind"].startswith("unit.")
    ][2:]


def test_refusals_change_nothing(world: tuple[TestClient, Engine]) -> None:
    client, engine = world
    assert apply(client, IRONIC.read_text()).status_code == 200
    before = digest(engine)
    # Another document defining conductor1 and node1: an error naming both documents.
    other = IRONIC.read_text().replace("name: ironic-conductors", "name: lab")
    clash = apply(client, other)
    assert clash.status_code == 409
    problem = clash.json()
    assert problem["type"] == "urn:placed:problem:defined-elsewhere"
    assert "'ironic-conductors'" in problem["detail"] and "'lab'" in problem["detail"]
    assert problem["errors"][0]["pointer"] == "/inventory/0"
    # A spec error at line 7: its line and column, and a pointer.
    broken = "\n".join(
        [
            "name: broken",
            "inventory:",
            "  - id: h1",
            "    capacity: {cpu: 4}",
            "workloads:",
            "  - name: w",
            "    unitz: 2",
        ]
    )
    invalid = apply(client, broken)
    assert invalid.status_code == 422
    error = invalid.json()["errors"][0]
    assert (error["line"], error["pointer"]) == (7, "/workloads/0/unitz")
    stale = apply(client, IRONIC.read_text(), expected_revision=0)
    assert stale.status_code == 409
    assert stale.json()["type"] == "urn:placed:problem:revision-changed"
    missing = client.post("/v1/targets/nowhere/down")
    assert missing.status_code == 404
    malformed = client.post(
        "/v1/workloads", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 422
    wrong_type = client.post("/v1/workloads", json={"name": "w", "units": "three"})
    assert wrong_type.status_code == 422
    assert wrong_type.json()["errors"][0]["pointer"] == "/units"
    # An expression the schema takes and the engine refuses: pointed at in the body sent,
    # not at the world document the store builds from every workload.
    bad_constraint = client.post("/v1/workloads", json={"name": "w", "constraints": ["cpu >= "]})
    assert bad_constraint.status_code == 422
    problem = bad_constraint.json()
    assert problem["errors"][0]["pointer"] == "/constraints/0", problem
    assert problem["errors"][0]["detail"].startswith("invalid constraint")
    assert problem["detail"].endswith(": 1 problem")
    generation = client.get("/v1/workloads/node1").json()["generation"]
    spec = {"name": "node1", "tags": ["rack10"], "constraints": ["cpu >= "]}
    changed = client.put("/v1/workloads/node1", json={"generation": generation, "spec": spec})
    assert changed.status_code == 422
    assert changed.json()["errors"][0]["pointer"] == "/spec/constraints/0"
    assert changed.json()["errors"][0]["detail"].startswith("invalid constraint")
    assert digest(engine) == before


TENANCY = """name: tenancy
tenancy:
  domains:
    D1: {accounts: [A1]}
"""
TENANT_VMS = """name: tenants
workloads:
  - name: vm1
    account: A1
---
name: more-tenants
workloads:
  - name: vm0
  - name: vm2
    account: A1
"""


def test_a_world_problem_of_an_applied_workload_points_into_the_file(
    world: tuple[TestClient, Engine],
) -> None:
    """The file alone is valid; the world it joins is not (both documents made mapping
    their default mode when applied before, and a tenant's VMs are allocation units):
    the problems point at the workloads as the body holds them, each at its line and
    column and with its document, not at the world document the store builds."""
    client, engine = world
    assert apply(client, IRONIC.read_text()).status_code == 200
    assert apply(client, TENANCY).status_code == 200
    mapped = "settings: {default_mode: mapping}\n"
    assert apply(client, f"name: tenants\n{mapped}---\nname: more-tenants\n{mapped}").is_success
    before = digest(engine)
    refused = apply(client, TENANT_VMS)
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"].endswith(":invalid-world")
    where = [(e["pointer"], e["line"], e["column"], e["document"]) for e in problem["errors"]]
    assert where == [
        ("/0/workloads/0/account", 4, 14, "tenants"),
        ("/1/workloads/1/account", 10, 14, "more-tenants"),
    ]
    assert digest(engine) == before


INFRA_AND_APPS = """name: infra
tenancy:
  domains:
    D9:
      accounts: [A90]
      children: {SD9: {accounts: [A91]}}
offerings:
  - {name: tiny9, cpu: 1, memory: 1, disk: 1}
inventory:
  - {id: h90, kind: host, capacity: {cpu: 4, memory: 8, disk: 100}}
---
name: more-infra
tenancy:
  domains:
    D9:
      children: {SD9: {accounts: [A92]}}
---
name: apps
workloads:
  - {name: app90, account: A90, offering: tiny9}
  - {name: app92, account: A92, offering: tiny9}
"""


def test_a_document_sees_the_tenancy_and_offerings_of_those_before_it(
    world: tuple[TestClient, Engine],
) -> None:
    """The documents of one body are applied in order, so the accounts and offerings an
    earlier one defines are there for a later one's workloads (merged: D9's SD9 has A91
    from the first and A92 from the second), as they would be in two applies."""
    client, _ = world
    answer = apply(client, INFRA_AND_APPS)
    assert answer.status_code == 200, answer.text
    assert where(client) == {"app90/0": "h90", "app92/0": "h90"}
    refused = apply(client, INFRA_AND_APPS.replace("account: A92", "account: A93"))
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["line"] == 21
    assert "no account 'A93'" in refused.json()["errors"][0]["detail"]
    # A document with a tenancy of its own stands on the world's too: A90 is stored.
    own = "name: own\ntenancy:\n  domains:\n    D8: {accounts: [A80]}\nworkloads:\n"
    mixed = apply(client, own + "  - {name: mixed, account: A90, offering: tiny9}\n")
    assert mixed.status_code == 200, mixed.text
    # An account the world has in another domain is refused where the document says it.
    moved = apply(client, "name: own\ntenancy:\n  domains:\n    D8: {accounts: [A91]}\n")
    assert moved.status_code == 422
    assert (moved.json()["errors"][0]["line"], moved.json()["errors"][0]["pointer"]) == (
        4,
        "/tenancy/domains/D8/accounts/0",
    )


def test_a_nul_in_a_bodys_text_is_a_422_that_changes_nothing(
    world: tuple[TestClient, Engine],
) -> None:
    """PostgreSQL stores no NUL in a text column (the fuzzer found a token's description
    answered with a 500 there): the models refuse it, on both databases the same way."""
    client, engine = world
    assert apply(client, IRONIC.read_text()).status_code == 200
    before = digest(engine)
    for field, body in (
        ("/description", {"role": "root-admin", "description": "a\u0000b"}),
        ("/scope", {"role": "user", "scope": "a\u0000b"}),
    ):
        token = client.post("/v1/tokens", json=body)
        assert token.status_code == 422, token.text
        assert token.json()["errors"][0]["pointer"] == field
    spec = {"name": "nul", "inventory": [{"id": "h\u00001", "capacity": {"cpu": 1}}]}
    assert client.post("/v1/apply", json=spec).status_code == 422
    assert digest(engine) == before


def test_dry_run_shows_the_moves_and_writes_nothing(world: tuple[TestClient, Engine]) -> None:
    client, engine = world
    assert apply(client, IRONIC.read_text()).status_code == 200
    before = digest(engine)
    fewer = IRONIC.read_text().replace(
        "  - id: conductor1\n", "  - id: conductor1\n    status: down\n"
    )
    shown = apply(client, fewer, dry_run="true")
    assert shown.status_code == 200
    assert shown.json()["dry_run"] is True
    assert {c["unit"] for c in shown.json()["changes"]} == {"node1/0", "node2/0", "node3/0"}
    assert digest(engine) == before
    done = apply(client, fewer)
    assert {c["to"] for c in done.json()["changes"]} == {c["to"] for c in shown.json()["changes"]}


def test_prune_deletes_what_the_document_no_longer_names(
    world: tuple[TestClient, Engine],
) -> None:
    client, _ = world
    text = IRONIC.read_text()
    assert apply(client, text).status_code == 200
    without = text.replace(
        "  # Like node2, but conductor2's anti-tag customer1 removes it: conductor1, score 1.\n"
        "  - name: node3\n    tags: [rack11, customer1]\n",
        "",
    )
    assert "node3" not in without
    kept = apply(client, without)
    assert kept.json()["changes"] == []  # without prune, node3 stays
    pruned = apply(client, without, prune="true")
    assert [(c["unit"], c["kind"]) for c in pruned.json()["changes"]] == [
        ("node3/0", "unit.removed")
    ]
    names = [w["name"] for w in client.get("/v1/workloads").json()["items"]]
    assert names == ["node1", "node2"]


SMALL = """
name: hosts
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
"""


def test_a_capacity_cut_below_what_runs_is_refused_and_changes_nothing(
    world: tuple[TestClient, Engine],
) -> None:
    """The units stay where they run (allocation units never move by themselves), so
    the capacity cannot go below them: a 409 naming the target, not the 500 of the
    rows' CHECK (used <= capacity)."""
    client, engine = world
    assert apply(client, SMALL).status_code == 200
    made = client.post("/v1/workloads", json={"name": "db", "units": 6, "resources": {"cpu": 1}})
    assert made.status_code == 201, made.text
    used = int(client.get("/v1/targets/h1").json()["used"]["cpu"])
    assert used >= 2, used
    before = digest(engine)
    for dry_run in ("true", "false"):
        cut = apply(
            client,
            SMALL.replace("h1, capacity: {cpu: 4}", f"h1, capacity: {{cpu: {used - 1}}}"),
            dry_run=dry_run,
        )
        assert cut.status_code == 409, cut.text
        assert cut.json()["type"] == "urn:placed:problem:capacity-in-use"
        expected = f"h1's units would use {used} cpu, more than its capacity of {used - 1}"
        assert expected in cut.json()["detail"]
    assert digest(engine) == before
    # Down to exactly what runs is fine.
    done = apply(client, SMALL.replace("h1, capacity: {cpu: 4}", f"h1, capacity: {{cpu: {used}}}"))
    assert done.status_code == 200, done.text


def test_a_capacity_cut_with_units_leaving_in_the_same_apply_is_taken(
    world: tuple[TestClient, Engine],
) -> None:
    """The cut meets the usage the change leaves, not the one before it (the rows'
    CHECK holds at every statement, so the capacity and the usage are written as one)."""
    client, _ = world
    box = """
name: box
inventory:
  - {id: b1, capacity: {cpu: CPU}}
workloads:
  - {name: svc, units: UNITS, resources: {cpu: 1}}
"""
    first = apply(client, box.replace("CPU", "4").replace("UNITS", "3"))
    assert first.status_code == 200, first.text
    cut = apply(client, box.replace("CPU", "2").replace("UNITS", "2"))
    assert cut.status_code == 200, cut.text
    assert [(c["unit"], c["kind"]) for c in cut.json()["changes"]] == [("svc/2", "unit.removed")]
    target = client.get("/v1/targets/b1").json()
    assert (target["capacity"], target["used"]) == ({"cpu": 2.0}, {"cpu": 2.0})


def test_a_move_from_where_the_unit_no_longer_is_is_stale(
    world: tuple[TestClient, Engine],
) -> None:
    """Two changes planned on one snapshot may both place the same unplaced unit, each on
    its own target: their target generations do not collide, so the unit's own row
    must. The second is stale (plan again), or the first target keeps counting a unit
    that left it (the load run found that drift)."""
    client, engine = world
    assert apply(client, SMALL).status_code == 200
    made = client.post("/v1/workloads", json={"name": "db", "resources": {"cpu": 1}})
    assert made.status_code == 201, made.text
    [here] = [p["target"] for p in made.json()["placements"]]
    there = "h2" if here == "h1" else "h1"
    before = digest(engine)
    for source in (None, there):  # as if still unplaced, or on the other host
        move = claims.Move("db", "db/0", source, there, "a stale plan", claims.MOVED)
        with pytest.raises(definitions.StaleRow), writing(engine) as session:
            claims.commit(session, world_rows.read(session), [move], {}, claims.Actor())
    assert digest(engine) == before
    with writing(engine) as session:  # from where it is, the same move is taken
        move = claims.Move("db", "db/0", here, there, "a fresh plan", claims.MOVED)
        claims.commit(session, world_rows.read(session), [move], {}, claims.Actor())
    assert where(client) == {"db/0": there}


def test_a_move_of_a_unit_removed_since_the_snapshot_is_stale(
    world: tuple[TestClient, Engine],
) -> None:
    """A change planned before another removed a unit (its workload cut to fewer units)
    must not place that unit again: it would come back as a new unit, under a history
    that ended where it left (the load run found this)."""
    client, engine = world
    box = """
name: box
inventory:
  - {id: b1, capacity: {cpu: 4}}
  - {id: b2, capacity: {cpu: 4}}
workloads:
  - {name: svc, units: UNITS, resources: {cpu: 1}}
"""
    assert apply(client, box.replace("UNITS", "2")).status_code == 200
    with reading(engine) as session:
        stale = world_rows.read(session)
    source = stale.placements["svc/1"]
    there = "b2" if source == "b1" else "b1"
    cut = apply(client, box.replace("UNITS", "1"))
    assert [(c["unit"], c["kind"]) for c in cut.json()["changes"]] == [("svc/1", "unit.removed")]
    before = digest(engine)
    move = claims.Move("svc", "svc/1", source, there, "a stale plan", claims.MOVED)
    with pytest.raises(definitions.StaleRow), writing(engine) as session:
        claims.commit(session, stale, [move], {}, claims.Actor())
    assert digest(engine) == before
    assert "svc/1" not in where(client)


def test_claims_place_everything_or_store_nothing(world: tuple[TestClient, Engine]) -> None:
    client, engine = world
    assert apply(client, SMALL).status_code == 200
    made = client.post("/v1/workloads", json={"name": "db", "units": 6, "resources": {"cpu": 1}})
    assert made.status_code == 201, made.text
    assert len(made.json()["placements"]) == 6
    # Each answer is the one the schema documents.
    documents.ChangeAnswer.model_validate(made.json())
    unit = client.get("/v1/units/db/0")
    assert unit.status_code == 200, unit.text
    assert documents.UnitAnswer.model_validate(unit.json()).explanation
    before = digest(engine)
    full = client.post("/v1/workloads", json={"name": "big", "units": 3, "resources": {"cpu": 1}})
    assert full.status_code == 409
    assert full.json()["type"] == "urn:placed:problem:unplaceable"
    assert "insufficient cpu" in full.json()["detail"]
    again = client.post("/v1/workloads", json={"name": "db", "resources": {"cpu": 1}})
    assert again.json()["type"] == "urn:placed:problem:exists"
    assert digest(engine) == before
    used = {t["name"]: t["used"]["cpu"] for t in client.get("/v1/targets").json()["items"]}
    assert sum(used.values()) == 6
    # A change at a stale generation is refused with the generation it has now.
    current = client.get("/v1/workloads/db").json()
    stale = client.put(
        "/v1/workloads/db",
        json={"generation": current["generation"] + 1, "spec": {**current["spec"], "units": 2}},
    )
    assert stale.status_code == 409
    assert stale.json()["current_generation"] == current["generation"]
    assert digest(engine) == before
    fewer = client.put(
        "/v1/workloads/db",
        json={"generation": current["generation"], "spec": {**current["spec"], "units": 2}},
    )
    assert fewer.status_code == 200, fewer.text
    assert sorted(c["kind"] for c in fewer.json()["changes"]) == ["unit.removed"] * 4
    assert client.get("/v1/workloads/db").json()["generation"] == current["generation"] + 1
    used = {t["name"]: t["used"]["cpu"] for t in client.get("/v1/targets").json()["items"]}
    assert sum(used.values()) == 2
    documents.ChangeAnswer.model_validate(fewer.json())
    gone = client.delete("/v1/workloads/db")
    assert gone.status_code == 200
    documents.RemovedAnswer.model_validate(gone.json())
    assert all(t["used"]["cpu"] == 0 for t in client.get("/v1/targets").json()["items"])
    assert where(client) == {}


@pytest.mark.parametrize("name", ["juju-bundle.yaml", "juju-deployer.yaml"])
def test_juju_files_apply_as_the_cli_plans_them(
    world: tuple[TestClient, Engine], name: str
) -> None:
    client, engine = world
    path = ROOT / "examples" / name
    answer = apply(client, path.read_text(), source=name)
    assert answer.status_code == 200, answer.text
    planned = subprocess.run(
        [str(BIN / "placed"), "plan", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    cli = json.loads(planned.stdout)
    documents = cli if isinstance(cli, list) else [cli]
    expected = {p["unit"]: p["target"] for d in documents for p in d["placements"]}
    assert where(client) == expected
    # The machines and containers the plan made are targets now; applying the same file
    # again finds every unit where it runs and makes nothing more.
    made = {t["name"] for t in client.get("/v1/targets", params={"limit": 1000}).json()["items"]}
    assert set(expected.values()) <= made
    before = digest(engine)
    again = apply(client, path.read_text(), source=name)
    assert again.status_code == 200 and again.json()["changes"] == [], again.text
    assert digest(engine) == before


def test_a_document_may_name_a_stored_domain_again_but_not_move_it(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    assert apply(client, INFRA_AND_APPS).status_code == 200
    # D9 again under ROOT, with one more account: merged, as a second apply adds it.
    again = "name: again\ntenancy:\n  domains:\n    D9: {accounts: [A95]}\n"
    assert apply(client, again).status_code == 200, apply(client, again).text
    before = digest(engine)
    # SD9 under D8 where the world has it under D9: refused at its line, nothing changed.
    moved = apply(client, "name: moved\ntenancy:\n  domains:\n    D8:\n      children: {SD9: {}}\n")
    assert moved.status_code == 422
    error = moved.json()["errors"][0]
    assert (error["pointer"], error["line"]) == ("/tenancy/domains/D8/children/SD9", 5)
    assert "already under D9" in error["detail"]
    assert digest(engine) == before
