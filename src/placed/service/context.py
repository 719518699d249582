"""What a handler needs from its request: the store's engine and who is asking."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy import Engine

from placed.service.problems import ProblemException, request_id_of
from placed.store.claims import Actor


def store(request: Request) -> Engine:
    engine: Engine | None = request.app.state.database
    if engine is None:
        raise ProblemException(
            503, "no-store", "this server keeps no state: start it with placed serve"
        )
    return engine


def actor(request: Request) -> Actor:
    """The caller as events record it (the auth layer puts the token on the request)."""
    caller = getattr(request.state, "caller", None)
    return Actor(
        getattr(caller, "accessor", None), getattr(caller, "role", None), request_id_of(request)
    )


def principal(request: Request) -> str:
    """The caller as the dedication rules name principals (`Tenancy.principal`):
    `root-admin`, `domain-admin:DOMAIN` or `user:ACCOUNT`. No caller (no auth layer yet)
    is the root admin. An agent acts for a target, not a tenant: its text names no
    principal of any tenancy, so the rules refuse it."""
    caller = getattr(request.state, "caller", None)
    if caller is None:
        return "root-admin"
    role, scope = str(getattr(caller, "role", "")), getattr(caller, "scope", None)
    if role == "root-admin":
        return role
    return f"{role}:{scope or ''}"
