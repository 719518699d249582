"""What a scoped caller reaches: a domain-admin acts on its domain and every domain
below it, and on the accounts of those domains (SERVICE.md, "Roles and tokens")."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlalchemy import select
from sqlalchemy.orm import Session

from placed.operations.store import Store
from placed.store import domains
from placed.store.database import reading
from placed.store.tables import Account, Domain


def accounts_below(store: Store, domain: str) -> set[str]:
    """The accounts of `domain` and of every domain below it: what a domain-admin of
    `domain` reaches; none when there is no such domain."""
    with reading(store) as session:
        return accounts_in(session, subtree(session, domain))


def subtree(session: Session, domain: str) -> set[str]:
    """`domain` and every domain below it, by name; empty when there is no such domain."""
    return below(domains.parents(session), domain)


def below(parents: Mapping[str, str | None], domain: str) -> set[str]:
    """`domain` and every domain below it in the tree `parents` (name -> parent)."""
    if domain not in parents:
        return set()
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(name)
    found, waiting = {domain}, [domain]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:  # a cycle in the rows must not loop forever
                found.add(child)
                waiting.append(child)
    return found


def accounts_in(session: Session, names: Collection[str]) -> set[str]:
    """The accounts of the domains named."""
    if not names:
        return set()
    rows = session.scalars(
        select(Account.name)
        .join(Domain, Account.domain_id == Domain.id)
        .where(Domain.name.in_(list(names)))
    )
    return set(rows)


def domain_of_account(session: Session, account: str) -> str | None:
    """The domain an account belongs to; None when there is no such account."""
    return session.scalar(
        select(Domain.name)
        .join(Account, Account.domain_id == Domain.id)
        .where(Account.name == account)
    )
