"""The schema's version, through Alembic's own API: `upgrade` brings a database to head
and, on an empty one, creates the first root-admin token; `status` says where it is.

The migrations ship inside the package (`placed/store/migrations`), so an installed
placed can upgrade a database without a checkout or an alembic.ini.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, exc
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from placed.store import events, tokens
from placed.store.database import (
    READ_ONLY,
    StoreError,
    make_engine,
    parse_url,
    shown,
    sqlite_file,
    unreachable,
)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def head() -> str:
    found = ScriptDirectory.from_config(config()).get_current_head()
    assert found is not None  # the package ships at least the first revision
    return found


@dataclass(frozen=True, slots=True)
class Status:
    url: str  # shown without its password
    revision: str | None  # None: an empty database
    head: str

    @property
    def at_head(self) -> bool:
        return self.revision == self.head


@dataclass(frozen=True, slots=True)
class Upgraded:
    url: str
    before: str | None
    after: str
    root_token: str | None  # the first root-admin token, on an empty database only


def _revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def _known(url: URL, found: str | None) -> None:
    if found is None:
        return
    try:
        known = ScriptDirectory.from_config(config()).get_revision(found) is not None
    except CommandError:
        known = False
    if not known:
        raise StoreError(
            f"{shown(url)}: the schema is at revision {found}, which this placed does not "
            "know (written by a newer placed?)"
        )


def _connect(url: URL) -> tuple[Engine, Connection]:
    engine = make_engine(url)
    try:
        return engine, engine.connect()
    except exc.DBAPIError as error:
        engine.dispose()
        raise unreachable(url, error) from None


def status(text: str) -> Status:
    url = parse_url(text)
    where = sqlite_file(url)
    if where is not None and not where.exists():
        # Asking must not create the file.
        return Status(shown(url), None, head())
    engine, connection = _connect(url)
    try:
        # A read: on SQLite it must not take the write lock from a running service.
        with connection.execution_options(**{READ_ONLY: True}):
            found = _revision(connection)
        _known(url, found)
        return Status(shown(url), found, head())
    except exc.DBAPIError as error:
        raise unreachable(url, error) from None
    finally:
        engine.dispose()


def require_current(text: str) -> Status:
    """The status of a database a service may run on; StoreError, saying what to run,
    when its schema is not this placed's head (SERVICE.md: serve refuses an old schema)."""
    found = status(text)
    if found.revision is None:
        raise StoreError(f"{found.url}: the database is empty; run placed db upgrade")
    if not found.at_head:
        raise StoreError(
            f"{found.url}: the schema is at {found.revision}, and this placed needs "
            f"{found.head}; run placed db upgrade"
        )
    return found


def upgrade(text: str, to: str = "head") -> Upgraded:
    """Bring the database to head (or the revision `to`) in one transaction; on an
    empty database also create the first root-admin token, in the same one (the first
    revision itself adds the ROOT domain and the revision row)."""
    url = parse_url(text)
    engine, connection = _connect(url)
    try:
        with connection, connection.begin():
            before = _revision(connection)
            _known(url, before)
            cfg = config()
            cfg.attributes["connection"] = connection
            try:
                command.upgrade(cfg, to)
            except CommandError as error:
                raise StoreError(f"{shown(url)}: {error}") from None
            token = _bootstrap(connection) if before is None else None
            after = _revision(connection)
        assert after is not None
        return Upgraded(shown(url), before, after, token)
    except exc.DBAPIError as error:
        raise unreachable(url, error) from None
    finally:
        engine.dispose()


def _bootstrap(connection: Connection) -> str:
    with Session(connection, join_transaction_mode="create_savepoint") as session:
        row, text = tokens.create(session, "root-admin", description="created by placed db upgrade")
        events.append(
            session, "token.created", row.accessor, details={"role": row.role, "by": "db upgrade"}
        )
        session.commit()
    return text
