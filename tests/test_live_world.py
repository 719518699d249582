"""The live world (issue 35): a change is a delta on the replica's world in memory, and
the world is built whole only when a delta cannot be one.

A delete of a plain allocation workload takes its units off the cached state, writes
the rows the general path writes for the same delete (the same writer, fed by the delta),
and moves the cache to the new revision without building the world again. The tests:

- the same sequence of claims and deletes on two stores, one through the live world and
  one through the general path, leaves the same rows and answers the same changes;
- the delete and the claim after it are served without building the world again, and a
  world where the delta would not be what a whole plan finds (a unit waiting for room, a
  workload naming another) goes to the general path;
- claims, deletes and count changes served together are one batch, one revision;
- a stateful property: random claims, deletes, count changes, targets down, up and
  drained, and the document applied again with another target; after each step the live
  state (brought to the store's revision as the next change finds it) is what a plan from
  scratch of the stored rows finds, and each target's stored `used` is the sum of its
  units'.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from sqlalchemy import select

from placed.engine.planner import Planner
from placed.model.dedications import Owner
from placed.model.workload import Avoid
from placed.operations import claim as claiming
from placed.operations import (
    coupling,
    dedication_changes,
    drain,
    evacuate,
    placing,
    setting_changes,
    target_states,
)
from placed.operations import migrate as migrating
from placed.operations import remove as removing
from placed.operations import update as updating
from placed.operations.errors import OperationError
from placed.operations.rededication import Rededicating
from placed.operations.replica import Removing, ReplicaWorld, Rescaling, Ticket
from placed.policy.dedication import DedicationState, Tenant, zone_columns
from placed.service import problems
from placed.service.app import create_app
from placed.spec.schema import WorkloadSpec
from placed.store import revision, world
from placed.store.claims import Actor
from placed.store.database import make_engine, reading
from placed.store.tables import (
    EventRow,
    Location,
    Placement,
    PlacementHistory,
    Target,
    TargetLiveness,
    TargetResource,
    Unit,
    Workload,
)
from placed.store.tables import (
    Setting as SettingRow,
)
from tests.conftest import another_database

from .service_support import bearer, issue, served

SPEC = """
name: racks
inventory:
  - {id: h1, capacity: {cpu: 4, memory: 8}}
  - {id: h2, capacity: {cpu: 4, memory: 8}}
  - {id: h3, capacity: {cpu: 2, memory: 4}}
"""
ROOT = Actor("r" * 16, "root-admin", "req")


def applied(url: str, spec: str = SPEC) -> tuple[FastAPI, TestClient]:
    app, root = served(url)
    client = TestClient(app, headers=bearer(root))
    answer = client.post("/v1/apply", content=spec, headers={"content-type": "application/yaml"})
    assert answer.status_code == 200, answer.text
    return app, client


@contextlib.contextmanager
def twins(
    database: str, tmp_path: Path, spec: str = SPEC
) -> Iterator[tuple[FastAPI, TestClient, FastAPI, TestClient]]:
    """The same document applied to two stores of `database`'s kind: one whose changes
    go through the live world, one whose changes the test sends to the general path."""
    with another_database(database, tmp_path, "twin.db") as twin:
        yield (*applied(database, spec), *applied(twin, spec))


def claim_both(clients: tuple[TestClient, TestClient], body: dict[str, Any]) -> None:
    """The same claim through both stores' live worlds: both place it."""
    answers = [client.post("/v1/workloads", json=body) for client in clients]
    assert [a.status_code for a in answers] == [201, 201], answers[0].text


def rows(app: FastAPI) -> dict[str, Any]:
    """What the store holds that a change writes: workloads, units where they are,
    targets' usage, and the events without their times and ids."""
    with reading(app.state.database) as session:
        return {
            "workloads": sorted(session.scalars(select(Workload.name))),
            "placements": sorted(
                session.execute(
                    select(Unit.name, Target.name)
                    .join(Placement, Placement.unit_id == Unit.id)
                    .join(Target, Target.id == Placement.target_id)
                ).all()
            ),
            "used": sorted(
                session.execute(
                    select(Target.name, TargetResource.name, TargetResource.used).join(
                        TargetResource, TargetResource.target_id == Target.id
                    )
                ).all()
            ),
            "events": [
                (row.kind, row.subject, row.target, row.workload, row.actor_role, row.details)
                for row in session.scalars(select(EventRow).order_by(EventRow.id))
                if not row.kind.startswith("token.")  # each store's own root token
            ],
            # Each move's history row, and the event it points at.
            "history": [
                (row.unit_name, row.from_target, row.to_target, row.reason, kind, subject)
                for row, kind, subject in session.execute(
                    select(PlacementHistory, EventRow.kind, EventRow.subject)
                    .join(EventRow, EventRow.id == PlacementHistory.event_id)
                    .order_by(PlacementHistory.id)
                )
            ],
        }


def update(app: FastAPI, body: dict[str, Any], live: bool) -> dict[str, Any]:
    """PUT through the live world, or (`live` False) through the general path alone, at
    the workload's stored generation."""
    replica: ReplicaWorld | None = app.state.replica if live else None
    with reading(app.state.database) as session:
        generation = session.scalar(
            select(Workload.generation).where(Workload.name == body["name"])
        )
    assert generation is not None
    spec = WorkloadSpec.model_validate(body)
    return updating.update(
        app.state.database, body["name"], spec, generation, ROOT, replica=replica
    )


def delete(app: FastAPI, name: str, live: bool) -> dict[str, Any]:
    """DELETE through the live world, or (`live` False) through the general path alone."""
    replica: ReplicaWorld | None = app.state.replica if live else None
    return removing.remove(app.state.database, name, None, ROOT, replica=replica)


STEPS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("claim", "a", {"name": "a", "units": 2, "resources": {"cpu": 1, "memory": 2}}),
    ("claim", "b", {"name": "b", "units": 3, "resources": {"cpu": 1}}),
    ("update", "b", {"name": "b", "units": 5, "resources": {"cpu": 1}}),
    ("delete", "a", None),
    ("claim", "c", {"name": "c", "units": 1, "resources": {"cpu": 2, "memory": 1}}),
    ("update", "b", {"name": "b", "units": 2, "resources": {"cpu": 1}}),
    ("update", "c", {"name": "c", "units": 3, "resources": {"cpu": 2, "memory": 1}}),
    ("delete", "b", None),
    ("delete", "c", None),
    ("claim", "d", {"name": "d", "units": 4, "resources": {"cpu": 1}}),
]


def test_deletes_and_updates_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    with twins(database, tmp_path) as (live_app, live_client, general_app, general_client):
        replica: ReplicaWorld = live_app.state.replica
        built: int | None = None
        for step, name, body in STEPS:
            if built is None and replica.rebuilds:
                built = replica.rebuilds  # the world built once, for the first claim
            if step == "claim":
                assert body is not None
                claim_both((live_client, general_client), body)
                continue
            if step == "update":
                assert body is not None
                live, general = update(live_app, body, True), update(general_app, body, False)
                assert live == general
            else:
                live, general = delete(live_app, name, True), delete(general_app, name, False)
                assert live["changes"] == general["changes"]
                assert live["revision"] == general["revision"]
            assert live["changes"], (step, name)
        assert rows(live_app) == rows(general_app)
        # Every delete and update was a delta: the world was never built again.
        assert replica.rebuilds == built


def unordered(stored: dict[str, Any]) -> dict[str, Any]:
    """`rows` with the events and the history of each change in no order (repr: the
    details' dicts do not sort)."""
    return {**stored, "events": sorted(map(repr, stored["events"]))} | {
        "history": sorted(map(repr, stored["history"]))
    }


def retarget(app: FastAPI, step: str, names: list[str], live: bool) -> dict[str, Any]:
    """Targets down, up, drained or changed in a batch, through the live world or (`live`
    False) through the general path alone."""
    replica: ReplicaWorld | None = app.state.replica if live else None
    engine = app.state.database
    if step == "drain":
        return drain.drain(engine, names, "a test", ROOT, replica=replica)
    if step == "batch":
        return target_states.change_states(
            engine, names[:1], names[1:], "a test", ROOT, replica=replica
        )
    [name] = names
    return target_states.change_state(engine, name, step, "a test", ROOT, replica=replica)


TARGET_STEPS: list[tuple[str, list[str] | dict[str, Any]]] = [
    ("claim", {"name": "a", "units": 3, "resources": {"cpu": 1, "memory": 2}}),
    ("claim", {"name": "b", "units": 2, "resources": {"cpu": 1}}),
    ("down", ["h1"]),
    ("claim", {"name": "c", "units": 1, "resources": {"cpu": 1}}),
    ("up", ["h1"]),
    ("drain", ["h2"]),
    ("up", ["h2"]),
    ("down", ["h1"]),  # h1 took c's unit while b's were elsewhere: they move again
    ("batch", ["h3", "h1"]),  # h3 down and h1 up at once
    ("drain", ["h1", "h2"]),
]


def test_targets_down_up_and_drained_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    with twins(database, tmp_path) as (live_app, live_client, general_app, general_client):
        replica: ReplicaWorld = live_app.state.replica
        built: int | None = None
        moved = 0
        for step, asked in TARGET_STEPS:
            if built is None and replica.rebuilds:
                built = replica.rebuilds
            if isinstance(asked, dict):
                claim_both((live_client, general_client), asked)
                continue
            live = retarget(live_app, step, asked, True)
            general = retarget(general_app, step, asked, False)
            # The general path lists a change's moves in its state's order of units,
            # the delta by workload and unit: the same moves.
            for answer in (live, general):
                answer["moves"].sort(key=lambda move: move["unit"])
            assert live == general, step
            moved += len(live["moves"])
        assert moved >= 6  # the steps move units, not only states
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        # Every change of a target's state was a delta: the world was never built again.
        assert replica.rebuilds == built


EDGE = """
name: edge
inventory:
  - {id: n1, capacity: {cpu: 4}, properties: {arch: arm}}
  - {id: n2, capacity: {cpu: 4}, properties: {arch: arm}}
  - {id: n3, capacity: {cpu: 8}, properties: {arch: x86}}
  - {id: n4, capacity: {cpu: 4}, properties: {arch: arm}}
workloads:
  - {name: agent, mode: every, resources: {cpu: 1}}
  - {name: app, units: 3, resources: {cpu: 1}}
  - {name: arm-only, mode: every, resources: {cpu: 1}, constraints: "arch == arm"}
"""

# Edge nodes lost and back: their every-mode units removed and given again, with the
# allocation units they held placed elsewhere, one node at a time and together.
EDGE_STEPS: list[tuple[str, list[str]]] = [
    ("down", ["n1"]),
    ("up", ["n1"]),
    ("down", ["n4"]),
    ("batch", ["n2", "n4"]),  # n2 down and n4 up at once
    ("down", ["n1"]),
    ("up", ["n2"]),
    ("up", ["n1"]),
    ("drain", ["n3"]),
    ("up", ["n3"]),
]


def test_edge_nodes_lost_and_back_are_deltas_that_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    with twins(database, tmp_path, EDGE) as (live_app, _, general_app, _):
        replica: ReplicaWorld = live_app.state.replica
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert cached.coupling.every == ("agent", "arm-only") and cached.coupling.mapped == ()
        built = replica.rebuilds
        moved = 0
        for step, asked in EDGE_STEPS:
            live = retarget(live_app, step, asked, True)
            general = retarget(general_app, step, asked, False)
            for answer in (live, general):
                answer["moves"].sort(key=lambda move: move["unit"])
            assert live == general, step
            moved += len(live["moves"])
            assert unordered(rows(live_app)) == unordered(rows(general_app)), step
        assert moved >= 12
        assert replica.rebuilds == built
        # Each unit's number is one no other unit of its workload has.
        with reading(live_app.state.database) as session:
            numbers = session.execute(select(Unit.workload_id, Unit.ordinal)).all()
        assert len(numbers) == len(set(numbers))


TIGHT_EDGE = """
name: tight-edge
inventory:
  - {id: n1, capacity: {cpu: 3}, properties: {arch: arm}, tags: [hot]}
  - {id: n2, capacity: {cpu: 3}, properties: {arch: arm}}
  - {id: n3, capacity: {cpu: 4}, properties: {arch: x86}}
workloads:
  - {name: agent, mode: every, resources: {cpu: 1}}
  - {name: hog, units: 2, resources: {cpu: 1}, tags: [hot]}
  - {name: arm-only, mode: every, resources: {cpu: 1}, constraints: "arch == arm"}
  - {name: app, units: 2, resources: {cpu: 1}}
"""


def test_deletes_and_count_cuts_in_an_edge_fleet_are_deltas_unless_an_every_unit_gains(
    database: str, tmp_path: Path
) -> None:
    """In a fleet with every-mode workloads, a delete or a count cut frees room: a delta
    when no every-mode workload would take a freed target (the whole plan gives none a
    unit), the general path when one would (hog's cut frees room on n1, which arm-only
    now takes)."""
    with twins(database, tmp_path, TIGHT_EDGE) as (live_app, _, general_app, _):
        replica: ReplicaWorld = live_app.state.replica
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert not any(u.startswith("arm-only/") for u in cached.units_on("n1"))
        built = replica.rebuilds
        live, general = delete(live_app, "app", True), delete(general_app, "app", False)
        assert live["changes"] == general["changes"]
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built, "a delete that gives no every-mode unit was not a delta"
        body = {"name": "hog", "units": 1, "resources": {"cpu": 1}, "tags": ["hot"]}
        live, general = update(live_app, body, True), update(general_app, body, False)
        assert live == general
        assert any(c["unit"].startswith("arm-only/") for c in live["changes"]), live
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built + 1  # the general path's: arm-only gained n1
        live, general = delete(live_app, "hog", True), delete(general_app, "hog", False)
        assert live["changes"] == general["changes"]
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built + 1


READERS = """
name: readers
inventory:
  - {id: h1, capacity: {cpu: 8}, tags: [data]}
  - {id: h2, capacity: {cpu: 8}, tags: [data]}
  - {id: h3, capacity: {cpu: 8}, tags: [data]}
  - {id: h4, capacity: {cpu: 8}, tags: [data]}
  - {id: h5, capacity: {cpu: 8}, tags: [apps]}
  - {id: h6, capacity: {cpu: 8}, tags: [apps]}
workloads:
  - {name: db, units: 2, resources: {cpu: 1}, tags: [data]}
  - {name: cache, units: 2, resources: {cpu: 1}, tags: [data], avoid: {workload: db, level: target}}
  - {name: web, units: 4, resources: {cpu: 1}, tags: [apps]}
  - {name: batch, units: 3, resources: {cpu: 2}, tags: [apps]}
"""


def test_a_world_with_a_reader_keeps_changes_of_the_workloads_no_one_reads_deltas(
    database: str, tmp_path: Path
) -> None:
    """One `avoid` in a fleet: the changes of the workloads it neither is nor names stay
    deltas, and those of the two it ties together go to the general path."""
    with twins(database, tmp_path, READERS) as (live_app, _, general_app, _):
        replica: ReplicaWorld = live_app.state.replica
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert not cached.coupling.plain and cached.coupling.readers == frozenset({"cache"})
        assert cached.coupling.referenced is not None and "db" in cached.coupling.referenced
        built = replica.rebuilds
        # Where web's, cache's and db's units run (the same in both stores).
        placed = dict(cached.snapshot.placements)
        read = {placed[unit] for unit in placed if unit.split("/")[0] in ("db", "cache")}
        web_host = next(placed[u] for u in sorted(placed) if placed[u] not in read)
        body = {"name": "web", "units": 6, "resources": {"cpu": 1}, "tags": ["apps"]}
        live, general = update(live_app, body, True), update(general_app, body, False)
        assert live == general
        live, general = delete(live_app, "batch", True), delete(general_app, "batch", False)
        assert live["changes"] == general["changes"]
        live = retarget(live_app, "down", [web_host], True)
        general = retarget(general_app, "down", [web_host], False)
        for answer in (live, general):
            answer["moves"].sort(key=lambda move: move["unit"])
        assert live == general
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built, "a change of web or batch took the general path"
        body = {"name": "db", "units": 3, "resources": {"cpu": 1}, "tags": ["data"]}
        live, general = update(live_app, body, True), update(general_app, body, False)
        assert live == general
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built + 1  # db is read by cache's avoid


