"""The controller in one process, stepped by hand (no thread, no sleeping): heartbeat
settings, the sweep, the disruption guard, the fence, GET /v1/leader and the metrics.
Real processes and faults: tests/test_service_failover.py."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from placed.operations.lease import LEASE, Fenced
from placed.operations.sweeps import Fault
from placed.service.controller import Controller, Options
from placed.store import leases
from placed.store.database import reading, writing
from placed.store.tables import (
    EventRow,
    Lease,
    Placement,
    Target,
    TargetLiveness,
    TargetResource,
    Unit,
)
from tests.conftest import another_database
from tests.fleets import conductors_spec
from tests.running_servers import BIN
from tests.service_support import client_of, served, table_digest

YAML = {"content-type": "application/yaml"}


def _world(url: str, spec: str) -> tuple[FastAPI, TestClient]:
    app, root = served(url)
    client = client_of(app, root)
    applied = client.post("/v1/apply", content=spec, headers=YAML)
    assert applied.status_code == 200, applied.text
    return app, client


def _controller(app: FastAPI, holder: str = "a" * 32, live: bool = False) -> Controller:
    """`live`: its changes deltas of the app's live world when they can be."""
    # A lease of 60 s: the tests step the controller by hand and never renew, and on a
    # loaded machine a shorter one ran out between two steps (Fenced).
    found = Controller(
        app.state.database,
        app.state.metrics,
        options=Options(0.5, 60.0, 0.2),
        holder=holder,
        replica=app.state.replica if live else None,
    )
    found.renew()
    assert found.leading
    found.sweep()  # records lease.acquired; no target has heartbeated yet: nothing else
    return found


def _mature(controller: Controller) -> None:
    """As if the lease had been held for longer than any heartbeat timeout."""
    assert controller.since is not None
    controller.since -= timedelta(hours=1)


def _seen(app: FastAPI, ages: dict[str, float]) -> None:
    """Each target's last heartbeat, this many seconds ago by the database's clock."""
    with writing(app.state.database) as session:
        moment = leases.database_now(session)
        for name, age in ages.items():
            target_id = session.scalar(select(Target.id).where(Target.name == name))
            session.execute(
                update(TargetLiveness)
                .where(TargetLiveness.target_id == target_id)
                .values(last_seen=moment - timedelta(seconds=age))
            )
            session.execute(  # as a heartbeat does: a target seen is no more unknown
                update(TargetLiveness)
                .where(TargetLiveness.target_id == target_id, TargetLiveness.liveness == "unknown")
                .values(liveness="up")
            )


def _placements(app: FastAPI) -> dict[str, str]:
    with reading(app.state.database) as session:
        return {
            unit: target
            for unit, target in session.execute(
                select(Unit.name, Target.name)
                .join(Placement, Placement.unit_id == Unit.id)
                .join(Target, Target.id == Placement.target_id)
            )
        }


def _events(app: FastAPI, kind: str | None = None) -> list[EventRow]:
    with reading(app.state.database) as session:
        query = select(EventRow).order_by(EventRow.id)
        if kind is not None:
            query = query.where(EventRow.kind == kind)
        rows = list(session.scalars(query))
        session.expunge_all()
        return rows


