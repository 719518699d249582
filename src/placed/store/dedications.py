"""Dedications as rows, read back as `model.dedications.Dedication`: the rules stay in
the model (`Dedications`); this module only keeps what they decided."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, aliased

from placed.model.dedications import Dedication, Owner
from placed.store import accounts, domains, revision
from placed.store.tables import Account, DedicationRow, Domain


def save(session: Session, dedication: Dedication) -> DedicationRow:
    """Insert or replace the dedication of `dedication.resource`."""
    domain = domains.by_name(session, dedication.owner.domain)
    if domain is None:
        raise LookupError(f"no domain {dedication.owner.domain!r}")
    account = None
    if dedication.owner.account:
        account = accounts.by_name(session, dedication.owner.account)
        if account is None:
            raise LookupError(f"no account {dedication.owner.account!r}")
    row = session.scalar(select(DedicationRow).where(DedicationRow.resource == dedication.resource))
    if row is None:
        row = DedicationRow(resource=dedication.resource)
        session.add(row)
    row.kind = dedication.kind
    row.domain_id = domain.id
    row.account_id = account.id if account else None
    row.implicit = dedication.owner.implicit
    row.revision = revision.bump(session)
    session.flush()
    return row


def release(session: Session, resource: str) -> bool:
    done = session.execute(delete(DedicationRow).where(DedicationRow.resource == resource))
    if done.rowcount:  # type: ignore[attr-defined]
        revision.bump(session)
    return bool(done.rowcount)  # type: ignore[attr-defined]


def listed(session: Session) -> list[Dedication]:
    owner_account = aliased(Account)
    rows = session.execute(
        select(DedicationRow, Domain.name, owner_account.name)
        .join(Domain, Domain.id == DedicationRow.domain_id)
        .outerjoin(owner_account, owner_account.id == DedicationRow.account_id)
        .order_by(DedicationRow.resource)
    ).all()
    return [
        Dedication(row.resource, row.kind, Owner(domain, account, row.implicit))
        for row, domain, account in rows
    ]
