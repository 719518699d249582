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
