"""Tokens: create (the text is returned once and never stored), authenticate, revoke,
keeping one live root-admin token (break-glass: the last one cannot be revoked)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from placed.store import accounts, credentials, domains, revision, targets
from placed.store.tables import ROLES, Account, Domain, Token, now

ROOT_ADMIN = "root-admin"
MAX_LIFETIME_S = 10 * 366 * 24 * 3600  # ten years: longer reads as "forever", which is None
# What a token of each role is bound to, by name.
SCOPE_KINDS = {"domain-admin": "domain", "user": "account", "agent": "target"}


def create(
    session: Session,
    role: str,
    scope: str | None = None,
    expires: datetime | None = None,
    description: str = "",
) -> tuple[Token, str]:
    """A new token row and its text, which only this caller ever sees."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
    text = credentials.new_token()
    row = Token(
        accessor=text.accessor,
        secret_sha256=credentials.hash_secret(text.secret),
        role=role,
        scope=scope,
        description=description,
        created=now(),
        expires=expires,
        revoked=None,
    )
    session.add(row)
    session.flush()
    revision.bump(session)
    return row, str(text)


def authenticate(session: Session, text: str, at: datetime | None = None) -> Token | None:
    """The token row `text` names, when its secret matches and it is neither expired nor
    revoked; None otherwise (the caller learns nothing about which)."""
    parsed = credentials.parse(text)
    if parsed is None:
        return None
    row = session.get(Token, parsed.accessor)
    if row is None:
        return None
    live = credentials.verify(
        parsed.secret, row.secret_sha256, at or now(), row.expires, row.revoked
    )
    return row if live else None


def revoke(session: Session, accessor: str, at: datetime | None = None) -> bool:
    """Revoke a token; False when there is none by that accessor. Revoking twice keeps
    the first time."""
    row = session.get(Token, accessor)
    if row is None:
        return False
    if row.revoked is None:
        row.revoked = at or now()
        revision.bump(session)
    return True


class LastRootAdmin(Exception):
    """Revoking this token would leave no live root-admin token."""

    def __init__(self, accessor: str) -> None:
        super().__init__(
            f"token {accessor} is the last live root-admin token: create another root-admin "
            "token before revoking this one"
        )
        self.accessor = accessor


@dataclass(frozen=True, slots=True)
class Revoked:
    row: Token
    just_now: bool  # False: it was revoked before, and keeps that time


def revoke_keeping_a_root(
    session: Session, accessor: str, at: datetime | None = None
) -> Revoked | None:
    """Revoke a token, unless it is the last live (unrevoked, unexpired) root-admin one:
    then LastRootAdmin, and nothing changes. None when there is no token by that accessor.

    The live root-admin rows are locked (FOR UPDATE) before they are counted, so of two
    concurrent revokes of the last two on PostgreSQL the second waits, reads the first's
    revoke (READ COMMITTED re-checks a locked row's WHERE on its newest version) and is
    refused. SQLite's BEGIN IMMEDIATE already runs one writer at a time.
    """
    at = at or now()
    row = session.get(Token, accessor)
    if row is None:
        return None
    if row.role == ROOT_ADMIN and row.revoked is None:
        unrevoked = session.scalars(
            select(Token)
            .where(Token.role == ROOT_ADMIN, Token.revoked.is_(None))
            .order_by(Token.accessor)
            .with_for_update()
            .execution_options(populate_existing=True)
        ).all()
        # Expiry is compared here rather than in SQL: SQLite compares times as text.
        live = {token.accessor for token in unrevoked if _unexpired(token, at)}
        if live == {accessor}:
            raise LastRootAdmin(accessor)
        # The lock may have waited for another revoke of this very token.
        session.refresh(row)
    if row.revoked is not None:
        return Revoked(row, just_now=False)
    row.revoked = at
    revision.bump(session)
    return Revoked(row, just_now=True)


def _unexpired(row: Token, at: datetime) -> bool:
    return row.expires is None or at < row.expires


def shape_problem(role: str, scope: str | None) -> str | None:
    """What is wrong with the shape of a token's scope for its role; None when it fits."""
    if role == ROOT_ADMIN and scope is not None:
        return "a root-admin token acts everywhere: it takes no scope"
    if role != ROOT_ADMIN and scope is None:
        return f"a {role} token needs a scope: the {SCOPE_KINDS[role]} it acts for"
    return None


def scope_problem(session: Session, role: str, scope: str | None) -> str | None:
    """shape_problem, then whether the domain, account or target it names exists."""
    problem = shape_problem(role, scope)
    if problem is not None or scope is None:
        return problem
    what = SCOPE_KINDS[role]
    exists = {"domain": domains.by_name, "account": accounts.by_name, "target": targets.by_name}
    if exists[what](session, scope) is None:
        return f"there is no {what} {scope!r}"
    return None


def places(session: Session, role: str, scope: str | None) -> dict[str, str | None]:
    """Where a token of `role` over `scope` belongs, as its events record it: a
    domain-admin's domain, a user's account and its domain, an agent's target."""
    if role == "domain-admin":
        return {"domain": scope}
    if role == "user" and scope is not None:
        home = session.scalar(
            select(Domain.name)
            .join(Account, Account.domain_id == Domain.id)
            .where(Account.name == scope)
        )
        return {"account": scope, "domain": home}
    if role == "agent":
        return {"target": scope}
    return {}


def listed(session: Session) -> Sequence[Token]:
    return session.scalars(select(Token).order_by(Token.created, Token.accessor)).all()


def count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(Token)) or 0
