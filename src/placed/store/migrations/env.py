"""Alembic's environment for placed: run on the connection `placed.store.schema` hands
over (config.attributes["connection"]), never on a URL from an ini file."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from placed.store.tables import Base


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite alters a table by copying it; batch mode does that for later revisions.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("placed's migrations run through placed.store.schema (placed db upgrade)")
run(connection)
