"""The controller (SERVICE.md, "One controller at a time: the lease"): each `placed
serve` process runs one, and the one holding the `controller` lease sweeps.

A background thread renews the lease (every 2 s, 15 s TTL, by the database's clock) and,
while this process holds it, sweeps every second: a target whose last heartbeat is older
than the timeout is stale, and goes down in a transaction of its own, its units moving
as `placed simulate --down` says (operations/target_states.py `replanned`, the function the admin's
`POST .../down` uses); a stale target that heartbeats again comes up and its mapping
units come back. Every such transaction is fenced: it checks that this process still
holds the lease at its epoch first, and again, with the row locked, last before it
commits, so a leader paused past its lease (SIGSTOP) rolls back rather than commit
beside its successor.

The disruption guard: when the lease is younger than one timeout (the heartbeats may
have been going to a replica that just died), or when most heartbeating targets look
stale at once (late by more than half-way from one interval to the timeout: the
controller's own network, not the fleet, is the likelier fault),
nothing is taken down and `sweep.suppressed` is recorded once for the episode. A site
with fewer heartbeating targets than `disruption_guard_min_targets` (3) has no majority
to speak of: one silent target of two is half of them, and holding it back would mean a
small edge site never fails over, so there only the lease's age holds a sweep back.

The store's side of each step (the lease's rows, the heartbeats read, each sweep
transaction's fence and its fault hooks for tests) is operations/lease.py and
operations/sweeps.py.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from placed.operations import lease, sweeps, target_states
from placed.operations.errors import OperationError
from placed.operations.lease import Fenced
from placed.operations.replica import ReplicaWorld
from placed.operations.store import Store, StoreFailure
from placed.operations.sweeps import Fault
from placed.service import eventlog
from placed.service.bell import EventBell
from placed.service.context import reporter_of
from placed.service.metrics import HttpMetrics
from placed.service.problems import ProblemException
from placed.store.claims import Actor
from placed.store.targets import Seen

ACTOR = Actor(None, "controller", None)
# Most heartbeating targets stale at once: the fault is likelier the controller's.
DISRUPTION_SHARE = 0.55
ENVIRONMENT = {
    "renew_s": "PLACED_LEASE_RENEW_S",
    "ttl_s": "PLACED_LEASE_TTL_S",
    "sweep_s": "PLACED_SWEEP_S",
}

log = logging.getLogger("placed.controller")
# A sweep timed for a target's deadline comes this long after it (the database's clock
# and ours tick apart by less), and never sooner than this after the last sweep.
STALE_MARGIN_S = 0.02
MIN_SWEEP_GAP_S = 0.05


@dataclass(frozen=True)
class Options:
    renew_s: float = 2.0
    ttl_s: float = 15.0
    sweep_s: float = 1.0

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] = os.environ) -> Options:
        """The defaults, or what $PLACED_LEASE_RENEW_S, $PLACED_LEASE_TTL_S and
        $PLACED_SWEEP_S say (seconds; tests shorten them). ValueError: why not."""
        found: dict[str, float] = {}
        for key, name in ENVIRONMENT.items():
            value = environment.get(name)
            if value is None or value == "":
                continue
            try:
                number = float(value)
            except ValueError:
                raise ValueError(f"${name} is {value!r}, not a number of seconds") from None
            if not 0 < number <= 3600:
                raise ValueError(f"${name} is {value!r}: give seconds over 0, at most 3600")
            found[key] = number
        options = cls(**found)
        if options.ttl_s < 2 * options.renew_s:
            raise ValueError(
                f"the lease's TTL ({options.ttl_s:g} s) must be at least twice its renewal "
                f"period ({options.renew_s:g} s), so one late renewal does not lose it"
            )
        return options


@dataclass(frozen=True)
class Holding:
    """The lease as this process's controller last read it (at most one renewal period
    ago): who holds it, where it takes forwarded writes (None: nowhere said), and
    `until`, this process's monotonic clock past which it has expired unless renewed
    (the database's clock is never compared with ours: only the time left is)."""

    holder: str
    epoch: int
    address: str | None
    until: float


class Controller:
    def __init__(
        self,
        engine: Store,
        metrics: HttpMetrics,
        log_json: bool = False,
        options: Options | None = None,
        fault: Fault | None = None,
        holder: str | None = None,
        bell: EventBell | None = None,
        address: str | None = None,
        replica: ReplicaWorld | None = None,
    ) -> None:
        self.engine = engine
        # The live world a target's liveness changes as a delta of, when it can be one.
        self.replica = replica
        self.address = address  # where this process takes forwarded writes, if anywhere
        self._holding: Holding | None = None
        self.metrics = metrics
        self.options = options or Options()
        self.fault = fault
        self.holder = holder or uuid.uuid4().hex
        self.epoch: int | None = None  # the epoch held; None: not leading
        self.since: datetime | None = None  # when that epoch began, by the database
        self._since_epoch: int | None = None
        self._unannounced: int | None = None  # an epoch taken, its event not yet written
        self.suppressed: str | None = None  # why the current episode moves nothing
        self._report = reporter_of(metrics, log_json, bell)  # its moves wake long-polls
        self._log_json = log_json
        self.rebalance_commits = 0  # reached, for the fault hook (sweeps.Guard)
        self.next_stale_s: float | None = None  # when the first late target turns stale
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        metrics.leader.set(0)

    @property
    def leading(self) -> bool:
        return self.epoch is not None

    def holding(self) -> Holding | None:
        """The lease's holder as the last renewal saw it, while that lease has not run
        out; None: no live holder known. No database read: a request asks it."""
        seen = self._holding
        return seen if seen is not None and time.monotonic() < seen.until else None

    # The thread

    def start(self) -> None:
        # Apart, so a sweep waiting on a lock (a paused leader's) never lets the lease go.
        self._threads = [
            threading.Thread(target=self._renewing, name="placed-lease", daemon=True),
            threading.Thread(target=self._sweeping, name="placed-sweep", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop the threads and release the lease, so another replica leads at once."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        if self.leading:
            try:
                lease.release(self.engine, self.holder)
            except StoreFailure as error:
                log.warning("controller: could not release the lease: %s", error)
        self._holding = None
        self._step_down()

    def _renewing(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._guarded(self.renew)
            self._stop.wait(max(0.0, self.options.renew_s - (time.monotonic() - started)))

    def _sweeping(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            if self.leading:
                self._guarded(self.sweep)
            wait = self.options.sweep_s
            if self.next_stale_s is not None:
                wait = min(wait, max(MIN_SWEEP_GAP_S, self.next_stale_s + STALE_MARGIN_S))
            self._stop.wait(max(0.0, wait - (time.monotonic() - started)))

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except Fenced:
            log.warning("controller: lost the lease (epoch %s); stepping down", self.epoch)
            self._step_down()
        except StoreFailure as error:
            # The database is away or ended our session: whatever was in flight rolled
            # back; the next renewal tells whether we still lead.
            log.warning("controller: %s", str(error).splitlines()[0])
            self._step_down()

    def _step_down(self) -> None:
        self.epoch = None
        self.suppressed = None
        self.metrics.leader.set(0)
        self.metrics.liveness(None)

    # The lease

    def renew(self) -> None:
        """Take or renew the lease. A takeover raises the epoch; its `lease.acquired`
        event is written by the sweep (`_announce`): an event waits for the revision
        row's lock, which a paused leader may hold, and the renewal must not wait."""
        asked = time.monotonic()  # before the database's clock is read: never late
        renewal = lease.renew(self.engine, self.holder, self.options.ttl_s, self.address)
        epoch, seen = renewal.epoch, renewal.seen
        if epoch is not None and epoch != self._since_epoch:
            self.since = renewal.moment
        self._holding = (
            Holding(seen.holder, seen.epoch, seen.address, asked + seen.left_s)
            if seen is not None
            else None
        )
        if epoch is None:
            if self.leading:
                raise Fenced
            return
        if epoch != self._since_epoch:
            self._since_epoch = epoch
            self._unannounced = epoch
            log.info("controller: leading at epoch %d", epoch)
        self.epoch = epoch
        self.metrics.leader.set(1)

    def _announce(self) -> None:
        if self._unannounced is None or self._unannounced != self.epoch:
            return
        row = lease.record(
            self.engine,
            self,
            ACTOR,
            "lease.acquired",
            {
                "holder": self.holder,
                "epoch": self.epoch,
                "ttl_s": self.options.ttl_s,
                "at": self.since.isoformat() if self.since else None,
            },
        )
        self._unannounced = None
        eventlog.emit([row], self._log_json)

    # The sweep

    def sweep(self) -> None:
        """Judge every target by its last heartbeat and move what must move."""
        try:
            self._sweep()
        finally:
            if self.leading:
                self.metrics.liveness(sweeps.liveness_counts(self.engine))

    def _sweep(self) -> None:
        self._announce()
        found = sweeps.heartbeats(self.engine)
        moment, seen, guard_minimum = found.moment, found.seen, found.guard_minimum
        interval, timeout = found.interval_s, found.timeout_s
        cutoff = moment - timedelta(seconds=timeout)
        beating = [t for t in seen if t.last_seen is not None]
        stale = [t for t in beating if t.last_seen is not None and t.last_seen < cutoff]
        # The guard counts the targets that are late, past half-way from one interval to
        # the timeout, not only the stale: heartbeats that all stopped at once cross the
        # timeout one by one, and the first must not move alone.
        halfway = moment - timedelta(seconds=(interval + timeout) / 2)
        late = [t for t in beating if t.last_seen is not None and t.last_seen < halfway]
        # A target that missed a beat is likely gone: the next sweep comes when the first
        # of those turns stale, not up to a period later (the others push theirs on).
        missed = moment - timedelta(seconds=1.5 * interval)
        deadlines = [
            (t.last_seen + timedelta(seconds=timeout) - moment).total_seconds()
            for t in beating
            if t.last_seen is not None and cutoff <= t.last_seen < missed
        ]
        self.next_stale_s = min(deadlines) if deadlines else None
        for target in beating:
            if target.liveness == "down" and target not in stale:
                self._change(target, "up", f"heartbeats again (seen {_iso(target.last_seen)})")
        going = [t for t in stale if t.liveness != "down"]
        if not going:
            self.suppressed = None
            return
        why = None
        if self.since is not None and moment - self.since < timedelta(seconds=timeout):
            why = "lease-new"
        elif len(beating) >= guard_minimum and len(late) >= DISRUPTION_SHARE * len(beating):
            why = "most-stale"
        if why is not None:
            if self.suppressed != why:
                self._suppress(why, len(stale), len(late), len(beating), timeout)
            self.suppressed = why
            return
        self.suppressed = None
        for target in going:
            self._change(
                target, "down", f"no heartbeat for {timeout:g} s (seen {_iso(target.last_seen)})"
            )

    def _suppress(self, why: str, stale: int, late: int, beating: int, timeout: float) -> None:
        row = lease.record(
            self.engine,
            self,
            ACTOR,
            "sweep.suppressed",
            {
                "reason": (
                    f"the lease is younger than the heartbeat timeout ({timeout:g} s)"
                    if why == "lease-new"
                    else f"{late} of {beating} heartbeating targets look stale at once"
                ),
                "cause": why,
                "stale": stale,
                "late": late,
                "heartbeating": beating,
            },
        )
        eventlog.emit([row], self._log_json)

    def _change(self, target: Seen, liveness: str, reason: str) -> None:
        """One transaction: the target's liveness and every unit it moves
        (operations/target_states.py). A delta of the live world when it can be one,
        fenced by the lease; with a fault hook set, the general path's, whose guard runs
        the hooks."""
        live = self.replica if self.fault is None else None
        try:
            target_states.change_liveness(
                self.engine,
                target.name,
                liveness,
                reason,
                ACTOR,
                self._report,
                live,
                sweeps.Fence(self, self.options.ttl_s),
                sweeps.Guard(self, self.options.ttl_s, target.id, target.name),
            )
        except (ProblemException, OperationError) as error:
            log.warning("controller: %s %s: %s", target.name, liveness, error.detail)


def _iso(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment is not None else "never"
