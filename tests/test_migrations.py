"""Migrations on both backends (the `database` fixture): an empty database goes to head
and matches the models; for every revision of the history, rows written at its parent
survive the upgrade unchanged, and the columns it adds give them their defaults;
`placed db upgrade` brings a database at the previous head to head, and `placed serve`
refuses one until it has.

The revisions are read from Alembic's own history, so a new migration is tested as soon
as it exists: it needs one entry in STEPS (the rows valid at it, and the value each
column it adds takes in rows that were there before it), and the test says so when the
entry is missing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect
from typer.testing import CliRunner

from placed.cli.main import app as cli
from placed.store import schema
from placed.store.database import make_engine
from placed.store.tables import Base, UTCDateTime

BIN = Path(sys.executable).parent
AT = datetime(2026, 11, 30, 9, 30, 15, tzinfo=UTC)
ROOT_DOMAIN_ID = 1  # the first revision's own row, the first in its table

Row = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """What the test knows of one revision: `rows`, (table, row) in insert order, valid
    at it and covering every table; `added`, per table, the value each column it adds
    takes in a row written before it."""

    rows: list[tuple[str, Row]]
    added: dict[str, Row] = field(default_factory=dict)


def extended(rows: list[tuple[str, Row]], more: Mapping[str, Row]) -> list[tuple[str, Row]]:
    """`rows` with the columns of `more` set in every row of its tables."""
    return [(table, {**row, **more.get(table, {})}) for table, row in rows]


FIRST_ROWS: list[tuple[str, Row]] = [
    ("domains", {"id": 10, "name": "eng", "parent_id": ROOT_DOMAIN_ID}),
    ("accounts", {"id": 10, "name": "acct1", "domain_id": 10}),
    (
        "tokens",
        {
            "accessor": "0123456789abcdef",
            "secret_sha256": "ab" * 32,
            "role": "user",
            "scope": "acct1",
            "description": "written before the upgrade",
            "created": AT,
            "expires": None,
            "revoked": None,
        },
    ),
    (
        "locations",
        {
            "id": 10,
            "name": "rack1",
            "parent_id": None,
            "kind": "rack",
            "tags": ["ssd"],
            "properties": {"zone": "a", "floor": 2},
            "revision": 3,
        },
    ),
    (
        "targets",
        {
            "id": 10,
            "name": "host1",
            "location_id": 10,
            "tags": ["gpu"],
            "properties": {"arch": "x86_64"},
            "admin_state": "maintenance",
            "generation": 7,
            "revision": 3,
        },
    ),
    ("target_resources", {"target_id": 10, "name": "cpu", "capacity": 8.0, "used": 2.5}),
    ("target_liveness", {"target_id": 10, "last_seen": AT, "liveness": "alive"}),
    (
        "workloads",
        {
            "id": 10,
            "name": "web",
            "account_id": 10,
            "spec": {"name": "web", "units": 2, "tags": ["gpu"]},
            "generation": 1,
            "revision": 3,
        },
    ),
    ("units", {"id": 10, "name": "web/0", "workload_id": 10, "ordinal": 0}),
    ("placements", {"unit_id": 10, "target_id": 10, "placed_at": AT, "revision": 3}),
    (
        "placement_history",
        {
            "id": 10,
            "unit_name": "web/0",
            "from_target": None,
            "to_target": "host1",
            "at": AT,
            "reason": "placed",
            "event_id": 10,
        },
    ),
    (
        "events",
        {
            "id": 10,
            "at": AT,
            "actor_accessor": "0123456789abcdef",
            "actor_role": "user",
            "kind": "unit.placed",
            "subject": "web/0",
            "target": "host1",
            "workload": "web",
            "domain": "eng",
            "account": "acct1",
            "request_id": "req-1",
            "details": {"score": 1.5, "reason": "the only feasible target"},
        },
    ),
    (
        "dedications",
        {
            "id": 10,
            "resource": "rack1",
            "kind": "pod",
            "domain_id": 10,
            "account_id": 10,
            "implicit": True,
            "revision": 3,
        },
    ),
    (
        "offerings",
        {
            "id": 10,
            "name": "small",
            "cpu": 1.0,
            "memory": 2.0,
            "disk": 10.0,
            "dedicated": True,
            "implicit": "preferred",
        },
    ),
    ("settings", {"key": "implicit_dedication", "value": {"enabled": True}}),
    ("leases", {"name": "controller", "holder": "5f0c-replica-1", "epoch": 4, "expires_at": AT}),
]

SPEC_COLUMNS: dict[str, Row] = {
    "locations": {"spec": {}, "document": None},
    "targets": {"spec": {}, "document": None},
    "workloads": {"document": None},
}

# The rows valid from 0006 on: an idempotency key beside the tables before it.
ROWS_AT_0006: list[tuple[str, Row]] = [
    *extended(
        FIRST_ROWS,
        {
            "locations": {"spec": {"kind": "rack"}, "document": "datacenter"},
            "targets": {"spec": {"tags": ["gpu"]}, "document": "datacenter"},
            "workloads": {"document": "apps"},
            "leases": {"address": "http://10.0.0.5:8700"},
        },
    ),
    (
        "idempotency_keys",
        {
            "caller": "c" * 64,
            "key": "retry-1",
            "fingerprint": "f" * 64,
            "created_at": AT,
            "holder": "5f0c-replica-1",
            "outcome": "answered",
            "status": 201,
            "content_type": "application/json",
            "body": b"{}",
        },
    ),
]

STEPS: dict[str, Step] = {
    "0001": Step(FIRST_ROWS),
    "0002": Step(
        extended(
            FIRST_ROWS,
            {
                "locations": {"spec": {"kind": "rack"}, "document": "datacenter"},
                "targets": {"spec": {"tags": ["gpu"]}, "document": "datacenter"},
                "workloads": {"document": "apps"},
            },
        ),
        added=SPEC_COLUMNS,
    ),
    # Rows only (implicit dedications derived once; none from these rows, whose host is
    # under a dedicated location): the rows valid at 0003 are the rows at 0004.
    "0004": Step(
        extended(
            FIRST_ROWS,
            {
                "locations": {"spec": {"kind": "rack"}, "document": "datacenter"},
                "targets": {"spec": {"tags": ["gpu"]}, "document": "datacenter"},
                "workloads": {"document": "apps"},
            },
        )
    ),
    # The lease records its holder's address: none in a row written before.
    "0005": Step(
        extended(
            FIRST_ROWS,
            {
                "locations": {"spec": {"kind": "rack"}, "document": "datacenter"},
                "targets": {"spec": {"tags": ["gpu"]}, "document": "datacenter"},
                "workloads": {"document": "apps"},
                "leases": {"address": "http://10.0.0.5:8700"},
            },
        ),
        added={"leases": {"address": None}},
    ),
    # A new table: every row written before stays as it was, and an idempotency key
    # can be kept (none in a database written before).
    "0006": Step(ROWS_AT_0006),
    # Indexes only: the rows valid at 0006 are the rows at 0007.
    "0007": Step(ROWS_AT_0006),
    # Indexes only: the rows valid at 0002 are the rows at 0003.
    "0003": Step(
        extended(
            FIRST_ROWS,
            {
                "locations": {"spec": {"kind": "rack"}, "document": "datacenter"},
                "targets": {"spec": {"tags": ["gpu"]}, "document": "datacenter"},
                "workloads": {"document": "apps"},
            },
        )
    ),
}


def history() -> list[tuple[str | None, str]]:
    """Every (parent, revision) of the migrations, from the first to the head."""
    found = []
    for script in ScriptDirectory.from_config(schema.config()).walk_revisions():
        parent = script.down_revision
        # A merge has two parents: the walk from one parent below would not cover it.
        assert parent is None or isinstance(parent, str), f"{script.revision} merges"
        found.append((parent, script.revision))
    return found[::-1]


REVISIONS = [revision for _, revision in history()]
UPGRADES = [(parent, revision) for parent, revision in history() if parent is not None]


def step(revision: str) -> Step:
    if revision not in STEPS:
        pytest.fail(
            f"revision {revision} has no entry in STEPS (tests/test_migrations.py): give "
            "the rows valid at it, for every table, and the value each column it adds "
            "takes in rows written before it"
        )
    return STEPS[revision]


def to_revision(url: str, revision: str) -> None:
    """Alembic itself, without `schema.upgrade`'s first token: that one is written
    through today's models, which an old revision's tables need not match."""
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            config = schema.config()
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        engine.dispose()


def bind_type(value: Any) -> sa.types.TypeEngine[Any] | None:
    if isinstance(value, bool):
        return sa.Boolean()
    if isinstance(value, datetime):
        return UTCDateTime()
    if isinstance(value, dict | list):
        return sa.JSON()
    return None


def insert(connection: Connection, rows: list[tuple[str, Row]]) -> None:
    """Plain SQL: the table as the row names it, never today's model of it."""
    for table, row in rows:
        columns = [sa.column(name, bind_type(value)) for name, value in row.items()]
        connection.execute(sa.insert(sa.table(table, *columns)).values(row))


