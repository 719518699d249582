"""A group commit's rows (store/batch.py): written in one revision with consecutive
event ids, each history row naming its event; a stale guard, a full target or a
revision moved on writes nothing; a connection lost under PostgreSQL's pipeline is
SQLAlchemy's invalidated-connection error, as for any other statement."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, exc, select, text

from placed.operations.apply_documents import apply
from placed.operations.placing import silent
from placed.store import batch, events, revision, statistics
from placed.store.claims import Actor
from placed.store.database import make_engine, reading
from placed.store.schema import upgrade
from placed.store.tables import (
    EventRow,
    Placement,
    PlacementHistory,
    Revision,
    Target,
    TargetResource,
    Unit,
    Workload,
)

SPEC = b"""
name: two
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 1}}
"""


def world(url: str) -> tuple[Engine, dict[str, tuple[int, int]]]:
    """The store with two targets: (id, generation) by name."""
    upgrade(url)
    engine = make_engine(url)
    apply(engine, SPEC, "two.yaml", Actor(), False, False, None, silent)
    with reading(engine) as session:
        targets = {
            n: (i, g)
            for n, i, g in session.execute(select(Target.name, Target.id, Target.generation))
        }
    return engine, targets


def unit(name: str, workload: str, target: int, where: str) -> batch.NewUnit:
    return batch.NewUnit(
        name,
        workload,
        int(name.rpartition("/")[2]),
        target,
        f"placed on {where}",
        events.Pending("unit.placed", name, target=where, workload=workload),
    )


def counts(engine: Engine) -> dict[str, Any]:
    with reading(engine) as session:
        return {
            "revision": revision.current(session),
            "workloads": len(session.scalars(select(Workload.id)).all()),
            "events": len(session.scalars(select(EventRow.id)).all()),
            "used": sorted(session.scalars(select(TargetResource.used)).all()),
        }


def test_a_batch_is_one_revision_with_consecutive_events_named_by_its_history(
    database: str,
) -> None:
    engine, targets = world(database)
    (h1, g1), (h2, g2) = targets["h1"], targets["h2"]
    with reading(engine) as session:
        seen = revision.current(session)
    units = [unit("a/0", "a", h1, "h1"), unit("a/1", "a", h2, "h2"), unit("b/0", "b", h1, "h1")]
    with engine.begin() as connection:
        stored = batch.write(
            connection,
            seen,
            [(h1, g1), (h2, g2)],
            [(h1, "cpu", 2.0), (h2, "cpu", 1.0)],
            [
                batch.NewWorkload("a", None, {"name": "a", "units": 2}, "api"),
                batch.NewWorkload("b", "nobody", {"name": "b"}, "api"),
            ],
            units,
        )
    assert stored.revision == seen + 1
    ids = [event.id for event in stored.events]
    assert ids == list(range(ids[0], ids[0] + 3))
    with reading(engine) as session:
        assert session.scalar(select(Revision.last_event_id)) == ids[-1]
        rows = {e.id: e for e in session.scalars(select(EventRow))}
        assert [(rows[i].subject, rows[i].target, rows[i].kind) for i in ids] == [
            ("a/0", "h1", "unit.placed"),
            ("a/1", "h2", "unit.placed"),
            ("b/0", "h1", "unit.placed"),
        ]
        assert rows[ids[0]].at == stored.events[0].at
        history = session.execute(
            select(
                PlacementHistory.unit_name, PlacementHistory.to_target, PlacementHistory.event_id
            )
        ).all()
        assert sorted(history) == [
            ("a/0", "h1", ids[0]),
            ("a/1", "h2", ids[1]),
            ("b/0", "h1", ids[2]),
        ]
        placed = session.execute(
            select(
                Unit.name, Unit.id, Unit.workload_id, Placement.target_id, Placement.revision
            ).join(Placement, Placement.unit_id == Unit.id)
        ).all()
        assert {u: (i, t, r) for u, i, _, t, r in placed} == {
            "a/0": (stored.unit_ids["a/0"], h1, seen + 1),
            "a/1": (stored.unit_ids["a/1"], h2, seen + 1),
            "b/0": (stored.unit_ids["b/0"], h1, seen + 1),
        }
        assert {u: w for u, _, w, _, _ in placed} == {
            "a/0": stored.workload_ids["a"],
            "a/1": stored.workload_ids["a"],
            "b/0": stored.workload_ids["b"],
        }
        made = session.execute(
            select(Workload.name, Workload.account_id, Workload.spec, Workload.revision)
        ).all()
        assert sorted(made) == [
            ("a", None, {"name": "a", "units": 2}, seen + 1),
            ("b", None, {"name": "b"}, seen + 1),  # an unknown account is none
        ]
        raised = session.execute(select(Target.name, Target.generation, Target.revision)).all()
        assert sorted(raised) == [("h1", g1 + 1, seen + 1), ("h2", g2 + 1, seen + 1)]
    assert counts(engine)["used"] == [1.0, 2.0]


@pytest.mark.parametrize("wrong", ["generation", "capacity", "revision"])
def test_a_stale_guard_a_full_target_or_a_revision_moved_on_writes_nothing(
    database: str, wrong: str
) -> None:
    engine, targets = world(database)
    h1, g1 = targets["h1"]
    with reading(engine) as session:
        seen = revision.current(session)
    before = counts(engine)
    guards = [(h1, g1 + 1 if wrong == "generation" else g1)]
    usage = [(h1, "cpu", 5.0 if wrong == "capacity" else 1.0)]
    expected = batch.Behind if wrong == "revision" else batch.Stale
    with pytest.raises(expected), engine.begin() as connection:
        batch.write(
            connection,
            seen - 1 if wrong == "revision" else seen,
            guards,
            usage,
            [batch.NewWorkload("a", None, {"name": "a"}, "api")],
            [unit("a/0", "a", h1, "h1")],
        )
    assert counts(engine) == before


@pytest.mark.postgres
def test_a_connection_lost_under_the_pipeline_is_an_invalidated_connection(
    postgres_database: str,
) -> None:
    engine, targets = world(postgres_database)
    h1, g1 = targets["h1"]
    with reading(engine) as session:
        seen = revision.current(session)
    admin = create_engine(postgres_database, isolation_level="AUTOCOMMIT")
    connection = engine.connect()
    try:
        connection.begin()
        pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        with admin.connect() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        # The write's own error, before anything else (a rollback) meets the lost
        # connection.
        with pytest.raises(exc.DBAPIError) as raised:
            batch.write(
                connection,
                seen,
                [(h1, g1)],
                [(h1, "cpu", 1.0)],
                [batch.NewWorkload("a", None, {"name": "a"}, "api")],
                [unit("a/0", "a", h1, "h1")],
            )
        assert raised.value.connection_invalidated
    finally:
        connection.close()
        admin.dispose()
    assert counts(engine)["workloads"] == 0


def test_units_placed_twice_on_a_target_and_moved_off_it_write_each_row(database: str) -> None:
    """The same rows whichever way the database takes them (PostgreSQL: a statement over
    arrays per kind of row; SQLite: a row each): two units of one batch on one target
    add up, and a move writes its placement, its history after the batch's order, the
    freed and taken targets' usage as given, and each event with its empty fields."""
    engine, targets = world(database)
    (h1, g1), (h2, g2) = targets["h1"], targets["h2"]
    with reading(engine) as session:
        seen = revision.current(session)
    with engine.begin() as connection:
        placed = batch.write(
            connection,
            seen,
            [(h1, g1)],
            [(h1, "cpu", 1.0), (h1, "cpu", 1.0)],
            [batch.NewWorkload("a", None, {"name": "a", "units": 2}, "api")],
            [unit("a/0", "a", h1, "h1"), unit("a/1", "a", h1, "h1")],
        )
    assert counts(engine)["used"] == [0.0, 2.0]
    moves = [
        batch.MovedUnit(
            placed.unit_ids[name],
            name,
            "h1",
            h2 if name == "a/1" else h1,
            f"{name} moved",
            events.Pending("unit.moved", name, target="h2", workload="a"),
        )
        for name in ("a/1", "a/0")
    ]
    with engine.begin() as connection:
        moved = batch.write(
            connection,
            placed.revision,
            [(h1, g1 + 1), (h2, g2)],
            [],
            [],
            [],
            batch.Gone(
                used=[(h1, "cpu", 3.0), (h2, "cpu", 0.5), (h1, "cpu", 1.0)],  # the last counts
                states=[
                    batch.TargetState(
                        h1, "maintenance", events.Pending("target.maintenance", "h1", target="h1")
                    )
                ],
                moved=moves,
            ),
        )
    assert moved.revision == placed.revision + 1
    with reading(engine) as session:
        where = dict(
            session.execute(
                select(Unit.name, Placement.target_id).join(Placement, Placement.unit_id == Unit.id)
            ).all()
        )
        assert where == {"a/0": h1, "a/1": h2}
        assert dict(session.execute(select(Target.name, Target.admin_state)).all())["h1"] == (
            "maintenance"
        )
        used = dict(session.execute(select(TargetResource.target_id, TargetResource.used)).all())
        assert used == {h1: 1.0, h2: 0.5}
        ids = [event.id for event in moved.events]
        rows = {e.id: e for e in session.scalars(select(EventRow).where(EventRow.id.in_(ids)))}
        assert [
            (rows[i].kind, rows[i].subject, rows[i].target, rows[i].workload, rows[i].account)
            for i in ids
        ] == [
            ("target.maintenance", "h1", "h1", None, None),
            ("unit.moved", "a/1", "h2", "a", None),
            ("unit.moved", "a/0", "h2", "a", None),
        ]
        history = session.execute(
            select(
                PlacementHistory.unit_name,
                PlacementHistory.from_target,
                PlacementHistory.to_target,
                PlacementHistory.reason,
                PlacementHistory.event_id,
            )
            .where(PlacementHistory.from_target.is_not(None))
            .order_by(PlacementHistory.id)
        ).all()
        assert history == [
            ("a/1", "h1", "h2", "a/1 moved", ids[1]),
            ("a/0", "h1", "h2", "a/0 moved", ids[2]),
        ]