NAMERS = """
name: namers
inventory:
  - {id: d1, capacity: {cpu: 8}, tags: [data]}
  - {id: d2, capacity: {cpu: 8}, tags: [data]}
  - {id: d3, capacity: {cpu: 8}, tags: [data]}
  - {id: d4, capacity: {cpu: 8}, tags: [data]}
  - {id: a1, capacity: {cpu: 8}, tags: [apps]}
  - {id: a2, capacity: {cpu: 8}, tags: [apps]}
  - {id: a3, capacity: {cpu: 8}, tags: [apps]}
workloads:
  - {name: db, units: 2, resources: {cpu: 1}, tags: [data]}
  - {name: web, units: 2, resources: {cpu: 1}, tags: [apps]}
"""
NAMING_CLAIMS: list[dict[str, Any]] = [
    {"name": "cache", "units": 2, "resources": {"cpu": 1}, "tags": ["data"],
     "avoid": {"workload": "db", "level": "target"}},
    {"name": "sidecar", "units": 2, "resources": {"cpu": 1}, "tags": ["apps"],
     "near": {"workload": "web", "level": "target"}},
    {"name": "plain", "units": 3, "resources": {"cpu": 2}},
    {"name": "replica", "units": 2, "resources": {"cpu": 1}, "tags": ["data"],
     "avoid": [{"workload": "db", "level": "target"}, {"workload": "cache", "level": "target"}]},
]  # fmt: skip


def test_claims_that_name_others_are_deltas_that_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    """A claim with near or avoid is placed on the live world (its terms read the plan
    state's counts); the workloads it avoids get the mirrored term a world loaded whole
    gives them, and the workloads it names are no longer free for deltas. A reader no
    one names stays free: its count changes and its delete are deltas too."""
    with twins(database, tmp_path, NAMERS) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        replica.read_current(live_app.state.database, lambda live: live)
        built = replica.rebuilds
        for body in NAMING_CLAIMS:
            spec = WorkloadSpec.model_validate(body)
            live = claiming.claim(live_app.state.database, spec, ROOT, replica=replica)
            general = claiming.claim(general_app.state.database, spec, ROOT)
            assert live == general, body["name"]
        assert replica.rebuilds == built, "a claim that names others took the general path"
        assert rows(live_app) == rows(general_app)
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert cached.coupling.readers == frozenset({"cache", "sidecar", "replica"})
        referenced = cached.coupling.referenced
        assert referenced is not None and {"db", "web", "cache"} <= referenced
        # The models' rules are what a world loaded from the rows holds: db and cache
        # avoid those that avoid them (mirrored), and nothing else changed.
        with reading(live_app.state.database) as session:
            scratch = placing.world_spec(world.read(session))
        wanted = [(w.name, w.requests) for w in scratch.workloads]
        assert [(w.name, w.requests) for w in cached.spec.workloads] == wanted
        assert [(n, w.requests) for n, w in cached.planner.workloads.items()] == wanted
        db = next(w for w in scratch.workloads if w.name == "db").request(Avoid)
        assert db is not None and any(term.mirrored for term in db.terms)
        # A name no stored workload has: the general path answers it.
        ghost = {"name": "ghost", "units": 1, "near": {"workload": "nobody", "level": "target"}}
        answers = [client.post("/v1/workloads", json=ghost) for client in (live_client, other)]
        assert answers[0].status_code == answers[1].status_code == 422, answers[0].text
        assert answers[0].json()["errors"] == answers[1].json()["errors"]
        # plain, sidecar and replica are named by no one: their deletes and count changes
        # stay deltas (replica's delete takes its mirrored terms off db and cache); db is
        # avoided: its count's change is the general path's.
        changes = [
            ("update", {**NAMING_CLAIMS[1], "units": 3}),  # sidecar grows near web
            ("update", {**NAMING_CLAIMS[3], "units": 1}),
            ("delete", {"name": "replica"}),
            ("delete", {"name": "plain"}),
        ]
        for step, body in changes:
            if step == "update":
                live, general = update(live_app, body, True), update(general_app, body, False)
                assert live == general, body
            else:
                live = delete(live_app, body["name"], True)
                general = delete(general_app, body["name"], False)
                assert live["changes"] == general["changes"], body
            assert unordered(rows(live_app)) == unordered(rows(general_app)), body
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built, "a change of a reader no one names was not a delta"
        with reading(live_app.state.database) as session:
            scratch = placing.world_spec(world.read(session))
        wanted = [(w.name, w.requests) for w in scratch.workloads]
        assert [(w.name, w.requests) for w in cached.spec.workloads] == wanted
        assert [(n, w.requests) for n, w in cached.planner.workloads.items()] == wanted
        body = {"name": "db", "units": 3, "resources": {"cpu": 1}, "tags": ["data"]}
        live, general = update(live_app, body, True), update(general_app, body, False)
        assert live == general
        assert rows(live_app) == rows(general_app)
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built + 1


MACHINES = """
name: machines
inventory:
  - {id: "0", kind: machine, capacity: {cpu: 8}}
  - {id: "1", kind: machine, capacity: {cpu: 8}}
  - {id: "2", kind: machine, capacity: {cpu: 8}}
workloads:
  - {name: mysql, units: 1, resources: {cpu: 1}, to: "1"}
"""
DIRECTED_CLAIMS: list[tuple[dict[str, Any], bool]] = [
    ({"name": "wp", "units": 1, "resources": {"cpu": 1}, "to": "mysql/0"}, True),
    ({"name": "m2", "units": 2, "resources": {"cpu": 1}, "to": ["0", "2"]}, True),
    ({"name": "both", "units": 2, "to": ["wp", "mysql"]}, True),  # the first unit of each
    ({"name": "lx", "units": 1, "to": "lxd:0"}, False),  # a container made: planned whole
    ({"name": "on1", "units": 1, "to": "1"}, True),
]


def test_claims_with_juju_directives_are_deltas_that_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    """A claim whose `to:` names machines or other units that exist is placed on the live
    world, its directives read against the workloads they name; one that makes a
    container plans whole. Either way, the answers and rows are the general path's."""
    with twins(database, tmp_path, MACHINES) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        claim_both((live_client, other), {"name": "x", "units": 1})  # the world built
        # A second server on the live store, its world built: it reads the claims that
        # are deltas from the rows, as claims.
        second = create_app(database=make_engine(live_app.state.database.url))
        second.state.replica.read_current(second.state.database, lambda live: live)
        for body, delta in DIRECTED_CLAIMS[:3]:
            built = replica.rebuilds
            spec = WorkloadSpec.model_validate(body)
            live = claiming.claim(live_app.state.database, spec, ROOT, replica=replica)
            general = claiming.claim(general_app.state.database, spec, ROOT)
            assert live == general, body["name"]
            assert unordered(rows(live_app)) == unordered(rows(general_app)), body["name"]
            replica.read_current(live_app.state.database, lambda live: live)
            assert (replica.rebuilds == built) == delta, body["name"]
            # Read after each: a claim naming one read in the same catch-up (not in its
            # world yet) would send it to build its world again.
            theirs = second.state.replica.read_current(second.state.database, lambda w: w)
        assert second.state.replica.rebuilds == 1
        mine = replica.read_current(live_app.state.database, lambda live: live)
        assert theirs.coupling == mine.coupling
        assert [(w.name, w.requests) for w in theirs.spec.workloads] == [
            (w.name, w.requests) for w in mine.spec.workloads
        ]
        for body, delta in DIRECTED_CLAIMS[3:]:
            built = replica.rebuilds
            spec = WorkloadSpec.model_validate(body)
            live = claiming.claim(live_app.state.database, spec, ROOT, replica=replica)
            general = claiming.claim(general_app.state.database, spec, ROOT)
            assert live == general, body["name"]
            replica.read_current(live_app.state.database, lambda live: live)
            assert (replica.rebuilds == built) == delta, body["name"]
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert {"wp", "m2", "both", "on1"} <= cached.coupling.directed
        # Deletes of those no directive names are deltas (the container made for lx
        # stays, as the whole plan keeps it); mysql, which wp's names, plans whole.
        built = replica.rebuilds
        for name, delta in (("both", True), ("lx", True), ("m2", True), ("mysql", False)):
            live, general = delete(live_app, name, True), delete(general_app, name, False)
            assert live["changes"] == general["changes"], name
            assert unordered(rows(live_app)) == unordered(rows(general_app)), name
            replica.read_current(live_app.state.database, lambda live: live)
            assert (replica.rebuilds == built) == delta, name
        cached = replica.read_current(live_app.state.database, lambda live: live)
        # A directive naming a unit that does not run: the general path answers it.
        ghost = {"name": "ghost", "units": 1, "to": "nobody/0"}
        answers = [client.post("/v1/workloads", json=ghost) for client in (live_client, other)]
        assert answers[0].status_code == answers[1].status_code == 422, answers[0].text
        assert answers[0].json()["errors"] == answers[1].json()["errors"]


CONDUCTORS = """
name: conductors
settings: {default_mode: mapping}
inventory:
  - {id: c1, kind: conductor, tags: [rack10, net1]}
  - {id: c2, kind: conductor, tags: [rack11, net1]}
  - {id: c3, kind: conductor, tags: [net1]}
  - {id: c4, kind: conductor, tags: [rack10], anti_tags: [customer1]}
workloads:
  - {name: fleet, units: 12}
  - {name: rack10-nodes, units: 4, tags: [rack10]}
  - {name: node-c, tags: [rack10, customer1]}
  - {name: api, mode: allocation, units: 3}
"""

# Conductors lost and back, one at a time and together: each moves mapping units (a
# node's conductor is derived from the live ones) and the allocation units they held.
CONDUCTOR_STEPS: list[tuple[str, list[str]]] = [
    ("down", ["c1"]),
    ("up", ["c1"]),
    ("down", ["c4"]),
    ("batch", ["c2", "c4"]),  # c2 down and c4 up at once
    ("down", ["c1"]),
    ("up", ["c2"]),
    ("up", ["c1"]),
    ("drain", ["c2"]),
    ("up", ["c2"]),
]


# The same fleet with its load balanced: no conductor holds more than the mean (the
# stable assignment under the cap, made afresh by every change of the conductors).
BALANCED = CONDUCTORS.replace("{name: fleet, units: 12}", "{name: fleet, units: 12, max_load: 1.0}")


@pytest.mark.parametrize("fleet", [CONDUCTORS, BALANCED], ids=["hashed", "max_load"])
def test_conductors_lost_and_back_are_deltas_that_write_what_the_general_path_writes(
    database: str, tmp_path: Path, fleet: str
) -> None:
    with twins(database, tmp_path, fleet) as (live_app, _, general_app, _):
        replica: ReplicaWorld = live_app.state.replica
        cached = replica.read_current(live_app.state.database, lambda live: live)
        built = replica.rebuilds
        assert cached is not None and cached.coupling.mapped == ("fleet", "rack10-nodes", "node-c")
        moved = 0
        for step, asked in CONDUCTOR_STEPS:
            live = retarget(live_app, step, asked, True)
            general = retarget(general_app, step, asked, False)
            for answer in (live, general):
                answer["moves"].sort(key=lambda move: move["unit"])
            assert live == general, step
            moved += len(live["moves"])
        assert moved >= 20
        # The allocation among the mapping workloads changes as a plain world's would.
        body = {"name": "api", "units": 5, "mode": "allocation"}
        live, general = update(live_app, body, True), update(general_app, body, False)
        assert live == general
        live, general = delete(live_app, "api", True), delete(general_app, "api", False)
        assert live["changes"] == general["changes"]
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        assert replica.rebuilds == built
        # c1, c2 and c3 down leave node-c no conductor (c4's anti-tag refuses it): a unit
        # would wait, and the whole plan answers that.
        for step, asked in [("down", ["c2"]), ("down", ["c3"]), ("down", ["c1"])]:
            live = retarget(live_app, step, asked, True)
            general = retarget(general_app, step, asked, False)
            for answer in (live, general):
                answer["moves"].sort(key=lambda move: move["unit"])
            assert live == general, step
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds > built  # built again from the rows the general path wrote


TENANTS = """
name: tenants
settings: {now: "2026-12-01T09:00:00Z"}
tenancy:
  domains:
    D1:
      accounts: [A1, U2]
      children: {SD1: {accounts: [A3]}}
    D2: {accounts: [A13]}
inventory:
  - id: z1
    kind: zone
    children:
      - id: p1
        kind: pod
        children:
          - id: c1
            kind: cluster
            children:
              - {id: H1a, kind: host, capacity: {cpu: 4, memory: 8}}
              - {id: H1b, kind: host, capacity: {cpu: 4, memory: 8}}
          - id: c2
            kind: cluster
            children:
              - {id: H2a, kind: host, capacity: {cpu: 4, memory: 8}}
              - {id: H2b, kind: host, capacity: {cpu: 4, memory: 8}}
          - id: c3
            kind: cluster
            children: [{id: H3a, kind: host, capacity: {cpu: 4, memory: 8}}]
offerings:
  - {name: dedicated-small, cpu: 1, memory: 2, dedicated: true}
  - {name: shared-small, cpu: 1, memory: 2}
"""

# Dedications made, absorbed, given another owner and released, each where no VM runs,
# with tenants' claims between them that the dedications steer.
DEDICATION_STEPS: list[tuple[str, str, str | None, str | None]] = [
    ("dedicate", "H3a", "D1", None),
    ("claim", "d1", "A1", "dedicated-small"),  # only H3a is D1's: it goes there
    ("dedicate", "c2", "D2", None),
    ("dedicate", "H2a", "D2", "A13"),  # an account's host inside its domain's cluster
    ("claim", "s1", "U2", "shared-small"),  # c2 is D2's, H3a D1's: c1 takes it
    ("update", "c2", "D2", "A13"),  # the cluster to the account: H2a's is absorbed
    ("claim", "d2", "A13", "dedicated-small"),
    ("dedicate", "H1b", "SD1", "A3"),
    ("release", "H1b", None, None),
    ("claim", "s2", "A3", "shared-small"),
]


def dedication_rows(app: FastAPI) -> dict[str, Any]:
    """`rows`, with the dedications as stored and the settings that tell other replicas
    and other changes that the rules changed."""
    with reading(app.state.database) as session:
        stored = world.read(session)
        marks = {
            key: session.scalar(select(SettingRow.value).where(SettingRow.key == key))
            for key in (world.RULES_SETTING, world.CHANGED_SETTING)
        }
    return {**rows(app), "dedications": stored.dedications, "marks": marks}


# The tenants' world with a rack of its own running two workloads, one avoiding the
# other: dedications elsewhere and settings stay deltas beside a reader.
WITH_READERS = (
    TENANTS.split("offerings:")[0]
    + "  - {id: spare, kind: cluster, children: [{id: S1, kind: host, capacity: {cpu: 4},"
    + " tags: [spare]}, {id: S2, kind: host, capacity: {cpu: 4}, tags: [spare]}]}\n"
    + "offerings:"
    + TENANTS.split("offerings:")[1]
    + "workloads:\n"
    + "  - {name: ref, units: 1, resources: {cpu: 1}, tags: [spare]}\n"
    + "  - {name: r, units: 1, resources: {cpu: 1}, tags: [spare],"
    + " avoid: {workload: ref, level: target}}\n"
)


@pytest.mark.parametrize("world_text", [TENANTS, WITH_READERS], ids=["tenants", "readers"])
def test_dedications_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path, world_text: str
) -> None:
    with twins(database, tmp_path, world_text) as (
        live_app,
        live_client,
        general_app,
        general_client,
    ):
        replica: ReplicaWorld = live_app.state.replica
        built: int | None = None
        for step, name, domain, account in DEDICATION_STEPS:
            if built is None and replica.rebuilds:
                built = replica.rebuilds  # the world built once, for the first change
            if step == "claim":
                body = {"name": name, "account": domain, "offering": account}
                claim_both((live_client, general_client), body)
                continue
            asked = Rededicating(step, name, "root-admin", domain, account)
            live = dedication_changes.change(
                live_app.state.database, ROOT, asked, name, replica=replica
            )
            general = dedication_changes.change(general_app.state.database, ROOT, asked, name)
            assert live == general, (step, name)
        assert built is not None
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        placed = dict(dedication_rows(live_app)["placements"])
        assert placed["d1/0"] == "H3a"
        assert placed["d2/0"] in ("H2a", "H2b")
        assert placed["s1/0"] in ("H1a", "H1b")
        # Every dedication's change was a delta: the world was never built again.
        assert replica.rebuilds == built
        # The cached world is the stored one: its targets carry the dedications a
        # plan from the rows gives them.
        cached = replica._cached
        assert cached is not None
        fresh = placing.world_spec(snapshot_of(live_app))
        assert [(t.id, t.dedication) for t in cached.planner.index.targets] == [
            (t.id, t.dedication) for t in fresh.inventory.targets
        ]
        assert cached.spec.inventory == fresh.inventory
        assert set(cached.spec.dedications) == set(fresh.dedications)


