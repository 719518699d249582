"""The load run of issue 17, bounded in count and time on loopback: two real `placed serve`
replicas on one fresh database, CLIENTS clients (a thread each, with an `httpx.Client` per
replica) mixing apply, claim, release, check and heartbeat until a deadline, while the
replica that commits (the lease holder) is killed (SIGKILL) and started again and, on
PostgreSQL, every connection the servers hold is dropped once (`pg_terminate_backend`).
Afterwards the rows are read directly and the invariants checked.

Duration: `PLACED_LOAD_SECONDS` (default 20 s, what CI runs; the issue's run is
`PLACED_LOAD_SECONDS=60`); clients: `PLACED_LOAD_CLIENTS` (default 32, the issue's). The
SQLite variant (two processes on one file, the kill and restart, no connection drop: a
file has no server to drop them) runs for a third of that, at least 12 s. Nothing here
times the service: the deadline bounds the run, and the checks are of what it did.

The mix, per client: claims (`POST /v1/workloads`, 1-3 units of 1-3 cpu on twelve hosts
with 4 cpu free each and the clients' small targets, so they fill up and get refused),
releases (`DELETE /v1/workloads/{name}` of one of its own accepted claims), applies
(`POST /v1/apply` of its own native document: one target whose capacity and tier change
and one workload constrained to `tier == gold`, so a silver target leaves its units
incompatible, and a capacity cut below use is a 409 `capacity-in-use`), checks (`POST
/v1/plan` of a small spec, `GET` placements, a target, one of its workloads) and
heartbeats (`POST /v1/targets/{name}/heartbeat`).
A long-poller pages `GET /v1/events` by id throughout. No dedications are used, so no
dedication rule is checked here (tests/test_service_dedications.py holds those).

What is tolerated, precisely:
- A transport error (connection refused or reset, no answer) only from the killed
  replica, for a request that ended after the kill and began before it was serving
  again: a request in flight on a killed server may fail, and nothing listens until the
  restart. The client then sends the same request to the other replica.
- A 503 `leader-unavailable` problem only from the other replica, for a request that
  ended after the kill and began before the killed one was serving again: the killed
  replica is the leader, and the other forwards writes to it (service/forwarding.py)
  until it serves again at the address its lease names, or the lease runs out.
- A 503 `database-unavailable` problem only for a request in flight at the connection
  drop (ended after it, began at most DROP_GRACE seconds after it: a claim may have
  joined a group commit whose connection was cut), from either replica: a transaction
  whose connection is cut cannot be finished. The client retries.
- Nothing else: any 500 (or other 5xx), any transport error from a live replica, any 503
  outside that window is a violation. 4xx answers are the API's refusals (409
  unplaceable, claim-conflict, capacity-in-use) and are counted.

A retried claim that meets 409 `exists`, or a retried release that meets 404, is the
first try's commit landing before its answer was lost: the outcome counts as accepted.
Each claim carries an `Idempotency-Key` (its name), which its retries repeat: a retry
gets the first try's answer (the killed replica may have forwarded that try to the
leader, which goes on and commits it), waits while the first try still runs (409
`idempotency-key-in-flight`, sent again like a 503), or is told the outcome is unknown
(409 `idempotency-outcome-unknown`: the replica that ran it died), so a claim refused is
never stored, and a claim is never committed twice.

Invariants, from the rows (SQLAlchemy on the store): no target resource over capacity,
and each target resource's `used` equal to the sum of its units' resources; no unit on
two targets (one placement row per unit, and each unit's placement history a chain:
every move starts where the one before it ended, the last ends where the unit is);
no workload with more units than its spec asks; every unit of an accepted claim
placed, every released or refused claim gone; each client's document as its last
accepted apply left it; event ids unique, without gaps,
the revision row's last id the highest, and every one of them (but the new leader's own
lease and sweep events after its last page) seen by the long-poller
paging by id (an id committed after a higher one was visible would have been skipped:
ids follow commit order).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from placed.store.database import make_engine, reading
from placed.store.tables import EventRow
from tests.row_invariants import broken_rows, read_rows
from tests.running_servers import Replica, replicas, upgrade

SECONDS = float(os.environ.get("PLACED_LOAD_SECONDS", "20"))
CLIENTS = int(os.environ.get("PLACED_LOAD_CLIENTS", "32"))
# At least 12 s: the leader is killed a quarter in, and until it serves again (a second
# later, and its start) the other forwards to it and answers 503; the claims must still
# fill the hosts afterwards on a loaded machine.
SQLITE_SECONDS = max(12.0, SECONDS / 3)
# After the connection drop, a request may still meet a connection cut under it.
DROP_GRACE = 5.0
# A request is tried again (on the other replica) until this long after it was first sent.
RETRY_FOR = 30.0
REQUEST_TIMEOUT = 30.0

HOSTS = [f"h{i:02d}" for i in range(12)]
# The ballast leaves 4 cpu free per host and the clients' own targets are small, so the
# claims fill the world within seconds even on a slow machine, and are refused from then
# on until releases make room: the capacity checks are exercised, not vacuous.
BASE = {
    "name": "base",
    "inventory": [
        {
            "id": "rack1",
            "kind": "rack",
            "children": [{"id": h, "capacity": {"cpu": 16, "memory": 64}} for h in HOSTS],
        }
    ],
    "workloads": [{"name": "ballast", "units": len(HOSTS), "resources": {"cpu": 12}}],
}
PLAN = {
    "name": "what-if",
    "inventory": [{"id": "x1", "capacity": {"cpu": 4}}, {"id": "x2", "capacity": {"cpu": 4}}],
    "workloads": [{"name": "w", "units": 3, "resources": {"cpu": 2}}],
}


@dataclass
class Attempt:
    op: str
    server: int
    began: float
    ended: float
    status: int | None  # None: a transport error
    detail: str


@dataclass
class Faults:
    """When each fault happened, on the test's monotonic clock."""

    killed: int = 1  # the replica killed
    killed_at: float = float("inf")
    serving_again_at: float = float("inf")
    dropped_at: float = float("inf")
    dropped: int = 0  # connections terminated

    def tolerated(self, attempt: Attempt) -> bool:
        if attempt.status is None:
            return (
                attempt.server == self.killed
                and attempt.ended >= self.killed_at
                and attempt.began <= self.serving_again_at
            )
        if attempt.status == 503 and "urn:placed:problem:leader-unavailable" in attempt.detail:
            # The other replica forwarded the write to the killed leader while it was
            # down (until it serves again at the address the lease names).
            return (
                attempt.server != self.killed
                and attempt.ended >= self.killed_at
                and attempt.began <= self.serving_again_at
            )
        if attempt.status == 503:
            # In flight when the connections were cut, or joined a group commit that was.
            return (
                "urn:placed:problem:database-unavailable" in attempt.detail
                and attempt.began <= self.dropped_at + DROP_GRACE
                and attempt.ended >= self.dropped_at
            )
        return attempt.status < 500