def _simulated(tmp_path: Path, spec: str, flag: str, name: str) -> dict[str, str]:
    """Where `placed simulate` says each moving unit goes."""
    path = tmp_path / "fleet.yaml"
    path.write_text(spec)
    done = subprocess.run(
        [str(BIN / "placed"), "simulate", str(path), flag, name, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    moves = yaml.safe_load(done.stdout)["moves"]
    return {move["unit"]: move["to"] for move in moves}


# Heartbeat settings


@pytest.mark.parametrize(
    "settings",
    [
        {"heartbeat_interval_s": 20},  # the default timeout 40 is under 60
        {"heartbeat_interval_s": 1, "heartbeat_timeout_s": 2.9},
        {"heartbeat_interval_s": 0},
        {"heartbeat_timeout_s": "soon"},
    ],
)
def test_a_timeout_under_three_intervals_is_refused(database: str, settings: Any) -> None:
    app, client = _world(database, conductors_spec(4))
    before = table_digest(app.state.database)
    spec = yaml.safe_dump({"name": "beats", "settings": settings})
    answer = client.post("/v1/apply", content=spec, headers=YAML)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert "heartbeat" in answer.text
    assert table_digest(app.state.database) == before


def test_the_applied_settings_are_what_a_heartbeat_answers(database: str) -> None:
    app, client = _world(database, conductors_spec(4, interval_s=5, timeout_s=15))
    with reading(app.state.database) as session:
        generation = session.scalar(select(Target.generation).where(Target.name == "conductor1"))
    before = _events(app)
    answer = client.post("/v1/targets/conductor1/heartbeat")
    assert answer.status_code == 200, answer.text
    assert answer.json()["interval_s"] == 5
    assert answer.json()["timeout_s"] == 15
    assert answer.json()["liveness"] == "up"
    with reading(app.state.database) as session:
        after = session.scalar(select(Target.generation).where(Target.name == "conductor1"))
    assert after == generation
    assert [e.id for e in _events(app)] == [e.id for e in before]  # a heartbeat is no event


def test_by_default_heartbeats_are_every_10_s_and_stale_after_40(database: str) -> None:
    _, client = _world(database, "name: one\ninventory: [{id: h1}]\n")
    answer = client.post("/v1/targets/h1/heartbeat").json()
    assert (answer["interval_s"], answer["timeout_s"]) == (10, 40)


# The sweep


def test_a_stale_conductor_s_units_go_where_simulate_says_and_come_back(
    database: str, tmp_path: Path
) -> None:
    # A timeout of 10 s: a loaded machine can take over a second between two steps,
    # and with 1 s every conductor would turn stale meanwhile.
    spec = conductors_spec(24, interval_s=2.0, timeout_s=10.0)
    app, client = _world(database, spec)
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 0, "conductor2": 0, "conductor3": 0, "conductor4": 0})
    controller.sweep()
    assert _placements(app) == start  # everyone is fresh: nothing moves
    _seen(app, {"conductor1": 60})
    controller.sweep()
    expected = _simulated(tmp_path, spec, "--down", "conductor1")
    assert expected and set(expected) == {u for u, t in start.items() if t == "conductor1"}
    now = _placements(app)
    assert {u: now[u] for u in expected} == expected
    assert {u: t for u, t in now.items() if u not in expected} == {
        u: t for u, t in start.items() if u not in expected
    }
    moved = _events(app, "unit.moved")
    assert sorted(e.subject for e in moved) == sorted(expected)
    assert all("conductor1 is down" in e.details["why"] for e in moved)
    (down,) = _events(app, "target.down")
    assert down.subject == "conductor1" and down.details["cause"] == "heartbeat"
    assert down.actor_role == "controller"
    shown = client.get("/v1/targets/conductor1").json()
    assert (shown["admin_state"], shown["liveness"]) == ("up", "down")

    controller.sweep()  # still stale: nothing more
    assert len(_events(app, "unit.moved")) == len(expected)

    beat = client.post("/v1/targets/conductor1/heartbeat")
    assert beat.json()["liveness"] == "down"  # until the controller brings it up
    controller.sweep()
    assert _placements(app) == start
    assert len(_events(app, "target.up")) == 1
    assert len(_events(app, "unit.moved")) == 2 * len(expected)
    assert client.get("/v1/targets/conductor1").json()["liveness"] == "up"


def test_a_heartbeat_never_undoes_an_admin_s_down(database: str) -> None:
    # A timeout of many seconds: each step below may take over a second on a loaded
    # machine, and the conductors seen "now" must not turn stale meanwhile.
    app, client = _world(database, conductors_spec(12, interval_s=2, timeout_s=20))
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 0, "conductor2": 60, "conductor3": 0, "conductor4": 0})
    assert client.post("/v1/targets/conductor2/down", json={"reason": "disk"}).status_code == 200
    controller.sweep()  # stale as well as down: down twice over
    after_down = _placements(app)
    assert "conductor2" not in after_down.values()
    client.post("/v1/targets/conductor2/heartbeat")
    controller.sweep()  # live again, but the admin's down stands
    assert _placements(app) == after_down
    shown = client.get("/v1/targets/conductor2").json()
    assert (shown["admin_state"], shown["liveness"]) == ("down", "up")
    # And the admin's up while a target is stale brings nothing back to it.
    _seen(app, {"conductor2": 60})
    controller.sweep()
    assert client.post("/v1/targets/conductor2/up").json()["moves"] == []
    assert _placements(app) == after_down
    client.post("/v1/targets/conductor2/heartbeat")
    controller.sweep()
    assert "conductor2" in _placements(app).values()


