"""`placed token create|list|revoke --database URL`: tokens made, listed and revoked on
the database itself, with no server and no token: the way back in for an operator who
lost every token (as Nomad's `acl bootstrap` reset). Whoever can write the database owns
the service anyway, so this gives nothing away.

The answers have the shapes the API's have, so the tables and `-o json` are the online
commands' own. The last live root-admin token cannot be revoked here either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exc
from sqlalchemy.orm import Session

from placed.cli.output import fail, fail_option
from placed.store import events, tokens
from placed.store.database import (
    StoreError,
    make_engine,
    parse_url,
    reading,
    shown,
    unreachable,
    writing,
)
from placed.store.schema import require_current
from placed.store.tables import Token

MAX_DESCRIPTION = 255  # the column's width, as the API bounds it


@contextmanager
def on_database(database: str, write: bool) -> Iterator[Session]:
    """One transaction on a database at this placed's schema; any failure is one line
    naming the database, exit 2."""
    try:
        # An old schema would be written as if it were new: refuse it, as serve does.
        require_current(database)
        url = parse_url(database)
        engine = make_engine(url)
    except StoreError as error:
        fail(str(error))
    try:
        with (writing if write else reading)(engine) as session:
            yield session
    except exc.DBAPIError as error:
        fail(str(unreachable(url, error)))
    finally:
        engine.dispose()


def _moment(at: datetime | None) -> str | None:
    """As the API writes a time (pydantic: ISO 8601, UTC as Z)."""
    return at.isoformat().replace("+00:00", "Z") if at is not None else None


def info(row: Token) -> dict[str, Any]:
    return {
        "accessor": row.accessor,
        "role": row.role,
        "scope": row.scope,
        "description": row.description,
        "created": _moment(row.created),
        "expires": _moment(row.expires),
        "revoked": _moment(row.revoked),
    }


def create(
    database: str, role: str, scope: str | None, description: str, seconds: int | None
) -> dict[str, Any]:
    """A new token, as POST /v1/tokens answers: its text is in this answer only."""
    if len(description) > MAX_DESCRIPTION:
        fail_option("--description", f"at most {MAX_DESCRIPTION} characters")
    if seconds is not None and seconds > tokens.MAX_LIFETIME_S:
        fail_option("--expires-in", "at most ten years")
    with on_database(database, write=True) as session:
        problem = tokens.scope_problem(session, role, scope)
        if problem is not None:
            fail_option("SCOPE", problem)
        row, text = tokens.create(session, role, scope, None, description)
        if seconds is not None:
            row.expires = row.created + timedelta(seconds=seconds)
        events.append(
            session,
            "token.created",
            row.accessor,
            details={
                "role": row.role,
                "scope": row.scope,
                "expires": _moment(row.expires),
                "by": "placed token create --database",
            },
            **tokens.places(session, row.role, row.scope),
        )
        return {**info(row), "token": text}


def listed(database: str) -> dict[str, Any]:
    """Every token, oldest first, without secrets, as GET /v1/tokens answers a root-admin."""
    with on_database(database, write=False) as session:
        return {"items": [info(row) for row in tokens.listed(session)]}


def revoke(database: str, accessor: str) -> dict[str, Any]:
    """Revoke a token, as DELETE /v1/tokens/{accessor}: the last live root-admin token
    stays."""
    with on_database(database, write=True) as session:
        try:
            done = tokens.revoke_keeping_a_root(session, accessor)
        except tokens.LastRootAdmin as error:
            fail(str(error))
        if done is None:
            fail(f"{shown(parse_url(database))}: no token {accessor!r}")
        row = done.row
        if done.just_now:
            events.append(
                session,
                "token.revoked",
                row.accessor,
                details={
                    "role": row.role,
                    "scope": row.scope,
                    "by": "placed token revoke --database",
                },
                **tokens.places(session, row.role, row.scope),
            )
        return info(row)
