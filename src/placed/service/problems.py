"""Errors as RFC 9457 problem documents (`application/problem+json`), never FastAPI's
default `{"detail": ...}` bodies: every error a client meets names a stable kind
(`urn:placed:problem:<kind>`), the request id to quote, and for a body that did not
validate, where in it each error is (a JSON pointer, RFC 6901)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from placed.operations.errors import (
    Conflict,
    Contended,
    Forbidden,
    Invalid,
    NotFound,
    OperationError,
)
from placed.operations.pointers import MAX_ERRORS, counted, pointer, spec_places
from placed.spec import SpecError

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:placed:problem:"

# Kinds by status for errors Starlette raises itself (an unknown route, a wrong method).
_KINDS = {
    400: "bad-request",
    404: "not-found",
    405: "method-not-allowed",
    413: "body-too-large",
    415: "unsupported-media-type",
    422: "invalid-request",
    500: "internal-error",
    503: "not-ready",
}


class ProblemError(BaseModel):
    """One error inside a request: where (`pointer` into the body, or the `parameter`
    of the query, path or headers) and what is wrong."""

    pointer: str | None = Field(
        default=None, description="RFC 6901 JSON pointer into the request body."
    )
    parameter: str | None = Field(
        default=None, description="A query, path or header parameter, as location.name."
    )
    line: int | None = Field(default=None, description="1-based line in the body (spec errors).")
    column: int | None = Field(
        default=None, description="1-based column in the body (spec errors)."
    )
    document: str | None = Field(
        default=None,
        description="A problem of the world a change would leave: the document (its name) "
        "that defines what it is about, an applied one or one stored before.",
    )
    detail: str


class Problem(BaseModel):
    """An RFC 9457 problem document."""

    type: str = Field(description="urn:placed:problem:<kind>, stable per kind of error.")
    status: int
    title: str
    detail: str
    request_id: str = Field(description="The X-Request-Id of this request, as the log has it.")
    errors: list[ProblemError] | None = None
    current_generation: int | None = Field(
        default=None, description="A stale write's row: the generation it has now."
    )
    current_revision: int | None = Field(
        default=None, description="An apply's expected_revision was stale: the world's now."
    )
    may_have_committed: bool | None = Field(
        default=None,
        description="A write forwarded to the leader that did not answer (503 "
        "leader-unavailable): false when it was never sent, true when the connection "
        "dropped after it was (read it back, or send it again).",
    )


class ProblemException(Exception):
    """Raised by a handler to answer with a problem document."""

    def __init__(
        self,
        status: int,
        kind: str,
        detail: str,
        errors: Sequence[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
        extensions: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.extensions = extensions or {}
        self.status = status
        self.kind = kind
        self.detail = detail
        self.errors = errors
        self.headers = headers


# The status of each domain error (operations/errors.py); a kind of refusal the service
# does not know answers 422, as a request the operation could not use.
_STATUS_OF_OPERATION: tuple[tuple[type[OperationError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (Forbidden, 403),
    (Invalid, 422),
)


def from_operation(error: OperationError) -> ProblemException:
    """The problem document a domain error is answered with: one mapping for the service."""
    status = next((s for kind, s in _STATUS_OF_OPERATION if isinstance(error, kind)), 422)
    errors = [where.document() for where in error.where] if error.where is not None else None
    # A refusal worth trying again says when (RFC 9110 10.2.3).
    headers = {"Retry-After": str(error.retry_after)} if isinstance(error, Contended) else None
    return ProblemException(status, error.kind, error.detail, errors, headers, error.extensions)


@contextmanager
def operation_errors() -> Iterator[None]:
    """Around a call of an operation: its domain error raised as the problem it is
    answered with. A route needs none (`install` answers every route's domain error);
    this is for code that must see the problem itself (a console page, a batch)."""
    try:
        yield
    except OperationError as error:
        raise from_operation(error) from error


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def document(
    status: int,
    kind: str,
    detail: str,
    request_id: str,
    errors: Sequence[dict[str, Any]] | None = None,
    extensions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + kind,
        "status": status,
        "title": _title(status),
        "detail": detail,
        "request_id": request_id,
    }
    if errors is not None:
        body["errors"] = list(errors)
    body.update(extensions or {})
    return body


class ProblemResponse(JSONResponse):
    media_type = MEDIA_TYPE

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            # A problem quotes the request, and JSON lets a request hold a lone surrogate
            # ("\ud800") that UTF-8 cannot: escaped, it goes back as the client sent it.
            text = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
            return text.encode("ascii")


def response(
    status: int,
    kind: str,
    detail: str,
    request_id: str,
    errors: Sequence[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> JSONResponse:
    return ProblemResponse(
        document(status, kind, detail, request_id, errors, extensions),
        status_code=status,
        headers=headers,
    )


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def kind_for(status: int) -> str:
    known = _KINDS.get(status)
    if known is not None:
        return known
    return re.sub(r"[^a-z0-9]+", "-", _title(status).lower()).strip("-") or "error"


def validation_errors(error: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's errors, one per mistake, each at its place: a pointer for the body, a
    parameter for the query, path, headers or cookies."""
    found = []
    for item in error.errors():
        location = [part for part in item.get("loc", ()) if isinstance(part, str | int)]
        detail = str(item.get("msg", "is invalid"))
        if location and location[0] == "body":
            found.append({"pointer": pointer(location[1:]), "detail": detail})
        elif location:
            name = ".".join(str(part) for part in location)
            found.append({"parameter": name, "detail": detail})
        else:
            found.append({"pointer": "", "detail": detail})
    return found


def spec_errors(error: SpecError, data: Any) -> list[dict[str, Any]]:
    """A spec's problems as the body's errors (operations/pointers.py:spec_places)."""
    return [place.document() for place in spec_places(error, data)]


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, StarletteHTTPException)
    status = error.status_code
    detail = error.detail if isinstance(error.detail, str) else _title(status)
    if status == 404 and detail == "Not Found":
        detail = f"no route {request.url.path}"
    elif status == 405 and detail == "Method Not Allowed":
        allowed = allowed_methods(request) or (error.headers or {}).get("Allow", "")
        headers = {**(error.headers or {}), "Allow": allowed}
        detail = f"{request.method} is not allowed on {request.url.path}" + (
            f"; allowed: {allowed}" if allowed else ""
        )
        return response(status, kind_for(status), detail, request_id_of(request), None, headers)
    return response(status, kind_for(status), detail, request_id_of(request), None, error.headers)