@dataclass
class Ledger:
    """What one client was told; read only after its thread ended."""

    accepted: dict[str, int] = field(default_factory=dict)  # claim -> units
    released: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)  # no answer within RETRY_FOR
    document: dict[str, Any] | None = None  # the last apply answered 200
    apply_unknown: list[dict[str, Any]] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)


class Client:
    """One client: a connection to each replica, its own names, the other replica when
    one fails it."""

    def __init__(self, number: int, bases: list[str], token: str, log: list[Attempt]) -> None:
        headers = {"authorization": f"Bearer {token}"}
        self.number = number
        self.http = [
            httpx.Client(base_url=b, headers=headers, timeout=REQUEST_TIMEOUT) for b in bases
        ]
        self.home = number % len(bases)  # each request goes there first
        self.crashed: BaseException | None = None
        self.log = log
        self.lock = threading.Lock()
        self.ledger = Ledger()
        self.rng = random.Random(number)
        self.sent = 0
        self.version = 0

    def close(self) -> None:
        for http in self.http:
            http.close()

    def send(self, op: str, method: str, path: str, **options: Any) -> httpx.Response | None:
        """The answer (not 503), trying each replica in turn; None when none answered
        within RETRY_FOR."""
        first = time.monotonic()
        server = self.home
        while True:
            began = time.monotonic()
            try:
                answer = self.http[server].request(method, path, **options)
            except httpx.TransportError as error:
                self._record(Attempt(op, server, began, time.monotonic(), None, repr(error)))
            else:
                self._record(
                    Attempt(
                        op, server, began, time.monotonic(), answer.status_code, answer.text[:300]
                    )
                )
                if (
                    answer.status_code != 503
                    and problem_kind(answer) != "idempotency-key-in-flight"
                ):
                    return answer
            if time.monotonic() - first > RETRY_FOR:
                return None
            server = (server + 1) % len(self.http)
            time.sleep(0.05)

    def _record(self, attempt: Attempt) -> None:
        with self.lock:
            self.log.append(attempt)

    def run(self, deadline: float) -> None:
        ops: list[tuple[Callable[[], None], int]] = [
            (self.claim, 35),
            (self.release, 20),
            (self.apply, 10),
            (self.check, 20),
            (self.heartbeat, 15),
        ]
        choices, weights = zip(*ops, strict=True)
        try:
            while time.monotonic() < deadline:
                self.rng.choices(choices, weights)[0]()
        except BaseException as error:  # the test fails on it, after the threads end
            self.crashed = error

    def claim(self) -> None:
        name = f"c{self.number}-{self.sent}"
        self.sent += 1
        units = self.rng.randint(1, 3)
        body = {"name": name, "units": units, "resources": {"cpu": self.rng.randint(1, 3)}}
        answer = self.send(
            "claim", "POST", "/v1/workloads", json=body, headers={"Idempotency-Key": name}
        )
        ledger = self.ledger
        if answer is None:
            ledger.unknown.add(name)
            return
        kind = problem_kind(answer)
        ledger.outcomes[f"claim {answer.status_code} {kind or ''}".strip()] += 1
        if answer.status_code == 201 or kind == "exists":
            ledger.accepted[name] = units
        elif answer.status_code == 409 and kind in ("unplaceable", "claim-conflict"):
            ledger.refused.add(name)
        elif kind == "idempotency-outcome-unknown":
            ledger.unknown.add(name)  # its replica died while it ran (the docstring)
        else:
            ledger.unknown.add(name)  # a violation already: the attempt log has it

    def release(self) -> None:
        ledger = self.ledger
        held = sorted(set(ledger.accepted) - ledger.released)
        if not held:
            return
        name = self.rng.choice(held)
        answer = self.send("release", "DELETE", f"/v1/workloads/{name}")
        if answer is None:
            ledger.unknown.add(name)
            return
        ledger.outcomes[f"release {answer.status_code}"] += 1
        if answer.status_code in (200, 404):
            ledger.released.add(name)

    def apply(self) -> None:
        self.version += 1
        document = {
            "name": f"doc{self.number}",
            "inventory": [
                {
                    "id": f"c{self.number}-box",
                    "capacity": {"cpu": self.rng.choice((2, 3, 4))},
                    "properties": {"tier": self.rng.choice(("gold", "silver"))},
                }
            ],
            "workloads": [
                {
                    "name": f"c{self.number}-svc",
                    "units": self.rng.randint(1, 2),
                    "resources": {"cpu": 1},
                    "constraints": "tier == gold",
                }
            ],
        }
        answer = self.send("apply", "POST", "/v1/apply", json=document)
        ledger = self.ledger
        if answer is None:
            ledger.apply_unknown.append(document)
            return
        kind = problem_kind(answer)
        ledger.outcomes[f"apply {answer.status_code} {kind or ''}".strip()] += 1
        if answer.status_code == 200:
            ledger.document = document
            ledger.apply_unknown.clear()

    def check(self) -> None:
        pick = self.rng.randrange(4)
        if pick == 0:
            answer = self.send("check", "POST", "/v1/plan", json=PLAN)
        elif pick == 1:
            answer = self.send("check", "GET", "/v1/placements", params={"limit": 50})
        elif pick == 2:
            answer = self.send("check", "GET", f"/v1/targets/{self.rng.choice(HOSTS)}")
        else:
            held = sorted(self.ledger.accepted) or ["none"]
            answer = self.send("check", "GET", f"/v1/workloads/{self.rng.choice(held)}")
        if answer is not None:
            self.ledger.outcomes[f"check {answer.status_code}"] += 1

    def heartbeat(self) -> None:
        host = self.rng.choice(HOSTS)
        answer = self.send("heartbeat", "POST", f"/v1/targets/{host}/heartbeat")
        if answer is not None:
            self.ledger.outcomes[f"heartbeat {answer.status_code}"] += 1


