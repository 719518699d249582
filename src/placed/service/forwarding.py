"""One committer (SERVICE.md, "The live world and one committer"): a replica that does
not hold the controller's lease forwards each write to the replica that does, as Nomad's
followers forward plans to the leader's plan applier, and answers what the leader
answered.

Two replicas committing side by side each find the other's commits first (the revision
row is one row; measured, two such replicas reached 0.31x one's claims), and a batch of
claims commits together only within one process. So the lease holder commits, and the
others keep serving reads from their own copy and take the writes in, one hop away.

A write is a POST, PUT, PATCH or DELETE under /v1 whose route changes something. It is
forwarded after this replica's own checks: the body limits and the route's token rule
(service/limits.py) have run, so a bad token or too large a body is refused here and
never reaches the leader. What goes is the method, the path and query, the body, the
`Authorization`, `Content-Type`, `Idempotency-Key` and `X-Request-Id` headers, and
`FORWARDED`, which names this replica: a replica that receives it commits locally
whether or not it still leads (the revision lock keeps that correct), so a write is
never forwarded twice, and a leader that lost its lease a moment ago still answers.

Where the write commits is read from the lease as the controller's last renewal saw it
(at most one renewal period old), never from the database per request:
- no live holder known (the lease expired or was never held), this replica holding it,
  or a holder that gave no address (`placed serve --advertise`): commit here, as one
  replica does;
- else forward. The leader unreachable: 503 `leader-unavailable`, not committed; the
  connection lost after the write was sent: 503 `leader-unavailable`, perhaps committed.
  Either way with `Retry-After`: the seconds until the lease runs out unless renewed,
  after which a live replica takes it (and this one commits itself, if no other has).

Stay here, although they are POSTs: POST /v1/plan and /v1/simulate, which change
nothing, any route's `dry_run=true`, and heartbeats, which write the target's own
liveness row and never the revision row (as a kubelet renews its Lease through any API
server): a leader dying must not make the fleet look silent.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any
from urllib.parse import parse_qsl

import httpx
from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placed.service import auth, limits, problems
from placed.service.controller import Controller, Holding
from placed.service.metrics import HttpMetrics

# The request header that marks a forwarded write; its value is the forwarding
# replica's holder id.
FORWARDED = "X-Placed-Forwarded-By"
# The response header that names the lease holder that answered a forwarded write.
ANSWERED_BY = "X-Placed-Forwarded-To"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Writes by method that change nothing, or that every replica takes (the module's
# docstring: why), by (method, route template).
STAY = frozenset(
    {
        ("POST", "/v1/plan"),
        ("POST", "/v1/simulate"),
        ("POST", "/v1/targets/{name:path}/heartbeat"),
    }
)
# The request headers that go with a forwarded write.
PASSED = ("authorization", "content-type", "accept", "idempotency-key", "if-match")
# The leader's response headers that are not the answer's own: the hop's, or those the
# server sending the answer sets itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authenticate",
        "content-length",
        "content-encoding",  # httpx decodes the body
        "date",
        "server",
    }
)
# How FastAPI reads a true `dry_run` (pydantic's booleans).
TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
# A forwarded write may plan a large document: as long as the client would wait for one.
ANSWER_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 2.0
# An idle connection to the leader is dropped well before the leader's server closes it
# (uvicorn's keep-alive, 5 s): one both sides keep for 5 s may be closed by the leader
# just as a write goes out on it, and that write is then answered "may have committed".
KEEPALIVE_S = 2.0
# Connections to the leader at once; more writes wait for one. Below the leader's own
# cap per client address (`placed serve --max-conns-per-client`, 100 by default), which
# every forwarded write shares: past it the leader would refuse them (429).
MAX_CONNECTIONS = 64

log = logging.getLogger("placed.forwarding")


class Forwarder:
    """The app's one HTTP client to the leader, opened at the first forwarded write (in
    the serving event loop) and closed with the app."""

    def __init__(self, controller: Controller, metrics: HttpMetrics) -> None:
        self.controller = controller
        self.metrics = metrics
        self._client: httpx.AsyncClient | None = None

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(ANSWER_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
                limits=httpx.Limits(
                    max_connections=MAX_CONNECTIONS,
                    max_keepalive_connections=MAX_CONNECTIONS,
                    keepalive_expiry=KEEPALIVE_S,
                ),
                follow_redirects=False,
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def leader_elsewhere(self) -> Holding | None:
        """The live lease holder a write goes to; None: commit here."""
        seen = self.controller.holding()
        if seen is None or seen.holder == self.controller.holder or not seen.address:
            return None
        return seen


class Forwarding:
    """Pure ASGI, inside BodyLimits (whose counted `receive` bounds the body read here)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._rules: dict[int, auth.Rule | None] = {}  # by route, as BodyLimits keeps them

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in WRITES
            or not str(scope["path"]).startswith("/v1/")
        ):
            await self.app(scope, receive, send)
            return
        app: FastAPI = scope["app"]
        forwarder: Forwarder | None = app.state.forwarder
        if forwarder is None:
            await self.app(scope, receive, send)
            return
        if FORWARDED.lower().encode() in dict(scope.get("headers", ())):
            forwarder.metrics.forwarded_received.inc()
            await self.app(scope, receive, send)
            return
        leader = forwarder.leader_elsewhere()
        if leader is None:
            await self.app(scope, receive, send)
            return
        # BodyLimits found the route of a request with a body already.
        route = scope.get("route")
        if route is None:
            found = limits.route_of(app, scope)
            if found is None:
                await self.app(scope, receive, send)  # a 404 or 405, answered here
                return
            route, child = found
            # As Starlette's router does: the request's metrics name its route.
            scope.update(child)
        path = str(getattr(route, "path", ""))
        if (scope["method"], path) in STAY or _dry_run(scope):
            await self.app(scope, receive, send)
            return
        if id(route) not in self._rules:
            self._rules[id(route)] = limits.token_rule(route)
        rule = self._rules[id(route)]
        if rule is not None:
            refused = await limits.refusal(rule, scope, {})
            if refused is not None:
                await refused(scope, receive, send)
                return
        body = await _body(receive)
        if body is None:
            return  # the client left before its body arrived: nothing to answer
        answer = await _forward(forwarder, leader, scope, body)
        await answer(scope, receive, send)


