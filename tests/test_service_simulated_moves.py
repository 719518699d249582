"""Targets going down and coming up over the API commit each unit from where the store
has it. A simulation compares two plans of the world, and its first plan, made from
scratch, may place units the store holds pending (room that an earlier change, judging
in its own order, did not find). Committing the simulation's own moves then counted
those units in a target's usage without placing them, and the next change that moved
them was stale on every try: `target down` answered 409 claim-conflict to a lone admin.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests import row_invariants
from tests.conftest import EXAMPLES
from tests.service_support import client_of, served

PENDING = EXAMPLES.parent / "tests" / "data" / "console-pending.yaml"


def apply(client: TestClient, path: Any) -> None:
    answer = client.post(
        "/v1/apply",
        content=path.read_bytes(),
        headers={"content-type": "application/yaml"},
    )
    assert answer.status_code == 200, answer.text


def change(client: TestClient, target: str, action: str) -> list[tuple[str, Any, Any]]:
    answer = client.post(f"/v1/targets/{target}/{action}", json={"reason": "a test"})
    assert answer.status_code == 200, answer.text
    return [(m["unit"], m["from"], m["to"]) for m in answer.json()["moves"]]


def test_down_and_up_keep_usage_and_placements_together(database: str) -> None:
    app, root = served(database)
    client = client_of(app, root)
    apply(client, EXAMPLES / "cloudstack-dedication.yaml")
    apply(client, PENDING)
    implicit_hosts_kept(client)  # the second apply plans with the first's VMs running
    engine = app.state.database

    def rows_agree() -> None:
        assert row_invariants.broken_rows(row_invariants.read_rows(engine)) == []

    # Both shared hosts down, then up again: the units that return are placed in an
    # order of their own, which a plan from scratch need not repeat.
    for target in ("H33a", "H33b"):
        change(client, target, "down")
        rows_agree()
    for target in ("H33a", "H33b"):
        change(client, target, "up")
        rows_agree()
    # Every unit the usage counts is placed, and the store agrees with a plan of the
    # world: the next change finds nothing stale.
    moves = change(client, "H33a", "down")
    rows_agree()
    assert moves and all(source == "H33a" for _, source, _ in moves), moves
    change(client, "H33a", "up")
    rows_agree()
    placed = {
        item["unit"]: item.get("target") for item in client.get("/v1/placements").json()["items"]
    }
    stored = sum(1 for target in placed.values() if target == "H33a")
    assert stored > 0, placed
    implicit_hosts_kept(client)


TWO_HOSTS = b"""version: 1
name: two-hosts
inventory:
  - {id: t1, capacity: {cpu: 2}}
  - {id: t2, capacity: {cpu: 2}}
workloads:
  - {name: w, units: 4, resources: {cpu: 1}}
"""


def test_a_waiting_unit_keeps_its_name_while_others_of_its_workload_run(database: str) -> None:
    """A plan is given the units that run and numbers the rest after them; the store
    keeps each waiting unit's own name, so no change renames one (unit 0 removed and
    unit 4 added, for a unit that never moved), and its page explains it."""
    app, root = served(database)
    client = client_of(app, root)
    answer = client.post(
        "/v1/apply", content=TWO_HOSTS, headers={"content-type": "application/yaml"}
    )
    assert answer.status_code == 200, answer.text

    def where() -> dict[str, str | None]:
        items = client.get("/v1/placements", params={"workload": "w"}).json()["items"]
        return {item["unit"]: item.get("target") for item in items}

    start = where()
    assert sorted(start) == [f"w/{i}" for i in range(4)] and None not in start.values()
    first = start["w/0"]
    assert first is not None
    change(client, first, "down")  # its two units wait: the other host is full
    units = where()
    assert sorted(units) == sorted(start)
    waiting = sorted(unit for unit, target in units.items() if target is None)
    running = sorted(unit for unit, target in units.items() if target is not None)
    assert "w/0" in waiting and len(waiting) == 2 and max(running, key=ordinal) != "w/0"
    edit = b"version: 1\nname: edit\nworkloads:\n  - {name: edit-a1, units: 1}\n"
    answer = client.post(
        "/v1/apply",
        params={"dry_run": "true"},
        content=edit,
        headers={"content-type": "application/yaml"},
    )
    assert answer.status_code == 200, answer.text
    assert [m["unit"] for m in answer.json()["changes"]] == ["edit-a1/0"]
    other = "t2" if start["w/0"] == "t1" else "t1"
    change(client, other, "down")
    change(client, other, "up")
    assert set(where()) == set(start)
    for unit in (*waiting, *running):
        shown = client.get(f"/v1/units/{unit}").json()
        assert shown["explanation"] is not None and shown["explanation"]["unit"] == unit
    change(client, first, "up")
    assert where().keys() == start.keys() and None not in where().values()
    assert row_invariants.broken_rows(row_invariants.read_rows(app.state.database)) == []


def ordinal(unit: str) -> int:
    return int(unit.rpartition("/")[2])


def implicit_hosts_kept(client: TestClient) -> None:
    """A host a dedicated VM took by implicit dedication is its account's while the VM
    runs there: no other account's shared VM lands beside it in a later plan."""
    placed = {
        item["unit"]: item.get("target") for item in client.get("/v1/placements").json()["items"]
    }
    dedicated = {o["name"] for o in client.get("/v1/offerings").json()["items"] if o["dedicated"]}
    workloads = {w["name"]: w for w in client.get("/v1/workloads").json()["items"]}
    held: dict[str, set[str]] = {}  # host -> accounts with a dedicated VM there
    shared: dict[str, set[str]] = {}  # host -> accounts with a shared VM there
    for unit, target in placed.items():
        workload = workloads[unit.rpartition("/")[0]]
        if target is not None and workload["account"] is not None:
            kind = held if workload["spec"].get("offering") in dedicated else shared
            kind.setdefault(target, set()).add(workload["account"])
    assert held, placed
    for host, owners in held.items():
        assert not shared.get(host, set()) - owners, (host, owners, shared[host])


def test_a_unit_moved_onto_a_new_juju_machine_makes_that_machine_a_target(
    database: str,
) -> None:
    # Down and evacuate plan by simulation: a unit it moves onto a machine it made
    # (new_machines) must find that machine among the targets, as a plan's does.
    app, root = served(database)
    client = client_of(app, root)
    made = client.post("/v1/workloads", json={"name": "w", "new_machines": True})
    assert made.status_code == 201, made.text
    first = made.json()["changes"][0]["to"]
    answer = client.post(f"/v1/targets/{first}/down", json={"reason": "a test"})
    assert answer.status_code == 200, answer.text
    (move,) = [m for m in answer.json()["moves"] if m["unit"] == "w/0"]
    assert move["from"] == first and move["to"] not in (None, first)
    listed = client.get("/v1/targets").json()
    names = {t["name"] for t in (listed["items"] if isinstance(listed, dict) else listed)}
    assert {first, move["to"]} <= names
    assert row_invariants.broken_rows(row_invariants.read_rows(app.state.database)) == []