def problem_kind(answer: httpx.Response) -> str | None:
    if answer.headers.get("content-type") != "application/problem+json":
        return None
    kind = str(answer.json().get("type", ""))
    return kind.removeprefix("urn:placed:problem:")


class EventReader:
    """Pages `GET /v1/events` by id as a reader does (`after` the last id seen, long-poll)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.page(wait=1)
        except BaseException as error:
            self.client.crashed = error

    def page(self, wait: int = 0) -> int:
        after = self.seen[-1] if self.seen else 0
        params = {"after": after, "limit": 1000, "wait": wait}
        answer = self.client.send("events", "GET", "/v1/events", params=params)
        if answer is None or answer.status_code != 200:
            return 0
        items = answer.json()["items"]
        self.seen.extend(int(item["id"]) for item in items)
        return len(items)


def drop_connections(url: str) -> int:
    """Every connection to the database but this one, cut by the server."""
    database = make_url(url).database
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            cut = connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :db AND pid <> pg_backend_pid()"
                ),
                {"db": database},
            ).all()
    finally:
        admin.dispose()
    return sum(1 for (done,) in cut if done)


def run_load(
    url: str, seconds: float, drop: bool
) -> tuple[list[Client], list[Attempt], Faults, EventReader]:
    token = upgrade(url)
    log: list[Attempt] = []
    faults = Faults()
    with replicas(url, count=2) as servers:
        bases = [server.base for server in servers]
        setup = httpx.post(
            f"{bases[0]}/v1/apply",
            json=BASE,
            headers={"authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert setup.status_code == 200, setup.text
        # The replica killed is the one that commits (the lease holder): the writes in
        # flight there, forwarded by the other or its own, are what must not be lost
        # or committed twice.
        faults.killed = leader_of(bases, token)
        clients = [Client(n, bases, token, log) for n in range(CLIENTS)]
        reader = EventReader(Client(CLIENTS, bases, token, log))
        start = time.monotonic()
        deadline = start + seconds
        threads = [threading.Thread(target=c.run, args=(deadline,)) for c in clients]
        threads.append(threading.Thread(target=reader.run))
        for thread in threads:
            thread.start()
        try:
            inject(servers[faults.killed], url if drop else None, start, seconds, faults)
        finally:
            for thread in threads[:-1]:
                thread.join()
            reader.stop.set()
            threads[-1].join()
        # A replica leads again (the killed leader's lease taken over, or renewed by it
        # restarted): its `lease.acquired` is an event the reader must see too.
        leader_of(bases, token)
        while reader.page():  # the rest, once every client has its answers
            pass
        for client in [*clients, reader.client]:
            client.close()
    return clients, log, faults, reader


def leader_of(bases: list[str], token: str) -> int:
    """The replica holding the controller's lease (waiting for one to take it)."""
    until = time.monotonic() + 30
    while True:
        for index, base in enumerate(bases):
            seen = httpx.get(
                f"{base}/v1/leader", headers={"authorization": f"Bearer {token}"}, timeout=10
            )
            if seen.status_code == 200 and seen.json()["leading"]:
                return index
        assert time.monotonic() < until, "no replica took the lease"
        time.sleep(0.2)


