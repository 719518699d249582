"""Domains: a tree under ROOT."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.model.tenancy import ROOT
from placed.store.tables import Domain


def by_name(session: Session, name: str) -> Domain | None:
    return session.scalar(select(Domain).where(Domain.name == name))


def ensure_root(session: Session) -> Domain:
    root = by_name(session, ROOT)
    if root is None:
        root = Domain(name=ROOT, parent_id=None)
        session.add(root)
        session.flush()
    return root


def create(session: Session, name: str, parent: str = ROOT) -> Domain:
    above = by_name(session, parent)
    if above is None:
        raise LookupError(f"no domain {parent!r}")
    row = Domain(name=name, parent_id=above.id)
    session.add(row)
    session.flush()
    return row


def parents(session: Session) -> dict[str, str | None]:
    """Each domain's parent by name, as `model.tenancy.Tenancy` takes them."""
    rows = session.execute(select(Domain.id, Domain.name, Domain.parent_id)).all()
    names = {row.id: row.name for row in rows}
    return {row.name: names.get(row.parent_id) if row.parent_id else None for row in rows}
