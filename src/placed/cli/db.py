"""`placed db`: the service's database (for `placed serve`): bring it to the current
schema, say where it is, back it up and restore it (store/backup.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from placed.cli.output import err, fail, guarded, write
from placed.cli.progress import DelayedStatus

# The store (SQLAlchemy, Alembic) is imported by the commands that use it, not here:
# every offline command starts through this module, and would pay half a second for it.
ENVIRONMENT = "PLACED_DATABASE_URL"  # placed.store.database.ENVIRONMENT (a test holds it)

app = typer.Typer(
    help="The service's database (for placed serve): create it, bring it to the current "
    "schema, show where it is, back it up while the service runs, restore a backup.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed db upgrade --database sqlite:///placed.db\n"
    "  placed db current --database sqlite:///placed.db\n"
    "  placed db upgrade && placed db backup placed-backup.db --force\n"
    "  placed db restore --help\n",
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


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    size, unit = count / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"


@app.command()
def backup(
    file: Annotated[
        Path,
        typer.Argument(help="The backup file to write.", metavar="FILE", show_default=False),
    ],
    database: DatabaseOption = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
) -> None:
    """Write a consistent copy of the database to FILE while placed serve goes on
    writing to it: SQLite through its online backup API (FILE is a SQLite database),
    PostgreSQL through pg_dump --format=custom (PostgreSQL's client tools must be
    installed). FILE appears only once the copy is complete.

    \b
    Examples:
      placed db upgrade && placed db backup placed-backup.db
      # replace yesterday's backup
      placed db upgrade && placed db backup placed-backup.db --force \\
          --database sqlite:///placed.db
      # exit code 2: nothing listens on port 9
      placed db backup placed.dump \\
          --database postgresql+psycopg://placed@127.0.0.1:9/placed
    """
    from placed.store.backup import backup as back_up
    from placed.store.database import StoreError, database_url

    try:
        with DelayedStatus("backing up the database", console=err):
            done = back_up(database_url(database), file, force)
    except StoreError as error:
        fail(str(error))
    with guarded():
        write(
            f"Backed up {done.url} to {done.file} ({done.kind}, {_size(done.size)}) "
            f"in {done.seconds:.1f} s.\n"
        )


@app.command()
def restore(
    file: Annotated[
        Path,
        typer.Argument(help="A backup placed db backup wrote.", metavar="FILE", show_default=False),
    ],
    database: DatabaseOption = None,
) -> None:
    """Restore a backup into an EMPTY database (a new SQLite file; a PostgreSQL database
    just made with createdb): a database with a table in it is refused, naming the
    table. A SQLite backup goes into a SQLite database, a pg_dump archive into
    PostgreSQL (through pg_restore, in one transaction). Afterwards the schema is
    checked: an older one says to run placed db upgrade.

    \b
    Examples:
      placed db upgrade && placed db backup placed-backup.db && \\
          placed db restore placed-backup.db --database sqlite:///restored.db
      # exit code 2: nothing listens on port 9 (give a database made by createdb)
      placed db restore placed.dump \\
          --database postgresql+psycopg://placed@127.0.0.1:9/placed2
    """
    from placed.store.backup import restore as bring_back
    from placed.store.database import StoreError, database_url

    try:
        with DelayedStatus("restoring the database", console=err):
            done = bring_back(file, database_url(database))
    except StoreError as error:
        fail(str(error))
    with guarded():
        write(f"Restored {done.file} ({done.kind}) into {done.url} in {done.seconds:.1f} s.\n")
        if done.at_head:
            write(f"Its schema is at head ({done.revision}): placed serve can run on it.\n")
        else:
            write(
                f"Its schema is at {done.revision}, older than this placed's {done.head}: "
                f"run placed db upgrade on it before placed serve.\n"
            )