def inject(
    victim: Replica, drop_url: str | None, start: float, seconds: float, faults: Faults
) -> None:
    """The kill a quarter into the run, the restart a second later, the connection drop
    at 60%."""
    time.sleep(max(0.0, start + seconds * 0.25 - time.monotonic()))
    faults.killed_at = time.monotonic()
    victim.kill()
    time.sleep(1.0)
    victim.start()
    faults.serving_again_at = time.monotonic()
    if drop_url is not None:
        time.sleep(max(0.0, start + seconds * 0.6 - time.monotonic()))
        faults.dropped_at = time.monotonic()
        faults.dropped = drop_connections(drop_url)


def check_invariants(
    url: str, clients: list[Client], reader: EventReader, checked: Counter[str] | None = None
) -> list[str]:
    """Every violation found in the rows, as a sentence; `checked` counts what was."""
    checked = Counter() if checked is None else checked
    engine = make_engine(url)
    try:
        rows = read_rows(engine)
    finally:
        engine.dispose()
    broken = broken_rows(rows)
    where = rows.where
    capacity = rows.capacity
    per_workload = rows.per_workload

    # What each client was told, against the rows.
    stored = {name: id_ for id_, (name, _) in rows.workloads.items()}
    placed_units = Counter(name.rsplit("/", 1)[0] for name in where)
    for client in clients:
        ledger = client.ledger
        for name, count in ledger.accepted.items():
            if name in ledger.released:
                if name in stored:
                    broken.append(f"{name} was released and is still stored")
                continue
            if name not in stored:
                broken.append(f"{name} was accepted and is not stored")
                continue
            units_stored = per_workload.get(stored[name], 0)
            if units_stored != count or placed_units[name] != count:
                broken.append(
                    f"{name} was accepted with {count} units: {units_stored} stored, "
                    f"{placed_units[name]} placed"
                )
        for name in ledger.refused:
            if name in stored:
                broken.append(f"{name} was refused and is stored")
        for name in ledger.unknown - set(ledger.accepted):
            # No answer: all of it or none of it.
            if name in stored and placed_units[name] != per_workload.get(stored[name], 0):
                broken.append(f"{name} (no answer) is stored half placed")
        box = f"c{client.number}-box"
        if ledger.document is not None:
            possible = [ledger.document, *ledger.apply_unknown]
            asked = {float(d["inventory"][0]["capacity"]["cpu"]) for d in possible}
            if capacity.get((box, "cpu"), (None, None))[0] not in asked:
                broken.append(
                    f"{box}: capacity {capacity.get((box, 'cpu'))} not one applied ({asked})"
                )

    checked.update(
        {
            "target resources": len(capacity),
            "placed units": len(where),
            "history rows": len(rows.history),
            "claims": sum(len(c.ledger.accepted) + len(c.ledger.refused) for c in clients),
            "client documents": sum(c.ledger.document is not None for c in clients),
            "events": len(rows.events),
        }
    )
    # After the reader's last page, the replica that took the killed leader's lease may
    # still commit its own bookkeeping (its lease.acquired, a sweep held back while the
    # lease is young): not skipped, only later than the last read. Nothing else may be.
    last = reader.seen[-1] if reader.seen else 0
    late = late_kinds(url, last)
    if reader.seen != [e for e in rows.events if e <= last] or any(
        not kind.startswith(("lease.", "sweep.")) for kind in late
    ):
        missed = sorted(set(rows.events) - set(reader.seen))[:10]
        broken.append(
            f"paging by id, the reader missed {missed} (or saw ids out of order); "
            f"after its last page: {late[:10]}"
        )
    return broken


