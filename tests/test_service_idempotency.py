"""POSTs honour `Idempotency-Key` (service/idempotency.py): a retry with the same key, by
the same caller, gets the first answer and commits nothing again; another request with
the key is refused; a retry while the first runs, or after it ended without an answer
that says what it did, is never run a second time."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from time import monotonic as time_now
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from placed.service import idempotency as middleware
from placed.store import idempotency, revision
from placed.store.database import reading, writing
from placed.store.tables import IdempotencyKey, Workload, now

from .service_support import bearer, issue, served

SPEC = """
name: racks
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
"""
CLAIM = {"name": "web", "units": 2, "resources": {"cpu": 1}}


def applied(database: str) -> tuple[FastAPI, str, TestClient]:
    app, root = served(database)
    client = TestClient(app, headers=bearer(root), raise_server_exceptions=False)
    answer = client.post("/v1/apply", content=SPEC, headers={"content-type": "application/yaml"})
    assert answer.status_code == 200, answer.text
    return app, root, client


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def stored(app: FastAPI) -> tuple[list[str], int]:
    with reading(app.state.database) as session:
        return sorted(session.scalars(select(Workload.name))), revision.current(session)


def test_a_retry_with_the_same_key_answers_the_first_answer_and_commits_nothing(
    database: str,
) -> None:
    app, _, client = applied(database)
    first = client.post("/v1/workloads", json=CLAIM, headers=keyed("k-1"))
    assert first.status_code == 201, first.text
    after_first = stored(app)
    again = client.post("/v1/workloads", json=CLAIM, headers=keyed("k-1"))
    assert again.status_code == 201
    assert again.json() == first.json()
    assert again.headers[middleware.REPLAYED] == "true"
    assert again.headers["content-type"] == first.headers["content-type"]
    assert stored(app) == after_first  # no workload, no revision more
    # Without a key the same request runs again (and the name is taken).
    assert client.post("/v1/workloads", json=CLAIM).status_code == 409


def test_a_refusal_is_kept_too(database: str) -> None:
    app, _, client = applied(database)
    assert client.post("/v1/workloads", json=CLAIM).status_code == 201
    refused = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert refused.status_code == 409
    client.delete("/v1/workloads/web")
    # The name is free now, but the key's request was answered: its answer again.
    again = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert again.status_code == 409 and again.json() == refused.json()
    assert stored(app)[0] == []


def test_the_key_with_another_request_is_refused(database: str) -> None:
    app, _, client = applied(database)
    assert client.post("/v1/workloads", json=CLAIM, headers=keyed("k")).status_code == 201
    before = stored(app)
    other = client.post("/v1/workloads", json={**CLAIM, "units": 1}, headers=keyed("k"))
    assert other.status_code == 422
    assert other.json()["type"].endswith(":idempotency-key-reused")
    elsewhere = client.post("/v1/dedications", json={}, headers=keyed("k"))
    assert elsewhere.status_code == 422
    assert stored(app) == before


def test_keys_are_each_callers_own(database: str) -> None:
    app, _, client = applied(database)
    assert client.post("/v1/workloads", json=CLAIM, headers=keyed("k")).status_code == 201
    other_root = issue(app, "root-admin")
    theirs = client.post("/v1/workloads", json=CLAIM, headers={**keyed("k"), **bearer(other_root)})
    # Not the first caller's answer: their own request ran (the name is taken).
    assert theirs.status_code == 409
    assert middleware.REPLAYED not in theirs.headers


def test_a_key_whose_request_still_runs_is_told_to_wait(database: str) -> None:
    app, root, client = applied(database)
    caller = hashlib.sha256(f"Bearer {root}".encode()).hexdigest()
    first = client.post("/v1/workloads", json=CLAIM, headers=keyed("warm"))
    assert first.status_code == 201
    # The same request taken by a replica that has not answered yet.
    body = {**CLAIM, "name": "api"}
    request = client.build_request("POST", "/v1/workloads", json=body)
    scope: dict[str, Any] = {
        "method": "POST",
        "path": "/v1/workloads",
        "raw_path": b"/v1/workloads",
        "query_string": b"",
    }
    fingerprint = middleware._fingerprint(scope, request.content)
    mine = middleware.PROCESS
    assert idempotency.take(app.state.database, caller, "busy", fingerprint, mine) is None
    waiting = client.post("/v1/workloads", json=body, headers=keyed("busy"))
    assert waiting.status_code == 409
    assert waiting.json()["type"].endswith(":idempotency-key-in-flight")
    assert waiting.headers["Retry-After"] == "1"
    # Its replica stopped long ago: the outcome is unknown, and it is not run again.
    with writing(app.state.database) as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == "busy")
            .values(created_at=now() - timedelta(seconds=middleware.IN_FLIGHT_S + 1))
        )
    unknown = client.post("/v1/workloads", json=body, headers=keyed("busy"))
    assert unknown.status_code == 409
    assert unknown.json()["type"].endswith(":idempotency-outcome-unknown")
    assert "api" not in stored(app)[0]
    # Past a day the key is free again.
    with writing(app.state.database) as session:
        session.execute(
            update(IdempotencyKey)
            .where(IdempotencyKey.key == "busy")
            .values(created_at=now() - idempotency.LIFETIME - timedelta(seconds=1))
        )
    assert client.post("/v1/workloads", json=body, headers=keyed("busy")).status_code == 201


def test_a_server_error_leaves_the_outcome_unknown(database: str, monkeypatch: Any) -> None:
    app, _, client = applied(database)

    async def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("the commit's answer was lost")

    monkeypatch.setattr(app.state.replica, "claim_async", broken)
    failed = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert failed.status_code == 500
    monkeypatch.undo()
    again = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert again.status_code == 409
    assert again.json()["type"].endswith(":idempotency-outcome-unknown")
    assert stored(app)[0] == []


def test_a_refusal_that_asks_for_a_retry_frees_the_key(database: str, monkeypatch: Any) -> None:
    app, _, client = applied(database)
    from placed.service import problems

    async def busy(*_: Any, **__: Any) -> Any:
        raise problems.ProblemException(
            409, "claim-conflict", "try again", headers={"Retry-After": "1"}
        )

    monkeypatch.setattr(app.state.replica, "claim_async", busy)
    assert client.post("/v1/workloads", json=CLAIM, headers=keyed("k")).status_code == 409
    monkeypatch.undo()
    retried = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert retried.status_code == 201, retried.text
    assert middleware.REPLAYED not in retried.headers


def test_a_key_that_is_not_printable_ascii_or_too_long_is_a_400(database: str) -> None:
    app, _, client = applied(database)
    before = stored(app)
    for key in (b"x" * 256, "caf\u00e9".encode(), b"tab\there", b""):
        answer = client.post("/v1/workloads", json=CLAIM, headers={"Idempotency-Key": key})
        assert answer.status_code == 400, (key, answer.text)
    assert stored(app) == before


def test_a_request_without_a_valid_token_keeps_no_key(database: str) -> None:
    app, _, client = applied(database)
    for headers in ({}, bearer("not-a-token")):
        answer = client.post(
            "/v1/targets/h1/down",
            headers={**keyed("k"), **headers, "Authorization": ""}
            if not headers
            else {**keyed("k"), **headers},
        )
        assert answer.status_code == 401, answer.text
    with reading(app.state.database) as session:
        assert session.scalars(select(IdempotencyKey)).all() == []


def test_a_key_held_by_a_replica_that_no_longer_leads_is_unknown_at_once() -> None:
    # A leader killed mid-request leaves its key `started`: once another replica holds
    # the lease, the retry there learns at once that the outcome is unknown, instead of
    # waiting IN_FLIGHT_S, and the write is not run a second time.
    from types import SimpleNamespace

    from placed.service.controller import Holding

    taken = idempotency.Taken("f" * 64, now(), "old-leader", idempotency.STARTED, None, None, None)
    later = time_now() + 10

    def replica(holding: Holding | None) -> Any:
        return SimpleNamespace(holder="me", holding=lambda: holding)

    assert not middleware._running(taken, "me", replica(Holding("me", 2, None, later)))
    assert middleware._running(taken, "me", replica(Holding("old-leader", 1, None, later)))
    assert middleware._running(taken, "me", replica(None))  # no live leader known: wait
    assert middleware._running(taken, "old-leader", None)
    old = idempotency.Taken(
        "f" * 64,
        now() - timedelta(seconds=middleware.IN_FLIGHT_S),
        "me",
        idempotency.STARTED,
        None,
        None,
        None,
    )
    assert not middleware._running(old, "me", None)


def test_an_answer_that_cannot_be_kept_is_still_sent_and_never_run_twice(
    database: str, monkeypatch: Any
) -> None:
    # The database lost under the write of the key's outcome (after the answer went out):
    # tried again once, then a warning; the client has its answer, and a retry is told
    # the first still runs rather than running it again.
    app, root, _ = applied(database)
    client = TestClient(app, headers=bearer(root))  # a server error would raise here
    calls: list[str] = []

    def lost(*_: Any) -> None:
        calls.append("answer")
        raise RuntimeError("server closed the connection unexpectedly")

    monkeypatch.setattr(idempotency, "answer", lost)
    first = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert first.status_code == 201, first.text
    assert calls == ["answer", "answer"]
    monkeypatch.undo()
    again = client.post("/v1/workloads", json=CLAIM, headers=keyed("k"))
    assert again.status_code == 409
    assert again.json()["type"].endswith(":idempotency-key-in-flight")
    assert stored(app)[0] == ["web"]
