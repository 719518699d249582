"""The replica's group commit: claims served together are planned in turn (each on the
world the ones before it leave), committed in one transaction under one revision, and
answered only after it; a claim the earlier ones crowd out is refused, a name taken
twice in one group is refused once."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

from placed import collector
from placed.operations import claim as claiming
from placed.operations import placing, transactions
from placed.operations import replica as replica_module
from placed.operations.errors import OperationError
from placed.operations.replica import ReplicaWorld, Ticket
from placed.service import create_app, problems
from placed.spec.schema import WorkloadSpec
from placed.store import revision
from placed.store.claims import Actor
from placed.store.database import make_engine, reading
from placed.store.tables import Account, EventRow, Placement, TargetResource, Workload

from .service_support import bearer, issue, served

SPEC = """
name: one-host
inventory:
  - {id: h1, capacity: {cpu: 3}}
  - {id: h2, capacity: {cpu: 1}}
"""


def ticket(name: str, cpu: int) -> Ticket:
    spec = WorkloadSpec.model_validate({"name": name, "resources": {"cpu": cpu}})
    return Ticket(spec, Actor("a" * 16, "root-admin", "req"), lambda *_: None, time.perf_counter())


def applied(database: str, spec: str = SPEC) -> tuple[FastAPI, ReplicaWorld]:
    app, root = served(database)
    answer = TestClient(app).post(
        "/v1/apply",
        content=spec,
        headers={**bearer(root), "content-type": "application/yaml"},
    )
    assert answer.status_code == 200, answer.text
    return app, app.state.replica


def served_again(database: str) -> tuple[FastAPI, None]:
    """A second replica on the same store."""
    return create_app(database=make_engine(database)), None


def kind_of(error: BaseException | None) -> str | None:
    return error.kind if isinstance(error, problems.ProblemException | OperationError) else None


def test_a_group_is_planned_in_turn_and_committed_under_one_revision(database: str) -> None:
    app, replica = applied(database)
    engine = app.state.database
    with reading(engine) as session:
        before = revision.current(session)
        last_event = session.scalar(select(EventRow.id).order_by(EventRow.id.desc()).limit(1))
    group = [
        ticket("a", 2),
        ticket("b", 1),
        ticket("a", 1),  # the name the first took
        ticket("big", 2),  # 4 cpu are free, and a and b take 3 of them
        ticket("c", 1),
    ]
    replica._serve(engine, group)
    assert all(t.done for t in group)
    answers: dict[str, Any] = {
        t.spec.name: t.answer for t in group if t.spec is not None and t.answer is not None
    }
    assert sorted(answers) == ["a", "b", "c"]
    assert kind_of(group[2].error) == "exists"
    assert kind_of(group[3].error) == "unplaceable"
    assert {answer["revision"] for answer in answers.values()} == {before + 1}
    placed = {p["unit"]: p["target"] for a in answers.values() for p in a["placements"]}
    assert placed["a/0"] == "h1"
    with reading(engine) as session:
        assert revision.current(session) == before + 1
        stored = set(session.scalars(select(Workload.name)))
        assert stored == {"a", "b", "c"}
        assert len(session.scalars(select(Placement.unit_id)).all()) == 3
        used = {(r.target_id, r.name): r.used for r in session.scalars(select(TargetResource))}
        assert sorted(used.values()) == [1.0, 3.0]
        ids = list(session.scalars(select(EventRow.id).where(EventRow.id > (last_event or 0))))
    # Each workload's workload.created, then each unit's unit.placed: ids in a row.
    assert ids == list(range((last_event or 0) + 1, (last_event or 0) + 7))
    # The cache moved with the commit: the next claim sees the full hosts.
    follow = [ticket("d", 1)]
    replica._serve(engine, follow)
    assert kind_of(follow[0].error) == "unplaceable"


def test_a_group_whose_commit_finds_a_changed_row_goes_to_the_general_path(
    database: str,
) -> None:
    app, replica = applied(database)
    engine = app.state.database
    replica._serve(engine, [ticket("warm", 1)])  # the cache is now read
    cached = replica._cached
    assert cached is not None
    # Another writer raised h1's generation behind the cache's back.
    row = cached.snapshot.targets["h1"]
    cached.snapshot.targets["h1"] = dataclasses.replace(row, generation=-5)
    group = [ticket("x", 1), ticket("y", 1)]
    replica._serve(engine, group)
    assert all(t.done and t.answer is None and t.error is None for t in group)
    assert replica._cached is None
    with reading(engine) as session:
        assert set(session.scalars(select(Workload.name))) == {"warm"}


def test_a_change_landing_after_the_caches_revision_is_seen_before_the_commit(
    database: str,
) -> None:
    """Another replica takes h1 down after this one read its world: the commit finds a
    revision between, and the batch is judged again on the world with h1 down."""
    app, replica = applied(database, SPEC.replace("cpu: 1}", "cpu: 3}"))
    engine = app.state.database
    replica._serve(engine, [ticket("warm", 1)])
    other, _ = served_again(database)
    root = issue(other, "root-admin")
    down = TestClient(other).post("/v1/targets/h1/down", headers=bearer(root))
    assert down.status_code == 200, down.text
    group = [ticket("after", 1)]
    replica._serve(engine, group)
    assert group[0].error is None and group[0].answer is not None
    assert [p["target"] for p in group[0].answer["placements"]] == ["h2"]
    with reading(engine) as session:
        assert group[0].answer["revision"] == revision.current(session)


@pytest.mark.postgres
def test_a_batch_overtaken_by_another_replica_is_decided_under_the_revisions_lock(
    postgres_database: str,
) -> None:
    """Before each optimistic commit of this replica, another replica commits a claim of
    its own (as two replicas under load do, a hundred times a second): the batch is not
    judged again and again until it goes to the general path (which plans the whole
    world per claim), but decided once more under the revision's lock, on the cache
    brought up to date there, and answered from the cache."""
    app, replica = applied(postgres_database, SPEC.replace("cpu: 1}", "cpu: 3}"))
    engine = app.state.database
    replica._serve(engine, [ticket("warm", 1)])
    other = ReplicaWorld()
    other._serve(engine, [ticket("other-warm", 1)])
    real_commit = replica._commit
    overtaken: list[str] = []

    def overtaken_first(engine: Any, cached: Any, decided: Any) -> Any:
        name = f"other-{len(overtaken)}"
        other._serve(engine, [ticket(name, 1)])
        overtaken.append(name)
        return real_commit(engine, cached, decided)

    replica._commit = overtaken_first  # type: ignore[method-assign]
    group = [ticket("mine", 1), ticket("also-mine", 1)]
    replica._serve(engine, group)
    assert overtaken == ["other-0"]  # one optimistic try, then the lock
    assert all(t.done and t.error is None and t.answer is not None for t in group)
    answers = [t.answer for t in group if t.answer is not None]
    with reading(engine) as session:
        now = revision.current(session)
        stored = set(session.scalars(select(Workload.name)))
    assert {answer["revision"] for answer in answers} == {now}
    assert stored == {"warm", "other-warm", "other-0", "mine", "also-mine"}
    # The cache holds the other replica's claims too: 6 cpu left of 6, 5 of them taken.
    assert replica._cached is not None and replica._cached.revision == now
    full = [ticket("too-much", 2)]
    replica._serve(engine, full)
    assert kind_of(full[0].error) == "unplaceable"


TENANT_CLAIMS = [
    {"name": "fast-a1", "account": "A1", "offering": "dedicated-small"},
    {"name": "fast-a7", "account": "A7", "offering": "dedicated-small", "units": 2},
    {"name": "fast-a13", "account": "A13", "offering": "dedicated-small"},
    {"name": "fast-u2", "account": "U2", "offering": "shared-small", "units": 3},
    {"name": "fast-plain", "resources": {"cpu": 1}},
    {"name": "fast-a9", "account": "A9", "offering": "dedicated-small", "units": 2},
    {"name": "fast-u6", "account": "U6", "resources": {"cpu": 1, "memory": 1}},
    {"name": "fast-u14", "account": "U14", "offering": "dedicated-small"},  # its implicit host
]


def test_tenants_claims_on_the_cache_place_as_the_whole_world_plan_does(
    tmp_path: Path,
) -> None:
    """The CloudStack example's world, the same claims on two stores: through the
    replica's cache on one, through the general path (the whole world planned) on the
    other. Every answer is the same, and the cache took the claims it can take."""
    example = (Path(__file__).parent.parent / "examples" / "cloudstack-dedication.yaml").read_text()
    fast_app, _ = applied(f"sqlite:///{tmp_path / 'fast.db'}", example)
    slow_app, _ = applied(f"sqlite:///{tmp_path / 'slow.db'}", example)
    actor = Actor("a" * 16, "root-admin", "req")
    general: list[str] = []

    def on_cache(spec: WorkloadSpec) -> dict[str, Any]:
        engine = fast_app.state.database
        answer: dict[str, Any] | None = fast_app.state.replica.claim(engine, spec, actor)
        if answer is None:
            general.append(spec.name)
            answer = claiming.claim(engine, spec, actor, None)
        return answer

    def planned_whole(spec: WorkloadSpec) -> dict[str, Any]:
        return claiming.claim(slow_app.state.database, spec, actor, None)

    for body in TENANT_CLAIMS:
        spec = WorkloadSpec.model_validate(body)
        outcomes: list[list[tuple[Any, ...]]] = []
        for way in (on_cache, planned_whole):
            try:
                answer = way(spec)
                outcomes.append(
                    sorted((p["unit"], p["target"], p["reason"]) for p in answer["placements"])
                )
            except (problems.ProblemException, OperationError) as error:
                outcomes.append([(error.kind, error.detail)])
        assert outcomes[0] == outcomes[1], body
    # A claim the cache would refuse goes the general path, which says why (U2's third
    # VM: the example's U14 VM holds H33a, the host it took by implicit dedication); the
    # cache took the rest, U14's new VM onto that host among them.
    assert general == ["fast-u2"]
    assert fast_app.state.replica.rebuilds >= 1
    # The rows agree too: each workload's account, and its units' events carry it.
    for app in (fast_app, slow_app):
        with reading(app.state.database) as session:
            found = {
                name: account
                for name, account in session.execute(
                    select(Workload.name, Account.name)
                    .join(Account, Account.id == Workload.account_id, isouter=True)
                    .where(Workload.name.like("fast-%"))
                )
            }
            assert found["fast-a7"] == "A7" and found["fast-plain"] is None, found
            accounts = set(
                session.scalars(select(EventRow.account).where(EventRow.workload == "fast-a7"))
            )
            assert accounts == {"A7"}


def test_a_claim_is_read_as_the_whole_spec_reads_it(tmp_path: Path) -> None:
    """Each tenant claim's workload, read on its own against the cached world, is the
    workload the whole spec's loader reads with the claim in it: a tenant's VM with its
    disk, the storage pools it may use and the private zones (read without them, a
    claim skipped the zone and pool filters and reserved no disk in a pool)."""
    example = (Path(__file__).parent.parent / "examples" / "cloudstack-dedication.yaml").read_text()
    app, _ = applied(f"sqlite:///{tmp_path / 'placed.db'}", example)
    engine = app.state.database
    replica: ReplicaWorld = app.state.replica
    cached = replica._fresh(engine)
    assert cached.spec.storage is not None and any(
        d.kind == "zone" for d in cached.spec.dedications
    )
    for body in TENANT_CLAIMS:
        spec = WorkloadSpec.model_validate(body)
        alone = replica._load(cached, spec)
        whole = placing.world_spec(claiming.with_workload(cached.snapshot, spec, "api"))
        [expected] = [w for w in whole.workloads if w.name == spec.name]
        assert _by_value(alone) == _by_value(expected), body


def _by_value(workload: Any) -> Any:
    """A workload to compare: a request's storage pools (compared by identity, as each
    load makes its own) by their values."""
    requests = []
    for request in workload.requests:
        storage = getattr(request, "storage", None)
        if storage is not None:
            values = (storage.pools, storage.reach, storage.owners, storage.private)
            request = dataclasses.replace(request, storage=values)
        requests.append(request)
    return dataclasses.replace(workload, requests=tuple(requests))


RACKS = """
name: racks
inventory:
  - {id: r0, kind: rack, children: [{id: h0, capacity: {cpu: 4}}, {id: h1, capacity: {cpu: 4}}]}
  - {id: r1, kind: rack, children: [{id: h2, capacity: {cpu: 4}}, {id: h3, capacity: {cpu: 4}}]}