def late_kinds(url: str, after: int) -> list[str]:
    """The kinds of the events committed after id `after`, in id order."""
    engine = make_engine(url)
    try:
        with reading(engine) as session:
            return list(
                session.scalars(
                    select(EventRow.kind).where(EventRow.id > after).order_by(EventRow.id)
                )
            )
    finally:
        engine.dispose()


def load_run(url: str, seconds: float, drop: bool) -> None:
    clients, log, faults, reader = run_load(url, seconds, drop)
    intolerable = [a for a in log if not faults.tolerated(a)]
    outcomes: Counter[str] = Counter()
    for client in clients:
        outcomes.update(client.ledger.outcomes)
    tolerated = Counter(
        f"{a.op} {'transport' if a.status is None else a.status}"
        for a in log
        if a.status in (None, 503)
    )
    summary = (
        f"{len(log)} requests, {sum(len(c.ledger.accepted) for c in clients)} claims accepted, "
        f"{len(reader.seen)} events read; faults: replica {faults.killed} killed, "
        f"{faults.dropped} connections dropped; tolerated {dict(tolerated)}; {dict(outcomes)}"
    )
    print(summary)
    crashed = [c.crashed for c in [*clients, reader.client] if c.crashed is not None]
    assert not crashed, crashed
    assert not intolerable, [(a.op, a.server, a.status, a.detail) for a in intolerable[:10]]
    # The run did what it says: each kind of request, some accepted and some refused.
    for op in ("claim", "release", "apply", "check", "heartbeat"):
        assert any(a.op == op and a.status is not None and a.status < 300 for a in log), op
    assert any(c.ledger.refused for c in clients), "the claims never filled the hosts"
    if drop:
        assert faults.dropped > 0, "no connection was there to drop"
    checked: Counter[str] = Counter()
    broken = check_invariants(url, clients, reader, checked)
    print(f"checked {dict(checked)}: {len(broken)} violations")
    assert not broken, broken[:20]


@pytest.mark.postgres
@pytest.mark.parametrize("database", ["postgresql"], indirect=True)
def test_load_on_postgresql_with_a_replica_killed_and_connections_dropped(database: str) -> None:
    load_run(database, SECONDS, drop=True)


def test_load_on_one_sqlite_file_with_a_replica_killed(tmp_path: Any) -> None:
    load_run(f"sqlite:///{tmp_path / 'placed.db'}", SQLITE_SECONDS, drop=False)
