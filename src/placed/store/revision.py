"""The global revision: one row, raised by every committed change.

`bump` takes the row's lock (an UPDATE holds it until commit on PostgreSQL; BEGIN
IMMEDIATE holds the whole database on SQLite), so revisions, like event ids, are handed
out in commit order.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from placed.store.tables import Revision


def current(session: Session) -> int:
    return session.scalar(select(Revision.value).where(Revision.id == 1)) or 0


def bump(session: Session) -> int:
    """Raise the revision for this transaction's change; the new value."""
    value = session.scalar(
        update(Revision)
        .where(Revision.id == 1)
        .values(value=Revision.value + 1)
        .returning(Revision.value)
    )
    if value is None:
        raise LookupError("the revision row is missing: run `placed db upgrade`")
    return int(value)


def next_event_id(session: Session) -> int:
    """The next event id, under the same row lock as `bump`."""
    value = session.scalar(
        update(Revision)
        .where(Revision.id == 1)
        .values(last_event_id=Revision.last_event_id + 1)
        .returning(Revision.last_event_id)
    )
    if value is None:
        raise LookupError("the revision row is missing: run `placed db upgrade`")
    return int(value)