ZONES = """
name: zones
settings: {now: "2026-12-01T09:00:00Z"}
tenancy:
  domains:
    D1: {accounts: [A1, U2]}
    D2: {accounts: [A13]}
inventory:
  - id: z1
    kind: zone
    children:
      - id: p1
        kind: pod
        children:
          - id: c1
            kind: cluster
            children:
              - {id: H1a, kind: host, capacity: {cpu: 4, memory: 8}}
              - {id: H1b, kind: host, capacity: {cpu: 4, memory: 8}}
  - id: z2
    kind: zone
    children:
      - id: p2
        kind: pod
        children:
          - id: c2
            kind: cluster
            children:
              - {id: H2a, kind: host, capacity: {cpu: 4, memory: 8}}
              - {id: H2b, kind: host, capacity: {cpu: 4, memory: 8}}
offerings:
  - {name: dedicated-small, cpu: 1, memory: 2, dedicated: true}
  - {name: shared-small, cpu: 1, memory: 2}
workloads:
  - {name: vm0, account: A13, offering: shared-small}
running:
  - {unit: vm0/0, target: H1a}
"""

# A zone dedicated, given another owner, released and dedicated again while no VM runs
# in it, with an inner dedication it absorbs; tenants' claims after them read the zones.
ZONE_STEPS: list[tuple[str, str, str | None, str | None]] = [
    ("dedicate", "H1b", "D1", "A1"),
    ("claim", "d0", "A1", "dedicated-small"),  # to H1b: the live state's zone columns made
    ("dedicate", "H2a", "D2", "A13"),
    ("dedicate", "z2", "D2", None),  # H2a's, of the same domain, is absorbed
    ("update", "z2", "D2", "A13"),
    ("release", "z2", None, None),
    ("dedicate", "z2", "D1", None),
    ("claim", "s1", "A13", "shared-small"),  # D2's: the private zone z2 refuses it
    ("claim", "s2", "U2", "shared-small"),
    ("claim", "d1", "A1", "dedicated-small"),
]


def test_zone_dedications_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    with twins(database, tmp_path, ZONES) as (live_app, live_client, general_app, general_client):
        replica: ReplicaWorld = live_app.state.replica
        replica.read_current(live_app.state.database, lambda live: live)
        built = replica.rebuilds
        for step, name, domain, account in ZONE_STEPS:
            if step == "claim":
                body = {"name": name, "account": domain, "offering": account}
                claim_both((live_client, general_client), body)
                continue
            asked = Rededicating(step, name, "root-admin", domain, account)
            live = dedication_changes.change(
                live_app.state.database, ROOT, asked, name, replica=replica
            )
            general = dedication_changes.change(general_app.state.database, ROOT, asked, name)
            assert live == general, (step, name)
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        placed = dict(dedication_rows(live_app)["placements"])
        assert placed["s1/0"] in ("H1a", "H1b")
        # Every change was a delta: the world was never built again.
        assert replica.rebuilds == built
        cached = replica._cached
        assert cached is not None
        fresh = placing.world_spec(snapshot_of(live_app))
        assert cached.spec.inventory == fresh.inventory
        assert set(cached.spec.dedications) == set(fresh.dedications)
        # Each tenant's request reads the zones' dedications as a plan of the rows does.
        zones = {
            w.name: tenant.zones
            for w in fresh.workloads
            if isinstance(tenant := w.request(Tenant), Tenant)
        }
        assert "vm0" in zones  # a tenant's VM from before the changes
        assert all(z == (("z2", Owner("D1")),) for z in zones.values())
        assert {
            name: cached.planner.workloads[name].request(Tenant).zones  # type: ignore[union-attr]
            for name in zones
        } == zones
        # The zones' columns of the live state are a plan's of the rows.
        planner = Planner(fresh)
        state = planner.initial_state()
        planner.plan(state)
        found = zones["vm0"]
        assert zone_columns_of(cached.state, found) == zone_columns_of(state, found)


def zone_columns_of(state: Any, zones: Any) -> list[tuple[Owner | None, bool]]:
    """Beside each target, its zone's owner and whether that dedication is in force (as
    a plan state keeps them once made, or makes them from the zones' dedications)."""
    kept = state.family_state(DedicationState)
    owner, in_force = zone_columns(state, zones)
    return [
        (kept.owners[int(code) - 1] if code else None, bool(here))
        for code, here in zip(owner, in_force, strict=True)
    ]


# Settings of the whole world changed with tenants' claims between them: implicit
# dedication off keeps the host a dedicated VM took, and its account's next VM goes
# there; the controller's settings change no plan; a value refused, and one unchanged.
SETTING_STEPS: list[tuple[str, str, Any]] = [
    ("claim", "d1", ("A13", "dedicated-small")),  # takes an empty host (general path)
    ("setting", "implicit_dedication", False),
    ("claim", "s1", ("U2", "shared-small")),
    ("claim", "d2", ("A13", "dedicated-small")),  # the host d1 took is A13's still
    ("setting", "heartbeat_interval_s", 5),
    ("setting", "heartbeat_timeout_s", 1),  # refused: at least 3 heartbeats long
    ("setting", "implicit_dedication", True),
    ("setting", "implicit_dedication", True),  # unchanged
    ("claim", "d3", ("A1", "dedicated-small")),
]


@pytest.mark.parametrize("world_text", [TENANTS, WITH_READERS], ids=["tenants", "readers"])
def test_settings_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path, world_text: str
) -> None:
    with twins(database, tmp_path, world_text) as (
        live_app,
        live_client,
        general_app,
        general_client,
    ):
        replica: ReplicaWorld = live_app.state.replica
        built: list[int] = []
        for step, name, value in SETTING_STEPS:
            if step == "claim":
                account, offering = value
                body = {"name": name, "account": account, "offering": offering}
                claim_both((live_client, general_client), body)
                built.append(replica.rebuilds)
                continue
            results: list[Any] = []
            for app, fast in ((live_app, replica), (general_app, None)):
                try:
                    with problems.operation_errors():
                        results.append(
                            setting_changes.put_setting(
                                app.state.database, name, value, "root-admin", ROOT, replica=fast
                            )
                        )
                except problems.ProblemException as refused:
                    results.append((refused.status, refused.kind))
            assert results[0] == results[1], (name, value)
            built.append(replica.rebuilds)
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        placed = dict(dedication_rows(live_app)["placements"])
        assert placed["d2/0"] == placed["d1/0"]
        # From the first setting to the last claim (which takes a host: the general path
        # writes the implicit dedication), every change was a delta.
        assert built[1] == built[-2], built
        with reading(live_app.state.database) as session:
            stored = world.read(session)
        cached = replica._cached
        assert cached is not None and cached.snapshot.settings == stored.settings


def test_a_vm_that_takes_a_host_by_implicit_dedication_is_a_delta_of_the_live_world(
    database: str, tmp_path: Path
) -> None:
    """A dedicated VM with no host of its owner's takes an empty one, which becomes its
    account's (a stored row): as the general path answers and writes it, the world not
    built again, and the account's next VM goes to that host."""
    with twins(database, tmp_path, TENANTS) as (live_app, live_client, general_app, _):
        replica: ReplicaWorld = live_app.state.replica
        claims = [
            ("d1", "A13", "dedicated-small"),
            ("d2", "A13", "dedicated-small"),
            ("s1", "U2", "shared-small"),
            ("e1", "A1", "dedicated-small"),
            ("f1", "A3", "dedicated-small"),  # 5 VMs: 4 fill a host, the 5th takes another
        ]
        built: int | None = None
        for name, account, offering in claims:
            body: dict[str, Any] = {"name": name, "account": account, "offering": offering}
            if name == "f1":
                body["units"] = 5
            live = live_client.post("/v1/workloads", json=body)
            general = claiming.claim(
                general_app.state.database, WorkloadSpec.model_validate(body), ROOT
            )
            assert live.status_code == 201, live.text
            assert live.json()["placements"] == general["placements"], name
            assert live.json() == general, name
            built = replica.rebuilds if built is None else built
        assert replica.rebuilds == built
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        stored = snapshot_of(live_app)
        assert stored.placements["d1/0"] == stored.placements["d2/0"]
        implicit = {e["resource"]: e["account"] for e in stored.dedications if e.get("implicit")}
        assert implicit == {
            stored.placements["d1/0"]: "A13",
            stored.placements["e1/0"]: "A1",
            stored.placements["f1/0"]: "A3",
            stored.placements["f1/4"]: "A3",
        }
        listed = live_client.get("/v1/dedications").json()["items"]
        assert {d["resource"] for d in listed if d["implicit"]} == set(implicit)


def test_deletes_of_tenants_vms_are_deltas_and_release_a_host_s_implicit_dedication(
    database: str, tmp_path: Path
) -> None:
    """Offerings do not keep the live world from deltas: a shared VM's delete is one,
    and so is a dedicated VM's, whose host's implicit dedication ends with its
    account's last VM there (a row deleted), as the whole plan writes it."""
    with twins(database, tmp_path, TENANTS) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        clients = (live_client, other)
        for name, offering in (("d", "dedicated-small"), ("e", "dedicated-small")):
            body = {"name": name, "account": "A13", "offering": offering}
            claim_both(clients, body)
        claim_both(clients, {"name": "s", "account": "U2", "offering": "shared-small"})
        built = replica.rebuilds
        host = snapshot_of(live_app).placements["d/0"]
        assert snapshot_of(live_app).placements["e/0"] == host
        for name, released in (("s", False), ("d", False), ("e", True)):
            live = delete(live_app, name, True)
            general = delete(general_app, name, False)
            assert live == general, name
            implicit = [e for e in snapshot_of(live_app).dedications if e.get("implicit")]
            assert bool(implicit) != released, name
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        # The host is nobody's again: another account's dedicated VM may take it.
        body = {"name": "f", "account": "A1", "offering": "dedicated-small"}
        assert live_client.post("/v1/workloads", json=body).status_code == 201
        assert replica.rebuilds == built


def test_a_count_cut_that_ends_a_host_s_implicit_dedication_is_a_delta(
    database: str, tmp_path: Path
) -> None:
    """A dedicated VM workload cut to fewer units: where its last VMs on a host go, the
    host's implicit dedication ends (its row deleted), in the same transaction, as the
    whole plan writes it; grown again, the new VMs take an empty host the same way. The
    world is not built again."""
    with twins(database, tmp_path, TENANTS) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        body = {"name": "d", "account": "A13", "offering": "dedicated-small", "units": 5}
        claim_both((live_client, other), body)
        built = replica.rebuilds
        placed = snapshot_of(live_app).placements
        hosts = {placed[f"d/{n}"] for n in range(5)}
        assert len(hosts) == 2, placed  # four VMs fill one host, the fifth takes another
        implicit = [e for e in snapshot_of(live_app).dedications if e.get("implicit")]
        assert len(implicit) == 2
        for units, left in ((4, 1), (2, 1), (6, 2), (4, 1)):
            body["units"] = units
            live, general = update(live_app, body, True), update(general_app, body, False)
            assert live == general, units
            implicit = [e for e in snapshot_of(live_app).dedications if e.get("implicit")]
            assert len(implicit) == left, units
            assert unordered(rows(live_app)) == unordered(rows(general_app))
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built
        assert len([e for e in cached.snapshot.dedications if e.get("implicit")]) == 1
        # The host let go is nobody's again: another account's dedicated VM may take it.
        body = {"name": "f", "account": "A1", "offering": "dedicated-small", "units": 4}
        assert live_client.post("/v1/workloads", json=body).status_code == 201
        assert replica.rebuilds == built


def test_a_host_going_down_under_a_tenant_s_vms_moves_its_implicit_dedication_as_a_delta(
    database: str, tmp_path: Path
) -> None:
    """A host its account holds by implicit dedication goes down: the VMs move to an
    empty host, which they take by implicit dedication, and the first host's dedication
    ends, rows and events as the whole plan writes them, the world not built again."""
    with twins(database, tmp_path, TENANTS) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        claim_both(
            (live_client, other),
            {"name": "d", "account": "A13", "offering": "dedicated-small", "units": 2},
        )
        claim_both((live_client, other), {"name": "s", "account": "U2", "offering": "shared-small"})
        built = replica.rebuilds
        host = snapshot_of(live_app).placements["d/0"]
        live = retarget(live_app, "down", [host], True)
        general = retarget(general_app, "down", [host], False)
        for answer in (live, general):
            answer["moves"].sort(key=lambda move: move["unit"])
        assert live == general
        assert {m["unit"] for m in live["moves"]} >= {"d/0", "d/1"}
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built, "the host's change took the general path"
        implicit = [e["resource"] for e in cached.snapshot.dedications if e.get("implicit")]
        assert implicit == [cached.snapshot.placements["d/0"]] and host not in implicit
        # Back up: nobody's, so another account's dedicated VM may take it.
        for app, live_path in ((live_app, True), (general_app, False)):
            retarget(app, "up", [host], live_path)
        body = {"name": "f", "account": "A1", "offering": "dedicated-small", "units": 4}
        claim_both((live_client, other), body)
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built


def _document(workloads: dict[str, int]) -> str:
    """The `racks` document again, with these workloads (name: units)."""
    lines = [f"  - {{name: {n}, units: {u}, resources: {{cpu: 1}}}}" for n, u in workloads.items()]
    return SPEC + "workloads:\n" + "\n".join(lines) + "\n"


APPLY_STEPS: list[tuple[dict[str, int], bool]] = [
    ({"a": 2, "b": 1}, False),  # workloads added to the document
    ({"a": 2, "b": 1}, False),  # the same again: nothing changes
    ({"a": 3, "b": 1, "c": 2}, False),  # a count up, a workload added
    ({"a": 3}, True),  # pruned: b and c deleted
    ({"a": 1}, False),  # a count down
]