def allowed_methods(request: Request) -> str:
    """Every method the request's path answers, for a 405's `Allow` (RFC 9110 15.5.6).
    Starlette's router refuses a method with the first route whose path matches, which
    names only its own methods, while a path (GET and POST /v1/workloads) is often
    served by several routes. A route whose `{name:path}` parameter took a slash matches
    more than its own path (GET /v1/targets/{name} matches a heartbeat's path), so such
    a match counts only when nothing matches without one: the methods are those of the
    path the OpenAPI document names."""
    exact: set[str] = set()
    by_slash: set[str] = set()
    for route in request.app.router.routes:
        methods = getattr(route, "methods", None)
        if not methods:
            continue
        match, child = route.matches(request.scope)
        if match == Match.NONE:
            continue
        params = child.get("path_params", {})
        took_slash = any("/" in str(value) for value in params.values())
        (by_slash if took_slash else exact).update(methods)
    return ", ".join(sorted(exact or by_slash))


async def _invalid_request(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    errors = validation_errors(error)
    return response(
        422,
        "invalid-request",
        f"the request has {counted(len(errors), 'error')}",
        request_id_of(request),
        errors[:MAX_ERRORS],
    )


async def _problem(request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, OperationError):
        error = from_operation(error)
    assert isinstance(error, ProblemException)
    return response(
        error.status,
        error.kind,
        error.detail,
        request_id_of(request),
        error.errors,
        error.headers,
        error.extensions,
    )


def install(app: FastAPI) -> None:
    """Replace FastAPI's error bodies with problem documents, and answer an operation's
    domain error, wherever a route lets it out, as the problem of its kind
    (`from_operation`, the service's one mapping). An unexpected exception is answered by
    the request context middleware (`middleware.py`), which sees it first."""
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(ProblemException, _problem)
    app.add_exception_handler(OperationError, _problem)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: a problem document for each status it may answer."""
    return {
        status: {
            "description": f"{_title(status)} (a problem document)",
            "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


def response_of_kinds(status: int, kinds: Sequence[str], description: str) -> dict[str, Any]:
    """A problem response whose `type` is one of `kinds`: the document says which
    problems a status carries there, and a fuzzer holds the answers to it."""
    return {
        "description": f"{_title(status)} (a problem document): {description}",
        "content": {
            MEDIA_TYPE: {
                "schema": {
                    "allOf": [
                        {"$ref": "#/components/schemas/Problem"},
                        {"properties": {"type": {"enum": [TYPE_PREFIX + kind for kind in kinds]}}},
                    ]
                }
            }
        },
    }
