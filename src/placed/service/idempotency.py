"""POSTs honour `Idempotency-Key` (issue 35; the IETF draft "The Idempotency-Key HTTP
Header Field", as Stripe's API does): a retry of a POST with the same key, by the same
caller, within a day, gets the first request's answer instead of running again, so a
client that lost an answer (a dropped connection, a leader that died while a follower
waited for it) can send the write again without committing it twice.

One place, pure ASGI, inside the forwarding middleware: the replica that commits the
write keeps its key (a follower forwards the header with the write). The key is taken in
the store before the route runs (store/idempotency.py), so two replicas, or two requests
racing with one key, run it once. Then:

- the same key with another request (method, path, query or body): 422
  `idempotency-key-reused`, as the draft asks;
- the same key while its first request runs: 409 `idempotency-key-in-flight`, with
  `Retry-After`;
- the first request answered: its answer again (status, content type and body), with
  `Idempotent-Replayed: true`;
- the first request ended in a 5xx, or its replica stopped while it ran (the key still
  `started` by a replica that no longer holds the lease, or after `IN_FLIGHT_S`): 409
  `idempotency-outcome-unknown`. Whether it was
  committed is not known here, so it is not run again: read the state, then send the
  write with a new key if it is not there;
- the first request refused with `Retry-After` (a claim conflict, a 429: nothing was
  changed and the answer asks for a retry): the key is freed, and the retry runs.

A caller is a digest of its `Authorization` header: two tokens never share a key's answer.
The route's token rule is judged before a key is taken, so a request without a valid
token keeps nothing. A key is 1 to 255 printable ASCII characters; another is a 400.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placed.service import limits, problems
from placed.service.controller import Controller
from placed.store import idempotency

HEADER = "idempotency-key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY = 255
# A request still running after this long has lost its replica (the longest a request
# runs is a large apply's plan, well under it).
IN_FLIGHT_S = 300.0
# The answers kept: larger ones are not (the retry is told the outcome is unknown).
MAX_ANSWER = 4 * 1024 * 1024
# Expired keys are deleted once in so many takes.
EXPIRE_EVERY = 1000
log = logging.getLogger("placed.service")
# This process, as a key's holder, when it runs no controller (whose id it is otherwise).
PROCESS = uuid.uuid4().hex


class Idempotency:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._takes = 0
        self._checked = limits.Checked()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        key = headers.get(HEADER)
        if key is None or not str(scope["path"]).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        rid = str(scope.get("state", {}).get("request_id", ""))
        if not 1 <= len(key) <= MAX_KEY or not all(" " <= c <= "~" for c in key):
            refused = problems.response(
                400,
                "bad-request",
                f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters",
                rid,
            )
            await refused(scope, receive, send)
            return
        app: FastAPI = scope["app"]
        # The caller's token first: a key is kept only for a request its route takes.
        routed, refused = await self._checked.refusal(app, scope)
        if not routed:
            await self.app(scope, receive, send)  # a 404 or 405, answered by the router
            return
        if refused is not None:
            await refused(scope, receive, send)
            return
        body = await _body(receive)
        if body is None:
            return  # the client left before its body arrived: nothing ran, nothing to keep
        engine = app.state.database
        caller = hashlib.sha256(headers.get("authorization", "").encode()).hexdigest()
        fingerprint = _fingerprint(scope, body)
        self._takes += 1
        if self._takes % EXPIRE_EVERY == 0:
            await run_in_threadpool(idempotency.expire, engine)
        controller: Controller | None = app.state.controller
        mine = controller.holder if controller is not None else PROCESS
        taken = await run_in_threadpool(idempotency.take, engine, caller, key, fingerprint, mine)
        if taken is not None:
            await _earlier(taken, fingerprint, rid, _running(taken, mine, controller))(
                scope, receive, send
            )
            return
        kept = _Kept(send)
        try:
            await self.app(scope, _replay(body, receive), kept.send)
        except BaseException:
            await _keep(rid, idempotency.unknown, engine, caller, key)
            raise
        if kept.status >= 500 or len(kept.body) > MAX_ANSWER:
            await _keep(rid, idempotency.unknown, engine, caller, key)
        elif kept.retry:
            await _keep(rid, idempotency.release, engine, caller, key)
        else:
            await _keep(
                rid, idempotency.answer, engine, caller, key, kept.status, kept.type, kept.body
            )


async def _keep(rid: str, write: Callable[..., None], *args: Any) -> None:
    """What became of the key's request, written after its answer went out: tried again
    once (a connection lost under the first try is replaced by the pool), then given up
    with a warning, never an error, since the client has its answer. The key then stays
    `started`: a retry is told it is in flight, and once its replica no longer leads (or
    after IN_FLIGHT_S) that the outcome is unknown; it is never run twice."""
    for attempt in range(2):
        try:
            await run_in_threadpool(write, *args)
            return
        except Exception as error:  # the database's, whatever its driver calls it
            if attempt:
                first = str(error).strip().splitlines()
                log.warning(
                    "request %s: the outcome of its Idempotency-Key was not kept: %s",
                    rid,
                    first[0] if first else type(error).__name__,
                )


def _fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (
        str(scope["method"]).encode(),
        bytes(scope.get("raw_path") or str(scope["path"]).encode()),
        bytes(scope.get("query_string", b"")),
        body,
    ):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def _running(taken: idempotency.Taken, mine: str, controller: Controller | None) -> bool:
    """Whether the request that took the key may still be running: not once its process
    no longer leads (its lease was taken over: it stopped, or no longer commits), nor
    after `IN_FLIGHT_S`."""
    if datetime.now(UTC) - taken.created_at >= timedelta(seconds=IN_FLIGHT_S):
        return False
    if taken.holder == mine or controller is None:
        return True
    holding = controller.holding()
    return holding is None or holding.holder == taken.holder


def _earlier(taken: idempotency.Taken, fingerprint: str, rid: str, running: bool) -> Response:
    """The answer to a request whose key another request took first."""
    if taken.fingerprint != fingerprint:
        return problems.response(
            422,
            "idempotency-key-reused",
            "this Idempotency-Key came with another request (its method, path, query or "
            "body differ): a key names one request; use a new key for a new one",
            rid,
        )
    if taken.outcome == idempotency.ANSWERED and taken.status is not None:
        replayed = Response(
            taken.body or b"", status_code=taken.status, media_type=taken.content_type
        )
        replayed.headers[REPLAYED] = "true"
        return replayed
    if taken.outcome == idempotency.STARTED and running:
        return problems.response(
            409,
            "idempotency-key-in-flight",
            "the request first sent with this Idempotency-Key is still running: send it "
            "again once it has answered",
            rid,
            headers={"Retry-After": "1"},
        )
    return problems.response(
        409,
        "idempotency-outcome-unknown",
        "the request first sent with this Idempotency-Key ended without an answer that "
        "says what it did (a server error, or its server stopped while it ran): whether it "
        "changed anything is not known, so it is not run again. Read the state, and send "
        "the change with a new key if it is not there",
        rid,
    )


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


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, then waits as the real one does."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class _Kept:
    """The route's answer as it goes out: status, content type, Retry-After and body."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 0
        self.type: str | None = None
        self.retry = False
        self.body = b""

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            headers = Headers(raw=message.get("headers", []))
            self.type = headers.get("content-type")
            self.retry = "retry-after" in headers and self.status in (409, 429)
        elif message["type"] == "http.response.body" and len(self.body) <= MAX_ANSWER:
            self.body += message.get("body", b"")
        await self._send(message)
