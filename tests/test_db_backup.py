"""`placed db backup` and `placed db restore` (issue 34): a backup taken while a real
`placed serve` commits claims from several clients holds every claim a client saw
committed before the backup began, none sent after it ended, and rows that satisfy the
store's invariants (a torn copy would not); restored into a new database, a server runs
on it and goes on claiming. Restore goes into an empty database only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner, Result

from placed.cli.main import app as cli
from placed.store import schema
from placed.store.backup import PGDMP_MAGIC, SQLITE_MAGIC
from placed.store.database import make_engine, reading
from placed.store.tables import Placement, Unit, Workload
from tests.conftest import another_database, in_ci
from tests.row_invariants import broken_rows, read_rows
from tests.running_servers import BIN, serving, upgrade
from tests.service_support import table_digest

CLIENTS = 4
BEFORE = 40  # claims committed before the backup begins, at least

SPEC = {
    "name": "hosts",
    "inventory": [
        {
            "id": "rack1",
            "kind": "rack",
            "children": [{"id": f"h{i}", "capacity": {"cpu": 10_000}} for i in range(4)],
        }
    ],
    "workloads": [],
}


def placed(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def needs_postgres_tools(database: str) -> None:
    """pg_dump and pg_restore must be here for a PostgreSQL test: under CI=true their
    absence fails it."""
    if not database.startswith("postgresql"):
        return
    missing = [tool for tool in ("pg_dump", "pg_restore") if shutil.which(tool) is None]
    if missing:
        message = f"{' and '.join(missing)} not on PATH (apt-get install postgresql-client)"
        if in_ci():
            pytest.fail(f"CI=true requires them: {message}")
        pytest.skip(message)


@dataclass(frozen=True)
class Claim:
    name: str
    sent: float
    answered: float
    status: int


def test_a_backup_under_load_restores_every_claim_committed_before_it_began(
    database: str, tmp_path: Path
) -> None:
    needs_postgres_tools(database)
    token = upgrade(database)
    headers = {"authorization": f"Bearer {token}"}
    backup = tmp_path / "placed.backup"
    claims: list[Claim] = []
    lock = threading.Lock()
    stop = threading.Event()

    with serving(database) as [base]:
        applied = httpx.post(f"{base}/v1/apply", json=SPEC, headers=headers, timeout=60)
        assert applied.status_code == 200, applied.text

        def client(number: int) -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
                count = 0
                while not stop.is_set():
                    name = f"c{number}-{count}"
                    count += 1
                    sent = time.monotonic()
                    answer = http.post(
                        "/v1/workloads", json={"name": name, "resources": {"cpu": 1}}
                    )
                    with lock:
                        claims.append(Claim(name, sent, time.monotonic(), answer.status_code))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        try:
            deadline = time.monotonic() + 60
            while sum(c.status == 201 for c in list(claims)) < BEFORE:
                assert time.monotonic() < deadline, "the clients claim nothing"
                time.sleep(0.05)
            # The command in this process: a new one would spend half a second starting,
            # long enough for SQLite to checkpoint its WAL into the file meanwhile, and a
            # plain copy of the file (no backup at all) would then pass too.
            began = time.monotonic()
            done = placed("db", "backup", str(backup), "--database", database)
            ended = time.monotonic()
            assert done.exit_code == 0, done.output
            assert done.stdout.startswith("Backed up "), done.stdout
            time.sleep(0.3)  # more claims after it: none of them may be in the backup
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)

    assert not [c for c in claims if c.status != 201], "every claim fits"
    before = {c.name for c in claims if c.answered < began}
    # Claims in flight while the backup ran: it ran under load.
    during = [c for c in claims if c.sent < ended and c.answered > began]
    after = {c.name for c in claims if c.sent > ended}
    assert len(before) >= BEFORE and after
    assert during, "no claim was in flight while the backup ran: it ran under no load"
    magic = SQLITE_MAGIC if database.startswith("sqlite") else PGDMP_MAGIC
    assert backup.read_bytes().startswith(magic)

    with another_database(database, tmp_path, "restored.db") as restored:
        # The real command, in its own process, as an operator runs it.
        brought = subprocess.run(
            [str(BIN / "placed"), "db", "restore", str(backup), "--database", restored],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert brought.returncode == 0, brought.stderr
        assert "Its schema is at head" in brought.stdout, brought.stdout
        engine = make_engine(restored)
        try:
            with reading(engine) as session:
                placed_units = dict(
                    session.execute(
                        select(Workload.name, Placement.target_id)
                        .join(Unit, Unit.workload_id == Workload.id)
                        .join(Placement, Placement.unit_id == Unit.id)
                    ).all()
                )
            missing = before - placed_units.keys()
            assert not missing, f"{len(missing)} committed claims are not in the backup"
            assert not after & placed_units.keys(), "claims sent after the backup are in it"
            assert broken_rows(read_rows(engine)) == []
        finally:
            engine.dispose()

        # The restored database is a working one: its server accepts the same token and
        # claims on (ids and the revision go on from where the backup left them).
        with serving(restored) as [again]:
            more = httpx.post(
                f"{again}/v1/workloads",
                json={"name": "after-restore", "resources": {"cpu": 1}},
                headers=headers,
                timeout=60,
            )
            assert more.status_code == 201, more.text


def test_restore_refuses_a_database_that_is_not_empty(database: str, tmp_path: Path) -> None:
    needs_postgres_tools(database)
    schema.upgrade(database)
    backup = tmp_path / "placed.backup"
    done = placed("db", "backup", str(backup), "--database", database)
    assert done.exit_code == 0, done.output
    engine = make_engine(database)
    before = table_digest(engine)
    refused = placed("db", "restore", str(backup), "--database", database)
    assert refused.exit_code == 2, refused.output
    assert "not empty: it has the table 'accounts'" in refused.stderr
    assert table_digest(engine) == before
    engine.dispose()


def test_restore_refuses_what_is_no_backup_for_its_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    schema.upgrade(url)
    backup = tmp_path / "placed.backup"
    assert placed("db", "backup", str(backup), "--database", url).exit_code == 0
    dump = tmp_path / "placed.dump"
    dump.write_bytes(PGDMP_MAGIC + b"\x01\x0e\x00")
    text = tmp_path / "notes.txt"
    text.write_text("no backup\n")
    new = f"sqlite:///{tmp_path / 'new.db'}"
    # No PostgreSQL is reached: the kinds differ before any connection.
    postgres = "postgresql+psycopg://placed:secret@127.0.0.1:9/placed"
    cases = [
        (backup, postgres, "is a SQLite database: restore it into a SQLite database"),
        (dump, new, "is a pg_dump custom-format archive: restore it into a PostgreSQL"),
        (text, new, "not a backup of placed's database"),
        (tmp_path / "none.backup", new, "none.backup: no such file"),
    ]
    for file, into, said in cases:
        done = placed("db", "restore", str(file), "--database", into)
        assert done.exit_code == 2, (file, done.output)
        assert said in done.stderr, (file, done.stderr)
        assert "secret" not in done.output
    assert not (tmp_path / "new.db").exists()


def test_backup_keeps_an_existing_file_unless_forced(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placed.db'}"
    schema.upgrade(url)
    backup = tmp_path / "placed.backup"
    backup.write_text("yesterday's\n")
    refused = placed("db", "backup", str(backup), "--database", url)
    assert refused.exit_code == 2
    assert "exists; give --force to replace it" in refused.stderr
    assert backup.read_text() == "yesterday's\n"
    forced = placed("db", "backup", str(backup), "--database", url, "--force")
    assert forced.exit_code == 0, forced.output
    assert backup.read_bytes()[:16] == SQLITE_MAGIC
    assert sorted(path.name for path in tmp_path.iterdir()) == ["placed.backup", "placed.db"]
    missing = placed(
        "db", "backup", str(tmp_path / "x"), "--database", f"sqlite:///{tmp_path}/n.db"
    )
    assert missing.exit_code == 2 and "no database at" in missing.stderr
    assert not (tmp_path / "n.db").exists()


def test_without_pg_dump_a_postgresql_backup_says_what_to_install(tmp_path: Path) -> None:
    # Only the interpreter's own directory on PATH: no PostgreSQL tools there.
    assert shutil.which("pg_dump", path=str(BIN)) is None
    for command in (
        ["backup", str(tmp_path / "placed.dump")],
        ["restore", str(tmp_path / "placed.dump")],
    ):
        if command[0] == "restore":
            (tmp_path / "placed.dump").write_bytes(PGDMP_MAGIC + b"\x01\x0e\x00")
        done = subprocess.run(
            [
                str(BIN / "placed"),
                "db",
                *command,
                "--database",
                "postgresql://placed@127.0.0.1:9/x",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PATH": str(Path(sys.executable).parent)},
        )
        assert done.returncode == 2, done.stderr
        tool = "pg_dump" if command[0] == "backup" else "pg_restore"
        assert done.stderr.startswith(f"error: {tool} is not on this machine"), done.stderr
        assert "postgresql-client" in done.stderr and "Traceback" not in done.stderr
