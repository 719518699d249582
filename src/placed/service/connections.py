"""What `placed serve` does to connections before a request reaches the app: a deadline
for a request's headers (slowloris), a cap on one client address's open connections
(Nomad's `http_max_conns_per_client`), and long-polls that end at once on shutdown.

uvicorn has neither of the first two, so they live in a subclass of its httptools
protocol (the one it picks itself when httptools is installed, as placed requires),
handed to it as `uvicorn.Config(http=...)`: its `connection_made`, `on_message_begin`,
`on_headers_complete` and `connection_lost` are the hooks, and a connection over the cap
is answered as uvicorn answers one over its own `limit_concurrency` (an app of its own
in place of placed's for that request), here a 429 problem, then closed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from placed.service import problems
from placed.service.bell import EventBell

log = logging.getLogger("placed.service.connections")

HEADER_TIMEOUT_S = 10.0
MAX_CONNS_PER_CLIENT = 100  # Nomad's http_max_conns_per_client default
GRACEFUL_TIMEOUT_S = 10


@dataclass
class Limits:
    """One server's connection limits, shared by all its connections. `header_timeout`:
    seconds from a request's first byte (a connection's opening, for its first request)
    to the end of its headers, else the connection is closed; `max_per_client`: open
    connections one address may hold, 0 for no cap."""

    header_timeout: float = HEADER_TIMEOUT_S
    max_per_client: int = MAX_CONNS_PER_CLIENT
    open: Counter[str] = field(default_factory=Counter)
    # Addresses at the cap whose refusal was logged: one line until they drop below it.
    warned: set[str] = field(default_factory=set)


async def too_many_connections(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer on a connection past its address's cap: a 429 problem that closes it."""
    answer = problems.response(
        429,
        "too-many-connections",
        "this address has too many connections open to this server; close some, or "
        "reuse them (keep-alive), and try again",
        uuid.uuid4().hex,
        headers={"Retry-After": "1", "Connection": "close"},
    )
    await answer(scope, receive, send)


def protocol(limits: Limits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with `limits` applied to every connection."""

    class Guarded(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.address: str | None = None  # counted against the cap while open
            self.header_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else None
            if host is not None and limits.max_per_client:
                if limits.open[host] >= limits.max_per_client:
                    # Its request still gets an answer (a client that sent one reads a
                    # 429, not a reset), from an app of its own, as uvicorn answers
                    # past its limit_concurrency; the header deadline bounds the wait.
                    self.app = too_many_connections
                    if host not in limits.warned:  # once, not once per connection
                        limits.warned.add(host)
                        log.warning(
                            "%s has %d connections open, the most one address may have: "
                            "new ones are answered 429 and closed",
                            *(host, limits.open[host]),
                        )
                else:
                    self.address = host
                    limits.open[host] += 1
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self.address is not None:
                limits.open[self.address] -= 1
                limits.warned.discard(self.address)
                if limits.open[self.address] <= 0:
                    del limits.open[self.address]
                self.address = None
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self.header_deadline is None:  # a keep-alive connection's next request
                self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def _arm(self) -> None:
            if limits.header_timeout > 0:
                self.header_deadline = self.loop.call_later(limits.header_timeout, self._late)

        def _disarm(self) -> None:
            if self.header_deadline is not None:
                self.header_deadline.cancel()
                self.header_deadline = None

        def _late(self) -> None:
            self.header_deadline = None
            if not self.transport.is_closing():
                host = self.client[0] if self.client else "?"
                log.info(
                    "closed a connection from %s: its request's headers did not arrive within %g s",
                    *(host, limits.header_timeout),
                )
                self.transport.close()

    return Guarded


class Server(uvicorn.Server):
    """uvicorn's server, which first wakes every long-poll (GET /v1/events?wait=) when it
    shuts down: each answers what it has at once, so a SIGTERM is not held up by a poll
    for up to its whole wait (`--graceful-timeout` still bounds the rest)."""

    def __init__(self, config: uvicorn.Config, bell: EventBell) -> None:
        super().__init__(config)
        self.bell = bell

    async def shutdown(self, sockets: Any = None) -> None:
        # Synchronously before uvicorn's own shutdown, which tells each connection to
        # close after its response before anything awaits: the woken polls answer on
        # connections that then close.
        self.bell.close()
        await super().shutdown(sockets)
