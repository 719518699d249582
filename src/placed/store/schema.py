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
    if found is not None and ScriptDirectory.from_config(config()).get_revision(found) is None:
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
        with connection:
            found = _revision(connection)
        _known(url, found)
        return Status(shown(url), found, head())
    except exc.DBAPIError as error:
        raise unreachable(url, error) from None
    finally:
        engine.dispose()


def upgrade(text: str) -> Upgraded:
    """Bring the database to head in one transaction; on an empty database also create
    the first root-admin token, in the same one (the first revision itself adds the
    ROOT domain and the revision row)."""
    url = parse_url(text)
    engine, connection = _connect(url)
    try:
        with connection, connection.begin():
            before = _revision(connection)
            _known(url, before)
            cfg = config()
            cfg.attributes["connection"] = connection
            try:
                command.upgrade(cfg, "head")
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
