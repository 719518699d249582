"""Long-polls wake when events commit: on PostgreSQL through LISTEN/NOTIFY from any
replica, and in every store from a commit of the same process. Each test stretches the
fallback read to a minute, so only the wake can answer within the test's bound."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.service import create_app
from placed.service import events as event_routes
from placed.store import notify
from placed.store.database import make_engine

from .service_support import bearer, served

SPEC = """
name: two-hosts
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
"""
BOUND_S = 20.0


def long_poll(client: TestClient, token: str, after: int, found: list[Any]) -> threading.Thread:
    """GET /v1/events?wait= in a thread; `found` gets the answer and whether it came
    before the wait ran out (a long-poll answers after it in any case, with what is
    there then)."""

    def run() -> None:
        started = time.monotonic()
        answer = client.get(
            "/v1/events", params={"after": after, "wait": BOUND_S}, headers=bearer(token)
        )
        found.append(answer)
        found.append(time.monotonic() - started < BOUND_S / 2)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def last_event(client: TestClient, token: str) -> int:
    answer = client.get("/v1/events", params={"limit": 1000}, headers=bearer(token))
    assert answer.status_code == 200, answer.text
    return int(answer.json()["next_cursor"])


def applied(app: FastAPI, token: str) -> None:
    answer = TestClient(app).post(
        "/v1/apply", content=SPEC, headers={**bearer(token), "content-type": "application/yaml"}
    )
    assert answer.status_code == 200, answer.text


def waiting(app: FastAPI) -> bool:
    return bool(app.state.event_bell._waiting)


def until(condition: Any, seconds: float = BOUND_S) -> None:
    done = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("the condition did not hold in time")


def test_a_commit_in_the_same_process_wakes_its_long_polls(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(event_routes, "POLL_S", 60.0)
    monkeypatch.setattr(event_routes, "HEARD_POLL_S", 60.0)
    app, root = served(database)
    applied(app, root)
    with TestClient(app) as client:
        after = last_event(client, root)
        found: list[httpx.Response] = []
        poller = long_poll(client, root, after, found)
        until(lambda: waiting(app))
        claim = client.post(
            "/v1/workloads", json={"name": "vm", "resources": {"cpu": 1}}, headers=bearer(root)
        )
        assert claim.status_code == 201, claim.text
        poller.join(BOUND_S + 5)
    assert found and found[0].status_code == 200, found
    # The claim's workload.created, then its unit's unit.placed.
    assert [item["subject"] for item in found[0].json()["items"]] == ["vm", "vm/0"]
    assert found[1], "the long-poll waited its time out: nothing woke it"


@pytest.mark.postgres
def test_a_commit_on_another_replica_wakes_a_long_poll_through_notify(
    postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LISTEN/NOTIFY is PostgreSQL's; on SQLite another replica's commits are read by
    the poll (the fallback the test above stretches)."""
    database = postgres_database
    monkeypatch.setattr(event_routes, "POLL_S", 60.0)
    monkeypatch.setattr(event_routes, "HEARD_POLL_S", 60.0)
    app, root = served(database)
    applied(app, root)
    other = create_app(database=make_engine(database))  # a second replica, no listener
    with TestClient(app) as client:
        until(app.state.event_bell.heard.is_set)
        after = last_event(client, root)
        found: list[httpx.Response] = []
        poller = long_poll(client, root, after, found)
        until(lambda: waiting(app))
        rings = app.state.event_bell.rings
        claim = TestClient(other).post(
            "/v1/workloads", json={"name": "vm", "resources": {"cpu": 1}}, headers=bearer(root)
        )
        assert claim.status_code == 201, claim.text
        until(lambda: app.state.event_bell.rings > rings)  # heard from the other replica
        poller.join(BOUND_S + 5)
    assert found and found[0].status_code == 200, found
    # The claim's workload.created, then its unit's unit.placed.
    assert [item["subject"] for item in found[0].json()["items"]] == ["vm", "vm/0"]
    assert found[1], "the long-poll waited its time out: nothing woke it"


def test_only_postgresql_announces(database: str) -> None:
    engine = make_engine(database)
    with engine.begin() as connection:
        notify.announce(connection)  # SQLite: nothing to do, and no error
    engine.dispose()
