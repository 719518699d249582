"""A served app's claims committed by a process of its own (operations/batch_commits.py,
its `CommitProcess` the server's end): the same rows stored, the child's refusals raised in the
server as if it had committed itself, a child that dies costs the batch it held a 503 and
is replaced."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from placed.operations.batch_commits import CommitProcess, Lost, _raised, shareable
from placed.service import create_app
from placed.store.database import make_engine, parse_url, reading, writing
from placed.store.tables import Revision, TargetResource, Workload

from .service_support import bearer, served

SPEC = """
name: two-hosts
inventory:
  - {id: h1, capacity: {cpu: 4}}
  - {id: h2, capacity: {cpu: 4}}
"""
READY_SECONDS = 60.0


def claim(client: TestClient, name: str, cpu: int = 1) -> int:
    answer = client.post("/v1/workloads", json={"name": name, "resources": {"cpu": cpu}})
    return int(answer.status_code)


@contextmanager
def running(database: str) -> Iterator[tuple[FastAPI, TestClient, CommitProcess]]:
    """A served app (its lifespan run, as uvicorn runs it) with its commit process ready,
    the inventory applied."""
    app, root = served(database, commit_process=True)
    with TestClient(app, headers=bearer(root)) as client:
        applied = client.post(
            "/v1/apply", content=SPEC, headers={"content-type": "application/yaml"}
        )
        assert applied.status_code == 200, applied.text
        committing = app.state.replica.commit_process
        assert isinstance(committing, CommitProcess)
        ready_by(committing)
        yield app, client, committing
    assert app.state.replica.commit_process is None


def ready_by(committing: CommitProcess) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while not committing.ready():
        assert time.monotonic() < deadline, "the commit process never said it was ready"
        time.sleep(0.05)


def stored_names(app: FastAPI) -> set[str]:
    with reading(app.state.database) as session:
        return set(session.scalars(select(Workload.name)))


def used_cpu(app: FastAPI) -> float:
    with reading(app.state.database) as session:
        total = session.scalar(
            select(func.sum(TargetResource.used)).where(TargetResource.name == "cpu")
        )
    return float(total or 0)


def test_claims_are_committed_by_the_child_and_stored(database: str) -> None:
    with running(database) as (app, client, committing):
        assert [claim(client, f"w{n}") for n in range(5)] == [201] * 5
        assert claim(client, "too-big", cpu=5) == 409  # no host has 5 cpu
        assert committing.written >= 1  # the claims' batches went to the child
        process = committing._process
        assert process is not None and process.is_alive()
    assert stored_names(app) >= {f"w{n}" for n in range(5)}
    assert "too-big" not in stored_names(app)
    assert used_cpu(app) == 5
    process.join(timeout=10)
    assert not process.is_alive()  # the app's end stopped the child


def test_concurrent_claims_through_the_child_never_overcommit(database: str) -> None:
    with running(database) as (app, client, committing):
        answers: list[int] = []
        lock = threading.Lock()

        def one(n: int) -> None:
            status = claim(client, f"c{n}")
            with lock:
                answers.append(status)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert committing.written >= 1
    assert sorted(answers) == [201] * 8 + [409] * 8  # 8 cpu in all
    assert used_cpu(app) == 8
    assert len(stored_names(app)) == 8


def test_a_revision_another_writer_made_is_raised_from_the_child_and_retried(
    database: str,
) -> None:
    with running(database) as (app, client, committing):
        assert claim(client, "first") == 201  # the cache is built
        written = committing.written
        # Another writer moves the revision on, the cache knows nothing of it: the
        # child's write finds it (Behind, raised in the server: not a 500), and the
        # batch is decided again (on PostgreSQL under the revision's lock, in the
        # server's own transaction).
        with writing(app.state.database) as session:
            session.execute(update(Revision).values(value=Revision.value + 1))
        assert claim(client, "second") == 201
        # SQLite judges it again on fresh rows and the child commits it; PostgreSQL
        # commits it under the lock, here.
        again = 1 if app.state.database.dialect.name == "sqlite" else 0
        assert committing.written == written + again
    assert {"first", "second"} <= stored_names(app)
    assert used_cpu(app) == 2


def test_a_child_that_dies_costs_its_batch_a_503_and_another_takes_over(database: str) -> None:
    with running(database) as (app, client, committing):
        assert claim(client, "before") == 201
        process = committing._process
        assert process is not None and process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        process.join(timeout=10)
        lost = client.post("/v1/workloads", json={"name": "lost", "resources": {"cpu": 1}})
        assert lost.status_code == 503, lost.text
        assert lost.json()["type"].endswith(":database-unavailable")
        assert "may or may not" in lost.json()["detail"]
        # The next claims start another child and, until it is ready, commit here.
        assert claim(client, "after") == 201
        assert committing.started == 2
        ready_by(committing)
        written = committing.written
        assert claim(client, "later") == 201
        assert committing.written == written + 1
    names = stored_names(app)
    assert {"before", "after", "later"} <= names
    assert "lost" not in names  # the child died before it read the batch
    assert used_cpu(app) == 3


def test_an_error_that_cannot_be_pickled_comes_back_as_its_text() -> None:
    class Holding(Exception):
        def __init__(self) -> None:
            super().__init__("the connection broke")
            self.lock = threading.Lock()  # no pickle takes a lock

    kind, error = pickle.loads(_raised(Holding()))
    assert isinstance(error, RuntimeError)
    assert str(error) == "Holding: the connection broke"
    assert kind == "raised"
    kind, error = pickle.loads(_raised(Lost("a text")))
    assert kind == "raised"
    assert isinstance(error, Lost) and str(error) == "a text"


def test_an_in_memory_database_is_never_given_to_another_process() -> None:
    assert not shareable(parse_url("sqlite://"))
    assert not shareable(parse_url("sqlite:///:memory:"))
    assert shareable(parse_url("sqlite:///placed.db"))
    assert shareable(parse_url("postgresql+psycopg://postgres@127.0.0.1/test"))
    app = create_app(database=make_engine("sqlite://"), commit_process=True)
    with TestClient(app):
        assert app.state.replica.commit_process is None