def _dry_run(scope: Scope) -> bool:
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    given = [value for key, value in parse_qsl(query) if key == "dry_run"]
    return bool(given) and given[-1].strip().lower() in TRUE


async def _body(receive: Receive) -> bytes | None:
    """The whole body (its route's limit holds while it is read); None: the client left."""
    pieces = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None
        pieces.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(pieces)


async def _forward(forwarder: Forwarder, leader: Holding, scope: Scope, body: bytes) -> Any:
    """The leader's answer to this write, or the 503 that says why there is none."""
    rid = str(scope.get("state", {}).get("request_id", ""))
    given = Headers(scope=scope)
    headers = {name: given[name] for name in PASSED if name in given}
    headers["x-request-id"] = rid
    headers[FORWARDED] = forwarder.controller.holder
    path = scope.get("raw_path") or str(scope["path"]).encode()
    query = bytes(scope.get("query_string", b""))
    url = str(leader.address).rstrip("/") + bytes(path).decode("latin-1")
    if query:
        url += "?" + query.decode("latin-1")
    method = str(scope["method"])
    try:
        answered = await forwarder.client().request(method, url, content=body, headers=headers)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as error:
        forwarder.metrics.forwarded.labels("unreachable").inc()
        return _unavailable(leader, rid, method, scope, error, sent=False)
    except httpx.HTTPError as error:
        forwarder.metrics.forwarded.labels("lost").inc()
        return _unavailable(leader, rid, method, scope, error, sent=True)
    forwarder.metrics.forwarded.labels("answered").inc()
    response = Response(answered.content, status_code=answered.status_code)
    kept = MutableHeaders(raw=response.raw_headers)  # content-length, set from the body
    for name, value in answered.headers.multi_items():
        if name.lower() not in HOP_BY_HOP:
            kept.append(name, value)
    kept[ANSWERED_BY] = leader.holder
    response.raw_headers = kept.raw
    return response


def _unavailable(
    leader: Holding, rid: str, method: str, scope: Scope, error: Exception, sent: bool
) -> Response:
    # Until the lease runs out unless renewed: then a live replica leads (this one, if
    # no other takes it first) and a write sent again commits.
    wait = max(1, math.ceil(leader.until - time.monotonic()))
    log.warning(
        "request %s: %s %s: the leader at %s did not answer (%s): %s",
        *(rid, method, str(scope["path"])[:512], leader.address, type(error).__name__, error),
    )
    if sent:
        detail = (
            f"this replica forwarded the write to the leader ({leader.address}) and the "
            "connection was lost before it answered: the write may have been committed. "
            "Read it back, or send it again (a claim already stored answers 409 exists)"
        )
    else:
        detail = (
            f"this replica forwards writes to the leader ({leader.address}), which could "
            f"not be reached: the write was not committed. Send it again in {wait} s, "
            "when another replica leads if this leader is gone"
        )
    return problems.response(
        503,
        "leader-unavailable",
        detail,
        rid,
        headers={"Retry-After": str(wait)},
        extensions={"may_have_committed": sent},
    )