def counts(connection: Connection) -> dict[str, int]:
    return {
        name: connection.execute(
            sa.select(sa.func.count()).select_from(sa.table(name))
        ).scalar_one()
        for name in inspect(connection).get_table_names()
        if name != "alembic_version"
    }


def read_back(connection: Connection, table: str, row: Row) -> Row:
    """The row of `table` with `row`'s primary key, read through today's model."""
    model = Base.metadata.tables[table]
    where = [column == row[column.name] for column in model.primary_key.columns]
    found = connection.execute(sa.select(model).where(*where)).mappings().all()
    assert len(found) == 1, f"{table}: {len(found)} rows with the key of {row}"
    return dict(found[0])


# The tables a revision after the first made: a revision before it has no rows of them.
TABLES_SINCE = {"idempotency_keys": "0006"}


def test_every_revision_has_its_rows_and_they_cover_every_table() -> None:
    for revision in REVISIONS:
        tables = {table for table, _ in step(revision).rows}
        later = {
            table
            for table, since in TABLES_SINCE.items()
            if REVISIONS.index(revision) < REVISIONS.index(since)
        }
        # The revision row is the first revision's own, one row by its CHECK.
        assert tables == set(Base.metadata.tables) - {"revision"} - later, revision
    assert set(STEPS) == set(REVISIONS), "an entry in STEPS names no revision"


