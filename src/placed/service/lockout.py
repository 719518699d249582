"""Addresses that keep presenting tokens that are not live are held off, as fail2ban
holds off a host that keeps failing to log in: past `per_minute` failures within any 60
seconds, every request of that address that needs a token is a 429 with `Retry-After`
until the oldest of those failures is a minute old.

A failure is a token presented that names no live token (malformed, unknown, wrong
secret, expired, revoked); a request with no token at all guesses nothing and is not
one. While an address is held off its tokens are not even looked at, a valid one
included: answering a valid token otherwise would tell a guesser when it guessed right,
which is what the hold is there to stop. Its 429s are not failures, so a client that
keeps calling through the hold is let in again a minute after its failures, not never.

The table is bounded: at most `MAX_ADDRESSES` addresses, the one that failed longest ago
forgotten first, each with at most `per_minute + 1` times.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

WINDOW_S = 60.0
AUTH_FAILURES_PER_MINUTE = 30
MAX_ADDRESSES = 10_000


class AuthFailures:
    """Failed authentications per client address, over a sliding minute."""

    def __init__(
        self,
        per_minute: int = AUTH_FAILURES_PER_MINUTE,
        addresses: int = MAX_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.addresses = addresses
        self.clock = clock
        self._lock = threading.Lock()
        # Least recently failed first: the one dropped when the table is full.
        self._failed: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until `address` may present a token again; None: it may now."""
        if self.per_minute <= 0:
            return None
        with self._lock:
            times = self._failed.get(address)
            if times is None or len(times) <= self.per_minute:
                return None
            left = times[0] + WINDOW_S - self.clock()
            if left <= 0:
                return None
            return max(1, math.ceil(left))

    def failed(self, address: str) -> None:
        """One more failure of `address` (not while it is held off: see the module)."""
        if self.per_minute <= 0:
            return
        now = self.clock()
        with self._lock:
            times = self._failed.pop(address, None)
            if times is None:
                times = deque(maxlen=self.per_minute + 1)
                while len(self._failed) >= self.addresses:
                    self._failed.popitem(last=False)
            while times and times[0] + WINDOW_S <= now:
                times.popleft()
            times.append(now)
            self._failed[address] = times

    def __len__(self) -> int:
        return len(self._failed)
