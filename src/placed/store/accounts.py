"""Accounts: each in exactly one domain."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.store import domains
from placed.store.tables import Account, Domain


def create(session: Session, name: str, domain: str) -> Account:
    home = domains.by_name(session, domain)
    if home is None:
        raise LookupError(f"no domain {domain!r}")
    row = Account(name=name, domain_id=home.id)
    session.add(row)
    session.flush()
    return row


def by_name(session: Session, name: str) -> Account | None:
    return session.scalar(select(Account).where(Account.name == name))


def domains_of(session: Session) -> dict[str, str]:
    """Each account's domain by name, as `model.tenancy.Tenancy` takes them."""
    rows = session.execute(select(Account.name, Domain.name).join(Domain)).all()
    return {account: domain for account, domain in rows}