"""
WEB = """workloads:
  - {name: web, resources: {cpu: 1}}
"""


def test_a_claim_on_the_cache_is_never_of_a_workload_a_stored_one_avoids(database: str) -> None:
    # The cache plans a claim without the mirrored avoid terms other workloads hold
    # against it, which is right only because no stored workload can avoid a new name:
    # an avoid names a workload of its document, or (a claim's) of the world, which then
    # cannot be removed; and a claim of that name is refused (PUT changes it, on the
    # whole world, where the mirrored terms are).
    app, root = served(database)
    client = TestClient(app, headers=bearer(root))

    def apply(text: str, prune: bool = False) -> Any:
        return client.post(
            "/v1/apply",
            content=text,
            params={"prune": "true"} if prune else None,
            headers={"content-type": "application/yaml"},
        )

    avoiding = {"name": "db", "avoid": {"workload": "web", "level": "rack"}}
    early = apply(RACKS + "workloads:\n  - " + json.dumps(avoiding) + "\n")
    assert early.status_code == 422, early.text
    assert [e["pointer"] for e in early.json()["errors"]] == ["/workloads/0/avoid/workload"]
    assert client.post("/v1/workloads", json=avoiding).status_code == 422
    assert apply(RACKS + WEB).status_code == 200
    claimed = client.post("/v1/workloads", json=avoiding)
    assert claimed.status_code == 201, claimed.text

    def rack_of(unit: str) -> str:
        (found,) = [p for p in client.get("/v1/placements").json()["items"] if p["unit"] == unit]
        return "r0" if found["target"] in ("h0", "h1") else "r1"

    assert rack_of("db/0") != rack_of("web/0")
    removed = client.delete("/v1/workloads/web")
    assert removed.status_code == 422 and removed.json()["type"].endswith(":invalid-world")
    dropped = apply(RACKS, prune=True)  # the document without web
    assert dropped.status_code == 422 and dropped.json()["type"].endswith(":invalid-world")
    again = client.post("/v1/workloads", json={"name": "web", "resources": {"cpu": 1}})
    assert again.status_code == 409 and again.json()["type"].endswith(":exists")
    # Grown through the whole world's plan, web's new units keep out of db's rack.
    row = client.get("/v1/workloads/web").json()
    spec = {**row["spec"], "units": 4}
    grown = client.put("/v1/workloads/web", json={"generation": row["generation"], "spec": spec})
    assert grown.status_code == 200, grown.text
    assert {rack_of(f"web/{i}") for i in range(4)} == {rack_of("web/0")} != {rack_of("db/0")}


def arriving_during_the_commit(replica: ReplicaWorld, later: list[Ticket]) -> list[bool]:
    """`later` starts waiting once the first batch is decided, so it is taken while that
    batch commits; each decision's list entry says whether it was made on the world a
    committing batch leaves."""
    decide = replica._decide
    calls: list[bool] = []

    def deciding(cached: Any, batch: list[Ticket], on: Any = None) -> Any:
        calls.append(on is not None)
        decided = decide(cached, batch, on)
        if len(calls) == 1:
            with replica._waiting_lock:
                replica._waiting.extend(later)
        return decided

    replica._decide = deciding  # type: ignore[method-assign]
    return calls


def test_claims_arriving_while_a_batch_commits_are_decided_on_the_world_it_leaves(
    database: str,
) -> None:
    app, replica = applied(database)
    engine = app.state.database
    with reading(engine) as session:
        before = revision.current(session)
    first = [ticket("a", 2)]
    later = [ticket("b", 2), ticket("c", 1), ticket("a", 1)]
    calls = arriving_during_the_commit(replica, later)
    replica._waiting = list(first)
    with replica._lock:
        replica._serve_waiting(engine)
    # The later batch was decided once, during the first one's commit, and that held.
    assert calls == [False, True]
    assert all(t.done for t in first + later)
    assert first[0].answer is not None and first[0].answer["revision"] == before + 1
    # a took 2 of h1's 3 cpu: 2 more fit nowhere, 1 does, and a's name is taken.
    assert kind_of(later[0].error) == "unplaceable"
    assert later[1].answer is not None and later[1].answer["revision"] == before + 2
    assert kind_of(later[2].error) == "exists"
    with reading(engine) as session:
        assert revision.current(session) == before + 2
        assert set(session.scalars(select(Workload.name))) == {"a", "c"}
        used = sorted(session.scalars(select(TargetResource.used)))
        assert sum(used) == 3.0 and all(u <= 3.0 for u in used)


def test_a_batchs_answers_go_once_the_next_batchs_commit_is_under_way(database: str) -> None:
    """Building a batch's answers (a plan document each, events logged) waits until the
    next batch's commit has started, so it does not sit between two commits; a batch
    with none after it is answered at once."""
    app, replica = applied(database)
    engine = app.state.database
    first = [ticket("a", 1), ticket("b", 1)]
    later = [ticket("c", 1)]
    arriving_during_the_commit(replica, later)
    order: list[str] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    class Committer:
        """The replica's committing thread, noting each batch as it is handed over."""

        def submit(self, commit: Any, engine: Any, cached: Any, decided: Any) -> Any:
            order.append("commit " + ",".join(a.spec.name for a in decided.accepted))
            return pool.submit(commit, engine, cached, decided)

    replica._committer = Committer()  # type: ignore[assignment]
    for each in first + later:
        finish = each.finish

        def finished(
            answer: Any = None,
            error: Any = None,
            _name: str = each.spec.name if each.spec is not None else "",
            _finish: Any = finish,
        ) -> None:
            order.append("answer " + _name)
            _finish(answer, error)

        each.finish = finished  # type: ignore[method-assign]
    replica._waiting = list(first)
    with replica._lock:
        replica._serve_waiting(engine)
    pool.shutdown()
    assert order == ["commit a,b", "commit c", "answer a", "answer b", "answer c"]
    assert all(t.answer is not None for t in first + later)


