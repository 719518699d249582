"""Changes planned on a snapshot that another change made stale before they committed.

The service plans a change on a snapshot read outside the write transaction and checks,
at commit, that the rows it relies on are as the snapshot saw them (store/claims.py,
store/definitions.py). The load run (tests/test_service_load.py) meets such races by
chance; here they are made on purpose: the change under test plans, then other changes
run in full, then it commits (or finds itself stale and plans again). After every step
the rows are checked as the load run checks them: each target's `used` is what its
units take and within capacity, each unit's history is a chain ending where it is, and
no workload has more units than its spec asks.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select, update

from placed.operations import apply_documents as applying
from placed.operations import claim as claiming
from placed.operations import dedication_changes, placing
from placed.operations import remove as removing
from placed.operations.rededication import DEDICATE, Rededicating
from placed.operations.replica import ReplicaWorld
from placed.service import problems
from placed.service.controller import Controller, Options
from placed.spec.schema import WorkloadSpec
from placed.store import schema
from placed.store.claims import Actor
from placed.store.database import make_engine, reading, writing
from placed.store.leases import database_now
from placed.store.tables import (
    Placement,
    Target,
    TargetLiveness,
    Unit,
    Workload,
)
from tests import row_invariants
from tests.service_support import served

HOSTS = [f"h{i}" for i in range(4)]
# The ballast leaves 3 cpu per host, so claims fill the hosts and the clients' boxes.
BASE = {
    "name": "base",
    "inventory": [
        {
            "id": "rack1",
            "kind": "rack",
            "children": [{"id": h, "capacity": {"cpu": 16}} for h in HOSTS],
        }
    ],
    "workloads": [{"name": "ballast", "units": len(HOSTS), "resources": {"cpu": 13}}],
}
CLIENTS = 4


def box_document(client: int, cpu: int, tier: str, units: int) -> dict[str, Any]:
    """A client's own document, as the load run's: a box and a workload that wants gold."""
    return {
        "name": f"doc{client}",
        "inventory": [
            {"id": f"c{client}-box", "capacity": {"cpu": cpu}, "properties": {"tier": tier}}
        ],
        "workloads": [
            {
                "name": f"c{client}-svc",
                "units": units,
                "resources": {"cpu": 1},
                "constraints": "tier == gold",
            }
        ],
    }


def broken_rows(engine: Engine) -> list[str]:
    """Every inconsistency in the rows, as a sentence (tests/row_invariants.py)."""
    return row_invariants.broken_rows(row_invariants.read_rows(engine))


@contextmanager
def between(meanwhile: Callable[[], None]) -> Iterator[list[bool]]:
    """Within the block, the next change that plans (general path or a replica's batch)
    runs `meanwhile` after its first plan and before its commit. Yields a one-item list
    that is True once `meanwhile` ran."""
    real_transact = placing.transact
    real_commit = ReplicaWorld._commit
    ran = [False]

    def run_meanwhile() -> None:
        ran[0] = True
        placing.transact = real_transact
        ReplicaWorld._commit = real_commit  # type: ignore[method-assign]
        meanwhile()

    def transact(engine: Engine, prepare: Any, *args: Any, **options: Any) -> Any:
        def planned_then_meanwhile(snapshot: Any) -> Any:
            prepared = prepare(snapshot)
            if not ran[0]:
                run_meanwhile()
            return prepared

        return real_transact(engine, planned_then_meanwhile, *args, **options)

    def commit(self: ReplicaWorld, engine: Engine, cached: Any, decided: Any) -> Any:
        if not ran[0]:
            run_meanwhile()
        return real_commit(self, engine, cached, decided)

    placing.transact = transact
    ReplicaWorld._commit = commit  # type: ignore[method-assign]
    try:
        yield ran
    finally:
        placing.transact = real_transact
        ReplicaWorld._commit = real_commit  # type: ignore[method-assign]


class Service:
    """The service's changes, called as its handlers call them, on one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.replicas = [ReplicaWorld(), ReplicaWorld()]

    def apply(self, document: dict[str, Any]) -> None:
        with problems.operation_errors():
            self._apply(document)

    def _apply(self, document: dict[str, Any]) -> None:
        applying.apply(
            self.engine,
            json.dumps(document).encode(),
            "change.json",
            Actor(),
            False,
            False,
            None,
            placing.silent,
        )

    def claim(self, spec: dict[str, Any], replica: int | None = None) -> None:
        found = self.replicas[replica] if replica is not None else None
        if found is not None and found._lock.locked():
            # Called while that replica's own batch commits (`between`): this claim
            # stands for another process, which has a replica world of its own.
            found = self.replicas[1 - replica]  # type: ignore[operator]
        with problems.operation_errors():
            claiming.claim(self.engine, WorkloadSpec.model_validate(spec), Actor(), found)

    def release(self, name: str) -> None:
        with problems.operation_errors():
            removing.remove(self.engine, name, None, Actor())


@pytest.fixture
def service(database: str) -> Iterator[Service]:
    schema.upgrade(database)
    engine = make_engine(database)
    found = Service(engine)
    found.apply(BASE)
    try:
        yield found
    finally:
        engine.dispose()


def units_of(engine: Engine, workload: str) -> dict[str, str | None]:
    with reading(engine) as session:
        rows = session.execute(
            select(Unit.name, Target.name)
            .join(Workload, Workload.id == Unit.workload_id)
            .outerjoin(Placement, Placement.unit_id == Unit.id)
            .outerjoin(Target, Target.id == Placement.target_id)
            .where(Workload.name == workload)
        ).all()
    return dict(rows)


def test_a_waiting_unit_removed_meanwhile_is_not_placed_again(service: Service) -> None:
    """c0-svc/1 waits (no gold room); one change makes room for it while another cuts
    c0-svc to one unit. The first, planned before the cut, must not bring c0-svc/1 back
    as a new unit beyond the spec (the interleaving search found this)."""
    service.apply(box_document(0, 1, "gold", 2))
    assert units_of(service.engine, "c0-svc") == {"c0-svc/0": "c0-box", "c0-svc/1": None}
    with between(lambda: service.apply(box_document(0, 1, "gold", 1))) as ran:
        service.apply(box_document(1, 4, "gold", 1))  # room for c0-svc/1 on c1-box
    assert ran[0]
    assert units_of(service.engine, "c0-svc") == {"c0-svc/0": "c0-box"}
    assert broken_rows(service.engine) == []


def test_a_target_created_meanwhile_by_the_same_document_is_planned_again(
    service: Service,
) -> None:
    """Two applies of one new document: the one that commits second meets the first's
    target (a unique name) and plans again on fresh rows, instead of a 500."""
    document = box_document(2, 3, "gold", 1)
    with between(lambda: service.apply(document)) as ran:
        service.apply(document)
    assert ran[0]
    assert units_of(service.engine, "c2-svc") == {"c2-svc/0": "c2-box"}
    assert broken_rows(service.engine) == []


def test_a_workload_changed_meanwhile_is_not_deleted_unseen(service: Service) -> None:
    """A release planned before the workload grew must not delete the units it never
    saw (c3-svc/1, on another client's box) without lowering that box's usage: the
    delete is at the generation seen, so the release plans again and takes every unit's
    usage with it."""
    service.apply(box_document(1, 4, "gold", 1))
    service.apply(box_document(3, 1, "gold", 1))
    before = units_of(service.engine, "c3-svc")
    assert len(before) == 1
    with between(lambda: service.apply(box_document(3, 1, "gold", 2))) as ran:
        service.release("c3-svc")
    assert ran[0]
    assert units_of(service.engine, "c3-svc") == {}
    assert broken_rows(service.engine) == []


def test_a_claim_decided_before_another_took_the_room_is_judged_again(
    service: Service,
) -> None:
    """A replica's batch decided on its cached world commits only at the revision it
    read: another claim in between (which takes the room) sends it back to decide on
    fresh rows, where it no longer fits."""
    service.claim({"name": "warm", "resources": {"cpu": 1}}, replica=0)  # the cache is read
    other = {"name": "other", "units": 4, "resources": {"cpu": 2}}
    with (
        between(lambda: service.claim(other)) as ran,
        pytest.raises(problems.ProblemException) as refused,
    ):
        service.claim({"name": "fast", "units": 4, "resources": {"cpu": 2}}, replica=0)
    assert ran[0]
    assert refused.value.kind == "unplaceable"
    assert set(units_of(service.engine, "other")) == {f"other/{i}" for i in range(4)}
    assert units_of(service.engine, "fast") == {}
    assert broken_rows(service.engine) == []


TENANTS = {
    "name": "tenants",
    "tenancy": {"domains": {"D1": {"accounts": ["A1"]}, "D2": {"accounts": ["U2"]}}},
    "inventory": [
        {
            "id": "c9",
            "kind": "cluster",
            "children": [
                {"id": "H1", "kind": "host", "capacity": {"cpu": 4}},
                {"id": "H2", "kind": "host", "capacity": {"cpu": 4}},
            ],
        }
    ],
}


def test_a_host_dedicated_meanwhile_takes_no_foreign_unit(database: str) -> None:
    """A claim of account U2 planned before both hosts were dedicated to domain D1 must
    not land there: the dedication was allowed because no foreign unit ran there yet,
    and the claim's target generations never meet it. The world's rules (dedications,
    offerings, settings, tenancy, locations) changed since the snapshot make the change
    stale; planned again, the claim finds no host."""
    schema.upgrade(database)
    engine = make_engine(database)
    try:
        service = Service(engine)
        service.apply(TENANTS)

        def dedicate_both() -> None:
            for host in ("H1", "H2"):
                asked = Rededicating(DEDICATE, host, "root-admin", "D1")
                dedication_changes.change(engine, Actor(), asked)

        claim = {"name": "vm", "account": "U2", "resources": {"cpu": 1}}
        with between(dedicate_both) as ran, pytest.raises(problems.ProblemException) as refused:
            service.claim(claim)
        assert ran[0]
        assert refused.value.kind == "unplaceable", str(refused.value)
        assert units_of(engine, "vm") == {}
        assert broken_rows(engine) == []
    finally:
        engine.dispose()


def test_a_target_taken_down_meanwhile_by_the_controller_takes_no_unit(database: str) -> None:
    """A claim planned while H1 and H2 were up must not land there once the controller
    has taken them down for want of heartbeats: they ran nothing, so their going down
    moved no unit and wrote no usage, and only their generation (raised with the
    liveness) tells the claim its plan is stale."""
    app, _ = served(database)
    engine = app.state.database
    try:
        service = Service(engine)
        hosts = [("H1", 4), ("H2", 4), ("S1", 1), ("S2", 1), ("S3", 1)]
        service.apply(
            {
                "name": "fleet",
                "inventory": [{"id": h, "capacity": {"cpu": cpu}} for h, cpu in hosts],
            }
        )
        controller = Controller(engine, app.state.metrics, options=Options(0.5, 60.0, 0.2))
        controller.renew()
        controller.sweep()
        assert controller.since is not None
        controller.since -= timedelta(hours=1)  # as if leading for long: no grace
        heard(engine, {"H1": 0.0, "H2": 0.0, "S1": 0.0, "S2": 0.0, "S3": 0.0})

        def both_go_stale() -> None:
            heard(engine, {"H1": 60.0, "H2": 60.0})
            controller.sweep()

        claim = {"name": "vm", "resources": {"cpu": 2}}  # only H1 and H2 have room
        with between(both_go_stale) as ran, pytest.raises(problems.ProblemException) as refused:
            service.claim(claim)
        assert ran[0]
        assert refused.value.kind == "unplaceable", str(refused.value)
        assert units_of(engine, "vm") == {}
    finally:
        engine.dispose()


def heard(engine: Engine, ages: dict[str, float]) -> None:
    """Each target's last heartbeat, this many seconds ago by the database's clock."""
    with writing(engine) as session:
        moment = database_now(session)
        for name, age in ages.items():
            target_id = session.scalar(select(Target.id).where(Target.name == name))
            session.execute(
                update(TargetLiveness)
                .where(TargetLiveness.target_id == target_id)
                .values(last_seen=moment - timedelta(seconds=age))
            )
            session.execute(
                update(TargetLiveness)
                .where(TargetLiveness.target_id == target_id, TargetLiveness.liveness == "unknown")
                .values(liveness="up")
            )


class Changes:
    """Random changes of the load run's kinds, by client: claims (through a replica's
    fast path or the general path), releases of a client's own claims, and applies of
    its own document."""

    def __init__(self, service: Service, rng: random.Random) -> None:
        self.service = service
        self.rng = rng
        self.claims: dict[int, list[str]] = defaultdict(list)
        self.sent = 0

    def pick(self, client: int) -> tuple[str, Callable[[], None]]:
        rng, service = self.rng, self.service
        roll = rng.random()
        if roll < 0.35:
            self.sent += 1
            name = f"k{client}-{self.sent}"
            spec = {
                "name": name,
                "units": rng.randint(1, 3),
                "resources": {"cpu": rng.randint(1, 3)},
            }
            replica = rng.choice([None, 0, 1])

            def claim() -> None:
                service.claim(spec, replica)
                self.claims[client].append(name)

            return f"claim {spec} via {replica}", claim
        if roll < 0.55 and self.claims[client]:
            name = rng.choice(self.claims[client])

            def release() -> None:
                service.release(name)
                self.claims[client].remove(name)

            return f"release {name}", release
        document = box_document(
            client, rng.choice((2, 3, 4)), rng.choice(("gold", "silver")), rng.randint(1, 2)
        )
        return f"apply {document['inventory']} units {document['workloads'][0]['units']}", (
            lambda: service.apply(document)
        )


def attempt(log: list[str], what: str, change: Callable[[], None]) -> None:
    try:
        with problems.operation_errors():
            change()
    except problems.ProblemException as error:
        log.append(f"{what}: {error.status} {error.kind}")
    else:
        log.append(f"{what}: done")


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(seed=st.integers(0, 2**32 - 1))
def test_changes_made_stale_by_others_leave_consistent_rows(tmp_path: Path, seed: int) -> None:
    """Twelve steps; in most, one client's change plans, then one to three other
    clients' changes run in full, then it commits or plans again. The rows stay
    consistent after every step."""
    rng = random.Random(seed)
    url = f"sqlite:///{tmp_path / f'stale-{seed}.db'}"
    schema.upgrade(url)
    engine = make_engine(url)
    try:
        service = Service(engine)
        service.apply(BASE)
        changes = Changes(service, rng)
        log: list[str] = []
        for step in range(12):
            client = rng.randrange(CLIENTS)
            what, change = changes.pick(client)
            others = [c for c in range(CLIENTS) if c != client]
            meanwhile = [changes.pick(rng.choice(others)) for _ in range(rng.randint(0, 3))]

            def run_meanwhile(meanwhile: list[tuple[str, Callable[[], None]]] = meanwhile) -> None:
                for inner, inner_change in meanwhile:
                    attempt(log, f"  meanwhile {inner}", inner_change)

            with between(run_meanwhile) as ran:
                attempt(log, f"{step} {what}", change)
            if not ran[0]:
                run_meanwhile()  # it never planned (refused first): they run after it
            broken = broken_rows(engine)
            assert not broken, "\n".join([*log[-12:], *broken])
    finally:
        engine.dispose()