def _analyzed(url: str) -> dict[str, bool]:
    """Whether each table was ANALYZEd by hand (autovacuum's runs are counted apart)."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {
                name: when is not None
                for name, when in connection.execute(
                    text("SELECT relname, last_analyze FROM pg_stat_user_tables")
                )
            }
    finally:
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("path", ["general", "batch"])
def test_a_change_of_a_thousand_rows_refreshes_the_planners_statistics(
    postgres_database: str, path: str
) -> None:
    """PostgreSQL planned a drain's commit on 10,000 targets from statistics of a few
    hundred rows, and hashed whole tables (store/statistics.py): a change that makes a
    thousand rows or more ANALYZEs them in its transaction; a small one leaves them."""
    engine, targets = world(postgres_database)
    assert not any(_analyzed(postgres_database)[t] for t in statistics.GROWN)
    h1, g1 = targets["h1"]
    if path == "general":
        hosts = "\n".join(f"  - {{id: m{i}, capacity: {{cpu: 1}}}}" for i in range(1000))
        more = f"name: more\ninventory:\n{hosts}\n".encode()
        apply(engine, more, "more.yaml", Actor(), False, False, None, silent)
    else:
        with reading(engine) as session:
            seen = revision.current(session)
        with engine.begin() as connection:
            batch.write(
                connection,
                seen,
                [(h1, g1)],
                [],
                [batch.NewWorkload("a", None, {"name": "a", "units": 1000}, "api")],
                [unit(f"a/{k}", "a", h1, "h1") for k in range(statistics.GROWTH)],
            )
    found = _analyzed(postgres_database)
    assert all(found[t] for t in statistics.GROWN), found
    engine.dispose()
