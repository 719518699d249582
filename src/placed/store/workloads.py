"""Workloads: the spec as given, and a generation every change raises.

A stale generation is the client's to resolve (a 409 that is never retried for it), so
`update` reports it instead of trying again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from placed.store import accounts, revision
from placed.store.tables import Workload


def create(
    session: Session, name: str, spec: Mapping[str, Any], account: str | None = None
) -> Workload:
    owner = accounts.by_name(session, account) if account is not None else None
    if account is not None and owner is None:
        raise LookupError(f"no account {account!r}")
    row = Workload(
        name=name,
        account_id=owner.id if owner else None,
        spec=dict(spec),
        generation=0,
        revision=revision.bump(session),
    )
    session.add(row)
    session.flush()
    return row


def by_name(session: Session, name: str) -> Workload | None:
    return session.scalar(select(Workload).where(Workload.name == name))


def update_spec(
    session: Session, workload_id: int, seen_generation: int, spec: Mapping[str, Any]
) -> bool:
    """Replace the spec if the generation is still `seen_generation`; False if not."""
    done = session.execute(
        update(Workload)
        .where(Workload.id == workload_id, Workload.generation == seen_generation)
        .values(
            spec=dict(spec), generation=Workload.generation + 1, revision=revision.bump(session)
        )
        .execution_options(synchronize_session=False)
    )
    session.expire_all()
    return bool(done.rowcount)  # type: ignore[attr-defined]


def listed(session: Session) -> Sequence[Workload]:
    return session.scalars(select(Workload).order_by(Workload.name)).all()