def test_targets_never_heartbeated_are_unknown_not_stale(database: str) -> None:
    app, client = _world(database, conductors_spec(8))
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor2": 0, "conductor3": 0, "conductor4": 0})
    controller.sweep()
    assert _placements(app) == start
    assert client.get("/v1/targets/conductor1").json()["liveness"] == "unknown"


# The disruption guard


def test_all_heartbeats_stopping_at_once_moves_nothing_and_says_so_once(database: str) -> None:
    app, _ = _world(database, conductors_spec(12))
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {f"conductor{k}": 5 for k in range(1, 5)})
    for _ in range(3):
        controller.sweep()
    assert _placements(app) == start
    assert _events(app, "unit.moved") == []
    (suppressed,) = _events(app, "sweep.suppressed")
    assert suppressed.details["cause"] == "most-stale"
    assert (suppressed.details["stale"], suppressed.details["heartbeating"]) == (4, 4)
    # The episode ends when they beat again; a new one is recorded anew.
    _seen(app, {f"conductor{k}": 0 for k in range(1, 5)})
    controller.sweep()
    _seen(app, {"conductor1": 5, "conductor2": 5, "conductor3": 5})
    controller.sweep()
    assert len(_events(app, "sweep.suppressed")) == 2
    assert _placements(app) == start


@pytest.mark.parametrize("beating", [1, 2])
def test_a_small_site_fails_over_where_every_heartbeating_target_went_quiet(
    database: str, beating: int
) -> None:
    # An edge site where one or two targets run a heartbeat agent: all of them quiet at
    # once is "most stale", which a bigger site would hold back; here it is the failure
    # the guard would otherwise hide forever.
    app, _ = _world(database, conductors_spec(12))
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {f"conductor{k}": 5 for k in range(1, beating + 1)})
    controller.sweep()
    assert _events(app, "sweep.suppressed") == []
    downs = {row.subject for row in _events(app, "target.down")}
    assert downs == {f"conductor{k}" for k in range(1, beating + 1)}
    after = _placements(app)
    assert not set(after.values()) & downs
    assert {unit for unit, target in start.items() if target in downs} <= set(after)


def test_the_guard_s_minimum_is_a_setting(database: str) -> None:
    spec = conductors_spec(12, settings={"disruption_guard_min_targets": 1})
    app, _ = _world(database, spec)
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 5})
    controller.sweep()
    (suppressed,) = _events(app, "sweep.suppressed")
    assert (suppressed.details["cause"], suppressed.details["heartbeating"]) == ("most-stale", 1)
    assert _placements(app) == start


def test_a_new_lease_moves_nothing_for_one_timeout(database: str) -> None:
    app, _ = _world(database, conductors_spec(12, interval_s=10, timeout_s=3600))
    start = _placements(app)
    controller = _controller(app)
    _seen(app, {"conductor1": 7200, "conductor2": 0, "conductor3": 0, "conductor4": 0})
    controller.sweep()
    controller.sweep()
    assert _placements(app) == start
    (suppressed,) = _events(app, "sweep.suppressed")
    assert suppressed.details["cause"] == "lease-new"
    _mature(controller)
    controller.sweep()
    assert _placements(app) != start


# The lease and the fence


