"""Changes re-evaluate (issue 17, SERVICE.md): in the transaction of a change, every-mode
units whose target no longer fits are removed with the rule that rejects it and newly
compatible targets gain units (the agbot's cancel-then-rescan); allocation units that no
longer fit stay with one `unit.incompatible` event naming the rule and move only on
replace; a dry run shows that diff and writes nothing; a drain moves what it can under
the dedication rules and refuses the rest. Through the API, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from typer.testing import CliRunner

from placed.cli.main import app
from placed.engine import fit
from placed.engine.planner import Planner
from placed.engine.report import plan_document
from placed.service import create_app
from placed.spec.load import load_spec_data
from placed.store import schema
from placed.store.database import make_engine
from tests.running_servers import serving, upgrade
from tests.service_support import table_digest
from tests.test_service_dedications import SPEC as CLOUD

YAML = {"content-type": "application/yaml"}

EDGE = """
version: 1
name: edge
settings: {default_mode: every}
inventory:
  - id: edge
    kind: site
    children:
      - {id: cluster-1, kind: cluster, scope: cluster, arch: amd64}
      - {id: ns-1, kind: cluster, scope: namespace, namespace: ABC}
      - {id: ns-2, kind: cluster, scope: namespace, namespace: XYZ}
workloads:
  - name: web
    cluster_namespace: NAMESPACE
    service: {url: com.example.web, org: example, version: 1.0.0}
"""

HOSTS = """
version: 1
name: hosts
inventory:
  - {id: h1, kind: host, capacity: {cpu: 4}, properties: {tier: TIER}}
  - {id: h2, kind: host, capacity: {cpu: 4}, properties: {tier: gold}}
  - {id: h3, kind: host, capacity: {cpu: 4}, properties: {tier: silver}}
workloads:
  - name: db
    units: 2
    resources: {cpu: 1}
    constraints: tier == gold
"""


@pytest.fixture
def world(database: str) -> Iterator[tuple[TestClient, Engine]]:
    root = schema.upgrade(database).root_token
    engine = make_engine(database)
    try:
        with TestClient(create_app(database=engine)) as client:
            client.headers["authorization"] = f"Bearer {root}"
            yield client, engine
    finally:
        engine.dispose()


def apply(client: TestClient, text: str, **params: Any) -> dict[str, Any]:
    answer = client.post("/v1/apply", content=text, headers=YAML, params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def where(client: TestClient) -> dict[str, str | None]:
    items = client.get("/v1/placements").json()["items"]
    return {item["unit"]: item["target"] for item in items}


def events(client: TestClient, kind: str | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"limit": 1000}
    if kind is not None:
        params["kind"] = kind
    answer = client.get("/v1/events", params=params)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def offline(text: str) -> dict[str, Any]:
    """What `placed plan` prints for the document, with nothing running."""
    spec = load_spec_data(yaml.safe_load(text), "edge")
    return plan_document(Planner(spec).plan())


def test_a_cluster_namespace_change_cancels_the_namespaced_unit_and_redeploys_the_cluster_one(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    first = apply(client, EDGE.replace("NAMESPACE", "ABC"))
    assert where(client) == {"web/cluster-1": "cluster-1", "web/ns-1": "ns-1"}
    assert {p["unit"]: p["namespace"] for p in first["placements"]} == {
        "web/cluster-1": "ABC",
        "web/ns-1": "ABC",
    }
    changed = EDGE.replace("NAMESPACE", "XYZ")
    # The dry run shows the whole diff and writes nothing.
    rows = table_digest(engine)
    planned = apply(client, changed, dry_run="true")
    assert table_digest(engine) == rows
    diff = {c["unit"]: (c["kind"], c["from"], c["to"]) for c in planned["changes"]}
    assert diff == {
        "web/ns-1": ("unit.removed", "ns-1", None),
        "web/cluster-1": ("unit.moved", "cluster-1", "cluster-1"),
        "web/ns-2": ("unit.placed", None, "ns-2"),
    }
    done = apply(client, changed)
    assert done["changes"] == planned["changes"]
    # The agbot's cancel: the namespace-scoped node in ABC no longer takes the policy.
    [removed] = events(client, "unit.removed")
    assert removed["subject"] == "web/ns-1"
    assert removed["details"]["rule"] == "namespace"
    assert "namespace ABC" in removed["details"]["why"]
    assert "XYZ" in removed["details"]["why"]
    # The cluster-scoped node keeps the service, deployed again in the new namespace.
    [moved] = events(client, "unit.moved")
    assert (moved["subject"], moved["details"]["from"], moved["details"]["to"]) == (
        "web/cluster-1",
        "cluster-1",
        "cluster-1",
    )
    assert moved["details"]["before"] == {"namespace": "ABC"}
    assert moved["details"]["after"] == {"namespace": "XYZ"}
    # The rescan: the node newly compatible (in XYZ) gains a unit.
    assert [e["subject"] for e in events(client, "unit.placed")][-1] == "web/ns-2"
    assert where(client) == {"web/cluster-1": "cluster-1", "web/ns-2": "ns-2"}
    # Where placed plan puts the new policy, in which namespace.
    assert {p["unit"]: (p["target"], p["namespace"]) for p in done["placements"]} == {
        p["unit"]: (p["target"], p["namespace"]) for p in offline(changed)["placements"]
    }
    # Applied again: nothing changes, nothing is recorded.
    count = len(events(client))
    again = apply(client, changed)
    assert again["changes"] == [] and len(events(client)) == count


def test_a_target_property_change_moves_every_mode_units_both_ways(
    world: tuple[TestClient, Engine],
) -> None:
    client, _ = world
    text = """
