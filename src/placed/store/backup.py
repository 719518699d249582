"""Backup and restore of the service's database, while the service runs.

A SQLite database is copied with SQLite's online backup API (`sqlite3.Connection.backup`,
in one step: one read transaction, so the copy is one moment's database, and in WAL mode
the service's writers go on meanwhile); the copy is a plain single-file database. A
PostgreSQL database is dumped by `pg_dump --format=custom` (one snapshot: a consistent
copy as well) and brought back by `pg_restore`, both PostgreSQL's own client tools, which
must be on the machine.

A backup is written beside its file and renamed over it when complete, so no half
written backup ever has the name. A restore goes into an empty database only: merging a
backup into a live database's rows is no restore.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlalchemy import exc, text, update
from sqlalchemy.engine import URL

from placed.store import leases
from placed.store.database import (
    StoreError,
    make_engine,
    parse_url,
    shown,
    unreachable,
    writing,
)
from placed.store.schema import status
from placed.store.tables import Lease

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
PGDMP_MAGIC = b"PGDMP"  # the first 5 bytes of a pg_dump custom-format archive
BUSY_TIMEOUT_S = 30.0
CLIENT_TOOLS = (
    "install PostgreSQL's client tools, of the server's major version or newer "
    "(Debian and Ubuntu: apt-get install postgresql-client; macOS: brew install libpq), "
    "or put them on PATH"
)


class Kind(StrEnum):
    sqlite = "SQLite database"
    postgresql = "pg_dump custom-format archive"


@dataclass(frozen=True, slots=True)
class BackedUp:
    url: str  # shown without its password
    file: Path
    kind: Kind
    size: int  # bytes
    seconds: float


@dataclass(frozen=True, slots=True)
class Restored:
    url: str
    file: Path
    kind: Kind
    revision: str  # the restored schema's
    head: str  # this placed's
    seconds: float

    @property
    def at_head(self) -> bool:
        return self.revision == self.head


def kind_of_file(file: Path) -> Kind | None:
    """What a backup file holds, from its first bytes; None for neither kind."""
    with open(file, "rb") as stream:
        start = stream.read(len(SQLITE_MAGIC))
    if start == SQLITE_MAGIC:
        return Kind.sqlite
    if start.startswith(PGDMP_MAGIC):
        return Kind.postgresql
    return None


def kind_of_url(url: URL) -> Kind:
    return Kind.sqlite if url.get_backend_name() == "sqlite" else Kind.postgresql


def backup(database: str, file: Path, force: bool = False) -> BackedUp:
    """Copy the database to `file`, consistently, while others write to it. An existing
    `file` is replaced only with `force`."""
    url = parse_url(database)
    if file.is_dir():
        raise StoreError(f"{file}: is a directory; give the backup's file name")
    if file.exists() and not force:
        raise StoreError(f"{file}: exists; give --force to replace it")
    if not file.parent.is_dir():
        raise StoreError(f"{file}: no directory {str(file.parent)!r}")
    started = time.monotonic()
    with _partial(file) as partial:
        if url.get_backend_name() == "sqlite":
            _sqlite_backup(url, partial)
        else:
            _pg_dump(url, partial)
        os.replace(partial, file)
    return BackedUp(
        shown(url), file, kind_of_url(url), file.stat().st_size, time.monotonic() - started
    )


def restore(file: Path, database: str) -> Restored:
    """Bring a backup back into an empty database, then check it holds a schema this
    placed knows."""
    url = parse_url(database)
    if not file.is_file():
        raise StoreError(f"{file}: no such file")
    kind = kind_of_file(file)
    if kind is None:
        raise StoreError(
            f"{file}: not a backup of placed's database (neither a {Kind.sqlite} nor a "
            f"{Kind.postgresql})"
        )
    if kind is not kind_of_url(url):
        into = {
            Kind.sqlite: "a SQLite database (sqlite:///FILE)",
            Kind.postgresql: "a PostgreSQL database (postgresql+psycopg://USER@HOST:PORT/NAME)",
        }
        raise StoreError(f"{file} is a {kind}: restore it into {into[kind]}, not {shown(url)}")
    started = time.monotonic()
    if kind is Kind.sqlite:
        _sqlite_restore(file, url)
    else:
        _pg_restore(file, url)
    found = status(database)
    if found.revision is None:
        raise StoreError(
            f"{shown(url)}: restored {file}, but it holds no placed schema (a backup of "
            "another database?)"
        )
    _release_leases(database)
    return Restored(shown(url), file, kind, found.revision, found.head, time.monotonic() - started)


def _release_leases(database: str) -> None:
    """Every lease of the backup's moment expired: the processes that held them serve
    another database (or none), and a replica started on this one would otherwise take
    a lease's holder for its live leader and forward its writes to that address until
    the lease ran out."""
    engine = make_engine(database)
    try:
        with writing(engine) as session:
            session.execute(
                update(Lease)
                .values(expires_at=leases.database_now(session))
                .execution_options(synchronize_session=False)
            )
    finally:
        engine.dispose()


@contextmanager
def _partial(file: Path) -> Iterator[Path]:
    """A file beside `file` to write the backup into; removed unless renamed."""
    partial = file.with_name(f".{file.name}.{secrets.token_hex(4)}.partial")
    try:
        yield partial
    finally:
        partial.unlink(missing_ok=True)


def _sqlite_path(url: URL) -> Path:
    if url.database in (None, "", ":memory:"):
        raise StoreError(f"{shown(url)}: an in-memory database has nothing to back up or restore")
    return Path(url.database)


def _check_sqlite_file(url: URL, path: Path) -> None:
    with open(path, "rb") as stream:
        start = stream.read(len(SQLITE_MAGIC))
    if start and start != SQLITE_MAGIC:
        raise StoreError(f"{shown(url)}: {path} is not a SQLite database")


def _open_existing(path: Path, mode: str) -> sqlite3.Connection:
    """A connection to a database file that exists: never creates one."""
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_S
    )


def _sqlite_backup(url: URL, partial: Path) -> None:
    path = _sqlite_path(url)
    if not path.is_file():
        raise StoreError(f"{shown(url)}: no database at {path}")
    _check_sqlite_file(url, path)
    try:
        with (
            closing(_open_existing(path, "rw")) as source,
            closing(sqlite3.connect(partial)) as copy,
        ):
            # One step (pages=-1): a step-by-step copy would start over whenever the
            # service commits, and might never end under load.
            source.backup(copy)
            # One self-contained file, whatever mode the service ran in.
            copy.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.Error as error:
        raise StoreError(f"{shown(url)}: {error}") from None


def _sqlite_restore(file: Path, url: URL) -> None:
    path = _sqlite_path(url)
    if path.exists():
        _check_sqlite_file(url, path)
    try:
        with closing(_open_existing(file, "ro")) as source:
            checked = source.execute("PRAGMA quick_check").fetchone()
            if checked is None or checked[0] != "ok":
                raise StoreError(f"{file}: the SQLite database is damaged ({checked})")
            with closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)) as target:
                found = target.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 1"
                ).fetchone()
                if found is not None:
                    raise StoreError(_not_empty(url, found[0]))
                source.backup(target)
    except sqlite3.Error as error:
        raise StoreError(f"{file} into {shown(url)}: {error}") from None


def _not_empty(url: URL, table: str) -> str:
    return (
        f"{shown(url)}: not empty: it has the table {table!r}; restore into an empty "
        "database (a new SQLite file, or a PostgreSQL database just made with createdb)"
    )


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise StoreError(
            f"{name} is not on this machine, and a PostgreSQL database needs it: {CLIENT_TOOLS}"
        )
    return found


def _libpq(url: URL) -> tuple[str, dict[str, str]]:
    """The URL as libpq takes it, and the environment that carries its password (never
    the command line, which every user of the machine can read)."""
    uri = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    if url.password is not None:
        env["PGPASSWORD"] = str(url.password)
    return uri, env


def _run(url: URL, command: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        said = "; ".join(lines[-3:]) or f"exit code {done.returncode}"
        raise StoreError(f"{shown(url)}: {Path(command[0]).name} failed: {said}")


def _pg_dump(url: URL, partial: Path) -> None:
    uri, env = _libpq(url)
    _run(url, [_tool("pg_dump"), "--format=custom", f"--file={partial}", f"--dbname={uri}"], env)


def _pg_restore(file: Path, url: URL) -> None:
    tool = _tool("pg_restore")
    _pg_must_be_empty(url)
    uri, env = _libpq(url)
    command = [
        tool,
        f"--dbname={uri}",
        # All of it or nothing: the first error stops it, and rolls everything back.
        "--single-transaction",
        "--exit-on-error",
        # The restoring role owns what it restores (the dumped roles may not exist here).
        "--no-owner",
        "--no-privileges",
        str(file),
    ]
    _run(url, command, env)


def _pg_must_be_empty(url: URL) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            found = connection.execute(
                text(
                    "SELECT table_schema, table_name FROM information_schema.tables "
                    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                    "ORDER BY table_schema, table_name LIMIT 1"
                )
            ).first()
    except exc.DBAPIError as error:
        raise unreachable(url, error) from None
    finally:
        engine.dispose()
    if found is not None:
        schema, table = found
        raise StoreError(_not_empty(url, table if schema == "public" else f"{schema}.{table}"))