def test_empty_to_head_matches_the_models_and_takes_the_head_rows(database: str) -> None:
    done = schema.upgrade(database)
    assert (done.before, done.after) == (None, schema.head())
    engine = make_engine(database)
    try:
        with engine.begin() as connection:
            assert set(inspect(connection).get_table_names()) == {
                *Base.metadata.tables,
                "alembic_version",
            }
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
            rows = step(schema.head()).rows
            insert(connection, rows)
            for table, row in rows:
                assert read_back(connection, table, row) == row, table
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("parent", "revision"), UPGRADES, ids=[f"{parent}-{rev}" for parent, rev in UPGRADES]
)
def test_rows_written_before_a_revision_survive_it_and_get_its_defaults(
    database: str, parent: str, revision: str
) -> None:
    at_parent = step(parent)
    later = REVISIONS[REVISIONS.index(revision) :]
    added: dict[str, Row] = {}
    for each in later:
        for table, columns in step(each).added.items():
            added[table] = {**added.get(table, {}), **columns}
    to_revision(database, parent)
    engine = make_engine(database)
    try:
        with engine.begin() as connection:
            insert(connection, at_parent.rows)
            before = counts(connection)
            columns_before = {
                table: {c["name"] for c in inspect(connection).get_columns(table)}
                for table in before
            }
        assert schema.upgrade(database, to=revision).after == revision
        done = schema.upgrade(database)
        assert (done.before, done.after, done.root_token) == (revision, schema.head(), None)
        with engine.connect() as connection:
            after = counts(connection)
            assert {table: after[table] for table in before} == before
            assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
            for table, row in at_parent.rows:
                new = set(Base.metadata.tables[table].columns.keys()) - columns_before[table]
                # Each column added after the parent is declared with its default, so a
                # migration that adds one cannot leave this test silent about it.
                assert new == set(added.get(table, {})), f"{table}: added columns {new}"
                assert read_back(connection, table, row) == {**row, **added.get(table, {})}
    finally:
        engine.dispose()


def test_db_upgrade_brings_the_previous_head_to_head(database: str) -> None:
    previous = REVISIONS[-2]
    to_revision(database, previous)
    runner = CliRunner()
    done = runner.invoke(cli, ["db", "current", "--database", database])
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"{previous} (head is {schema.head()}; run placed db upgrade)"
    done = runner.invoke(cli, ["db", "upgrade", "--database", database])
    assert done.exit_code == 0, done.output
    assert f"from {previous} to {schema.head()}" in done.stdout
    assert "plc_" not in done.stdout  # the first token belongs to an empty database only
    done = runner.invoke(cli, ["db", "current", "--database", database])
    assert (done.exit_code, done.stdout.strip()) == (0, f"{schema.head()} (head)")


def test_serve_refuses_the_previous_head_and_says_what_to_run(database: str) -> None:
    previous = REVISIONS[-2]
    to_revision(database, previous)
    done = subprocess.run(
        [str(BIN / "placed"), "serve", "--database", database],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --database: ")
    assert f"the schema is at {previous}" in done.stderr
    assert f"needs {schema.head()}; run placed db upgrade" in done.stderr
    assert "Traceback" not in done.stderr
