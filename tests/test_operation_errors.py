"""An operation's domain error is answered as the problem document of its kind, in one
mapping (service/problems.py:from_operation)."""

from __future__ import annotations

import pytest

from placed.operations.errors import Conflict, Forbidden, Invalid, NotFound, OperationError, Where
from placed.service import problems


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (NotFound("no target 'h1'"), 404, "not-found"),
        (Conflict("taken", "last-root-admin"), 409, "last-root-admin"),
        (Forbidden("not yours"), 403, "forbidden"),
        (Invalid("bad"), 422, "invalid-request"),
        (OperationError("unclassed", "odd"), 422, "odd"),
    ],
)
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
