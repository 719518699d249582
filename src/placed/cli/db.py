"""`placed db`: the service's database (for `placed serve`): bring it to the current
schema, or say where it is."""

from __future__ import annotations

from typing import Annotated

import typer

from placed.cli.output import fail, guarded, write

# The store (SQLAlchemy, Alembic) is imported by the commands that use it, not here:
# every offline command starts through this module, and would pay half a second for it.
ENVIRONMENT = "PLACED_DATABASE_URL"  # placed.store.database.ENVIRONMENT (a test holds it)

app = typer.Typer(
    help="The service's database (for placed serve): create it, bring it to the current "
    "schema, or show where it is.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed db upgrade --database sqlite:///placed.db\n"
    "  placed db current --database sqlite:///placed.db\n",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help=f"The database URL: sqlite:///FILE or postgresql+psycopg://USER@HOST:PORT/NAME. "
        f"Default: ${ENVIRONMENT}, else sqlite:///placed.db (placed.db here).",
        metavar="URL",
        show_default=False,
    ),
]


@app.command()
def upgrade(database: DatabaseOption = None) -> None:
    """Bring the database to the current schema (Alembic migrations, in one transaction).

    On an empty database this also creates the first root-admin token and prints it,
    once: it is stored only as a hash and cannot be shown again. Run again, it changes
    nothing.

    \b
    Examples:
      placed db upgrade
      placed db upgrade --database sqlite:///placed.db
      PLACED_DATABASE_URL=sqlite:///service.db placed db upgrade
    """
    from placed.store.database import StoreError, database_url
    from placed.store.schema import upgrade as upgrade_schema

    try:
        done = upgrade_schema(database_url(database))
    except StoreError as error:
        fail(str(error))
    with guarded():
        if done.before == done.after:
            write(f"The schema of {done.url} is at head ({done.after}); nothing to do.\n")
        elif done.before is None:
            write(f"Created the schema of {done.url} at {done.after}.\n")
        else:
            write(f"Upgraded the schema of {done.url} from {done.before} to {done.after}.\n")
        if done.root_token is not None:
            write("The first root-admin token, shown only this once (only its hash is stored):\n")
            write(f"{done.root_token}\n")


@app.command()
def current(database: DatabaseOption = None) -> None:
    """Print the database's schema revision, and whether it is the head (what this placed
    runs on). An empty database, or a SQLite file that does not exist yet, is "none"
    (and is not created by asking).

    \b
    Examples:
      placed db current
      placed db current --database sqlite:///placed.db
    """
    from placed.store.database import StoreError, database_url
    from placed.store.schema import status

    try:
        found = status(database_url(database))
    except StoreError as error:
        fail(str(error))
    with guarded():
        if found.revision is None:
            write(f"none (empty database {found.url}; run placed db upgrade)\n")
        elif found.at_head:
            write(f"{found.revision} (head)\n")
        else:
            write(f"{found.revision} (head is {found.head}; run placed db upgrade)\n")