def test_the_lease_is_one_holder_s_and_a_takeover_raises_the_epoch(database: str) -> None:
    app, _ = _world(database, conductors_spec(4))
    first = _controller(app, "a" * 32)
    second = Controller(app.state.database, app.state.metrics, holder="b" * 32)
    second.renew()
    assert not second.leading
    with writing(app.state.database) as session:
        row = session.get(Lease, LEASE)
        assert row is not None
        row.expires_at = leases.database_now(session) - timedelta(seconds=1)
    second.renew()
    assert second.leading and second.epoch == (first.epoch or 0) + 1
    assert len(_events(app, "lease.acquired")) == 1  # the sweep writes it, not the renewal
    first_epoch = first.epoch
    second.sweep()
    acquired = _events(app, "lease.acquired")
    assert [(e.details["holder"], e.details["epoch"]) for e in acquired] == [
        ("a" * 32, first_epoch),
        ("b" * 32, (first_epoch or 0) + 1),
    ]
    with pytest.raises(Fenced):
        first.renew()  # it sees it lost the lease
    second.stop()
    with reading(app.state.database) as session:
        row = session.get(Lease, LEASE)
        assert row is not None and row.expires_at <= leases.database_now(session)


def test_a_transaction_with_a_stale_epoch_rolls_back(database: str) -> None:
    app, _ = _world(database, conductors_spec(12))
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 5, "conductor2": 0, "conductor3": 0, "conductor4": 0})
    with writing(app.state.database) as session:
        session.execute(update(Lease).values(epoch=Lease.epoch + 1, holder="b" * 32))
    before = table_digest(app.state.database)
    with pytest.raises(Fenced):
        controller.sweep()
    assert table_digest(app.state.database) == before


class _TakenOver(Fault):
    """Another holder takes the lease while the moves are being written: the fence last
    before the commit must see it and roll everything back."""

    def reached(self, point: str, count: int, session: Session) -> None:
        if point == "rebalance.after_moves" and count >= 2:  # moves are written at once
            session.execute(update(Lease).values(epoch=Lease.epoch + 1, holder="b" * 32))


def test_the_fence_before_the_commit_rolls_back_what_was_written(database: str) -> None:
    # A timeout of many seconds: with 1 s, a loaded machine (CI, on PostgreSQL) took
    # longer than that from the heartbeats to the sweep, every conductor was stale, no
    # unit had anywhere to move, and the fault (at the second move) never came.
    app, _ = _world(database, conductors_spec(12, interval_s=2.0, timeout_s=10.0))
    controller = _controller(app)
    controller.fault = _TakenOver("rebalance.after_moves", 2)
    _mature(controller)
    _seen(app, {"conductor1": 60, "conductor2": 0, "conductor3": 0, "conductor4": 0})
    before = table_digest(app.state.database)
    with pytest.raises(Fenced):
        controller.sweep()
    assert table_digest(app.state.database) == before


HOSTS = """
name: hosts
settings: {heartbeat_interval_s: 2, heartbeat_timeout_s: 10}
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
  - {id: h3, capacity: {cpu: 4}}
  - {id: h4, capacity: {cpu: 4}}
workloads:
  - {name: web, units: 6, resources: {cpu: 1}}
"""


def _trail(app: FastAPI) -> list[tuple[str, str, Any]]:
    """The moves' and the targets' events, with the second a heartbeat was last seen
    left out (the twins' sweeps run one after the other, maybe a second apart)."""
    return [
        (e.kind, e.subject, _unseen(e.details))
        for e in _events(app)
        if e.kind.startswith(("unit.", "target."))
    ]


def _unseen(details: dict[str, Any]) -> dict[str, Any]:
    reason = details.get("reason")
    if not isinstance(reason, str):
        return details
    return {**details, "reason": re.sub(r"\(seen [^)]*\)", "(seen ...)", reason)}


