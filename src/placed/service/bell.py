"""The app's event bell: what wakes its long-polls (GET /v1/events?wait=) when events
commit, rung after this process's commits and, on PostgreSQL, by the listener that hears
every replica's (store/notify.py)."""

from __future__ import annotations

import asyncio
import threading


class EventBell:
    """Wakes the long-polls of one app. `ring` may come from any thread; `rings` counts,
    so a waiter that read nothing knows whether a ring came since it started reading."""

    def __init__(self) -> None:
        self.rings = 0
        self.heard = threading.Event()  # set while a listener hears every replica
        self.closed = False  # the server is shutting down: no wait waits any more
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: set[asyncio.Future[None]] = set()

    def ring(self) -> None:
        self.rings += 1
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake)

    def close(self) -> None:
        """Wake every waiter, and let none wait again (call from the event loop)."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        for waiter in list(self._waiting):
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self, seconds: float, since: int) -> None:
        """Until a ring after the count `since`, or `seconds`."""
        if self.rings != since or seconds <= 0 or self.closed:
            return
        self._loop = loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiting.add(waiter)
        try:
            if self.rings == since and not self.closed:
                await asyncio.wait_for(waiter, seconds)
        except TimeoutError:
            pass
        finally:
            self._waiting.discard(waiter)