def apply_both(
    live: tuple[FastAPI, TestClient], general: tuple[FastAPI, TestClient], body: str, prune: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same documents applied through the first store's live world and through the
    second's general path alone: both answers, their changes and placements sorted."""
    answers = []
    for app, client in (live, general):
        kept = app.state.replica
        app.state.replica = kept if app is live[0] else None  # the general path alone
        try:
            answer = client.post(
                f"/v1/apply?prune={str(prune).lower()}",
                content=body,
                headers={"content-type": "application/yaml"},
            )
        finally:
            app.state.replica = kept
        assert answer.status_code == 200, answer.text
        found = answer.json()
        found["changes"].sort(key=lambda move: move["unit"])
        found["placements"].sort(key=lambda placed: placed["unit"])
        answers.append(found)
    return answers[0], answers[1]


def test_documents_applied_through_the_live_world_write_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    with twins(database, tmp_path) as (live_app, live_client, general_app, general_client):
        replica: ReplicaWorld = live_app.state.replica
        # The live world built, by a claim (a first apply builds none).
        claim_both((live_client, general_client), {"name": "x", "resources": {"cpu": 1}})
        built = replica.rebuilds
        for workloads_named, prune in APPLY_STEPS:
            body = _document(workloads_named)
            live, general = apply_both(
                (live_app, live_client), (general_app, general_client), body, prune
            )
            assert live == general, workloads_named
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        # Every apply was a delta: the claim after the last finds the world current.
        claim_both((live_client, general_client), {"name": "y", "resources": {"cpu": 1}})
        assert replica.rebuilds == built == 1


def _namers(*workloads: str) -> str:
    """The `namers` document with these workloads (each a flow mapping)."""
    inventory = NAMERS.split("workloads:")[0]
    return inventory + "workloads:\n" + "".join(f"  - {w}\n" for w in workloads)


DB = "{name: db, units: 2, resources: {cpu: 1}, tags: [data]}"
WEB = "{name: web, units: %d, resources: {cpu: 1}, tags: [apps]}"
CACHE = (
    "{name: cache, units: %d, resources: {cpu: 1}, tags: [data],"
    " avoid: {workload: db, level: target}}"
)
SIDECAR = (
    "{name: sidecar, units: 1, resources: {cpu: 1}, tags: [apps],"
    " near: {workload: web, level: target}}"
)
NAMING_APPLIES = [
    (_namers(DB, WEB % 3, CACHE % 1), False),  # a reader made, web grown
    (_namers(DB, WEB % 3, CACHE % 2, SIDECAR), False),  # the reader grown, another made
    (_namers(DB, WEB % 3, CACHE % 2), True),  # sidecar pruned: named by no one
]  # fmt: skip


def test_documents_with_readers_applied_through_the_live_world_are_deltas(
    database: str, tmp_path: Path
) -> None:
    """Documents whose workloads read others (near, avoid) are applied as deltas too:
    readers made, grown and pruned, as the general path writes them."""
    with twins(database, tmp_path, NAMERS) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        claim_both((live_client, other), {"name": "x", "resources": {"cpu": 1}})
        built = replica.rebuilds
        for body, prune in NAMING_APPLIES:
            live, general = apply_both((live_app, live_client), (general_app, other), body, prune)
            assert live == general, body
            assert unordered(rows(live_app)) == unordered(rows(general_app)), body
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert replica.rebuilds == built, "an apply with readers took the general path"
        assert cached.coupling.readers is not None and "cache" in cached.coupling.readers


def test_a_dedication_of_a_host_a_vm_runs_on_goes_to_the_general_path(database: str) -> None:
    app, client = applied(database, TENANTS)
    replica: ReplicaWorld = app.state.replica
    body = {"name": "s", "account": "A1", "offering": "shared-small", "units": 5}
    assert client.post("/v1/workloads", json=body).status_code == 201
    with reading(app.state.database) as session:
        host = world.read(session).placements["s/0"]
    built = replica.rebuilds
    answer = client.post("/v1/dedications", json={"resource": host, "domain": "D1"})
    assert answer.status_code == 201, answer.text
    assert client.post("/v1/workloads", json={"name": "x", "resources": {"cpu": 1}}).status_code
    assert replica.rebuilds == built + 1
    refused = client.post("/v1/dedications", json={"resource": "H2a", "domain": "D9"})
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("invalid-parameter")


def test_another_replica_judges_by_a_dedication_and_a_setting_made_through_the_live_world(
    database: str,
) -> None:
    """Two servers on one database: what one changes as a delta (a dedication, the
    implicit dedication setting) the other's next claim is judged by (its cache reads
    the whole world again: the batch marks the rules changed)."""
    app, client = applied(database, TENANTS)
    other = create_app(database=make_engine(database))
    other_client = TestClient(other, headers=client.headers)
    # Each server's world built, the dedication then a delta of the first one's.
    for c, name in ((client, "a"), (other_client, "b")):
        body = {"name": name, "account": "U2", "offering": "shared-small"}
        assert c.post("/v1/workloads", json=body).status_code == 201
    built = app.state.replica.rebuilds
    taken = set(snapshot_of(app).placements.values())
    empty = next(h for h in ("H1a", "H1b", "H2a", "H2b", "H3a") if h not in taken)
    answer = client.post("/v1/dedications", json={"resource": empty, "domain": "D2"})
    assert answer.status_code == 201, answer.text
    answer = client.put("/v1/settings/implicit_dedication", json={"value": False})
    assert answer.status_code == 200 and answer.json()["changed"], answer.text
    assert app.state.replica.rebuilds == built
    body = {"name": "d", "account": "A13", "offering": "dedicated-small"}
    claimed = other_client.post("/v1/workloads", json=body)
    assert claimed.status_code == 201, claimed.text
    assert [c["to"] for c in claimed.json()["changes"]] == [empty]
    # With implicit dedication off and no host of D1's, A1's dedicated VM finds none.
    body = {"name": "e", "account": "A1", "offering": "dedicated-small"}
    refused = other_client.post("/v1/workloads", json=body)
    assert refused.status_code == 409, refused.text
    assert "implicit dedication is off" in refused.text


def test_another_replica_reads_claims_that_name_others_without_building_its_world(
    database: str,
) -> None:
    """Two servers on one database: the claims with near and avoid one commits, the other
    reads from the rows committed since (its world not built again), with the same
    coupling and mirrored terms as the server that placed them."""
    app, client = applied(database, NAMERS)
    other = create_app(database=make_engine(database))
    other_client = TestClient(other, headers=client.headers)
    body = {"name": "first", "units": 1, "resources": {"cpu": 1}}
    assert other_client.post("/v1/workloads", json=body).status_code == 201
    built = other.state.replica.rebuilds
    for body in NAMING_CLAIMS:
        assert client.post("/v1/workloads", json=body).status_code == 201, body
    mine = app.state.replica.read_current(app.state.database, lambda live: live)
    theirs = other.state.replica.read_current(other.state.database, lambda live: live)
    assert other.state.replica.rebuilds == built
    assert theirs.coupling == mine.coupling
    assert [(w.name, w.requests) for w in theirs.spec.workloads] == [
        (w.name, w.requests) for w in mine.spec.workloads
    ]
    # The next claim of db's neighbour, judged there, avoids what those claims placed.
    body = {
        "name": "late",
        "units": 1,
        "tags": ["data"],
        "avoid": {"workload": "replica", "level": "target"},
    }
    answer = other_client.post("/v1/workloads", json=body)
    assert answer.status_code == 201, answer.text
    assert answer.json()["changes"][0]["to"] not in {
        mine.snapshot.placements[u] for u in ("replica/0", "replica/1")
    }


def test_another_replica_reads_deletes_and_count_changes_from_the_rows(database: str) -> None:
    """Two servers on one database: the deletes, count changes and targets' changes of
    state (down, up, a drain) one commits as deltas, the other reads from the rows (units
    released, placed and moved, rows, flags and models replaced) without building its
    world again, and holds what a world built from the rows holds. A change of the whole
    plan's since (a target down through the general path) sends it to build it again."""
    app, client = applied(database)
    other = create_app(database=make_engine(database))
    replica: ReplicaWorld = other.state.replica
    for name, units in (("a", 2), ("b", 3), ("c", 1)):
        made = {"name": name, "units": units, "resources": {"cpu": 1, "memory": 1}}
        assert client.post("/v1/workloads", json=made).status_code == 201
    replica.read_current(other.state.database, lambda live: live)
    built = replica.rebuilds
    steps: list[tuple[str, dict[str, Any]]] = [
        ("update", {"name": "b", "units": 5, "resources": {"cpu": 1, "memory": 1}}),
        ("delete", {"name": "a"}),
        ("update", {"name": "b", "units": 1, "resources": {"cpu": 1, "memory": 1}}),
        ("claim", {"name": "d", "units": 2, "resources": {"cpu": 2}}),
        ("delete", {"name": "c"}),
        ("down", {"name": "h1"}),
        ("claim", {"name": "e", "units": 1, "resources": {"cpu": 1}}),
        ("up", {"name": "h1"}),
        ("drain", {"name": "h2"}),
        ("up", {"name": "h2"}),
        ("update", {"name": "d", "units": 3, "resources": {"cpu": 2}}),
    ]
    for step, body in steps:
        if step == "update":
            update(app, body, True)
        elif step == "delete":
            delete(app, body["name"], True)
        elif step in ("down", "up", "drain"):
            moves = retarget(app, step, [body["name"]], True).get("moves", [])
            if step != "up":
                assert moves, (step, body)  # units moved: rows the other reads
        else:
            assert client.post("/v1/workloads", json=body).status_code == 201
        theirs = replica.read_current(other.state.database, lambda live: live)
        assert replica.rebuilds == built, step
        fresh = create_app(database=make_engine(database)).state.replica
        scratch = fresh.read_current(other.state.database, lambda live: live)
        assert theirs.revision == scratch.revision
        assert theirs.snapshot.placements == scratch.snapshot.placements, (step, body)
        assert theirs.snapshot.units == scratch.snapshot.units
        assert theirs.snapshot.workload_specs == scratch.snapshot.workload_specs
        assert {
            n: (t.generation, t.used, t.admin_state, t.liveness)
            for n, t in theirs.snapshot.targets.items()
        } == {
            n: (t.generation, t.used, t.admin_state, t.liveness)
            for n, t in scratch.snapshot.targets.items()
        }
        assert (theirs.state.up == scratch.state.up).all(), step
        assert (theirs.planner.index.up == scratch.planner.index.up).all(), step
        assert (theirs.state.free == scratch.state.free).all()
        assert {t: u for t, u in theirs.by_target.items() if u} == {
            t: u for t, u in scratch.by_target.items() if u
        }
        assert sorted(theirs.state.units) == sorted(scratch.state.units)
        # (A cached model keeps its spec's count; the units and first unit a world built
        # from the rows gives it are those still to place, which the cache never reads.)
        assert [(w.name, w.requests) for w in theirs.spec.workloads] == [
            (w.name, w.requests) for w in scratch.spec.workloads
        ]
    # A target taken down by a whole plan (the general path): built again.
    retarget(app, "down", ["h1"], False)
    replica.read_current(other.state.database, lambda live: live)
    assert replica.rebuilds == built + 1


def snapshot_of(app: FastAPI) -> world.Snapshot:
    with reading(app.state.database) as session:
        return world.read(session)


def test_a_drain_and_the_claim_after_it_do_not_build_the_world_again(database: str) -> None:
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    body = {"name": "a", "units": 4, "resources": {"cpu": 1}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    answer = client.post("/v1/targets/h1/drain", json={"reason": "disk"})
    assert answer.status_code == 200, answer.text
    assert all(move["from"] == "h1" and move["to"] != "h1" for move in answer.json()["moves"])
    claimed = client.post("/v1/workloads", json={"name": "c", "resources": {"cpu": 1}})
    assert claimed.status_code == 201, claimed.text
    assert replica.rebuilds == built
    with reading(app.state.database) as session:
        stored = world.read(session)
    cached = replica._cached
    assert cached is not None and cached.revision == stored.revision
    assert cached.snapshot.placements == stored.placements
    assert {
        n: (r.admin_state, r.generation, r.used) for n, r in cached.snapshot.targets.items()
    } == {n: (r.admin_state, r.generation, r.used) for n, r in stored.targets.items()}
    index = cached.planner.index
    assert not index.up[index.position["h1"]]
    assert not cached.state.up[index.position["h1"]]


def test_a_target_whose_units_find_no_other_place_goes_to_the_general_path(
    database: str,
) -> None:
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    body = {"name": "big", "units": 2, "resources": {"cpu": 4}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    answer = client.post("/v1/targets/h1/down", json={"reason": "power"})
    assert answer.status_code == 200, answer.text
    # big's unit on h1 has nowhere to go (h2 is full, h3 too small): it waits, as the
    # general path decides, and the world is read again from the rows it wrote.
    assert [m["to"] for m in answer.json()["moves"]] == [None]
    assert client.post("/v1/workloads", json={"name": "x", "resources": {"cpu": 1}}).status_code
    assert replica.rebuilds == built + 1


def test_a_delete_and_the_claim_after_it_do_not_build_the_world_again(database: str) -> None:
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    for name in ("a", "b"):
        body = {"name": name, "units": 2, "resources": {"cpu": 1}}
        assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    answer = client.delete("/v1/workloads/a")
    assert answer.status_code == 200, answer.text
    assert {c["unit"] for c in answer.json()["changes"]} == {"a/0", "a/1"}
    assert all(c["kind"] == "unit.removed" and c["to"] is None for c in answer.json()["changes"])
    claimed = client.post("/v1/workloads", json={"name": "c", "resources": {"cpu": 4}})
    assert claimed.status_code == 201, claimed.text
    assert replica.rebuilds == built
    # The cache holds the store's world: the room a's units left is where c went.
    with reading(app.state.database) as session:
        stored = world.read(session)
    cached = replica._cached
    assert cached is not None and cached.revision == stored.revision
    assert cached.snapshot.placements == stored.placements
    assert {n: r.used for n, r in cached.snapshot.targets.items()} == {
        n: r.used for n, r in stored.targets.items()
    }


def claim_ticket(name: str, units: int, cpu: float) -> Ticket:
    spec = WorkloadSpec.model_validate(
        {"name": name, "units": units, "resources": {"cpu": cpu, "memory": 1}}
    )
    return Ticket(spec, ROOT, placing.silent, 0.0)


def removal_ticket(name: str, generation: int | None = None) -> Ticket:
    return Ticket(None, ROOT, placing.silent, 0.0, Removing(name, generation))


def test_a_batch_judges_what_follows_a_claim_that_names_others_by_that_claim(
    database: str,
) -> None:
    """One batch: a claim that avoids `a`, then deletes of `a` and of `b`. The delete of
    `a` is judged by the coupling the claim left (a is named now: the general path), the
    delete of `b` (named by no one) stays a delta, and the world is not built again."""
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    engine = app.state.database
    for name in ("a", "b"):
        body = {"name": name, "units": 1, "resources": {"cpu": 1, "memory": 1}}
        assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    reader = WorkloadSpec.model_validate(
        {"name": "r", "units": 1, "avoid": {"workload": "a", "level": "target"}}
    )
    group = [
        Ticket(reader, ROOT, placing.silent, 0.0),
        removal_ticket("a"),
        removal_ticket("b"),
    ]
    replica._serve(engine, group)
    assert all(t.done and t.error is None for t in group)
    assert [t.answer is not None for t in group] == [True, False, True]
    assert replica.rebuilds == built
    cached = replica._cached
    assert cached is not None and cached.coupling.readers == frozenset({"r"})
    assert cached.coupling.referenced is not None and "a" in cached.coupling.referenced


def test_claims_and_deletes_served_together_commit_as_one_revision(database: str) -> None:
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    engine = app.state.database
    for name in ("a", "b", "c"):
        body = {"name": name, "units": 2, "resources": {"cpu": 1, "memory": 1}}
        assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    with reading(engine) as session:
        before = revision.current(session)
    group = [
        claim_ticket("x", 2, 1.0),
        removal_ticket("a"),
        claim_ticket("y", 3, 1.0),  # fits in what a's units left
        removal_ticket("b", generation=7),  # a generation b is not at: the general path
        removal_ticket("c"),
        claim_ticket("a", 1, 0.5),  # a's deletion is not stored yet: the general path
        removal_ticket("x"),  # x is not stored yet: the general path
        removal_ticket("c"),  # deleted once already in this batch
    ]
    replica._serve(engine, group)
    assert all(t.done and t.error is None for t in group)
    answered = [t.answer for t in group]
    assert [a is not None for a in answered] == [True, True, True, False, True, False, False, False]
    assert {a["revision"] for a in answered if a is not None} == {before + 1}
    removed_a = answered[1]
    assert removed_a is not None
    assert sorted(c["unit"] for c in removed_a["changes"]) == ["a/0", "a/1"]
    assert replica.rebuilds == built
    with reading(engine) as session:
        stored = world.read(session)
        kinds = [
            (kind, subject)
            for kind, subject in session.execute(
                select(EventRow.kind, EventRow.subject).order_by(EventRow.id)
            )
        ]
        gone_history = session.scalars(
            select(PlacementHistory.unit_name).where(PlacementHistory.to_target.is_(None))
        ).all()
    assert stored.revision == before + 1
    assert sorted(stored.workloads) == ["b", "x", "y"]
    assert ("workload.deleted", "a") in kinds and ("workload.deleted", "c") in kinds
    assert {"a/0", "a/1", "c/0", "c/1"} == set(gone_history)
    cached = replica._cached
    assert cached is not None and cached.revision == stored.revision
    assert cached.snapshot.placements == stored.placements
    assert set(cached.snapshot.units) == set(stored.units)
    assert {n: r.used for n, r in cached.snapshot.targets.items()} == {
        n: r.used for n, r in stored.targets.items()
    }
    assert {n: r.generation for n, r in cached.snapshot.targets.items()} == {
        n: r.generation for n, r in stored.targets.items()
    }
    placements, used = from_scratch(app)
    assert placements == stored.placements
    # Each target's stored usage is the sum of its units' asks.
    for target, resources in used.items():
        for resource, amount in resources.items():
            asked = sum(
                float(stored.workload_specs[unit.rpartition("/")[0]]["resources"][resource])
                for unit, where in placements.items()
                if where == target
            )
            assert abs(amount - asked) < 1e-9, (target, resource)
    # The general path answers what the batch left to it, on the rows it stored.
    assert client.delete("/v1/workloads/b?generation=7").status_code == 409
    assert client.delete("/v1/workloads/c").status_code == 404
    assert client.post("/v1/workloads", json={"name": "a", "resources": {"cpu": 1}}).is_success


def test_many_clients_claiming_and_deleting_keep_every_change_a_delta(database: str) -> None:
    # Batches follow one another while claims keep arriving (each decided on the world
    # the batch in flight leaves): a workload stored batches ago must not read as one
    # not stored yet, or its deletion would leave the live world for the general path.
    app, _ = applied(database)
    replica: ReplicaWorld = app.state.replica
    engine = app.state.database
    assert replica.claim(engine, claim_ticket("first", 1, 0.5).spec, ROOT) is not None  # type: ignore[arg-type]
    built = replica.rebuilds
    declined: list[str] = []

    def client(number: int) -> None:
        for round_ in range(12):
            name = f"c{number}-{round_}"
            spec = claim_ticket(name, 1, 0.5).spec
            assert spec is not None
            if replica.claim(engine, spec, ROOT) is None:
                declined.append(f"claim {name}")
            if replica.remove(engine, name, None, ROOT) is None:
                declined.append(f"delete {name}")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(client, range(8)))
    assert declined == []
    assert replica.rebuilds == built
    placements, _ = from_scratch(app)
    cached = replica._cached
    assert cached is not None and cached.snapshot.placements == placements


def test_a_change_stored_batches_ago_does_not_hold_back_the_next_change_of_it(
    database: str,
) -> None:
    # While batch 1 (a count change of a) commits, a claim arrives and is decided on the
    # world batch 1 leaves; that decision is batch 2. While batch 2 commits, a second
    # count change of a arrives: batch 1 is stored by then, so a is no change in flight.
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    engine = app.state.database
    body = {"name": "a", "units": 1, "resources": {"cpu": 1, "memory": 1}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds

    def rescaling(units: int, generation: int) -> Ticket:
        spec = WorkloadSpec.model_validate({**body, "units": units})
        return Ticket(None, ROOT, placing.silent, 0.0, rescaling=Rescaling(spec, generation))

    first, claim, again = rescaling(2, 0), claim_ticket("b", 1, 0.5), rescaling(3, 1)
    arriving = [[claim], [again]]
    commit = replica._commit

    def slow_commit(*args: Any) -> Any:
        if arriving:
            with replica._arrived:
                replica._waiting.extend(arriving.pop(0))
                replica._arrived.notify_all()
        time.sleep(0.3)  # the arrival is decided while this batch commits
        return commit(*args)

    replica._commit = slow_commit  # type: ignore[method-assign,assignment]
    replica._waiting = [first]
    with replica._lock:
        replica._serve_waiting(engine)
    assert all(t.done and t.error is None for t in (first, claim, again))
    assert again.answer is not None, "the second change went to the general path"
    assert [first.answer is not None, claim.answer is not None] == [True, True]
    assert replica.rebuilds == built
    with reading(engine) as session:
        units = session.scalars(select(Unit.name).join(Workload).where(Workload.name == "a"))
        assert sorted(units) == ["a/0", "a/1", "a/2"]


def test_a_deletion_that_could_place_a_waiting_unit_takes_the_general_path(
    database: str,
) -> None:
    spec = SPEC + (
        "workloads:\n"
        "  - {name: big, units: 2, resources: {cpu: 4}}\n"
        "  - {name: waits, units: 1, resources: {cpu: 4}}\n"
    )
    _, client = applied(database, spec)
    answer = client.delete("/v1/workloads/big")
    assert answer.status_code == 200, answer.text
    kinds = {c["unit"]: c["kind"] for c in answer.json()["changes"]}
    # The general path places the waiting unit in the room big's units left.
    assert kinds["waits/0"] == "unit.placed", kinds


def test_a_workload_placed_on_machine_0_reads_others() -> None:
    # `to: 0` is a Juju directive (machine 0), though 0 is falsy.
    assert coupling.reads_others({"name": "w", "to": 0})
    assert not coupling.reads_others({"name": "w", "pattern": False, "services": []})


def test_the_general_path_still_answers_what_the_delta_leaves_to_it(database: str) -> None:
    _, client = applied(database)
    assert client.delete("/v1/workloads/none").status_code == 404
    assert client.post("/v1/workloads", json={"name": "a", "resources": {"cpu": 1}}).status_code
    stale = client.delete("/v1/workloads/a", params={"generation": 7})
    assert stale.status_code == 409 and stale.json()["current_generation"] == 0


def test_a_count_change_and_the_claim_after_it_do_not_build_the_world_again(
    database: str,
) -> None:
    app, client = applied(database)
    replica: ReplicaWorld = app.state.replica
    body = {"name": "a", "units": 2, "resources": {"cpu": 1}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    grown = client.put("/v1/workloads/a", json={"generation": 0, "spec": {**body, "units": 4}})
    assert grown.status_code == 200, grown.text
    assert [(c["kind"], c["unit"]) for c in grown.json()["changes"]] == [
        ("unit.placed", "a/2"),
        ("unit.placed", "a/3"),
    ]
    assert [p["unit"] for p in grown.json()["placements"]] == ["a/2", "a/3"]
    shrunk = client.put("/v1/workloads/a", json={"generation": 1, "spec": {**body, "units": 1}})
    assert shrunk.status_code == 200, shrunk.text
    assert sorted(c["unit"] for c in shrunk.json()["changes"]) == ["a/1", "a/2", "a/3"]
    claimed = client.post("/v1/workloads", json={"name": "b", "resources": {"cpu": 4}})
    assert claimed.status_code == 201, claimed.text
    assert replica.rebuilds == built
    stored = client.get("/v1/workloads/a").json()
    assert (stored["generation"], stored["units"], stored["placed"]) == (2, 1, 1)
    with reading(app.state.database) as session:
        current = world.read(session)
    cached = replica._cached
    assert cached is not None and cached.revision == current.revision
    assert cached.snapshot.placements == current.placements
    assert cached.snapshot.units == current.units  # the new units' ids read back too
    assert {n: r.generation for n, r in cached.snapshot.workloads.items()} == {
        n: r.generation for n, r in current.workloads.items()
    }


def test_an_update_the_delta_cannot_take_goes_to_the_general_path(database: str) -> None:
    app, client = applied(database)
    body = {"name": "a", "units": 2, "resources": {"cpu": 1}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    # More than the count: the units stay where they are, their usage grows.
    wider = {**body, "resources": {"cpu": 2}}
    answer = client.put("/v1/workloads/a", json={"generation": 0, "spec": wider})
    assert answer.status_code == 200, answer.text
    assert answer.json()["changes"] == []
    # Room (10 cpu in all) for three more, not five: the general path keeps the rest
    # pending.
    many = {**wider, "units": 7}
    answer = client.put("/v1/workloads/a", json={"generation": 1, "spec": many})
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["unplaced"]) == 2
    stale = client.put("/v1/workloads/a", json={"generation": 0, "spec": body})
    assert stale.status_code == 409 and stale.json()["current_generation"] == 2
    with reading(app.state.database) as session:
        used = dict(
            session.execute(
                select(Target.name, TargetResource.used)
                .join(TargetResource, TargetResource.target_id == Target.id)
                .where(TargetResource.name == "cpu")
            ).all()
        )
    assert sum(used.values()) == 10  # five units of 2 cpu placed, two waiting


MISFITS = """
name: hosts
inventory:
  - {id: h1, capacity: {cpu: 4}, properties: {tier: TIER}}
  - {id: h2, capacity: {cpu: 4}, properties: {tier: gold}}
workloads:
  - {name: db, units: 2, resources: {cpu: 1}, constraints: tier == gold}
"""


def test_a_count_change_in_a_world_with_a_misfit_answers_it(database: str) -> None:
    _, client = applied(database, MISFITS.replace("TIER", "gold"))
    yaml = {"content-type": "application/yaml"}
    silver = MISFITS.replace("TIER", "silver")
    assert client.post("/v1/apply", content=silver, headers=yaml).status_code == 200
    body = {"name": "w", "units": 1, "resources": {"cpu": 1}}
    assert client.post("/v1/workloads", json=body).status_code == 201
    answer = client.put("/v1/workloads/w", json={"generation": 0, "spec": {**body, "units": 2}})
    assert answer.status_code == 200, answer.text
    # db's unit on h1 (silver now) misfits: every change's answer lists it, as a plan does.
    [flagged] = answer.json()["incompatible"]
    assert (flagged["target"], flagged["rule"]) == ("h1", "constraint")


EVACUATION_STEPS: list[tuple[str, str | dict[str, Any]]] = [
    # The host of a VM the document made, evacuated before any claim: the live world,
    # built from the rows, has judged no tenant yet (its zone columns are read then).
    ("evacuate", "@vm-z/0"),
    ("up", "@"),  # the host evacuated last
    # A dedicated VM with no host dedicated to its account takes an empty one by
    # implicit dedication; evacuated, it takes another, which stays its account's, and
    # the host it left is released.
    ("claim", {"name": "vm-ded", "account": "A2", "offering": "dedicated"}),
    ("evacuate", "@vm-ded/0"),
    ("up", "@"),
    ("claim", {"name": "vm-a", "account": "A1", "offering": "shared", "units": 3}),
    ("claim", {"name": "vm-b", "account": "A2", "offering": "shared", "units": 2}),
    ("claim", {"name": "plain", "units": 2, "resources": {"cpu": 1, "memory": 1}}),
    ("evacuate", "h1"),
    ("up", "h1"),
    ("claim", {"name": "vm-c", "account": "A1", "offering": "shared", "units": 2}),
    ("evacuate", "h2"),
    ("evacuate", "h2"),  # in maintenance already: left to the general path
    ("up", "h2"),
    ("evacuate", "h3"),
    ("up", "h3"),
    ("claim", {"name": "fill", "units": 3, "resources": {"cpu": 1, "memory": 1}}),
    ("evacuate", "h1"),  # units left waiting: the general path's
]


def roomy_spec() -> str:
    """LIVE_SPEC with room to evacuate any host (16 cpu), and a document's VMs."""
    return (
        LIVE_SPEC.replace(
            "      - {id: h2, kind: host, capacity: {cpu: 4, memory: 8}}\n",
            "      - {id: h2, kind: host, capacity: {cpu: 4, memory: 8}}\n"
            "      - {id: h4, kind: host, capacity: {cpu: 4, memory: 8}}\n",
        )
        + "  - {id: h5, kind: host, capacity: {cpu: 2, memory: 4}}\n"
        + "workloads:\n  - {name: vm-z, account: A2, offering: shared, units: 2}\n"
    )


def counted_whole_plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that each whole plan committed from here on (`placing.transact`) adds to."""
    whole_plans: list[str] = []
    transact = placing.transact

    def counted(*args: Any, **kwargs: Any) -> Any:
        whole_plans.append("transact")
        return transact(*args, **kwargs)

    monkeypatch.setattr(placing, "transact", counted)
    return whole_plans


def migrated(app: FastAPI, unit: str, target: str, live: bool) -> dict[str, Any] | str:
    """A VM migrated through the live world, or (`live` False) through the general path
    alone; a refusal as its kind."""
    replica: ReplicaWorld | None = app.state.replica if live else None
    try:
        return migrating.migrate(
            app.state.database, unit, target, "root-admin", ROOT, replica=replica
        )
    except OperationError as error:
        return error.kind


def test_a_migration_through_the_live_world_writes_what_the_general_path_writes(
    database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CloudStack's migrateVirtualMachine as a delta: judged by the rules on a cloud over
    the live world, the unit moved in its state. Each answer, the rows, events, history
    and dedications are the general path's; a refusal (a host the account may not use,
    a unit that is no VM, an unknown unit or host) is the general path's to answer."""
    whole_plans = counted_whole_plans(monkeypatch)
    with twins(database, tmp_path, roomy_spec()) as (live_app, live_client, general_app, general):
        clients = (live_client, general)
        claim_both(clients, {"name": "vm-i", "account": "A1", "offering": "dedicated"})
        where = snapshot_of(live_app).placements
        [implicit] = live_client.get("/v1/dedications").json()["items"]
        assert implicit["resource"] == where["vm-i/0"] and implicit["implicit"]
        hosts = ["h1", "h2", "h3", "h4", "h5"]
        # A host for A1 alone, with nothing on it, and one for A2.
        empty = [h for h in hosts if h not in where.values()]
        for resource, domain, account in ((empty[0], "D1", "A1"), (empty[1], "D2", "A2")):
            dedication = {"resource": resource, "domain": domain, "account": account}
            answers = [client.post("/v1/dedications", json=dedication) for client in clients]
            assert [a.status_code for a in answers] == [201, 201], answers[0].text
        for body in (
            {"name": "vm-a", "account": "A1", "offering": "shared", "units": 2},
            {"name": "plain", "units": 2, "resources": {"cpu": 1, "memory": 1}},
        ):
            claim_both(clients, body)
        where = snapshot_of(live_app).placements
        owned = (where["vm-i/0"], *empty[:2])  # A1's by implicit dedication, and those
        shared_to = next(h for h in hosts if h not in (where["vm-a/0"], *owned))
        steps = [
            ("vm-a/0", shared_to, True),
            # Onto A1's own host: the host it took by implicit dedication is released.
            ("vm-i/0", empty[0], True),
            ("vm-a/1", empty[1], False),  # A2's host: refused
            ("vm-i/0", shared_to, False),  # a dedicated VM, a host not A1's: refused
            ("plain/0", shared_to, False),  # no VM
            ("vm-x/0", shared_to, False),  # no such unit
            ("vm-a/1", "h9", False),  # no such host
        ]
        for unit, target, delta in steps:
            whole_plans.clear()
            live = migrated(live_app, unit, target, True)
            assert (not whole_plans) == delta, (unit, target, live)
            assert live == migrated(general_app, unit, target, False), (unit, target)
            assert unordered(rows(live_app)) == unordered(rows(general_app)), (unit, target)
            owners = [client.get("/v1/dedications").json()["items"] for client in clients]
            assert owners[0] == owners[1], (unit, target)
            if delta:
                assert isinstance(live, dict) and live["to"] == target, live
            else:
                assert isinstance(live, str), live
        assert sorted(o["resource"] for o in owners[0]) == sorted(empty[:2])  # implicit: released
        placements, _ = from_scratch(live_app)
        cached = live_app.state.replica.read_current(live_app.state.database, lambda w: w)
        assert cached.snapshot.placements == placements
        assert sorted(cached.state.units) == sorted(placements)


def evacuated(app: FastAPI, name: str, live: bool) -> dict[str, Any] | str:
    """A host evacuated through the live world, or (`live` False) through the general
    path alone; a refusal as its kind."""
    replica: ReplicaWorld | None = app.state.replica if live else None
    try:
        return evacuate.evacuate(
            app.state.database, name, "a test", "root-admin", ROOT, replica=replica
        )
    except OperationError as error:
        return error.kind


def test_an_evacuation_through_the_live_world_writes_what_the_general_path_writes(
    database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CloudStack's maintenance as a delta: the host's VMs placed again by the rules on a
    cloud over the live world, its other units moved as a target going down moves them.
    Each answer, and the rows, events and history, are the general path's (a cloud built
    from the rows, a whole plan); an evacuation the delta leaves to the general path (a
    host already in maintenance, a VM with no place) is answered by it."""
    whole_plans = counted_whole_plans(monkeypatch)
    with twins(database, tmp_path, roomy_spec()) as (live_app, live_client, general_app, general):
        replica: ReplicaWorld = live_app.state.replica
        deltas, moved, last, refused = 0, 0, "", []
        for step, asked in EVACUATION_STEPS:
            if step == "claim":
                assert isinstance(asked, dict)
                claim_both((live_client, general), asked)
                continue
            assert isinstance(asked, str)
            named = asked
            if asked == "@":
                asked = last
            elif asked.startswith("@"):
                asked = last = snapshot_of(live_app).placements[asked[1:]]
            if step == "up":
                for client in (live_client, general):
                    answer = client.post(f"/v1/targets/{asked}/up", json={})
                    assert answer.status_code == 200, answer.text
                continue
            whole_plans.clear()
            live = evacuated(live_app, asked, True)
            deltas += not whole_plans
            general_answer = evacuated(general_app, asked, False)
            assert live == general_answer, (step, asked)
            if isinstance(live, dict):
                moved += len(live["moves"])
            else:
                refused.append(live)
            assert unordered(rows(live_app)) == unordered(rows(general_app)), (step, asked)
            owners = [
                client.get("/v1/dedications").json()["items"] for client in (live_client, general)
            ]
            assert owners[0] == owners[1], (step, asked)
            if named == "@vm-ded/0":  # it left its host for another, now A2's alone
                [owned] = owners[0]
                assert owned["implicit"] and owned["account"] == "A2"
                assert owned["resource"] not in (asked, None)
                assert isinstance(live, dict) and live["moves"][0]["to"] == owned["resource"]
        assert deltas == 3 and moved >= 5
        assert "no-capacity" in refused
        placements, _ = from_scratch(live_app)
        cached = replica.read_current(live_app.state.database, lambda live: live)
        assert cached.snapshot.placements == placements
        assert sorted(cached.state.units) == sorted(placements)


def test_a_whole_plan_that_only_moves_units_is_read_from_its_rows(database: str) -> None:
    """An evacuation and a migration planned whole (the general path's: the delta takes
    them from the routes) change nothing of the world but where units run and a host's
    state: neither the replica of the process that made them nor another on the same
    store builds its world again (a second at 10,000 targets), and both hold what a plan
    of the rows holds. A change of anything else (an offering's flag) still has them
    build it."""
    app, client = applied(database, LIVE_SPEC)
    follower = create_app(database=make_engine(database))
    try:
        for k in range(3):
            body = {"name": f"vm{k}", "account": "A1", "offering": "shared"}
            assert client.post("/v1/workloads", json=body).status_code == 201
        follower.state.replica.read_current(follower.state.database, lambda live: live)
        replicas = [app.state.replica, follower.state.replica]
        built = [replica.rebuilds for replica in replicas]
        where = client.get("/v1/placements", params={"workload": "vm0"}).json()["items"][0]
        answer = evacuated(app, where["target"], False)
        assert isinstance(answer, dict) and answer["moves"], answer
        where = client.get("/v1/placements", params={"workload": "vm1"}).json()["items"][0]
        other = next(h for h in ("h1", "h2", "h3") if h != where["target"] and h != "h3")
        assert isinstance(migrated(app, where["unit"], other, False), dict)
        assert client.post("/v1/workloads", json={**body, "name": "after"}).status_code == 201
        placements, _ = from_scratch(app)
        for replica, server in zip(replicas, (app, follower), strict=True):
            cached = replica.read_current(server.state.database, lambda live: live)
            assert cached.snapshot.placements == placements
            assert sorted(cached.state.units) == sorted(placements)
        assert [replica.rebuilds for replica in replicas] == built
        flagged = client.patch("/v1/offerings/shared", json={"dedicated": True})
        assert flagged.status_code == 200, flagged.text
        for replica, server in zip(replicas, (app, follower), strict=True):
            replica.read_current(server.state.database, lambda live: live)
        assert [replica.rebuilds for replica in replicas] == [n + 1 for n in built]
    finally:
        follower.state.database.dispose()


def test_a_workload_deleted_and_one_made_with_its_id_are_read_as_such(database: str) -> None:
    """SQLite gives the next workload made the id of the last one when that one was
    deleted: a replica that held the deleted one reads it gone and the new one made
    (store/claimed.py compares ids and names), and holds what a plan of the rows holds."""
    app, client = applied(database, LIVE_SPEC)
    follower = create_app(database=make_engine(database))
    try:
        body = {"account": "A1", "offering": "shared"}
        for name in ("first", "last"):
            assert client.post("/v1/workloads", json={**body, "name": name}).status_code == 201
        replica: ReplicaWorld = follower.state.replica
        replica.read_current(follower.state.database, lambda live: live)
        built = replica.rebuilds
        assert client.delete("/v1/workloads/last").status_code == 200
        assert client.post("/v1/workloads", json={**body, "name": "next"}).status_code == 201
        with reading(app.state.database) as session:
            ids = {name: id_ for name, id_ in session.execute(select(Workload.name, Workload.id))}
        cached = replica.read_current(follower.state.database, lambda live: live)
        assert "last" not in cached.snapshot.workloads
        assert cached.snapshot.workloads["next"].id == ids["next"]
        placements, _ = from_scratch(app)
        assert cached.snapshot.placements == placements
        assert sorted(cached.state.units) == sorted(placements)
        assert replica.rebuilds == built
    finally:
        follower.state.database.dispose()


def test_a_reader_deleted_leaves_no_mirrored_term_in_a_replica_that_reads_it(
    database: str,
) -> None:
    """A workload that avoids another gives it the mirrored term; deleted as a delta, the
    replica that made the delete drops that term (`_advance`), and so does one that
    reads the delete from the rows (`_resized`): both hold the workloads a world built
    from the rows holds. Found by the stateful test: the follower kept the term."""
    app, client = applied(database, LIVE_SPEC)
    follower = create_app(database=make_engine(database))
    try:
        plain = {"name": "w0", "resources": {"cpu": 0.5, "memory": 1}}
        assert client.post("/v1/workloads", json=plain).status_code == 201
        reader = {
            "name": "w1",
            "resources": {"cpu": 0.5, "memory": 1},
            "avoid": {"workload": "w0", "level": "target", "mode": "preferred"},
        }
        assert client.post("/v1/workloads", json=reader).status_code == 201
        replicas = [app.state.replica, follower.state.replica]
        for replica, server in zip(replicas, (app, follower), strict=True):
            replica.read_current(server.state.database, lambda live: live)
        built = [replica.rebuilds for replica in replicas]
        assert client.delete("/v1/workloads/w1").status_code == 200
        fresh = placing.world_spec(snapshot_of(app))
        for replica, server in zip(replicas, (app, follower), strict=True):
            cached = replica.read_current(server.state.database, lambda live: live)
            assert [(w.name, w.requests) for w in cached.spec.workloads] == [
                (w.name, w.requests) for w in fresh.workloads
            ]
        assert [replica.rebuilds for replica in replicas] == built
    finally:
        follower.state.database.dispose()


def test_a_whole_plan_this_process_commits_is_in_its_live_world_when_answered(
    database: str,
) -> None:
    """The process that plans an evacuation whole (the general path's) reads its rows
    into its live world before it answers (ReplicaWorld.committed), as a delta moves the
    world before its answer: the claim after it finds the world current, where it would
    read the rows (or commit, find itself behind and decide again) on the claim's time.
    A change the rows cannot say (an offering's flag) is left for the world's next use
    to build."""
    app, client = applied(database, LIVE_SPEC)
    replica: ReplicaWorld = app.state.replica

    def stored() -> int:
        with reading(app.state.database) as session:
            return revision.current(session)

    for k in range(3):
        body = {"name": f"vm{k}", "account": "A1", "offering": "shared"}
        assert client.post("/v1/workloads", json=body).status_code == 201
    built = replica.rebuilds
    assert replica.revision == stored()
    where = client.get("/v1/placements", params={"workload": "vm0"}).json()["items"][0]
    answer = evacuated(app, where["target"], False)
    assert isinstance(answer, dict) and answer["moves"], answer
    assert replica.revision == stored()
    assert replica.rebuilds == built
    placements, _ = from_scratch(app)
    assert replica.read_current(app.state.database, lambda live: live).snapshot.placements == (
        placements
    )
    was = replica.revision
    flagged = client.patch("/v1/offerings/shared", json={"dedicated": True})
    assert flagged.status_code == 200, flagged.text
    assert replica.revision == was < stored()
    assert replica.rebuilds == built
    replica.read_current(app.state.database, lambda live: live)
    assert (replica.rebuilds, replica.revision) == (built + 1, stored())


def test_an_offering_made_is_a_delta_that_writes_what_the_general_path_writes(
    database: str, tmp_path: Path
) -> None:
    """POST /v1/offerings of a new name: no workload names it, so the live world writes
    its row and event and takes it in (operations/live_offerings.py), answering as the
    general path answers; a replica on the same store reads it from the rows; neither
    builds its world again, and a claim naming it is read alike on both stores."""
    with twins(database, tmp_path, LIVE_SPEC) as (live_app, live_client, general_app, other):
        follower = create_app(database=make_engine(live_app.state.database.url))
        try:
            claim_both((live_client, other), {"name": "x", "resources": {"cpu": 1, "memory": 1}})
            follower.state.replica.read_current(follower.state.database, lambda live: live)
            replicas = [live_app.state.replica, follower.state.replica]
            built = [replica.rebuilds for replica in replicas]
            body = {"name": "large", "cpu": 2, "memory": 4, "dedicated": True}
            answers = []
            for app, client in ((live_app, live_client), (general_app, other)):
                kept = app.state.replica
                app.state.replica = kept if app is live_app else None  # the general path
                try:
                    answer = client.post("/v1/offerings", json=body)
                finally:
                    app.state.replica = kept
                assert answer.status_code == 201, answer.text
                answers.append({k: v for k, v in answer.json().items() if k != "revision"})
            assert answers[0] == answers[1]
            again = live_client.post("/v1/offerings", json=body)
            assert again.status_code == 409, again.text  # the general path's refusal
            vm = {"name": "vm", "account": "A1", "offering": "large"}
            claim_both((live_client, other), vm)
            assert unordered(rows(live_app)) == unordered(rows(general_app))
            for replica, server in zip(replicas, (live_app, follower), strict=True):
                cached = replica.read_current(server.state.database, lambda live: live)
                fresh = placing.world_spec(snapshot_of(live_app))
                assert cached.spec.offerings == fresh.offerings
                assert cached.snapshot.offerings == snapshot_of(live_app).offerings
                assert cached.snapshot.placements == rows_placements(live_app)
            assert [replica.rebuilds for replica in replicas] == built
        finally:
            follower.state.database.dispose()


# -- the stateful property ---------------------------------------------------------------


def from_scratch(app: FastAPI) -> tuple[dict[str, str], dict[str, dict[str, float]]]:
    """The stored rows, planned from scratch: where each unit is, and what each target
    uses (the general path's reading of the world)."""
    with reading(app.state.database) as session:
        snapshot = world.read(session)
    prepared = placing.plan(snapshot, snapshot.copy())
    assert not prepared.moves, prepared.moves  # what runs stays where it is
    return dict(snapshot.placements), {n: dict(r.used) for n, r in snapshot.targets.items()}


# The stateful test's world: tenants, and a cluster and hosts to dedicate.
LIVE_SPEC = """
name: racks
tenancy:
  domains:
    D1: {accounts: [A1]}
    D2: {accounts: [A2]}
offerings:
  - {name: dedicated, cpu: 1, memory: 1, dedicated: true}
  - {name: shared, cpu: 1, memory: 1}
inventory:
  - id: c1
    kind: cluster
    children:
      - {id: h1, kind: host, capacity: {cpu: 4, memory: 8}}
      - {id: h2, kind: host, capacity: {cpu: 4, memory: 8}}
  - {id: h3, kind: host, capacity: {cpu: 2, memory: 4}}
"""
OWNERS = [("D1", None), ("D2", None), ("D1", "A1"), ("D2", "A2")]


def owners_of(state: Any, index: Any) -> dict[str, Any]:
    """Who owns each target in a plan state (seed 004's owner column, as owners)."""
    kept = state.family_state(DedicationState)
    return {
        target: kept.owners[int(code)] if code >= 0 else None
        for target, code in zip(index.ids, kept.owner, strict=True)
    }


class ClaimsAndDeletes(RuleBasedStateMachine):
    """Random changes through the service; the live state checked after each."""

    def __init__(self) -> None:
        super().__init__()
        self.alive: dict[str, int] = {}
        self.avoids: dict[str, str] = {}  # a reader -> the workload it avoids
        self.made = 0
        self.offerings = ["dedicated", "shared"]

    @initialize()
    def start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="placed-live-"))
        url = f"sqlite:///{self.folder / 'placed.db'}"
        self.app, self.client = applied(url, LIVE_SPEC)
        self.follower = create_app(database=make_engine(url))
        self.follower.state.replica.read_current(self.follower.state.database, lambda w: w)

    def teardown(self) -> None:
        if hasattr(self, "app"):
            self.app.state.database.dispose()
            self.follower.state.database.dispose()
            shutil.rmtree(self.folder, ignore_errors=True)

    @rule(units=st.integers(1, 3), cpu=st.sampled_from([0.5, 1.0, 2.0]))
    def claim(self, units: int, cpu: float) -> None:
        name = f"w{self.made}"
        self.made += 1
        body = {"name": name, "units": units, "resources": {"cpu": cpu, "memory": 1}}
        answer = self.client.post("/v1/workloads", json=body)
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            self.alive[name] = units

    @rule(data=st.data(), units=st.integers(1, 2))
    def claim_reader(self, data: st.DataObject, units: int) -> None:
        # A workload that avoids another: the changes of the two go to the general path,
        # those of every other workload stay deltas (Cached.free).
        # Not a document's workload: its prune would delete one a reader names.
        choices = sorted(set(self.alive) - {"app1", "app2"})
        if not choices:
            return
        avoided = data.draw(st.sampled_from(choices))
        name = f"w{self.made}"
        self.made += 1
        body = {
            "name": name,
            "units": units,
            "resources": {"cpu": 0.5, "memory": 1},
            "avoid": {"workload": avoided, "level": "target", "mode": "preferred"},
        }
        answer = self.client.post("/v1/workloads", json=body)
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            self.alive[name] = units
            self.avoids[name] = avoided

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        # A workload another avoids is not deleted (the world would name one that is not).
        removable = sorted(set(self.alive) - set(self.avoids.values()))
        if not removable:
            return
        name = data.draw(st.sampled_from(removable))
        answer = self.client.delete(f"/v1/workloads/{name}")
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["changes"]) == self.alive.pop(name)
        self.avoids.pop(name, None)

    @rule(data=st.data(), units=st.integers(1, 4))
    def rescale(self, data: st.DataObject, units: int) -> None:
        if not self.alive:
            return
        name = data.draw(st.sampled_from(sorted(self.alive)))
        stored = self.client.get(f"/v1/workloads/{name}").json()
        spec = {**stored["spec"], "units": units}
        answer = self.client.put(
            f"/v1/workloads/{name}", json={"generation": stored["generation"], "spec": spec}
        )
        assert answer.status_code == 200, answer.text
        if not answer.json()["unplaced"]:
            self.alive[name] = units

    @rule(data=st.data(), state=st.sampled_from(["down", "up", "drain"]))
    def target(self, data: st.DataObject, state: str) -> None:
        # A delta when every unit it moves finds a place (else the general path); the
        # claims, deletes and count changes after it are deltas on the world it leaves.
        name = data.draw(st.sampled_from(["h1", "h2", "h3"]))
        answer = self.client.post(f"/v1/targets/{name}/{state}", json={"reason": "a test"})
        assert answer.status_code == 200, answer.text
        self._recount()

    @rule(dedicated=st.booleans(), again=st.booleans())
    def offer(self, dedicated: bool, again: bool) -> None:
        # A new offering is a delta (its row, its event, the cached world's offerings);
        # one of a name the world has is the general path's 409.
        name = self.offerings[-1] if again else f"o{len(self.offerings)}"
        body = {"name": name, "cpu": 1, "memory": 1, "dedicated": dedicated}
        answer = self.client.post("/v1/offerings", json=body)
        assert answer.status_code == (409 if again else 201), answer.text
        if not again:
            self.offerings.append(name)

    @rule(data=st.data(), account=st.sampled_from(["A1", "A2"]))
    def tenant_claim(self, data: st.DataObject, account: str) -> None:
        # A dedicated VM with no host of its owner's takes an empty one (the general
        # path writes the implicit dedication), or waits with implicit dedication off.
        offering = data.draw(st.sampled_from(self.offerings))
        name = f"w{self.made}"
        self.made += 1
        body = {"name": name, "account": account, "offering": offering}
        answer = self.client.post("/v1/workloads", json=body)
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            self.alive[name] = 1

    @rule(host=st.sampled_from(["h1", "h2", "h3"]))
    def evacuate(self, host: str) -> None:
        # CloudStack's maintenance, planned whole (its VMs moved by the dedication rules):
        # the replicas read its moves from the rows when it moved units and nothing else
        # (transactions.followable), else build their worlds again.
        answer = self.client.post(f"/v1/targets/{host}/evacuate", json={"reason": "a test"})
        assert answer.status_code in (200, 409), answer.text
        self._recount()

    @rule(data=st.data(), host=st.sampled_from(["h1", "h2", "h3"]))
    def migrate(self, data: st.DataObject, host: str) -> None:
        # A VM moved where it is asked to go, planned whole (the rules may refuse: 409).
        vms = [
            unit["unit"]
            for unit in self.client.get("/v1/placements").json()["items"]
            if unit.get("account") is not None and unit["target"] is not None
        ]
        if not vms:
            return
        unit = data.draw(st.sampled_from(sorted(vms)))
        answer = self.client.post(f"/v1/units/{unit}/migrate", json={"target": host})
        assert answer.status_code in (200, 409), answer.text

    @rule(resource=st.sampled_from(["h1", "h2", "h3", "c1"]), owner=st.sampled_from(OWNERS))
    def dedicate(self, resource: str, owner: tuple[str, str | None]) -> None:
        # A delta where no VM runs below the resource, else the general path; the rules
        # refuse what they refuse either way (409).
        domain, account = owner
        body = {"resource": resource, "domain": domain, "account": account}
        answer = self.client.post("/v1/dedications", json=body)
        assert answer.status_code in (201, 409), answer.text

    @rule(resource=st.sampled_from(["h1", "h2", "h3", "c1"]))
    def release(self, resource: str) -> None:
        answer = self.client.delete(f"/v1/dedications/{resource}")
        assert answer.status_code in (200, 409), answer.text

    @rule(enabled=st.booleans())
    def implicit(self, enabled: bool) -> None:
        answer = self.client.put("/v1/settings/implicit_dedication", json={"value": enabled})
        assert answer.status_code == 200, answer.text

    @rule(units=st.integers(1, 3), second=st.booleans(), prune=st.booleans())
    def apply_workloads(self, units: int, second: bool, prune: bool) -> None:
        # A document of workloads alone: a delta (new ones placed, counts changed, and
        # with prune those it names no more deleted) when every unit finds room.
        lines = [f"  - {{name: app1, units: {units}, resources: {{cpu: 0.5, memory: 1}}}}"]
        if second:
            lines.append("  - {name: app2, resources: {cpu: 1, memory: 1}}")
        body = "name: apps\nworkloads:\n" + "\n".join(lines) + "\n"
        answer = self.client.post(
            f"/v1/apply?prune={str(prune).lower()}",
            content=body,
            headers={"content-type": "application/yaml"},
        )
        assert answer.status_code in (200, 409), answer.text
        self.alive.update({"app1": units, **({"app2": 1} if second else {})})
        self._recount()

    @rule(capacity=st.sampled_from([2, 4, 8]))
    def apply(self, capacity: int) -> None:
        # The document applied again with another target's capacity: a change of the
        # inventory under the running units (its difference from what is stored).
        spec = LIVE_SPEC + f"  - {{id: h4, kind: host, capacity: {{cpu: {capacity}, memory: 8}}}}\n"
        answer = self.client.post(
            "/v1/apply", content=spec, headers={"content-type": "application/yaml"}
        )
        assert answer.status_code in (200, 409), answer.text
        self._recount()

    def _recount(self) -> None:
        """The live workloads' counts as stored (a change may leave units waiting)."""
        listed = self.client.get("/v1/workloads").json()
        items = listed["items"] if isinstance(listed, dict) else listed
        self.alive = {
            w["name"]: int(w["spec"].get("units", 1)) for w in items if w["name"] in self.alive
        }
        self.avoids = {r: a for r, a in self.avoids.items() if r in self.alive}

    @invariant()
    def the_live_state_is_the_stored_world(self) -> None:
        if not hasattr(self, "app"):
            return
        placements, used = from_scratch(self.app)
        # The replica that made the changes, and another on the same store that reads
        # them from the rows (claims, deletes and count changes) or builds its world again.
        for app in (self.app, self.follower):
            self._holds_the_stored_world(app, placements, used)
        for name, resources in used.items():
            units = [u for u, t in placements.items() if t == name]
            for resource, amount in resources.items():
                want = sum(
                    _asked(self.app, unit.rpartition("/")[0]).get(resource, 0.0) for unit in units
                )
                assert abs(amount - want) < 1e-9, (name, resource, amount, want)

    def _holds_the_stored_world(
        self, app: FastAPI, placements: dict[str, str], used: dict[str, dict[str, float]]
    ) -> None:
        replica: ReplicaWorld = app.state.replica
        cached = replica._cached
        if cached is not None:
            # Brought to the store's revision as the next change would find it: from the
            # rows when a change went through the general path, else as it stands.
            cached = replica.read_current(app.state.database, lambda live: live)
            with reading(self.app.state.database) as session:
                current = world.read(session).revision
            if cached.revision == current:
                assert cached.snapshot.placements == placements
                # The spec's workloads are the planner's, in the order a world built from
                # the rows reads them (by row id): what a whole plan of the live world
                # (a what-if) runs through. (A claim decided and then not committed leaves
                # its model in the planner's: these sequences commit every one.)
                names = [w.name for w in cached.spec.workloads]
                assert names == list(cached.planner.workloads)
                rows = cached.snapshot.workloads
                assert names == sorted(names, key=lambda name: rows[name].id)
                # Each target's units as a drain reads them.
                assert all(
                    cached.units_on(target) == {u for u, on in placements.items() if on == target}
                    for target in cached.snapshot.targets
                )
                state = cached.state
                index = cached.planner.index
                for name, resources in used.items():
                    position = index.position[name]
                    for resource, amount in resources.items():
                        row = index.resources.index(resource)
                        capacity = cached.snapshot.targets[name].capacity[resource]
                        assert abs(capacity - float(state.free[row, position]) - amount) < 1e-9
                assert sorted(state.units) == sorted(placements)
                with reading(self.app.state.database) as session:
                    stored = world.read(session).targets
                for name, target in stored.items():
                    live = cached.snapshot.targets[name]
                    assert (live.admin_state, live.generation) == (
                        target.admin_state,
                        target.generation,
                    )
                    position = index.position[name]
                    up = bool(state.up[position])
                    assert up == bool(index.up[position]) == target.takes_work
                # Who owns each target, what explanations read of it, and what each
                # tenant's request says of implicit dedication: as a plan of the rows.
                fresh = placing.world_spec(snapshot_of(self.app))
                planner = Planner(fresh)
                assert owners_of(state, index) == owners_of(planner.initial_state(), index)
                assert [t.dedication for t in index.targets] == [
                    t.dedication for t in fresh.inventory.targets
                ]
                assert [(n.id, n.dedication) for n in cached.spec.inventory.locations()] == [
                    (n.id, n.dedication) for n in fresh.inventory.locations()
                ]
                assert {
                    name: w.request(Tenant) for name, w in cached.planner.workloads.items()
                } == {name: w.request(Tenant) for name, w in planner.workloads.items()}
                assert [(w.name, w.requests) for w in cached.spec.workloads] == [
                    (w.name, w.requests) for w in fresh.workloads
                ]


def _asked(app: FastAPI, workload: str) -> dict[str, float]:
    """What each unit of `workload` takes: its resources, or its offering's."""
    with reading(app.state.database) as session:
        spec = session.scalar(select(Workload.spec).where(Workload.name == workload))
        offerings = world.read(session).offerings
    assert spec is not None
    if spec.get("offering"):
        offering = next(o for o in offerings if o["name"] == spec["offering"])
        return {k: float(offering[k]) for k in ("cpu", "memory") if offering.get(k)}
    return {k: float(v) for k, v in (spec.get("resources") or {}).items()}


FLEET_SPEC = """
name: conductors
settings: {default_mode: mapping}
inventory:
  - {id: c1, kind: conductor, tags: [rack10, net1]}
  - {id: c2, kind: conductor, tags: [rack11, net1]}
  - {id: c3, kind: conductor, tags: [net1]}
  - {id: c4, kind: conductor, tags: [rack10], anti_tags: [customer1]}
  - {id: c5, kind: conductor, tags: [rack11]}
workloads:
  - {name: fleet, units: 24}
  - {name: rack10-nodes, units: 6, tags: [rack10]}
  - {name: node-c, tags: [rack10, customer1]}
  - {name: balanced, units: 10, tags: [net1], max_load: 1.0}
"""
CONDUCTOR_NAMES = ["c1", "c2", "c3", "c4", "c5"]


class ConductorsComingAndGoing(RuleBasedStateMachine):
    """Random conductors lost and back in a mapping fleet, with allocations claimed and
    deleted among them; the live state checked after each change, as above, in the
    replica that made it and in another on the same store."""

    SPEC = FLEET_SPEC

    def __init__(self) -> None:
        super().__init__()
        self.alive: list[str] = []
        self.made = 0

    @initialize()
    def start(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="placed-fleet-"))
        url = f"sqlite:///{self.folder / 'placed.db'}"
        self.app, self.client = applied(url, self.SPEC)
        self.follower = create_app(database=make_engine(url))
        self.follower.state.replica.read_current(self.follower.state.database, lambda w: w)

    def teardown(self) -> None:
        if hasattr(self, "app"):
            self.app.state.database.dispose()
            self.follower.state.database.dispose()
            shutil.rmtree(self.folder, ignore_errors=True)

    @rule(name=st.sampled_from(CONDUCTOR_NAMES), state=st.sampled_from(["down", "up", "drain"]))
    def conductor(self, name: str, state: str) -> None:
        answer = self.client.post(f"/v1/targets/{name}/{state}", json={"reason": "a test"})
        assert answer.status_code == 200, answer.text

    @rule(down=st.sampled_from(CONDUCTOR_NAMES), up=st.sampled_from(CONDUCTOR_NAMES))
    def batch(self, down: str, up: str) -> None:
        if down == up:
            return
        body = {"down": [down], "up": [up], "reason": "a test"}
        answer = self.client.post("/v1/targets:batch", json=body)
        assert answer.status_code == 200, answer.text

    @rule(units=st.integers(1, 3))
    def claim(self, units: int) -> None:
        name = f"api{self.made}"
        self.made += 1
        body = {"name": name, "units": units, "mode": "allocation"}
        answer = self.client.post("/v1/workloads", json=body)
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            self.alive.append(name)

    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        if not self.alive:
            return
        name = data.draw(st.sampled_from(self.alive))
        answer = self.client.delete(f"/v1/workloads/{name}")
        assert answer.status_code == 200, answer.text
        self.alive.remove(name)

    @invariant()
    def the_live_state_is_the_stored_world(self) -> None:
        if not hasattr(self, "app"):
            return
        placements, _ = from_scratch(self.app)  # a plan of the rows moves no node
        # What each target has left of each resource: the same in each replica.
        free: dict[str, dict[tuple[str, int], float]] = {}
        for app in (self.app, self.follower):
            replica: ReplicaWorld = app.state.replica
            if replica._cached is None:
                continue
            cached = replica.read_current(app.state.database, lambda live: live)
            with reading(self.app.state.database) as session:
                stored = world.read(session)
            if cached.revision == stored.revision:
                index = cached.planner.index
                here = {
                    (n, k): left
                    for n in stored.targets
                    for k, left in enumerate(cached.state.free[:, index.position[n]].tolist())
                }
                assert free.setdefault("seen", here) == pytest.approx(here)
                assert cached.snapshot.placements == placements
                assert all(
                    cached.units_on(target) == {u for u, on in placements.items() if on == target}
                    for target in cached.snapshot.targets
                )
                assert [bool(cached.state.up[index.position[n]]) for n in stored.targets] == [
                    t.takes_work for t in stored.targets.values()
                ]


# The same changes on an edge fleet: every-mode workloads (a unit on each node that
# takes them, holding room there) beside the allocations.
EDGE_FLEET_SPEC = """
name: edge
inventory:
  - {id: c1, capacity: {cpu: 4}, properties: {arch: arm}}
  - {id: c2, capacity: {cpu: 4}, properties: {arch: arm}}
  - {id: c3, capacity: {cpu: 8}, properties: {arch: x86}}
  - {id: c4, capacity: {cpu: 2}, properties: {arch: arm}}
  - {id: c5, capacity: {cpu: 4}, properties: {arch: x86}}
workloads:
  - {name: agent, mode: every, resources: {cpu: 1}}
  - {name: arm-only, mode: every, resources: {cpu: 1}, constraints: "arch == arm"}
  - {name: app, units: 3, resources: {cpu: 1}}
"""


class EdgeNodesComingAndGoing(ConductorsComingAndGoing):
    SPEC = EDGE_FLEET_SPEC


# The same changes on a cloud of allocations whose inventory grows: racks of hosts added
# by documents of their own (each a delta of the live world), among claims, deletes and
# hosts lost and back.
GROWING_CLOUD_SPEC = """
name: cloud
inventory:
  - {id: r0, kind: rack, children: [{id: c1, capacity: {cpu: 2}}, {id: c2, capacity: {cpu: 2}}]}
  - {id: r1, kind: rack, children: [{id: c3, capacity: {cpu: 2}}, {id: c4, capacity: {cpu: 1}}]}
  - {id: c5, capacity: {cpu: 4}}
workloads:
  - {name: app, units: 3, resources: {cpu: 1}, distinct: rack}
"""


class CloudGrowing(ConductorsComingAndGoing):
    SPEC = GROWING_CLOUD_SPEC

    @rule(hosts=st.integers(1, 2), cpu=st.sampled_from([1, 2]))
    def grow(self, hosts: int, cpu: int) -> None:
        rack = f"new{self.made}"
        self.made += 1
        children = ", ".join(f"{{id: {rack}-{i}, capacity: {{cpu: {cpu}}}}}" for i in range(hosts))
        body = f"name: {rack}\ninventory:\n  - {{id: {rack}, kind: rack, children: [{children}]}}\n"
        answer = self.client.post(
            "/v1/apply", content=body, headers={"content-type": "application/yaml"}
        )
        assert answer.status_code == 200, answer.text


def run_stateful(machine: type[RuleBasedStateMachine]) -> None:
    """`machine`'s random sequences of 12 steps, PLACED_LIVE_EXAMPLES of them (12 unless
    told; `make bench` runs more, benchmarks/live_world.py)."""
    examples = int(os.environ.get("PLACED_LIVE_EXAMPLES", "12"))
    machine.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=12,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    machine.TestCase().runTest()


def test_random_conductors_lost_and_back_keep_the_live_world_the_stored_one() -> None:
    run_stateful(ConductorsComingAndGoing)


def test_random_edge_nodes_lost_and_back_keep_the_live_world_the_stored_one() -> None:
    run_stateful(EdgeNodesComingAndGoing)


def test_random_hosts_added_lost_and_back_keep_the_live_world_the_stored_one() -> None:
    run_stateful(CloudGrowing)


def test_random_claims_and_deletes_keep_the_live_world_the_stored_one() -> None:
    # `make bench` runs it longer (benchmarks/live_world.py).
    run_stateful(ClaimsAndDeletes)


ZONED = """
name: zoned
inventory:
  - {id: z1, kind: zone, children: [{id: h1, capacity: {cpu: 4}}, {id: h2, capacity: {cpu: 4}}]}
  - {id: z2, kind: zone, children: [{id: h3, capacity: {cpu: 4}}]}
"""


def test_a_world_holds_its_targets_in_the_order_they_were_stored(database: str) -> None:
    """A host added to the first zone comes after every host stored before it, in the
    world's index as in each replica's (a live world takes a target in by appending it:
    engine/index.py `extended`), where the tree's order would put it between them."""
    app, client = applied(database, ZONED)
    grown = ZONED.replace(
        "{id: h2, capacity: {cpu: 4}}]}", "{id: h2, capacity: {cpu: 4}}, {id: h4}]}"
    )
    answer = client.post("/v1/apply", content=grown, headers={"content-type": "application/yaml"})
    assert answer.status_code == 200, answer.text
    replica: ReplicaWorld = app.state.replica
    cached = replica.read_current(app.state.database, lambda live: live)
    assert cached.planner.index.ids == ["h1", "h2", "h3", "h4"]
    fresh = create_app(database=make_engine(database)).state.replica
    scratch = fresh.read_current(app.state.database, lambda live: live)
    assert scratch.planner.index.ids == ["h1", "h2", "h3", "h4"]
    assert [t.id for t in placing.world_spec(snapshot_of(app)).inventory.targets] == [
        "h1",
        "h2",
        "h3",
        "h4",
    ]


GROWING = """
name: zoned
inventory:
  - id: z1
    kind: zone
    tags: [east]
    children:
      - {id: r1, kind: rack, children: [{id: h1, capacity: {cpu: 4}}, {id: h2, capacity: {cpu: 4}}]}
  - {id: z2, kind: zone, children: [{id: h3, capacity: {cpu: 4}, tags: [ssd]}]}
workloads:
  - {name: base, units: 2, resources: {cpu: 1}}
"""
# Hosts added: one in the first rack, a rack of two in a new zone, and a root alone.
GROWN = GROWING.replace(
    "{id: h2, capacity: {cpu: 4}}]}",
    "{id: h2, capacity: {cpu: 4}}, {id: h4, capacity: {cpu: 2}, properties: {gpu: 1}}]}",
).replace(
    "workloads:",
    "  - {id: z3, kind: zone, children: [{id: r3, kind: rack, status: down, children: "
    "[{id: h5, capacity: {cpu: 8}}, {id: h6, capacity: {cpu: 8}, tags: [ssd]}]}]}\n"
    "  - {id: h7, capacity: {cpu: 1}}\nworkloads:",
)


def inventory_rows(app: FastAPI) -> dict[str, Any]:
    """The inventory as stored: locations and targets with what the general path writes
    of each, their resources and liveness."""
    with reading(app.state.database) as session:
        names: dict[int | None, str] = {
            id_: name for id_, name in session.execute(select(Location.id, Location.name))
        }
        return {
            "locations": sorted(
                (row.name, names.get(row.parent_id), row.kind, row.tags, row.properties,
                 row.spec, row.document, row.revision)
                for row in session.scalars(select(Location))
            ),
            "targets": sorted(
                (row.name, names.get(row.location_id), row.tags, row.properties, row.spec,
                 row.document, row.admin_state, row.generation, row.revision)
                for row in session.scalars(select(Target))
            ),
            "order": list(session.scalars(select(Target.name).order_by(Target.id))),
            "resources": sorted(
                session.execute(
                    select(Target.name, TargetResource.name, TargetResource.capacity,
                           TargetResource.used)
                    .join(TargetResource, TargetResource.target_id == Target.id)
                ).all()
            ),
            "liveness": sorted(
                session.execute(
                    select(Target.name, TargetLiveness.last_seen, TargetLiveness.liveness)
                    .join(TargetLiveness, TargetLiveness.target_id == Target.id)
                ).all()
            ),
        }  # fmt: skip


def test_targets_added_by_an_apply_are_taken_into_the_live_world(
    database: str, tmp_path: Path
) -> None:
    """Hosts added (under a rack that was there, in a new zone's rack that is down, and
    alone at the root) are a delta: the rows the general path writes, its answer, no
    world built again, the index and state a world built from the rows holds; and the
    claims after place on them as they do on the general path's store."""
    with twins(database, tmp_path, GROWING) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        claim_both((live_client, other), {"name": "x", "units": 2, "resources": {"cpu": 1}})
        built = replica.rebuilds
        # Another replica on the live store: it reads the new nodes from the rows.
        follower: ReplicaWorld = create_app(
            database=make_engine(live_app.state.database.url)
        ).state.replica
        follower.read_current(live_app.state.database, lambda world: world)
        followed = follower.rebuilds
        live, general = apply_both((live_app, live_client), (general_app, other), GROWN, False)
        assert live == general
        assert inventory_rows(live_app) == inventory_rows(general_app)
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        cached = replica.read_current(live_app.state.database, lambda world: world)
        assert replica.rebuilds == built, "the apply took the general path"
        fresh = create_app(database=make_engine(live_app.state.database.url)).state.replica
        scratch = fresh.read_current(live_app.state.database, lambda world: world)
        assert cached.planner.index.ids == scratch.planner.index.ids
        # After every target there was, in the order the store numbered them.
        assert sorted(cached.planner.index.ids[-4:]) == ["h4", "h5", "h6", "h7"]
        assert cached.planner.index.ids[-4:] == inventory_rows(live_app)["order"][-4:]
        assert (cached.state.free == scratch.state.free).all()
        assert (cached.state.up == scratch.state.up).all()
        assert {n: t for n, t in cached.snapshot.targets.items()} == scratch.snapshot.targets
        assert cached.snapshot.nodes == scratch.snapshot.nodes
        assert [t.id for t in cached.spec.inventory.targets] == [
            t.id for t in scratch.spec.inventory.targets
        ]
        assert [loc.id for loc in cached.spec.inventory.locations()] == [
            loc.id for loc in scratch.spec.inventory.locations()
        ]
        assert cached.kinds == scratch.kinds
        theirs = follower.read_current(live_app.state.database, lambda world: world)
        assert follower.rebuilds == followed, "the other replica read its world again"
        assert theirs.planner.index.ids == scratch.planner.index.ids
        assert (theirs.state.free == scratch.state.free).all()
        assert (theirs.state.up == scratch.state.up).all()
        assert theirs.snapshot.targets == scratch.snapshot.targets
        assert theirs.snapshot.nodes == scratch.snapshot.nodes
        assert theirs.snapshot.parents == scratch.snapshot.parents
        assert [loc.id for loc in theirs.spec.inventory.locations()] == [
            loc.id for loc in scratch.spec.inventory.locations()
        ]
        for body in (
            {"name": "gpu", "resources": {"cpu": 1}, "constraints": "gpu == 1"},
            {"name": "spread", "units": 4, "resources": {"cpu": 1},
             "spread": {"over": "zone", "max_skew": 1}},
            {"name": "ssd", "units": 2, "resources": {"cpu": 1}, "tags": ["ssd"]},
            {"name": "wide", "units": 5, "resources": {"cpu": 1}, "distinct": "target"},
        ):  # fmt: skip
            answers = [client.post("/v1/workloads", json=body) for client in (live_client, other)]
            assert [a.status_code for a in answers] == [201, 201], answers[0].text
            assert answers[0].json()["changes"] == answers[1].json()["changes"], body
        assert unordered(rows(live_app)) == unordered(rows(general_app))
        assert replica.rebuilds == built
        # The other replica places as a world built from the rows does.
        theirs = follower.read_current(live_app.state.database, lambda world: world)
        assert follower.rebuilds == followed
        assert theirs.snapshot.placements == rows_placements(live_app)
        assert (theirs.state.free == scratch_of(live_app).state.free).all()


def rows_placements(app: FastAPI) -> dict[str, str]:
    with reading(app.state.database) as session:
        return world.read(session).placements


def scratch_of(app: FastAPI) -> Any:
    fresh = create_app(database=make_engine(app.state.database.url)).state.replica
    return fresh.read_current(app.state.database, lambda world: world)


def test_targets_added_by_a_token_that_may_not_are_refused_as_the_general_path_refuses(
    database: str, tmp_path: Path
) -> None:
    """A token that may not change the inventory is refused a document that adds to it
    whichever path would take it: the same 403, and nothing stored."""
    with twins(database, tmp_path, GROWING) as (live_app, live_client, general_app, other):
        claim_both((live_client, other), {"name": "x", "resources": {"cpu": 1}})
        answers = []
        for app in (live_app, general_app):
            kept = app.state.replica
            app.state.replica = kept if app is live_app else None
            try:
                client = TestClient(app, headers=bearer(issue(app, "domain-admin", "ROOT")))
                answers.append(
                    client.post(
                        "/v1/apply", content=GROWN, headers={"content-type": "application/yaml"}
                    )
                )
            finally:
                app.state.replica = kept
        assert [a.status_code for a in answers] == [403, 403], answers[0].text
        assert answers[0].json()["detail"] == answers[1].json()["detail"]
        assert "inventory is the root-admin's" in answers[0].json()["detail"]
        assert inventory_rows(live_app) == inventory_rows(general_app)
        assert (
            "h4"
            not in live_app.state.replica.read_current(
                live_app.state.database, lambda world: world
            ).snapshot.targets
        )


DEDICATED_CLOUD = TENANTS.replace(
    "offerings:", "dedications:\n  - {resource: c2, domain: D2}\nofferings:"
)
# Hosts added: one to the cluster dedicated to D2, a cluster of one in the pod, and a
# zone of its own.
DEDICATED_GROWN = DEDICATED_CLOUD.replace(
    "              - {id: H2b, kind: host, capacity: {cpu: 4, memory: 8}}\n",
    "              - {id: H2b, kind: host, capacity: {cpu: 4, memory: 8}}\n"
    "              - {id: H2c, kind: host, capacity: {cpu: 4, memory: 8}}\n",
).replace(
    "            children: [{id: H3a, kind: host, capacity: {cpu: 4, memory: 8}}]\n",
    "            children: [{id: H3a, kind: host, capacity: {cpu: 4, memory: 8}}]\n"
    "          - {id: c4, kind: cluster, children: [{id: H4a, kind: host, capacity: {cpu: 4, "
    "memory: 8}}]}\n"
    "  - {id: z2, kind: zone, children: [{id: H9a, kind: host, capacity: {cpu: 8, "
    "memory: 16}}]}\n",
)


def test_hosts_added_under_a_dedication_are_owned_as_the_general_path_owns_them(
    database: str, tmp_path: Path
) -> None:
    """In a tenants' world, hosts added (one under a cluster dedicated to D2, others
    nobody's) are a delta owned as a world built from the rows owns them: the tenants'
    claims after land as on the general path's store, and the other replica reads them."""
    assert "H2c" in DEDICATED_GROWN and "z2" in DEDICATED_GROWN
    with twins(database, tmp_path, DEDICATED_CLOUD) as (live_app, live_client, general_app, other):
        replica: ReplicaWorld = live_app.state.replica
        first = {"name": "v0", "account": "A13", "offering": "dedicated-small", "units": 2}
        claim_both((live_client, other), first)
        built = replica.rebuilds
        follower: ReplicaWorld = create_app(
            database=make_engine(live_app.state.database.url)
        ).state.replica
        follower.read_current(live_app.state.database, lambda world: world)
        followed = follower.rebuilds
        live, general = apply_both(
            (live_app, live_client), (general_app, other), DEDICATED_GROWN, False
        )
        assert live == general
        assert inventory_rows(live_app) == inventory_rows(general_app)
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        cached = replica.read_current(live_app.state.database, lambda world: world)
        assert replica.rebuilds == built, "the apply took the general path"
        scratch = scratch_of(live_app)
        for world_read in (cached, follower.read_current(live_app.state.database, lambda w: w)):
            assert owners_of(world_read.state, world_read.planner.index) == owners_of(
                scratch.state, scratch.planner.index
            )
            assert [t.dedication for t in world_read.planner.index.targets] == [
                t.dedication for t in scratch.planner.index.targets
            ]
        assert follower.rebuilds == followed
        for body in (
            {"name": "d2", "account": "A13", "offering": "dedicated-small", "units": 3},
            {"name": "s2", "account": "U2", "offering": "shared-small", "units": 4},
            {"name": "d3", "account": "A1", "offering": "dedicated-small", "units": 2},
        ):
            answers = [client.post("/v1/workloads", json=body) for client in (live_client, other)]
            assert answers[0].status_code == answers[1].status_code, answers[0].text
            if answers[0].status_code == 201:
                assert answers[0].json()["changes"] == answers[1].json()["changes"], body
        # A dedication of a cluster added: the dedication rules' tree holds it.
        made = [
            client.post("/v1/dedications", json={"resource": "c4", "domain": "D1"})
            for client in (live_client, other)
        ]
        assert [m.status_code for m in made] == [201, 201], made[0].text
        assert made[0].json() == made[1].json()
        last = {"name": "d4", "account": "A1", "offering": "dedicated-small", "units": 1}
        claim_both((live_client, other), last)
        assert unordered(dedication_rows(live_app)) == unordered(dedication_rows(general_app))
        assert replica.rebuilds == built


def test_another_replica_reads_dedications_and_settings_from_the_rows(database: str) -> None:
    """Dedications made, absorbed, given another owner and released, tenants' claims
    that take hosts by implicit dedication, and the implicit-dedication setting off and
    on, each committed by one replica as a delta: the other reads them from the rows
    without building its world again, and holds the owners, dedications and requests a
    world built from the rows holds."""
    app, client = applied(database, TENANTS)
    other = create_app(database=make_engine(database)).state.replica
    leader: ReplicaWorld = app.state.replica
    assert client.post("/v1/workloads", json={"name": "w0", "resources": {"cpu": 1}}).status_code
    other.read_current(app.state.database, lambda world: world)
    built = other.rebuilds
    steps: list[tuple[str, str, str | None, str | None]] = [
        *DEDICATION_STEPS,
        ("setting", "implicit_dedication", None, None),
        ("claim", "d9", "A1", "dedicated-small"),
        ("setting", "implicit_dedication", "on", None),
        ("claim", "d10", "A13", "dedicated-small"),
    ]
    for step, name, domain, account in steps:
        if step == "claim":
            body = {"name": name, "account": domain, "offering": account}
            answer = client.post("/v1/workloads", json=body)
            assert answer.status_code in (201, 409), answer.text
        elif step == "setting":
            value = {"value": domain == "on"}
            assert client.put(f"/v1/settings/{name}", json=value).status_code == 200
        else:
            asked = Rededicating(step, name, "root-admin", domain, account)
            dedication_changes.change(app.state.database, ROOT, asked, name, replica=leader)
        theirs = other.read_current(app.state.database, lambda world: world)
        assert other.rebuilds == built, (step, name)
        scratch = scratch_of(app)
        assert theirs.revision == scratch.revision
        assert theirs.snapshot.dedications == scratch.snapshot.dedications, (step, name)
        assert theirs.snapshot.settings == scratch.snapshot.settings
        assert theirs.snapshot.placements == scratch.snapshot.placements
        assert owners_of(theirs.state, theirs.planner.index) == owners_of(
            scratch.state, scratch.planner.index
        ), (step, name)
        assert [t.dedication for t in theirs.planner.index.targets] == [
            t.dedication for t in scratch.planner.index.targets
        ]
        assert {n: w.request(Tenant) for n, w in theirs.planner.workloads.items()} == {
            n: w.request(Tenant) for n, w in scratch.planner.workloads.items()
        }
        assert theirs.spec.settings == scratch.spec.settings
        assert (theirs.state.free == scratch.state.free).all()


@pytest.mark.parametrize("fleet", ["mapping", "every"])
def test_a_follower_reads_a_fleets_moves_from_the_rows(fleet: str, tmp_path: Path) -> None:
    """Targets lost, drained and back, each a delta on the leader, in a mapping fleet
    (conductors) and in an edge fleet (every-mode units, holding room): a replica beside
    it takes the moves from the rows (an owner changed, an every-mode unit dropped or
    made, an allocation moved), without building its world again, and holds what a plan
    from scratch of them holds, and the room the leader's world holds."""
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    leader, client = applied(url, FLEET_SPEC if fleet == "mapping" else EDGE_FLEET_SPEC)
    follower = create_app(database=make_engine(url))
    try:
        body = {"name": "api", "units": 2, "mode": "allocation"}
        assert client.post("/v1/workloads", json=body).status_code == 201
        replicas: list[ReplicaWorld] = [leader.state.replica, follower.state.replica]
        for app in (leader, follower):
            app.state.replica.read_current(app.state.database, lambda live: live)
        built = [replica.rebuilds for replica in replicas]
        moved = 0
        changes = [("c1", "down"), ("c2", "drain"), ("c1", "up"), ("c2", "up"), ("api", "")]
        for name, change in changes:
            if change:
                answer = client.post(f"/v1/targets/{name}/{change}", json={"reason": "a test"})
                moved += len(answer.json()["moves"])
            else:  # room freed: an every-mode unit may take it
                answer = client.delete(f"/v1/workloads/{name}")
            assert answer.status_code == 200, answer.text
            placements, _ = from_scratch(leader)
            held = []
            for app in (leader, follower):
                cached = app.state.replica.read_current(app.state.database, lambda live: live)
                assert cached.snapshot.placements == placements, (name, change)
                assert cached.snapshot.units.keys() == placements.keys()
                assert all(
                    cached.units_on(target) == {u for u, on in placements.items() if on == target}
                    for target in cached.snapshot.targets
                )
                held.append((cached.state.free.tolist(), dict(cached.ordinals)))
            assert held[0] == held[1], (name, change)
        assert moved > 0
        assert [replica.rebuilds for replica in replicas] == built
    finally:
        leader.state.database.dispose()
        follower.state.database.dispose()