def test_claims_decided_on_a_batch_whose_commit_fails_are_decided_again(
    database: str,
) -> None:
    app, replica = applied(database)
    engine = app.state.database
    replica._serve(engine, [ticket("warm", 1)])
    cached = replica._cached
    assert cached is not None
    # Another writer raised h1's generation behind the cache's back: the first batch,
    # on h1, is stale, and what was decided on the world it would leave is not kept.
    row = cached.snapshot.targets["h1"]
    cached.snapshot.targets["h1"] = dataclasses.replace(row, generation=-5)
    first = [ticket("x", 2)]
    later = [ticket("y", 2), ticket("z", 1)]
    calls = arriving_during_the_commit(replica, later)
    replica._waiting = list(first)
    with replica._lock:
        replica._serve_waiting(engine)
    assert calls == [False, True, False]  # decided again, on a world read afresh
    assert first[0].done and first[0].answer is None and first[0].error is None
    # x never landed, so y's 2 cpu fit on h1 after all.
    assert all(t.done and t.error is None and t.answer is not None for t in later)
    with reading(engine) as session:
        assert set(session.scalars(select(Workload.name))) == {"warm", "y", "z"}


def test_claims_arriving_in_turns_during_a_commit_all_make_the_next_batch(
    database: str,
) -> None:
    """While a batch commits, each claim that arrives is decided on the world the ones
    before it leave, however late it comes, and all of them are committed together next:
    one revision for the lot, names taken earlier in the lineage refused."""
    app, replica = applied(database)
    engine = app.state.database
    with reading(engine) as session:
        before = revision.current(session)
    first = [ticket("a", 1)]
    waves = [[ticket("b", 1)], [ticket("c", 1), ticket("a", 1)], [ticket("b", 1), ticket("d", 2)]]
    decide = replica._decide
    calls: list[bool] = []

    def deciding(cached: Any, batch: list[Ticket], on: Any = None) -> Any:
        calls.append(on is not None)
        decided = decide(cached, batch, on)
        if len(calls) <= len(waves):
            # The next turn arrives while this one is decided.
            with replica._arrived:
                replica._waiting.extend(waves[len(calls) - 1])
                replica._arrived.notify_all()
        return decided

    replica._decide = deciding  # type: ignore[method-assign]
    commit = replica._commit

    def slow_commit(*args: Any) -> Any:
        time.sleep(0.5)  # long enough for every turn to come before it ends
        return commit(*args)

    replica._commit = slow_commit  # type: ignore[method-assign,assignment]
    replica._waiting = list(first)
    with replica._lock:
        replica._serve_waiting(engine)
    assert calls == [False, True, True, True]
    (b,), (c, a_again), (b_again, d) = waves
    assert kind_of(a_again.error) == kind_of(b_again.error) == "exists"
    # a, b and c took 3 of the 4 cpu: d's 2 fit nowhere.
    assert kind_of(d.error) == "unplaceable"
    committed = [t.answer["revision"] for t in (b, c) if t.answer is not None]
    assert committed == [before + 2, before + 2]  # one batch after the first
    with reading(engine) as session:
        assert revision.current(session) == before + 2
        assert set(session.scalars(select(Workload.name))) == {"a", "b", "c"}


