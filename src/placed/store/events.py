"""Events: written in the transaction of the change they record, ids in commit order.

The id comes from `revision.next_event_id`, an UPDATE of the single revision row: its
lock is held until commit, so a second writer gets the next id only after the first has
committed, and a reader paging `id > last` never skips a row that commits late.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.store import revision
from placed.store.tables import EventRow, now


def append(
    session: Session,
    kind: str,
    subject: str,
    *,
    actor_accessor: str | None = None,
    actor_role: str | None = None,
    target: str | None = None,
    workload: str | None = None,
    domain: str | None = None,
    account: str | None = None,
    request_id: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> EventRow:
    row = EventRow(
        id=revision.next_event_id(session),
        at=now(),
        actor_accessor=actor_accessor,
        actor_role=actor_role,
        kind=kind,
        subject=subject,
        target=target,
        workload=workload,
        domain=domain,
        account=account,
        request_id=request_id,
        details=dict(details or {}),
    )
    session.add(row)
    session.flush()
    return row


def after(session: Session, last_id: int = 0, limit: int = 100) -> Sequence[EventRow]:
    """The events after `last_id`, oldest first: one page."""
    return session.scalars(
        select(EventRow).where(EventRow.id > last_id).order_by(EventRow.id).limit(limit)
    ).all()
