"""Whose workloads a caller sees and changes, read from its role and scope (a token's:
a domain-admin's domain, a user's account), and the account a scoped caller's new
workload belongs to. The change's own diff is judged by operations/change_scope.py."""

from __future__ import annotations

from placed.operations import scopes
from placed.operations.change_scope import DOMAIN_ADMIN, UNSCOPED, USER
from placed.operations.errors import Forbidden, Where
from placed.operations.store import Store
from placed.store.claims import Actor


def accounts_of(store: Store, role: str | None, scope: str | None) -> set[str] | None:
    """The accounts whose workloads a caller sees and changes: None for every one (a
    root-admin, the controller, placed itself), a domain-admin's subtree's, a user's
    own; none for an agent."""
    if role in UNSCOPED:
        return None
    if role == USER:
        return {scope} if scope else set()
    if role != DOMAIN_ADMIN or scope is None:
        return set()
    return scopes.accounts_below(store, scope)


def reach_of(store: Store, actor: Actor) -> set[str] | None:
    return accounts_of(store, actor.role, actor.scope)


def own_account(
    role: str | None, scope: str | None, account: str | None, reach: set[str] | None, pointer: str
) -> str | None:
    """The account a scoped caller's workload belongs to: a user's own when it names
    none; refused when it names one out of the caller's reach."""
    if reach is None:
        return account
    if account is None and role == USER:
        return scope
    if account is None or account not in reach:
        raise Forbidden(
            f"a {role} token acts for "
            + ("its own account" if role == USER else "the accounts of its domains")
            + (f", not for {account!r}" if account else "; name the workload's account"),
            "forbidden",
            [Where("out of this token's scope", pointer=pointer)],
        )
    return account