def test_the_cycle_collector_rests_while_the_world_is_built_planned_and_written(
    database: str, monkeypatch: Any
) -> None:
    """Reading, planning and writing the whole world (an apply), and building the
    replica's world, make objects by the million that live on: each pass of the cycle
    collector meanwhile would walk them all. It is on again afterwards."""
    import gc

    seen: dict[str, list[bool]] = {"write": [], "build": []}
    write, world_spec = transactions._write, placing.world_spec

    def watched_write(*args: Any, **kwargs: Any) -> Any:
        seen["write"].append(gc.isenabled())
        return write(*args, **kwargs)

    def watched_world_spec(*args: Any, **kwargs: Any) -> Any:
        seen["build"].append(gc.isenabled())
        return world_spec(*args, **kwargs)

    monkeypatch.setattr(transactions, "_write", watched_write)
    monkeypatch.setattr(placing, "world_spec", watched_world_spec)
    assert gc.isenabled()
    app, replica = applied(database)
    claim = ticket("a", 1)
    replica._serve(app.state.database, [claim])
    assert claim.answer is not None
    # The apply writes once; the world is built for its plan and for the replica.
    assert seen["write"] == [False]
    assert len(seen["build"]) >= 2 and not any(seen["build"])
    assert gc.isenabled()


def test_the_replicas_world_is_set_aside_from_the_collector_once_built(database: str) -> None:
    """A new cached world is frozen out of the cycle collector's sight (its full passes
    would walk all of it, every thread held), once per build: a claim that moves the
    cache along freezes nothing more."""
    import gc

    gc.unfreeze()
    try:
        app, replica = applied(database)
        engine = app.state.database
        replica._serve(engine, [ticket("warm", 1)])  # builds the world
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the world and everything else alive then
        claim = ticket("next", 1)
        with patch.object(replica_module, "set_aside", wraps=collector.set_aside) as spy:
            replica._serve(engine, [claim])
        assert claim.answer is not None
        # The cache moved on, nothing rebuilt: nothing more set aside (what was may have
        # been freed since, the world read by the apply before it among it).
        assert spy.call_count == 0
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_what_was_set_aside_and_became_garbage_is_freed_by_the_next() -> None:
    import gc
    import weakref

    from placed.collector import set_aside

    class Node:
        partner: Any = None

    gc.unfreeze()
    try:
        first, second = Node(), Node()
        first.partner, second.partner = second, first  # a cycle: refcounts never free it
        watched = weakref.ref(first)
        set_aside()  # the old world, frozen while alive
        del first, second
        gc.collect()
        assert watched() is not None  # frozen: no collection sees it
        set_aside()  # the next world replaces it
        assert watched() is None
    finally:
        gc.unfreeze()


