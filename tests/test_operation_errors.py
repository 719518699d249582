"""An operation's domain error is answered as the problem document of its kind, in one
mapping (service/problems.py:from_operation), which `problems.install` applies to every
route: a route lets the error out and the client gets the problem."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from placed.operations.errors import (
    Conflict,
    Contended,
    Forbidden,
    Invalid,
    NotFound,
    OperationError,
    Where,
)
from placed.service import problems
from placed.service.metrics import HttpMetrics
from placed.service.middleware import RequestContext

# Each kind of domain error, and the status and problem type a client gets for it.
KINDS = [
    (NotFound("no target 'h1'"), 404, "not-found"),
    (Conflict("taken", "last-root-admin"), 409, "last-root-admin"),
    (Forbidden("not yours"), 403, "forbidden"),
    (Invalid("bad"), 422, "invalid-request"),
    (Contended("others were faster"), 409, "claim-conflict"),
    (OperationError("unclassed", "odd"), 422, "odd"),
]


@pytest.mark.parametrize(("error", "status", "kind"), KINDS)
def test_each_domain_error_has_its_status(error: OperationError, status: int, kind: str) -> None:
    problem = problems.from_operation(error)
    assert (problem.status, problem.kind, problem.detail) == (status, kind, error.detail)
    assert problem.errors is None  # about no place of the request: no errors listed


def test_where_a_refusal_points_is_the_problem_s_errors() -> None:
    error = NotFound(
        "no level 'row'",
        "invalid-parameter",
        [Where("one of rack, zone", parameter="query.level"), Where("bad", pointer="/scope")],
        {"current_revision": 7},
    )
    problem = problems.from_operation(error)
    assert problem.errors == [
        {"parameter": "query.level", "detail": "one of rack, zone"},
        {"pointer": "/scope", "detail": "bad"},
    ]
    assert problem.extensions == {"current_revision": 7}


def test_a_route_s_call_raises_the_problem() -> None:
    with pytest.raises(problems.ProblemException) as raised, problems.operation_errors():
        raise Forbidden("a user token acts for its own account")
    assert (raised.value.status, raised.value.kind) == (403, "forbidden")


def _app_raising(error: OperationError) -> FastAPI:
    """An app as create_app installs its errors, with routes that let `error` out of a
    handler as the service's routes do: from the handler itself and from a worker
    thread (a route's `run_in_threadpool`)."""
    app = FastAPI()
    problems.install(app)
    app.add_middleware(RequestContext, metrics=HttpMetrics())

    @app.get("/async")
    async def raising_async() -> None:
        raise error

    @app.get("/sync")
    def raising_in_a_thread() -> None:
        raise error

    return app


@pytest.mark.parametrize(("error", "status", "kind"), KINDS)
@pytest.mark.parametrize("path", ["/async", "/sync"])
def test_a_route_letting_a_domain_error_out_answers_its_problem(
    error: OperationError, status: int, kind: str, path: str
) -> None:
    client = TestClient(_app_raising(error), raise_server_exceptions=False)
    answer = client.get(path, headers={"X-Request-Id": "r-1"})
    assert answer.status_code == status
    assert answer.headers["content-type"] == problems.MEDIA_TYPE
    body = answer.json()
    assert body["type"] == problems.TYPE_PREFIX + kind
    assert (body["status"], body["detail"], body["request_id"]) == (status, error.detail, "r-1")
    assert "errors" not in body


def test_a_route_s_domain_error_keeps_its_places_and_extensions() -> None:
    error = Conflict(
        "stale", "stale-revision", [Where("changed", pointer="/spec")], {"current_revision": 3}
    )
    body = TestClient(_app_raising(error)).get("/async").json()
    assert body["errors"] == [{"pointer": "/spec", "detail": "changed"}]
    assert body["current_revision"] == 3


def test_a_contended_change_says_when_to_try_again() -> None:
    """A change others overtook on every try (operations/transactions.py) is a 409
    claim-conflict with Retry-After: nothing was written, the same request may succeed."""
    assert problems.from_operation(Contended("try again", retry_after=2)).headers == {
        "Retry-After": "2"
    }
    assert problems.from_operation(Conflict("taken")).headers is None
    answer = TestClient(_app_raising(Contended("try again"))).get("/sync")
    assert (answer.status_code, answer.headers["Retry-After"]) == (409, "1")
    assert answer.json()["type"] == problems.TYPE_PREFIX + "claim-conflict"
