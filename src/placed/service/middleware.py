"""What every request gets, whatever route answers it: a request id (the client's
`X-Request-Id` when it is a sane one), echoed in the response; its count and duration
under its route template; and for an unexpected exception, a 500 problem document and a
log line with the traceback, never the traceback in the response. A database connection
lost under a request (the server restarted, an operator's `pg_terminate_backend`) is
no bug of placed's: a 503 problem with `Retry-After`, and a one-line warning."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placed.operations import failures
from placed.service import problems
from placed.service.metrics import UNMATCHED, HttpMetrics

HEADER = "X-Request-Id"
# What a proxy or client puts there (a uuid, a trace id, base64): anything else, such as
# text that would forge a log line, is replaced by an id of our own.
SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+=-]{0,127}")

log = logging.getLogger("placed.service")
access = logging.getLogger("placed.access")
# A path is the client's text, of any length up to what uvicorn reads: a log line keeps
# its start (the route template says which route it was).
MAX_LOGGED_PATH = 512


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            given = bytes(value).decode("latin-1")
            if SANE_ID.fullmatch(given):
                return given
            break
    return uuid.uuid4().hex


def _has_nul(scope: Scope) -> bool:
    query = bytes(scope.get("query_string", b""))
    return "\x00" in str(scope.get("path", "")) or b"%00" in query or b"\x00" in query


def _lost_database(why: str, scope: Scope, rid: str) -> JSONResponse:
    log.warning(
        "request %s: %s %s: the connection to the database was lost: %s",
        *(rid, scope["method"], scope["path"], why),
    )
    return problems.response(
        503,
        "database-unavailable",
        "the connection to the database was lost during the request; a change may or "
        "may not have been stored: read it back, or send it again (a claim already "
        "stored answers 409 exists)",
        rid,
        headers={"Retry-After": "1"},
    )


class RequestContext:
    """Pure ASGI, so it sees an exception before Starlette's outermost error middleware
    turns it into a plain-text 500, and so a response is never buffered."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics, access_log: bool = False) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = message["status"]
                MutableHeaders(scope=message)[HEADER] = rid
            await send(message)

        try:
            if _has_nul(scope):
                # No database stores a NUL in text, and no name of placed holds one.
                answer = problems.response(
                    400,
                    "bad-request",
                    "the path or query holds a NUL character (%00), which no name has",
                    rid,
                )
                await answer(scope, receive, send_with_id)
                return
            await self.app(scope, receive, send_with_id)
        except Exception as error:
            if response_started:
                log.exception("request %s: %s %s failed", rid, scope["method"], scope["path"])
                raise  # cut off mid-way: nothing more can be sent; the server closes it
            lost = failures.lost_connection(error)
            if lost is not None:
                answer = _lost_database(lost, scope, rid)
            elif failures.nul_in_text(error):
                # A body's text with a NUL no model refused: PostgreSQL stores none (and
                # its transaction is rolled back), so it is the request's fault.
                answer = problems.response(
                    422,
                    "invalid-request",
                    "a text in the request holds a NUL character (\\u0000), which the "
                    "database cannot store",
                    rid,
                )
            else:
                log.exception("request %s: %s %s failed", rid, scope["method"], scope["path"])
                answer = problems.response(
                    500,
                    "internal-error",
                    f"an unexpected error; the server's log has it under request id {rid}",
                    rid,
                )
            await answer(scope, receive, send_with_id)
        finally:
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            seconds = time.perf_counter() - started
            self.metrics.observe(scope["method"], route, status, seconds)
            if self.access_log:
                _access(scope, route, status, seconds, rid)


def _access(scope: Scope, route: str, status: int, seconds: float, rid: str) -> None:
    """One request's access line, in place of uvicorn's: it knows the route template,
    the request id and, once the token was checked, the caller's accessor."""
    client = scope.get("client")
    address = client[0] if client else None
    path = str(scope.get("path", ""))[:MAX_LOGGED_PATH]
    method = str(scope["method"])[:16]
    access.info(
        "%s %s %s %d %.1f ms",
        *(address or "-", method, path, status, seconds * 1000),
        extra={
            "fields": {
                "method": method,
                "route": route,
                "path": path,
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
                "request_id": rid,
                "accessor": scope.get("state", {}).get("accessor"),
                "client": address,
            }
        },
    )
