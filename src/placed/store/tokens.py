"""Tokens: create (the text is returned once and never stored), authenticate, revoke."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from placed.store import credentials, revision
from placed.store.tables import ROLES, Token, now


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


def listed(session: Session) -> Sequence[Token]:
    return session.scalars(select(Token).order_by(Token.created, Token.accessor)).all()


def count(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(Token)) or 0
