"""Events: written in the transaction of the change they record, ids in commit order.

The id comes from `revision.next_event_id`, an UPDATE of the single revision row: its
lock is held until commit, so a second writer gets the next id only after the first has
committed, and a reader paging `id > last` never skips a row that commits late.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.orm import Session

from placed.store import notify, revision
from placed.store.tables import EventRow, now, table_of


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
    notify.announce(session)
    return row


@dataclass(frozen=True, slots=True)
class Pending:
    """An event to write, before it has an id."""

    kind: str
    subject: str
    actor_accessor: str | None = None
    actor_role: str | None = None
    target: str | None = None
    workload: str | None = None
    domain: str | None = None
    account: str | None = None
    request_id: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Written:
    """An event as `append_many` wrote it, for reporting after the commit (making ORM
    rows for that would cost more than writing them)."""

    id: int
    at: datetime
    actor_accessor: str | None
    actor_role: str | None
    kind: str
    subject: str
    target: str | None
    workload: str | None
    domain: str | None
    account: str | None
    request_id: str | None
    details: dict[str, Any]


Recorded = EventRow | Written


def append_many(connection: Connection, ids: range, pending: Sequence[Pending]) -> list[Written]:
    """Write `pending` in order with the consecutive ids the caller took with its
    revision (`revision.bump_with_events`), in one statement."""
    if not pending:
        return []
    if len(ids) != len(pending):
        raise ValueError(f"{len(pending)} events for {len(ids)} ids")
    at = now()
    values: list[dict[str, Any]] = [
        {
            "id": id_,
            "at": at,
            "actor_accessor": item.actor_accessor,
            "actor_role": item.actor_role,
            "kind": item.kind,
            "subject": item.subject,
            "target": item.target,
            "workload": item.workload,
            "domain": item.domain,
            "account": item.account,
            "request_id": item.request_id,
            "details": dict(item.details),
        }
        for id_, item in zip(ids, pending, strict=True)
    ]
    connection.execute(insert(table_of(EventRow)), values)
    notify.announce(connection)
    return [Written(**row) for row in values]


def after(session: Session, last_id: int = 0, limit: int = 100) -> Sequence[EventRow]:
    """The events after `last_id`, oldest first: one page."""
    return session.scalars(
        select(EventRow).where(EventRow.id > last_id).order_by(EventRow.id).limit(limit)
    ).all()


def page(
    session: Session,
    after_id: int = 0,
    limit: int = 100,
    kind: str | None = None,
    subject: str | None = None,
    target: str | None = None,
    workload: str | None = None,
    actor: str | None = None,
    accounts: Sequence[str] | None = None,
    since: datetime | None = None,
    latest: bool = False,
) -> Sequence[EventRow]:
    """One page of events after `after_id`, oldest first, filtered. `accounts`: only
    events of these accounts (a scoped reader's view); None: every event. `latest`: the
    newest `limit` of them (still oldest first), where a feed starts."""
    order = EventRow.id.desc() if latest else EventRow.id
    query = select(EventRow).where(EventRow.id > after_id).order_by(order).limit(limit)
    if kind is not None:
        # `unit.` matches every unit event, as a prefix ending in a dot.
        query = query.where(
            EventRow.kind.startswith(kind) if kind.endswith(".") else EventRow.kind == kind
        )
    for column, value in (
        (EventRow.subject, subject),
        (EventRow.target, target),
        (EventRow.workload, workload),
        (EventRow.actor_accessor, actor),
    ):
        if value is not None:
            query = query.where(column == value)
    if accounts is not None:
        query = query.where(EventRow.account.in_(list(accounts)))
    if since is not None:
        query = query.where(EventRow.at >= since)
    found = session.scalars(query).all()
    return found[::-1] if latest else found


def view(row: Recorded) -> dict[str, Any]:
    return {
        "id": row.id,
        "time": row.at.isoformat(),
        "kind": row.kind,
        "subject": row.subject,
        "target": row.target,
        "workload": row.workload,
        "domain": row.domain,
        "account": row.account,
        "actor": {"accessor": row.actor_accessor, "role": row.actor_role},
        "request_id": row.request_id,
        "details": row.details,
    }
