"""The global revision: one row, raised by every committed change.

`bump` takes the row's lock (an UPDATE holds it until commit on PostgreSQL; BEGIN
IMMEDIATE holds the whole database on SQLite), so revisions, like event ids, are handed
out in commit order.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.orm import Session

from placed.store.tables import Revision, table_of


def current(session: Session) -> int:
    return session.scalar(select(Revision.value).where(Revision.id == 1)) or 0


def bump(session: Session) -> int:
    """Raise the revision for this transaction's change; the new value."""
    return _increment(session, Revision.value)


def next_event_id(session: Session) -> int:
    """The next event id, under the same row lock as `bump`."""
    return _increment(session, Revision.last_event_id)


def lock(connection: Connection) -> None:
    """Take the revision row's lock for the rest of the transaction, before reading what
    the change is decided on: no other writer commits meanwhile (on SQLite, BEGIN
    IMMEDIATE already holds the whole database)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            select(table_of(Revision).c.value).where(table_of(Revision).c.id == 1).with_for_update()
        )


def bump_with_events(connection: Connection, events: int) -> tuple[int, range]:
    """`bump` and `events` consecutive event ids, in one statement."""
    row = table_of(Revision).c
    found = connection.execute(
        update(table_of(Revision))
        .where(row.id == 1)
        .values(value=row.value + 1, last_event_id=row.last_event_id + events)
        .returning(row.value, row.last_event_id)
    ).one_or_none()
    if found is None:
        raise LookupError("the revision row is missing: run `placed db upgrade`")
    value, last = found
    return int(value), range(last - events + 1, last + 1)


def event_ids(connection: Connection, count: int) -> range:
    """`count` consecutive event ids, under the same row lock as `bump`."""
    row = table_of(Revision).c
    last = connection.execute(
        update(table_of(Revision))
        .where(row.id == 1)
        .values(last_event_id=row.last_event_id + count)
        .returning(row.last_event_id)
    ).scalar_one()
    return range(last - count + 1, last + 1)


def _increment(session: Session, column: Any) -> int:
    value = session.scalar(
        update(Revision).where(Revision.id == 1).values({column: column + 1}).returning(column)
    )
    if value is None:
        raise LookupError("the revision row is missing: run `placed db upgrade`")
    return int(value)