version: 1
name: fleet
settings: {default_mode: every}
inventory:
  - {id: n1, kind: device, properties: {role: edge}}
  - {id: n2, kind: device, properties: {role: ROLE}}
workloads:
  - {name: agent, constraints: role == edge}
"""
    apply(client, text.replace("ROLE", "core"))
    assert where(client) == {"agent/n1": "n1"}
    gained = apply(client, text.replace("ROLE", "edge"))
    assert [(c["kind"], c["unit"]) for c in gained["changes"]] == [("unit.placed", "agent/n2")]
    lost = apply(client, text.replace("ROLE", "core"))
    [change] = lost["changes"]
    assert (change["kind"], change["unit"], change["from"]) == ("unit.removed", "agent/n2", "n2")
    assert change["why"].startswith("n2 no longer takes it: constraint: ")
    assert "role" in change["why"]
    assert where(client) == {"agent/n1": "n1"}


def test_an_allocation_unit_that_no_longer_fits_stays_until_replaced(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    apply(client, HOSTS.replace("TIER", "gold"))
    placed = where(client)
    assert sorted(map(str, placed.values())) == ["h1", "h2"]
    unit = next(u for u, t in placed.items() if t == "h1")
    silver = HOSTS.replace("TIER", "silver")
    rows = table_digest(engine)
    planned = apply(client, silver, dry_run="true")
    assert table_digest(engine) == rows
    assert planned["changes"] == []
    [flagged] = planned["incompatible"]
    assert flagged["unit"] == unit and flagged["target"] == "h1"
    assert flagged["rule"] == "constraint" and flagged["new"] is True
    assert 'tier is "silver"' in flagged["why"]
    done = apply(client, silver)
    assert done["changes"] == [] and where(client) == placed  # nothing moves by itself
    [event] = events(client, "unit.incompatible")
    assert (event["subject"], event["target"], event["workload"]) == (unit, "h1", "db")
    assert event["details"]["rule"] == "constraint" and event["details"]["stays"] is True
    # Told once: a later change (or the same again) does not repeat it.
    again = apply(client, silver)
    assert again["incompatible"][0]["new"] is False
    assert len(events(client, "unit.incompatible")) == 1
    # Replace, dry: the move and why, nothing written.
    rows = table_digest(engine)
    dry = client.post("/v1/workloads/db/replace", params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert table_digest(engine) == rows
    [move] = dry.json()["changes"]
    assert (move["unit"], move["from"], move["to"]) == (unit, "h1", "h2")
    assert move["why"].startswith("replaced: h1 no longer fits (constraint: ")
    replaced = client.post("/v1/workloads/db/replace")
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["changes"] == dry.json()["changes"]
    assert replaced.json()["incompatible"] == [] and replaced.json()["stayed"] == []
    assert where(client)[unit] == "h2"
    assert events(client, "unit.moved")[-1]["details"]["rule"] == "constraint"
    # Nothing left to replace: nothing changes.
    revision = replaced.json()["revision"]
    idle = client.post("/v1/workloads/db/replace").json()
    assert idle["changes"] == [] and idle["revision"] == revision
    missing = client.post("/v1/workloads/nothing/replace")
    assert missing.status_code == 404
    assert missing.json()["type"] == "urn:placed:problem:not-found"


def test_a_workload_put_flags_and_replace_keeps_what_fits_nowhere_else(
    world: tuple[TestClient, Engine],
) -> None:
    client, _ = world
    apply(client, HOSTS.replace("TIER", "gold"))
    before = where(client)
    row = client.get("/v1/workloads/db").json()
    spec = copy.deepcopy(row["spec"])
    spec["constraints"] = "tier == silver"
    put = client.put("/v1/workloads/db", json={"generation": row["generation"], "spec": spec})
    assert put.status_code == 200, put.text
    assert put.json()["changes"] == []
    assert {m["unit"] for m in put.json()["incompatible"]} == set(before)
    assert {e["subject"] for e in events(client, "unit.incompatible")} == set(before)
    # h3 (silver) has room for both.
    replaced = client.post("/v1/workloads/db/replace").json()
    assert {c["unit"]: c["to"] for c in replaced["changes"]} == dict.fromkeys(before, "h3")
    # Now a rule nothing meets: replace moves nothing and says why each stays.
    row = client.get("/v1/workloads/db").json()
    spec["constraints"] = "tier == platinum"
    put = client.put("/v1/workloads/db", json={"generation": row["generation"], "spec": spec})
    assert put.status_code == 200, put.text
    stuck = client.post("/v1/workloads/db/replace").json()
    assert stuck["changes"] == []
    assert {m["unit"] for m in stuck["stayed"]} == set(before)
    assert all(m["summary"].startswith("0/3 targets available") for m in stuck["stayed"])
    assert set(where(client).values()) == {"h3"}


def test_a_dedication_released_under_dedicated_vms_flags_them_and_replace_moves_them(
    world: tuple[TestClient, Engine],
) -> None:
    client, _ = world
    apply(client, CLOUD)
    for host in ("h1", "h2"):
        made = client.post("/v1/dedications", json={"resource": host, "domain": "D1"})
        assert made.status_code == 201, made.text
    vms = {"name": "a1-vm", "account": "A1", "offering": "dedicated", "units": 2}
    assert client.post("/v1/workloads", json=vms).status_code == 201
    [taken] = set(where(client).values())
    other = "h2" if taken == "h1" else "h1"
    released = client.delete(f"/v1/dedications/{taken}")
    assert released.status_code == 200, released.text
    assert {m["unit"] for m in released.json()["incompatible"]} == {"a1-vm/0", "a1-vm/1"}
    flagged = events(client, "unit.incompatible")
    assert {(e["subject"], e["details"]["rule"]) for e in flagged} == {
        ("a1-vm/0", "dedication"),
        ("a1-vm/1", "dedication"),
    }
    assert all(e["account"] == "A1" for e in flagged)
    assert set(where(client).values()) == {taken}  # they stay
    replaced = client.post("/v1/workloads/a1-vm/replace").json()
    assert {c["to"] for c in replaced["changes"]} == {other}
    assert set(where(client).values()) == {other}


def test_drain_moves_what_the_rules_allow_and_refuses_the_rest(
    world: tuple[TestClient, Engine],
) -> None:
    client, engine = world
    apply(client, CLOUD)
    for host in ("h1", "h2"):
        assert client.post("/v1/dedications", json={"resource": host, "domain": "D1"}).is_success
    vms = {"name": "a1-vm", "account": "A1", "offering": "dedicated", "units": 2}
    assert client.post("/v1/workloads", json=vms).status_code == 201
    [first] = set(where(client).values())
    second = "h2" if first == "h1" else "h1"
    rows = table_digest(engine)
    dry = client.post(f"/v1/targets/{first}/drain", params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert table_digest(engine) == rows
    drained = client.post(f"/v1/targets/{first}/drain", json={"reason": "firmware"})
    assert drained.status_code == 200, drained.text
    body = drained.json()
    assert body["moves"] == dry.json()["moves"]
    assert body["admin_state"] == "maintenance" and body["changed"] is True
    assert {(m["from"], m["to"]) for m in body["moves"]} == {(first, second)}
    assert body["refused"] == []
    assert client.get(f"/v1/targets/{first}").json()["admin_state"] == "maintenance"
    [state] = events(client, "target.maintenance")
    assert state["details"]["reason"] == "firmware" and state["details"]["operation"] == "drain"
    # The drained host takes nothing new: the other is full, so a claim finds no place.
    more = {"name": "a1-more", "account": "A1", "offering": "dedicated", "units": 1}
    full = client.post("/v1/workloads", json=more)
    assert full.status_code == 409, full.text
    assert "1 is down" in full.json()["detail"]
    # Draining the other: the dedicated VMs may use no other host (h3 is not dedicated
    # to D1, the first is in maintenance): each stays, recorded as refused.
    refused = client.post(f"/v1/targets/{second}/drain").json()
    assert refused["moves"] == []
    assert {m["unit"] for m in refused["refused"]} == {"a1-vm/0", "a1-vm/1"}
    recorded = events(client, "migration.refused")
    assert {e["subject"] for e in recorded} == {"a1-vm/0", "a1-vm/1"}
    assert all(e["target"] == second and e["details"]["operation"] == "drain" for e in recorded)
    assert all(e["details"]["error"] == "no-capacity" for e in recorded)
    assert set(where(client).values()) == {second}
    # A shared VM on the undedicated host: it may not use D1's dedicated hosts either.
    shared = {"name": "b1-vm", "account": "B1", "offering": "shared", "units": 1}
    assert client.post("/v1/workloads", json=shared).status_code == 201
    assert where(client)["b1-vm/0"] == "h3"
    kept = client.post("/v1/targets/h3/drain").json()
    assert [m["unit"] for m in kept["refused"]] == ["b1-vm/0"]
    # Back up, then drained again: the VMs of the second go back to the first.
    assert client.post(f"/v1/targets/{first}/up").status_code == 200
    again = client.post(f"/v1/targets/{second}/drain").json()
    assert {m["to"] for m in again["moves"]} == {first}
    assert again["changed"] is False  # it was in maintenance already
    missing = client.post("/v1/targets/h9/drain")
    assert missing.status_code == 404


def test_the_misfits_of_a_spec_are_judged_in_the_order_units_land() -> None:
    """Capacity that shrank under running units: those that still fit, in the order the
    plan state is built, stay compatible; the one past capacity is the misfit."""
    spec = load_spec_data(
        {
            "version": 1,
            "name": "shrunk",
            "inventory": [{"id": "h1", "kind": "host", "capacity": {"cpu": 2}}],
            "workloads": [{"name": "w", "units": 3, "resources": {"cpu": 1}}],
            "running": [{"unit": f"w/{i}", "target": "h1"} for i in range(3)],
        },
        "shrunk",
    )
    [misfit] = fit.misfits(Planner(spec))
    assert (misfit.unit, misfit.target, misfit.rule) == ("w/2", "h1", "capacity")


def test_the_online_commands_show_the_diff_replace_and_drain(tmp_path: Path) -> None:
    """placed apply --dry-run, placed replace and placed target drain against a real
    placed serve: the diff lines for people, the whole answer with -o json."""
    database = f"sqlite:///{tmp_path / 'placed.db'}"
    token = upgrade(database)
    (tmp_path / "gold.yaml").write_text(HOSTS.replace("TIER", "gold"))
    (tmp_path / "silver.yaml").write_text(HOSTS.replace("TIER", "silver"))
    runner = CliRunner()
    with serving(database) as (base,):
        env = {"PLACED_URL": base, "PLACED_TOKEN": token}

        def placed(*args: str, code: int = 0) -> str:
            done = runner.invoke(app, list(args), env=env)
            assert done.exit_code == code, done.output
            return done.output

        placed("apply", str(tmp_path / "gold.yaml"))
        found = json.loads(placed("get", "placements", "-o", "json"))
        unit = next(i["unit"] for i in found["items"] if i["target"] == "h1")
        shown = placed("apply", str(tmp_path / "silver.yaml"), "--dry-run")
        line = next(row for row in shown.splitlines() if row.startswith("!"))
        assert line.split()[:4] == ["!", unit, "h1", "h1"]
        assert "no longer fits (constraint: fails tier == gold" in line
        assert "placed replace db moves it" in shown.replace("\n", " ")
        assert "would: 1 incompatible (stay)" in shown
        assert "(dry run: nothing changed" in shown
        data = json.loads(placed("apply", str(tmp_path / "silver.yaml"), "--dry-run", "-o", "json"))
        assert data["dry_run"] is True and data["incompatible"][0]["unit"] == unit
        told = placed("apply", str(tmp_path / "silver.yaml"))
        assert f"{unit} no longer fits h1 (constraint" in told.replace("\n", " ")
        planned = placed("replace", "db", "--dry-run")
        assert planned.splitlines()[1].split()[:4] == ["~", unit, "h1", "h2"]
        assert "would: 1 to move" in planned
        done = placed("replace", "db")
        assert "1 to move" in done and "would" not in done
        placed("apply", str(tmp_path / "gold.yaml"))  # h1 is gold again
        drained = json.loads(placed("target", "drain", "h2", "-r", "firmware", "-o", "json"))
        assert drained["admin_state"] == "maintenance"
        assert {m["unit"] for m in drained["moves"]} == {i["unit"] for i in found["items"]}
        assert {m["to"] for m in drained["moves"]} == {"h1"}  # h3 is silver
        shown = placed("target", "drain", "h1", "--dry-run")
        assert shown.startswith("h1 would go into maintenance")
        assert shown.count("\n! ") == 2 and "2 refused (stay)" in shown
        assert "(dry run: nothing changed, at revision " in shown
        # Several at once, in one change: h1's units may not go to h3 (being drained too).
        both = placed("target", "drain", "h1", "h3", "--dry-run")
        assert both.startswith("h1, h3 would go into maintenance\n")
        assert both.count("\n! ") == 2 and "would: 2 refused (stay)" in both
        planned = json.loads(placed("target", "drain", "h1", "h3", "--dry-run", "-o", "json"))
        assert [t["target"] for t in planned["targets"]] == ["h1", "h3"]
        assert {r["target"] for r in planned["refused"]} == {"h1"} and planned["dry_run"]
        done = placed("target", "drain", "h3", "h1", "h3", "-r", "racks")
        head = re.match(r"h3, h1 are in maintenance \(revision (\d+)\)\n", done)
        assert head is not None and int(head[1]) > planned["revision"], done
        assert "2 refused (stay)" in done and "would" not in done
        again = placed("target", "drain", "h1", "h3", "h2")
        assert again.startswith("h1, h3, h2 were in maintenance already\n")
        many = placed("target", "drain", *(f"h{i}" for i in range(1001)), code=2)
        assert "at most 1,000 in one drain" in many
        placed("replace", "nothing", code=2)
