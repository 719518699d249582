"""The store on both backends (the `database` fixture: SQLite, and PostgreSQL at
127.0.0.1:5432): migrations, tokens, the capacity CHECK, generation-checked claims,
event ids in commit order, leases, and rows read back as the model's objects."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, exc, inspect, select, text

from placed.model.dedications import Dedication, Offering, Owner
from placed.store import (
    accounts,
    credentials,
    dedications,
    domains,
    events,
    leases,
    offerings,
    placements,
    revision,
    schema,
    settings,
    targets,
    tokens,
    units,
    workloads,
)
from placed.store.database import StoreError, make_engine, reading, writing
from placed.store.tables import Base, Target, TargetLiveness, Token, now


@pytest.fixture
def engine(database: str) -> Iterator[Engine]:
    schema.upgrade(database)
    made = make_engine(database)
    yield made
    made.dispose()


def test_empty_to_head_creates_every_table_and_a_root_token_that_works(database: str) -> None:
    done = schema.upgrade(database)
    assert (done.before, done.after) == (None, schema.head())
    assert done.root_token is not None and done.root_token.startswith("plc_")
    engine = make_engine(database)
    try:
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) == {
                *Base.metadata.tables,
                "alembic_version",
            }
            # The first revision creates exactly what the models declare.
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        with writing(engine) as session:
            found = tokens.authenticate(session, done.root_token)
            assert found is not None and found.role == "root-admin" and found.scope is None
            # Only the hash of the secret is stored.
            # (The secret may hold "_": split it as the parser does, not at the last one.)
            parsed = credentials.parse(done.root_token)
            assert parsed is not None and parsed.secret not in found.secret_sha256
            accessor = found.accessor
            wrong = done.root_token[:-4] + ("AAAA" if done.root_token[-4:] != "AAAA" else "BBBB")
            assert tokens.authenticate(session, wrong) is None
            assert tokens.authenticate(session, "plc_nonsense") is None
            assert [e.kind for e in events.after(session)] == ["token.created"]
            assert domains.parents(session) == {"ROOT": None}
        with writing(engine) as session:
            _, expiring = tokens.create(
                session, "user", "acct1", expires=now() + timedelta(hours=1)
            )
        with writing(engine) as session:
            assert tokens.authenticate(session, expiring) is not None
            assert tokens.authenticate(session, expiring, at=now() + timedelta(hours=2)) is None
            assert tokens.revoke(session, accessor)
        with writing(engine) as session:
            assert tokens.authenticate(session, done.root_token) is None
            assert tokens.count(session) == 2
    finally:
        engine.dispose()


def test_upgrade_twice_changes_nothing_and_creates_no_second_token(database: str) -> None:
    first = schema.upgrade(database)
    second = schema.upgrade(database)
    assert (second.before, second.after, second.root_token) == (first.after, first.after, None)
    assert schema.status(database).at_head
    engine = make_engine(database)
    try:
        with reading(engine) as session:
            assert tokens.count(session) == 1
            assert len(events.after(session)) == 1
    finally:
        engine.dispose()


def test_an_empty_database_has_no_revision(database: str) -> None:
    found = schema.status(database)
    assert (found.revision, found.at_head) == (None, False)


def test_the_database_refuses_used_over_capacity(engine: Engine) -> None:
    with writing(engine) as session:
        host = targets.create(session, "host1", {"cpu": 4, "memory": 8})
        host_id = host.id
    with writing(engine) as session:
        assert targets.claim(session, host_id, 0, {"cpu": 3})
    with writing(engine) as session, pytest.raises(targets.OverCapacity):
        targets.claim(session, host_id, 1, {"cpu": 2, "memory": 1})
    # The CHECK itself, without the repository in front of it.
    with pytest.raises(exc.IntegrityError), writing(engine) as session:
        session.execute(
            text("UPDATE target_resources SET used = capacity + 1 WHERE target_id = :id"),
            {"id": host_id},
        )
    with reading(engine) as session:
        assert targets.resources(session, host_id) == {"cpu": (4, 3), "memory": (8, 0)}
        assert targets.by_name(session, "host1").generation == 1  # type: ignore[union-attr]


def test_a_stale_generation_touches_no_row(engine: Engine) -> None:
    with writing(engine) as session:
        host_id = targets.create(session, "host1", {"cpu": 4}).id
    with writing(engine) as session:
        assert targets.claim(session, host_id, 0, {"cpu": 1})
        assert not targets.claim(session, host_id, 0, {"cpu": 1})  # saw generation 0: stale
        stale = session.execute(
            text(
                "UPDATE targets SET generation = generation + 1 "
                "WHERE id = :id AND generation = :seen"
            ),
            {"id": host_id, "seen": 0},
        )
        assert stale.rowcount == 0  # type: ignore[attr-defined]
        assert not targets.set_admin_state(session, host_id, 0, "down")
        assert targets.set_admin_state(session, host_id, 1, "down")
    with reading(engine) as session:
        host = targets.by_name(session, "host1")
        assert host is not None and (host.generation, host.admin_state) == (2, "down")
        assert targets.resources(session, host_id) == {"cpu": (4, 1)}


def test_a_heartbeat_keeps_the_generation(engine: Engine) -> None:
    with writing(engine) as session:
        host_id = targets.create(session, "host1", {"cpu": 4}).id
    with writing(engine) as session:
        targets.heartbeat(session, host_id)
    with reading(engine) as session:
        assert targets.by_name(session, "host1").generation == 0  # type: ignore[union-attr]
        seen = session.get(TargetLiveness, host_id)
        assert seen is not None and seen.last_seen is not None and seen.liveness == "up"


def test_event_ids_come_out_in_commit_order(engine: Engine) -> None:
    # A holds its transaction open after taking an id; B, begun later, cannot take one
    # (nor commit) until A has committed. With ids from a sequence, B would commit first
    # with the higher id, and a reader paging by id would have skipped A's event.
    a_has_id, b_done = threading.Event(), threading.Event()
    ids: dict[str, int] = {}

    def b() -> None:
        a_has_id.wait()
        with writing(engine) as session:
            ids["b"] = events.append(session, "test.b", "b").id
        b_done.set()

    other = threading.Thread(target=b)
    other.start()
    with writing(engine) as session:
        ids["a"] = events.append(session, "test.a", "a").id
        a_has_id.set()
        assert not b_done.wait(0.5), "B committed while A held its transaction"
        with reading(engine) as look:
            assert [e.kind for e in events.after(look)] == ["token.created"]
    other.join(30)
    assert b_done.is_set() and ids["a"] < ids["b"]
    with reading(engine) as session:
        assert [e.kind for e in events.after(session)] == ["token.created", "test.a", "test.b"]
        assert [e.kind for e in events.after(session, ids["a"])] == ["test.b"]


def test_the_revision_rises_with_each_change_and_finds_what_changed(engine: Engine) -> None:
    with reading(engine) as session:
        start = revision.current(session)
    with writing(engine) as session:
        first = targets.create(session, "host1", {"cpu": 4}).id
        targets.create(session, "host2", {"cpu": 4})
    with reading(engine) as session:
        middle = revision.current(session)
        assert middle == start + 2
    with writing(engine) as session:
        assert targets.claim(session, first, 0, {"cpu": 1})
    with reading(engine) as session:
        assert [t.name for t in targets.changed_since(session, middle)] == ["host1"]
        assert [t.name for t in targets.changed_since(session, start)] == ["host1", "host2"]


def test_a_lease_has_one_holder_and_a_new_epoch_when_taken_over(engine: Engine) -> None:
    with writing(engine) as session:
        taken = leases.acquire(session, "controller", "one", ttl_s=0.3)
        assert taken is not None and taken.epoch == 1
    with writing(engine) as session:
        assert leases.acquire(session, "controller", "two", ttl_s=0.3) is None
        renewed = leases.acquire(session, "controller", "one", ttl_s=0.3)
        assert renewed is not None and renewed.epoch == 1
    time.sleep(0.5)
    with writing(engine) as session:
        over = leases.acquire(session, "controller", "two", ttl_s=10)
        assert over is not None and (over.holder, over.epoch) == ("two", 2)
    with writing(engine) as session:
        assert leases.release(session, "controller", "two")
        again = leases.acquire(session, "controller", "one", ttl_s=10)
        assert again is not None and again.epoch == 3


def test_rows_read_back_as_the_models_objects(engine: Engine) -> None:
    with writing(engine) as session:
        domains.create(session, "D1")
        domains.create(session, "D1a", parent="D1")
        accounts.create(session, "A1", "D1a")
        dedications.save(session, Dedication("host1", "host", Owner("D1")))
        dedications.save(session, Dedication("host1", "host", Owner("D1a", "A1", implicit=True)))
        dedications.save(session, Dedication("pod1", "pod", Owner("D1")))
        offerings.save(session, Offering("big", cpu=8, memory=16, dedicated=True))
        settings.put(session, "implicit-dedication", "preferred")
        load = workloads.create(session, "web", {"count": 2}, account="A1")
        host = targets.create(session, "host1", {"cpu": 4})
        other = targets.create(session, "host2", {"cpu": 4})
        web0, _ = units.ensure(session, load, 2)
        placements.place(session, web0, host, "placed")
        placements.place(session, web0, other, "moved")
        with pytest.raises(LookupError):
            accounts.create(session, "A2", "nowhere")
    with writing(engine) as session:
        assert domains.parents(session) == {"ROOT": None, "D1": "ROOT", "D1a": "D1"}
        assert accounts.domains_of(session) == {"A1": "D1a"}
        assert dedications.listed(session) == [
            Dedication("host1", "host", Owner("D1a", "A1", implicit=True)),
            Dedication("pod1", "pod", Owner("D1")),
        ]
        assert dedications.release(session, "pod1") and not dedications.release(session, "pod1")
        assert offerings.listed(session) == [Offering("big", 8, 16, 0, True, "strict")]
        assert settings.get(session, "implicit-dedication") == "preferred"
        assert settings.get(session, "absent", "default") == "default"
        assert placements.current(session) == {"web/0": "host2"}
        assert [(h.from_target, h.to_target, h.reason) for h in placements.history(session)] == [
            (None, "host1", "placed"),
            ("host1", "host2", "moved"),
        ]
        assert [u.name for u in units.ensure(session, load, 2)] == ["web/0", "web/1"]
        web = workloads.by_name(session, "web")
        assert web is not None and web.generation == 0
        assert workloads.update_spec(session, web.id, 0, {"count": 3})
        assert not workloads.update_spec(session, web.id, 0, {"count": 4})  # stale
    with reading(engine) as session:
        web = workloads.by_name(session, "web")
        assert web is not None and (web.spec, web.generation) == ({"count": 3}, 1)


def test_a_token_row_needs_a_scope_unless_root(engine: Engine) -> None:
    with pytest.raises(exc.IntegrityError), writing(engine) as session:
        tokens.create(session, "user", scope=None)
    with writing(engine) as session:
        _, agent = tokens.create(session, "agent", scope="host1")
        row = tokens.authenticate(session, agent)
        assert row is not None and (row.role, row.scope) == ("agent", "host1")
        assert session.scalar(select(Token.role).where(Token.scope == "host1")) == "agent"


def test_token_text_parses_back_and_only_its_own_shape() -> None:
    made = credentials.new_token()
    assert credentials.parse(str(made)) == made
    assert credentials.parse(f" {made}\n") == made  # as pasted from a terminal
    for bad in ("", "plc_", "plc__x", f"xyz_{made.accessor}_{made.secret}", "plc_ABC_def"):
        assert credentials.parse(bad) is None, bad
    assert credentials.parse(f"plc_{made.accessor}_{made.secret}!") is None
    stored = credentials.hash_secret(made.secret)
    moment = now()
    assert credentials.verify(made.secret, stored, moment)
    assert not credentials.verify(made.secret + "x", stored, moment)
    assert not credentials.verify(
        made.secret, stored, moment, expires=moment
    )  # expiry is exclusive
    assert not credentials.verify(made.secret, stored, moment, revoked=moment)


def test_every_revision_upgrades_to_the_next_with_its_data_kept(database: str) -> None:
    # One step at a time from empty to head, a row written at each step, so a revision
    # that loses data or cannot follow the one before it fails here.
    steps = [
        script.revision
        for script in reversed(list(ScriptDirectory.from_config(schema.config()).walk_revisions()))
    ]
    assert steps[-1] == schema.head()
    engine = make_engine(database)
    try:
        for step in steps:
            assert schema.upgrade(database, to=step).after == step
            with writing(engine) as session:
                events.append(session, "test.step", step)
        assert schema.upgrade(database).root_token is None  # at head: nothing more
        with reading(engine) as session:
            kept = [e.subject for e in events.after(session) if e.kind == "test.step"]
        assert kept == steps
    finally:
        engine.dispose()


def test_a_service_refuses_a_schema_that_is_not_at_head(database: str) -> None:
    with pytest.raises(StoreError, match="empty; run placed db upgrade"):
        schema.require_current(database)
    schema.upgrade(database)
    assert schema.require_current(database).at_head
    engine = make_engine(database)
    try:
        with writing(engine) as session:
            session.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="revision ffff, which this placed does not know"):
        schema.require_current(database)


def test_concurrent_claims_never_overcommit(engine: Engine) -> None:
    # 8 writers, 80 one-cpu claims for 50 cpus: each reads the generation, claims with
    # it, and reads again when it was stale. Exactly 50 land; the rest are refused by the
    # CHECK; no writer sees a database error (SQLite: BEGIN IMMEDIATE waits its turn).
    with writing(engine) as session:
        host_id = targets.create(session, "host1", {"cpu": 50}).id
    outcomes: list[str] = []
    lock = threading.Lock()

    def writer() -> None:
        for _ in range(10):
            while True:
                with writing(engine) as session:
                    seen = session.scalar(select(Target.generation).where(Target.id == host_id))
                    assert seen is not None
                    try:
                        landed = targets.claim(session, host_id, seen, {"cpu": 1})
                    except targets.OverCapacity:
                        result = "refused"
                    else:
                        result = "claimed" if landed else "stale"
                with lock:
                    outcomes.append(result)
                if result != "stale":
                    break

    threads = [threading.Thread(target=writer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert (outcomes.count("claimed"), outcomes.count("refused")) == (50, 30)
    with reading(engine) as session:
        assert targets.resources(session, host_id) == {"cpu": (50, 50)}
        host = targets.by_name(session, "host1")
        assert host is not None and host.generation == 50


def test_a_snapshot_copy_has_containers_of_its_own() -> None:
    from dataclasses import fields

    from placed.store.world import Snapshot

    snapshot = Snapshot(7)
    for found in fields(Snapshot):
        value = getattr(snapshot, found.name)
        if isinstance(value, dict):
            value["x"] = {"shared": True}
        elif isinstance(value, list):
            value.append({"shared": True})
    copied = snapshot.copy()
    assert copied == snapshot  # every field, none forgotten
    for found in fields(Snapshot):
        value = getattr(copied, found.name)
        if isinstance(value, dict | list):
            assert value is not getattr(snapshot, found.name), found.name
