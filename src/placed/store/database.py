"""Engines from a URL: SQLite by default, PostgreSQL through psycopg 3.

SQLite runs in WAL mode (readers never wait for the writer) and starts every write
transaction with BEGIN IMMEDIATE: pysqlite's deferred BEGIN takes the write lock only at
the first write, and a transaction that upgrades that way gets SQLITE_BUSY at once
instead of waiting its turn. PostgreSQL runs READ COMMITTED; the generation-checked
updates and the CHECK constraint make that enough (SERVICE.md, "Claims").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

ENVIRONMENT = "PLACED_DATABASE_URL"
DEFAULT_URL = "sqlite:///placed.db"
BUSY_TIMEOUT_MS = 30_000

# A read-only transaction on SQLite may start deferred: it never upgrades to a write.
READ_ONLY = "placed_read_only"


class StoreError(Exception):
    """The database cannot be used: a bad URL, a server that does not answer, a file
    that is no database. The message says which, and never shows a password."""


def database_url(given: str | None = None) -> str:
    """The URL to use: the one given, else $PLACED_DATABASE_URL, else placed.db here."""
    return given or os.environ.get(ENVIRONMENT) or DEFAULT_URL


def parse_url(text: str) -> URL:
    """`sqlite:///file` or `postgresql+psycopg://...` (`postgresql://` means psycopg too:
    psycopg 3 is the driver placed ships with)."""
    try:
        url = make_url(text)
    except exc.ArgumentError:
        raise StoreError(
            f"{text!r} is not a database URL (expected sqlite:///FILE or "
            "postgresql+psycopg://USER@HOST:PORT/NAME)"
        ) from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.drivername not in ("sqlite", "postgresql+psycopg"):
        raise StoreError(
            f"{url.drivername}: unsupported database (placed stores in sqlite:///FILE or "
            "postgresql+psycopg://USER@HOST:PORT/NAME)"
        )
    return url


def shown(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite URL (None for memory)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def make_engine(url: str | URL, **options: Any) -> Engine:
    parsed = parse_url(url) if isinstance(url, str) else url
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = create_engine(parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
            _sqlite_hooks(engine)
        else:
            engine = create_engine(
                parsed,
                isolation_level="READ COMMITTED",
                connect_args={"connect_timeout": 5},
                # No ping before each checkout (a round trip per transaction: a quarter
                # of a claim's time). A connection the server dropped fails its first
                # statement instead; SQLAlchemy then drops every older connection of
                # the pool, so one request per process gets the 503, not one per
                # connection.
                pool_pre_ping=False,
                **options,
            )
    except (exc.ArgumentError, exc.NoSuchModuleError, TypeError, ValueError) as error:
        raise StoreError(f"{shown(parsed)}: {error}") from None
    return engine


def _sqlite_hooks(engine: Engine) -> None:
    # SQLAlchemy's recipe for SQLite transactions: stop pysqlite from issuing its own
    # BEGIN, then issue ours.
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def unreachable(url: URL, error: BaseException) -> StoreError:
    """A driver's error as one line that names the database."""
    original = getattr(error, "orig", None) or error
    first = str(original).strip().splitlines()
    return StoreError(f"{shown(url)}: {first[0] if first else type(original).__name__}")


def sessions(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def writing(engine: Engine) -> Iterator[Session]:
    """One write transaction: committed when the block ends, rolled back on error."""
    with sessions(engine).begin() as session:
        yield session


@contextmanager
def reading(engine: Engine) -> Iterator[Session]:
    """One read transaction on one snapshot (deferred on SQLite, so it never holds the
    write lock; REPEATABLE READ, read-only, on PostgreSQL)."""
    options: dict[str, Any] = {READ_ONLY: True}
    if engine.dialect.name == "postgresql":
        # One snapshot for every statement: a world read in several queries must be one
        # moment's world, which READ COMMITTED (a snapshot per statement) is not.
        options.update(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    with Session(engine.execution_options(**options)) as session, session.begin():
        yield session