def test_a_stale_host_s_units_move_as_a_delta_of_the_live_world(
    database: str, tmp_path: Path
) -> None:
    """The sweep's change of an allocation fleet is a delta of the live world (no world
    built again) that writes what the general path writes."""
    with another_database(database, tmp_path, "twin.db") as twin:
        worlds = [_world(url, HOSTS) for url in (database, twin)]
        (live, live_client), (general, _) = worlds
        # The live world built (a claim), and each controller leading a mature lease.
        assert live_client.post("/v1/workloads", json={"name": "x"}).status_code == 201
        assert worlds[1][1].post("/v1/workloads", json={"name": "x"}).status_code == 201
        controllers = [_controller(live, live=True), _controller(general)]
        built = live.state.replica.rebuilds
        for app, controller in zip((live, general), controllers, strict=True):
            _mature(controller)
            _seen(app, {"h1": 0, "h2": 0, "h3": 0, "h4": 0})
            controller.sweep()
            start = _placements(app)
            _seen(app, {"h1": 60})
            controller.sweep()
            assert "h1" not in _placements(app).values()
            assert _placements(app) != start
            _seen(app, {"h1": 0})
            controller.sweep()  # up again: allocation units stay where they went
        assert _placements(live) == _placements(general)
        # The general path writes a change's moves in its state's order of units, the
        # delta by workload and unit: the same events.
        assert sorted(map(repr, _trail(live))) == sorted(map(repr, _trail(general)))
        assert [e.kind for e in _events(live, "target.down")] == ["target.down"]
        assert live.state.replica.rebuilds == built
        shown = live_client.get("/v1/targets/h1").json()
        assert (shown["admin_state"], shown["liveness"]) == ("up", "up")


def test_a_delta_of_a_controller_that_lost_the_lease_writes_nothing(database: str) -> None:
    app, client = _world(database, HOSTS)
    assert client.post("/v1/workloads", json={"name": "x"}).status_code == 201
    controller = _controller(app, live=True)
    _mature(controller)
    _seen(app, {"h1": 60, "h2": 0, "h3": 0, "h4": 0})
    with writing(app.state.database) as session:
        session.execute(update(Lease).values(epoch=Lease.epoch + 1, holder="b" * 32))
    before = table_digest(app.state.database)
    with pytest.raises(Fenced):
        controller.sweep()
    assert table_digest(app.state.database) == before
    # The next change reads the world again and finds h1 as it was.
    assert client.post("/v1/workloads", json={"name": "y"}).status_code == 201
    assert client.get("/v1/targets/h1").json()["liveness"] == "up"


def test_fault_and_timing_settings_are_checked() -> None:
    assert Fault.from_environment({}) is None
    assert Fault.from_environment({"PLACED_FAULT": "rebalance.after_moves:3:stop"}) == Fault(
        "rebalance.after_moves", 3, True
    )
    for wrong in ("rebalance.after_moves", "nowhere:1", "rebalance.after_moves:0", "x:1:kill"):
        with pytest.raises(ValueError, match="PLACED_FAULT"):
            Fault.from_environment({"PLACED_FAULT": wrong})
    assert Options.from_environment({"PLACED_LEASE_TTL_S": "2", "PLACED_LEASE_RENEW_S": "0.5"})
    for name, value in (("PLACED_LEASE_TTL_S", "x"), ("PLACED_SWEEP_S", "-1")):
        with pytest.raises(ValueError, match=name):
            Options.from_environment({name: value})
    with pytest.raises(ValueError, match="twice"):
        Options.from_environment({"PLACED_LEASE_TTL_S": "3"})


# What it shows


def test_leader_and_metrics_show_the_leading_replica(database: str) -> None:
    # A timeout of 10 s, so conductors 2 and 3 stay fresh however slow the machine.
    app, client = _world(database, conductors_spec(12, interval_s=2.0, timeout_s=10.0))
    assert client.get("/v1/leader").json()["leading"] is False  # this app runs none
    controller = _controller(app)
    app.state.controller = controller
    shown = client.get("/v1/leader").json()
    assert shown["holder"] == controller.holder == shown["this_replica"]
    assert shown["leading"] is True and shown["epoch"] == controller.epoch
    _mature(controller)
    _seen(app, {"conductor1": 60, "conductor2": 0, "conductor3": 0})
    controller.sweep()
    text = client.get("/metrics").text
    assert "placed_leader 1.0" in text
    assert 'placed_targets{liveness="down"} 1.0' in text
    assert 'placed_targets{liveness="up"} 2.0' in text
    assert 'placed_targets{liveness="unknown"} 1.0' in text
    moved = len(_events(app, "unit.moved"))
    assert moved and f'placed_rebalance_moves_total{{reason="unit.moved"}} {moved}.0' in text
    controller.stop()
    text = client.get("/metrics").text
    assert "placed_leader 0.0" in text and "placed_targets{" not in text
    assert client.get("/v1/leader").json()["leading"] is False