def test_a_claim_refused_once_another_replicas_commit_is_read_leaves_no_workload_behind(
    database: str,
) -> None:
    """The claim is decided on this replica's world (2 cpu free on h1), its commit finds
    that another replica took them, and decided again it is refused: the world this
    replica keeps then holds no workload of that name, so a claim that avoids it is read
    as one avoiding a workload that does not exist, as a replica started afresh reads it."""
    app, replica = applied(database)
    engine = app.state.database
    replica._serve(engine, [ticket("warm", 1)])
    other = ReplicaWorld()
    other._serve(engine, [ticket("hog", 2)])
    refused = [ticket("x", 2)]
    replica._serve(engine, refused)
    assert kind_of(refused[0].error) == "unplaceable"
    cached = replica._cached
    assert cached is not None
    assert sorted(cached.planner.workloads) == ["hog", "warm"]
    assert [w.name for w in cached.spec.workloads] == ["warm", "hog"]

    def avoiding_x(replica: ReplicaWorld) -> Ticket:
        spec = WorkloadSpec.model_validate(
            {"name": "y", "resources": {"cpu": 1}, "avoid": [{"workload": "x", "level": "target"}]}
        )
        claim = Ticket(spec, Actor("a" * 16, "root-admin", "req"), lambda *_: None, 0.0)
        replica._serve(engine, [claim])
        return claim

    mine = avoiding_x(replica)
    # Not decided on this world (it names a workload the world does not hold): left to
    # the general path, as a fresh replica leaves it.
    fresh = avoiding_x(ReplicaWorld())
    assert (mine.answer, kind_of(mine.error)) == (fresh.answer, kind_of(fresh.error))
    assert mine.answer is None and mine.error is None
