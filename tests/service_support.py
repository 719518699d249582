"""Helpers of the service's tests: an app on a fresh store, tokens of each role, and a
digest of every table (a refused request must leave it as it was)."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from placed.service import create_app
from placed.store import schema, tokens
from placed.store.database import make_engine, reading, writing
from placed.store.tables import Base, now


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def served(url: str, **options: Any) -> tuple[FastAPI, str]:
    """An app on a database brought to the current schema, and its first root-admin
    token (as `placed db upgrade` prints it)."""
    root = schema.upgrade(url).root_token
    assert root is not None, "the database was not empty"
    return create_app(database=make_engine(url), **options), root


def client_of(app: FastAPI, token: str | None = None) -> TestClient:
    return TestClient(app, headers=bearer(token) if token else None)


def issue(
    app: FastAPI,
    role: str,
    scope: str | None = None,
    expired: bool = False,
    revoked: bool = False,
) -> str:
    """A token straight in the store (no request, no event): for setting a test up."""
    with writing(app.state.database) as session:
        expires = now() - timedelta(seconds=1) if expired else None
        row, text = tokens.create(session, role, scope, expires, "made by a test")
        if revoked:
            tokens.revoke(session, row.accessor)
    return text


def table_digest(engine: Engine, leaving_out: tuple[str, ...] = ()) -> str:
    """A digest of every row of every table of the models, in key order: equal digests
    mean nothing was written. `leaving_out`: tables a running server writes by itself
    (its lease, renewed every 2 s)."""
    found = hashlib.sha256()
    with reading(engine) as session:
        for table in Base.metadata.sorted_tables:
            if table.name in leaving_out:
                continue
            order = list(table.primary_key.columns) or list(table.columns)
            found.update(f"\0{table.name}\0".encode())
            for row in session.execute(select(table).order_by(*order)):
                found.update(json.dumps(list(row), default=str, sort_keys=True).encode())
    return found.hexdigest()