def test_a_stale_host_s_allocation_units_are_placed_again_or_unplaced(database: str) -> None:
    spec = """
name: hosts
settings: {heartbeat_interval_s: 0.2, heartbeat_timeout_s: 1}
inventory:
  - {id: h1, capacity: {cpu: 8}}
  - {id: h2, capacity: {cpu: 4}}
  - {id: h3, capacity: {cpu: 2}}
workloads:
  - {name: big, units: 1, resources: {cpu: 6}}
"""
    app, client = _world(database, spec)
    small = client.post(
        "/v1/workloads", json={"name": "small", "units": 2, "resources": {"cpu": 1}}
    )
    assert small.status_code == 201, small.text
    start = _placements(app)
    on_h1 = {u for u, t in start.items() if t == "h1"}
    assert "big/0" in on_h1
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"h1": 5, "h2": 0, "h3": 0})
    controller.sweep()
    now = _placements(app)
    assert "h1" not in now.values()
    changed = {e.subject: e.kind for e in _events(app) if e.kind.startswith("unit.")}
    assert set(on_h1) <= set(changed)
    for unit in on_h1:
        assert (unit in now) == (changed[unit] == "unit.moved"), (unit, changed[unit])
    assert changed["big/0"] == "unit.unplaced"  # 6 cpu fits nowhere but h1
    (unplaced,) = _events(app, "unit.unplaced")
    assert "insufficient cpu" in unplaced.details["why"]
    with reading(app.state.database) as session:
        used = dict(
            session.execute(
                select(Target.name, TargetResource.used).join(
                    TargetResource, TargetResource.target_id == Target.id
                )
            ).all()
        )
    assert used["h1"] == 0.0 and used["h2"] <= 4 and used["h3"] <= 2


def test_a_timeout_under_three_intervals_is_exit_2_offline(tmp_path: Path) -> None:
    path = tmp_path / "beats.yaml"
    path.write_text("name: beats\nsettings: {heartbeat_interval_s: 5, heartbeat_timeout_s: 10}\n")
    done = subprocess.run(
        [str(BIN / "placed"), "validate", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout
    assert "heartbeat_timeout_s 10 is under 3 x heartbeat_interval_s 5" in done.stderr


def test_targets_going_quiet_together_hold_back_the_first_to_turn_stale(database: str) -> None:
    # Interval 2 s, timeout 10 s: late past 6 s. conductor1 is stale; 2 and 3 are late
    # (their heartbeats stopped with it, a moment later): 3 of 4 look stale. (With 1 s
    # and 0.9 s ages, a loaded machine turned 2 and 3 stale before the sweep.)
    app, _ = _world(database, conductors_spec(12, interval_s=2.0, timeout_s=10.0))
    start = _placements(app)
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 15, "conductor2": 8, "conductor3": 8, "conductor4": 0})
    controller.sweep()
    assert _placements(app) == start
    (suppressed,) = _events(app, "sweep.suppressed")
    assert (suppressed.details["stale"], suppressed.details["late"]) == (1, 3)


def test_the_next_sweep_comes_when_a_target_that_missed_a_beat_turns_stale(
    database: str,
) -> None:
    """interval 2 s, timeout 10 s: conductor1 last beat 5 s ago (a beat missed), so
    the next sweep is due in about 5 s; the others beat just now and set no deadline.
    (Seconds, not tenths: a loaded machine takes that long between two steps.)"""
    app, _ = _world(database, conductors_spec(8, interval_s=2.0, timeout_s=10.0))
    controller = _controller(app)
    _mature(controller)
    _seen(app, {"conductor1": 5.0, "conductor2": 0.0, "conductor3": 0.0, "conductor4": 0.0})
    controller.sweep()
    assert controller.next_stale_s is not None
    assert 2.0 < controller.next_stale_s <= 5.0
    _seen(app, {"conductor1": 0.0})  # it beats again: no deadline is near
    controller.sweep()
    assert controller.next_stale_s is None
