"""A world applied to a fresh SQLite store and served in this process (no HTTP server),
for the benchmarks that time one change through the live world's delta and through the
general path (failover.py, readers.py)."""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient

from harness import progress
from placed.service.app import create_app
from placed.store import schema
from placed.store.database import make_engine


@contextmanager
def applied_world(document: dict[str, Any], label: str) -> Iterator[tuple[Any, Any]]:
    """(the app's live world, its store) once `document` is applied; `label` names the
    world in the error when the apply is refused."""
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'placed.db'}"
        token = schema.upgrade(url).root_token
        app = create_app(database=make_engine(url))
        client = TestClient(app, headers={"Authorization": f"Bearer {token}"})
        applied = client.post("/v1/apply", json=document)
        if applied.status_code != 200:
            raise RuntimeError(f"{label}: {applied.status_code} {applied.text[:300]}")
        engine = app.state.database
        try:
            yield app.state.replica, engine
        finally:
            engine.dispose()


Timed = TypeVar("Timed")


def both_ways(name: str, size: str, measure: Callable[[bool], Timed]) -> tuple[str, list[Timed]]:
    """`measure` through the live world's delta, then through the general path (its
    argument: whether the changes go through the live world), each announced."""
    found = []
    for live in (True, False):
        progress(f"{name}: {size}, {'delta' if live else 'general path'}")
        found.append(measure(live))
    return size, found


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"
