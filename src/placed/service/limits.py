"""Bounded requests: every route reads at most its own number of body bytes, and a route
that needs a token checks it before it reads any.

FastAPI reads (and parses) a body before it solves a route's dependencies, its token
check included, so without this a request with no token could make the server hold
hundreds of megabytes before its 401. This pure ASGI middleware finds the route of a
request that carries a body, checks the route's rule first (the same `Rule` the route
declares: one 401 for every failure, a 403 for a role the route does not allow), refuses
a declared `Content-Length` past the route's limit, and counts the bytes of the body as
the route reads them, so a chunked body is refused once it passes the limit. Each
refusal of a large body before it was read closes the connection: the rest is never
read.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placed.service import auth, problems
from placed.service.ui import session as console
from placed.service.ui import whatif

# What a JSON route (a workload, a token, a dedication...) reads: far past any real one.
JSON_BODY_BYTES = 1024 * 1024
# The lists of names (at most 1,000 or 2,000 names of at most 253 characters, each up
# to 4 bytes in UTF-8).
LIST_BODY_BYTES = 4 * 1024 * 1024
# A whole spec: the app's `max_body_bytes` (16 MiB by default).
SPEC = "spec"

# Every route that reads a body more than JSON_BODY_BYTES, by (method, path template);
# every other route reads at most JSON_BODY_BYTES (tests/test_service_bounds.py holds
# each entry to a route of the app, and each route to its limit).
LIMITS: dict[tuple[str, str], int | str] = {
    ("POST", "/v1/apply"): SPEC,
    ("POST", "/v1/plan"): SPEC,
    ("POST", "/v1/targets:batch"): LIST_BODY_BYTES,
    ("POST", "/v1/targets:drain"): LIST_BODY_BYTES,
    ("POST", "/v1/simulate"): LIST_BODY_BYTES,
    # The console's forms: its own bounds (session.form refuses past them, as a page).
    ("POST", "/ui/whatif"): whatif.TARGETS_FORM_BYTES,
    ("POST", "/ui/whatif/apply"): whatif.SPEC_FORM_BYTES,
}
# The console's other forms are small.
CONSOLE_FORM_BYTES = console.MAX_FORM_BYTES

CLOSE = {"Connection": "close"}

# How deep a JSON body of a route FastAPI parses may nest. Python's JSON reader stops at
# about 1,000 levels with a RecursionError, and what a model keeps of a deep value cannot
# be written back past a few hundred; no body of placed's API nests past a dozen. A spec
# (POST /v1/apply, /v1/plan) is the spec reader's to bound (spec/source.py: MAX_DEPTH).
MAX_JSON_DEPTH = 100


def limit_of(app: Any, method: str, path: str) -> int:
    """The most body bytes the route (method, path template) reads."""
    declared = LIMITS.get((method, path))
    if declared == SPEC:
        return int(app.state.max_body_bytes)
    if isinstance(declared, int):
        return declared
    if path.startswith("/ui/"):
        return CONSOLE_FORM_BYTES
    return JSON_BODY_BYTES


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a body passes its route's limit. An HTTPException, so
    FastAPI passes it on while it reads a body (it turns any other error there into a
    400) and the app's handler answers it as a `body-too-large` problem."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit), headers=CLOSE)


def too_large(limit: int) -> str:
    return f"the body is larger than {limit:,} bytes, the most this route reads"


class TooDeep(HTTPException):
    """Raised from `receive` once a JSON body nests past MAX_JSON_DEPTH: a 422, as a body
    FastAPI cannot read is (`invalid-request`)."""

    def __init__(self) -> None:
        super().__init__(
            422,
            f"the body nests more than {MAX_JSON_DEPTH} levels deep; placed reads no deeper",
            headers=CLOSE,
        )


_STRUCTURE = re.compile(rb'[\[\]{}"\\]')


class Nesting:
    """The depth of a JSON text read in pieces, as its brackets and braces open and
    close outside its strings; only the bytes that can change it are looked at."""

    def __init__(self) -> None:
        self.depth = 0
        self.deepest = 0
        self.in_string = False
        self.offset = 0  # of the piece being read, in the whole text
        self.escaped = -1  # the offset of the byte a backslash escapes

    def feed(self, piece: bytes) -> int:
        """The deepest nesting so far."""
        for found in _STRUCTURE.finditer(piece):
            at = self.offset + found.start()
            char = piece[found.start()]
            if self.in_string:
                if at == self.escaped:
                    continue
                if char == 0x5C:  # a backslash: the next byte is not the string's end
                    self.escaped = at + 1
                elif char == 0x22:
                    self.in_string = False
            elif char == 0x22:
                self.in_string = True
            elif char in (0x5B, 0x7B):
                self.depth += 1
                if self.depth > self.deepest:
                    self.deepest = self.depth
            elif char in (0x5D, 0x7D):
                self.depth -= 1
        self.offset += len(piece)
        return self.deepest


def _json(scope: Scope) -> bool:
    """A body FastAPI would parse as JSON (or none said what it is)."""
    kind = Headers(scope=scope).get("content-type", "").split(";")[0].strip().lower()
    return kind == "" or kind == "application/json" or kind.endswith("+json")


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return bytes(value).strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False


def _declared_length(scope: Scope) -> int | None:
    found = Headers(scope=scope).get("content-length")
    return int(found) if found is not None and found.strip().isdigit() else None


def route_of(app: FastAPI, scope: Scope) -> tuple[BaseRoute, Scope] | None:
    """The route Starlette will hand the request to (the first full match, in the
    table's order), and its child scope; None for none (a 404 or 405 to come)."""
    for route in app.router.routes:
        match, child = route.matches(scope)
        if match == Match.FULL:
            return route, child
    return None


def token_rule(route: BaseRoute) -> auth.Rule | None:
    """The token rule a route declares; None for a public route or none."""
    dependant = getattr(route, "dependant", None)
    found = list(auth.rules_of(dependant)) if dependant is not None else []
    rules = [r for r in found if isinstance(r, auth.Rule)]
    return rules[0] if rules else None


async def refusal(rule: auth.Rule, scope: Scope, close: dict[str, str]) -> Any:
    """None when the caller may call the route (kept for the route's own rule, which
    then asks nothing again); else the refusal to send."""
    request = Request(scope)
    credentials = await auth.bearer(request)
    try:
        caller = await rule(request, credentials)
    except problems.ProblemException as error:
        return problems.response(
            error.status,
            error.kind,
            error.detail,
            str(scope.get("state", {}).get("request_id", "")),
            error.errors,
            {**(error.headers or {}), **close},
            error.extensions,
        )
    text = credentials.credentials if credentials else None
    scope.setdefault("state", {})[auth.CHECKED] = (text, caller)
    return None


class Checked:
    """A request's route found and its token rule judged before its body is read, by a
    middleware that acts on writes (forwarding, idempotency keys): each route's rule
    looked up once."""

    def __init__(self) -> None:
        self._rules: dict[int, auth.Rule | None] = {}

    async def refusal(self, app: FastAPI, scope: Scope) -> tuple[bool, Any]:
        """(whether the request has a route, the refusal to send or None). With no
        route the router answers the 404 or 405."""
        route = scope.get("route")
        if route is None:
            found = route_of(app, scope)
            if found is None:
                return False, None
            route, child = found
            # As Starlette's router does: the request's metrics name its route.
            scope.update(child)
        if id(route) not in self._rules:
            self._rules[id(route)] = token_rule(route)
        rule = self._rules[id(route)]
        if rule is None or auth.CHECKED in scope.get("state", {}):
            return True, None
        return True, await refusal(rule, scope, {})


class BodyLimits:
    """Pure ASGI, inside RequestContext (which gives the request its id and counts it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._rules: dict[int, auth.Rule | None] = {}

    def _rule(self, route: BaseRoute) -> auth.Rule | None:
        key = id(route)
        if key not in self._rules:
            self._rules[key] = token_rule(route)
        return self._rules[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            await self.app(scope, receive, send)
            return
        app: FastAPI = scope["app"]
        found = route_of(app, scope)
        if found is None:
            # No route reads it (a 404 or 405): the body is never read, and the server
            # holds at most its read buffer of it.
            await self.app(scope, receive, send)
            return
        route, child = found
        # As Starlette's router does; the request's metrics then name its route even
        # when it is refused here.
        scope.update(child)
        method = scope["method"]
        path = str(getattr(route, "path", ""))
        limit = limit_of(app, method, path)
        declared = _declared_length(scope)
        # A refusal before the body is read leaves it unread: the server reads on and
        # drops what remains of a small one (the connection stays open), and closes the
        # connection rather than read a large or chunked one.
        close = CLOSE if declared is None or declared > limit else {}
        rule = self._rule(route) if isinstance(route, APIRoute) else None
        if rule is not None:
            refused = await refusal(rule, scope, close)
            if refused is not None:
                await refused(scope, receive, send)
                return
        if declared is not None and declared > limit:
            await _answer(scope, send, 413, "body-too-large", too_large(limit))
            return
        read = 0
        # A spec route's body is the spec reader's to bound; a console form is no JSON.
        nesting = (
            Nesting()
            if LIMITS.get((method, path)) != SPEC and not path.startswith("/ui/") and _json(scope)
            else None
        )

        async def counted() -> Message:
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                piece = message.get("body", b"")
                read += len(piece)
                if read > limit:
                    raise BodyTooLarge(limit)
                if nesting is not None and nesting.feed(piece) > MAX_JSON_DEPTH:
                    raise TooDeep()
            return message

        try:
            await self.app(scope, counted, send)
        except (BodyTooLarge, TooDeep) as error:
            # Raised where no handler of the app answered it: it is still ours.
            kind = problems.kind_for(error.status_code)
            await _answer(scope, send, error.status_code, kind, error.detail)


async def _answer(scope: Scope, send: Send, status: int, kind: str, detail: str) -> None:
    answer = problems.response(
        status, kind, detail, str(scope.get("state", {}).get("request_id", "")), headers=CLOSE
    )

    async def nothing() -> Message:
        return {"type": "http.disconnect"}

    await answer(scope, nothing, send)
