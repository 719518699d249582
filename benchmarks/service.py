"""The service (issue 16): claims committed per second through the HTTP API; and
(issue 17) the time of a policy change re-evaluating 10,000 every-mode units.

For each database (a fresh SQLite file; a fresh PostgreSQL database of its own, dropped
afterwards) and each size, one real `placed serve` process on loopback: `POST /v1/apply`
of a generated inventory (zones of racks of hosts with cpu and memory, a few tags) is
timed, then one claim alone (timed: the server builds its in-memory world for the first
claim after a change), then 8 clients (a thread and an `http.client` connection each)
post one-unit claims (`POST /v1/workloads`) until a time window closes. A claim sent
before the window closes is waited for, so the rate is the claims committed over the
time from the first claim sent to the last answer. Every answer is counted: 201
(committed, with the `conflicts` the server retried), 409 `unplaceable` (refused), 409
`claim-conflict` (the server gave up), anything else an error. Afterwards the store must
hold exactly the committed workloads (and the first claim); a mismatch, a 5xx or a
transport error is a correctness failure. The server's CPU time over the window, per
committed claim, is reported beside the rate: it moves less than the rate when other
jobs share the machine.

Re-evaluation (issue 17): on a fresh database, the same inventory with a `tier` property
(gold on about half the hosts) applied alone, then one every-mode workload in a document
of its own, applied three times, each `POST /v1/apply` timed: on every target, narrowed
to `tier == gold` (the units on silver hosts removed in the change's transaction) and
widened back. The answer's changes are counted and must be what the rule says, and the
store must hold no unit off gold after the narrowing; otherwise it is a correctness
failure.

`--profile` runs one claim at the largest size in this process under cProfile
(`placed.operations.claim.claim` on the SQLite store the run left), and the report lists
the functions by cumulative and by own time.

Alone: `.venv/bin/python benchmarks/service.py [--quick] [--profile] [--only claims]`
prints this section (`--only claims`: the claims alone, without the re-evaluation);
`--quick` (the smoke test's) is SQLite only, at small sizes (200 targets for both
measurements) and a short window.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import http.client
import importlib.util
import io
import json
import math
import os
import pstats
import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

import compare
import placed
from harness import SEED, HotSpot, progress, table

# placed's service and store are imported where they are used: compare.py runs this
# benchmark against older trees, which have neither, and this section then says so.

BIN = Path(sys.executable).parent
BENCHMARKS_CHECKOUT_SRC = Path(__file__).resolve().parent.parent / "src"
POSTGRES_URL = os.environ.get(
    "PLACED_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)

# Issue 16's goal, reported beside the measurement and never enforced.
GOAL_CLAIMS_PER_SECOND = 500.0
GOAL_TARGETS = 10_000
CLIENTS = 8
# (targets, units already running there): a service's world is rarely empty, and a claim
# must not cost more as the units it holds grow.
SIZES = ((1_000, 0), (10_000, 0), (10_000, 30_000))
QUICK_SIZES = ((200, 0),)
RUNNING_PER_WORKLOAD = 10
WINDOW_SECONDS = 10.0
QUICK_WINDOW_SECONDS = 2.0
# A claim still unanswered this long after it was sent counts as an error, which bounds
# the run even when the server stalls.
CLAIM_TIMEOUT = 120.0
APPLY_TIMEOUT = 300.0

# Re-evaluation (issue 17): an every-mode workload on every target, then a policy change.
REEVALUATE_SIZES = (10_000,)
QUICK_REEVALUATE_SIZES = (200,)
GOLD_SHARE = 0.5  # the targets whose `tier` is gold: the narrowed policy keeps these

HOSTS_PER_RACK = 20
RACKS_PER_ZONE = 10
HOST_TAGS = ("ssd", "nvme", "gpu", "10g", "25g", "sriov", "numa2", "fips")
CPU_CHOICES = (16, 32, 48, 64)
MEMORY_CHOICES = (64, 128, 256, 512)
CLAIM = {"cpu": 1, "memory": 2}
TOP = 10


@dataclass(frozen=True, slots=True)
class ClaimRun:
    database: str  # SQLite or PostgreSQL
    targets: int
    running: int  # units placed by the applied spec before the claims
    apply_seconds: float
    # The first claim after the apply, sent alone before the window opens: the server
    # builds its world at the new revision for it (operations/replica.py).
    first_claim_seconds: float
    seconds: float  # from the first claim sent to the last answer
    committed: int
    refused: int  # 409 unplaceable: nothing fits
    gave_up: int  # 409 claim-conflict: others kept changing the same targets
    retried: int  # the sum of `conflicts` over the 201 answers
    latencies: list[float]  # of the committed claims, seconds
    stored: int  # workloads in the store afterwards
    errors: list[str]  # anything else: statuses, transport errors, a store mismatch
    server_cpu: float | None  # the server process's CPU seconds over the window (Linux)
    client_cpu: float = 0.0  # this process's CPU seconds over the window: the 8 clients

    @property
    def client_cpu_per_claim(self) -> float | None:
        return self.client_cpu / self.committed if self.committed else None

    @property
    def cpu_per_claim(self) -> float | None:
        """The server's CPU time per committed claim: what the claim costs, less
        sensitive than the rate to other jobs sharing the machine."""
        if self.server_cpu is None or not self.committed:
            return None
        return self.server_cpu / self.committed

    @property
    def rate(self) -> float:
        return self.committed / self.seconds if self.seconds > 0 else 0.0

    @property
    def label(self) -> str:
        running = f", {self.running:,} units running" if self.running else ""
        return f"{self.database}, {self.targets:,}{running}"

    @property
    def conflicts(self) -> int:
        return self.retried + self.gave_up


@dataclass(frozen=True, slots=True)
class Step:
    """One timed `POST /v1/apply` of the policy document, and the moves it answered."""

    label: str
    seconds: float
    placed: int  # unit.placed
    removed: int  # unit.removed
    moved: int  # unit.moved (in place or elsewhere)
    units: int  # every-mode units stored afterwards


@dataclass(frozen=True, slots=True)
class Reevaluation:
    database: str
    targets: int
    gold: int  # targets the narrowed policy keeps
    apply_seconds: float  # the inventory alone
    steps: list[Step]  # place on all, narrow to gold, widen back
    errors: list[str]  # a status other than 200, a count that is not what the rule says


@dataclass(frozen=True, slots=True)
class ServiceResult:
    runs: list[ClaimRun]
    reevaluations: list[Reevaluation]
    skipped: list[tuple[str, str]]  # (database, why it did not run)
    window: float
    quick: bool
    seconds: float  # the whole section, wall-clock
    load: float  # the machine's load average over the last 5 minutes, at the end
    profile: Profile | None

    @property
    def ok(self) -> bool:
        return not any(run.errors for run in self.runs) and not any(
            run.errors for run in self.reevaluations
        )


# -- the inventory -----------------------------------------------------------------------------


def inventory_document(targets: int, rng: random.Random) -> dict[str, Any]:
    """Zones of racks of hosts; each host has 0-2 tags, cpu and memory. No workloads."""
    zones: list[dict[str, Any]] = []
    made = 0
    while made < targets:
        zone_index = len(zones)
        racks: list[dict[str, Any]] = []
        while made < targets and len(racks) < RACKS_PER_ZONE:
            rack_id = f"z{zone_index:02d}-r{len(racks):02d}"
            hosts = []
            for host in range(min(HOSTS_PER_RACK, targets - made)):
                hosts.append(
                    {
                        "id": f"{rack_id}-h{host:02d}",
                        "tags": rng.sample(HOST_TAGS, rng.randint(0, 2)),
                        "capacity": {
                            "cpu": rng.choice(CPU_CHOICES),
                            "memory": rng.choice(MEMORY_CHOICES),
                        },
                    }
                )
            made += len(hosts)
            racks.append({"id": rack_id, "kind": "rack", "children": hosts})
        zones.append(
            {
                "id": f"z{zone_index:02d}",
                "kind": "zone",
                "tags": [f"zone{zone_index}"],
                "children": racks,
            }
        )
    return {"name": "bench", "inventory": zones}


# -- databases and servers ---------------------------------------------------------------------


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="placed-bench-") as directory:
        yield f"sqlite:///{Path(directory) / 'placed.db'}"


def postgres_unreachable(admin_url: str) -> str | None:
    """Why the PostgreSQL server cannot be used, or None when it answers."""
    admin = create_engine(admin_url, connect_args={"connect_timeout": 3})
    try:
        with admin.connect():
            return None
    except OperationalError as error:
        text = str(error.orig or error).strip().splitlines()
        return text[0] if text else type(error).__name__
    finally:
        admin.dispose()


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A database of its own on the server, dropped afterwards."""
    admin = create_engine(
        admin_url, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3}
    )
    name = f"placed_bench_{secrets.token_hex(6)}"
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def upgrade(url: str) -> str:
    """What `placed db upgrade` does, in this process (a fresh interpreter per database
    would cost seconds of imports on a loaded machine); the first root token."""
    from placed.store.schema import upgrade as upgrade_schema

    done = upgrade_schema(url)
    if done.root_token is None:
        raise RuntimeError(f"{done.url} was not empty: no root token was made")
    return done.root_token


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Server:
    base: str  # the base URL
    pid: int


@contextmanager
def serving(url: str, tree: Path | None = None, args: Sequence[str] = ()) -> Iterator[Server]:
    """One `placed serve` on loopback (`tree`: the `placed` of that source tree, else
    this checkout's; `args`: more of its options). Its stderr goes to a file, never a
    pipe nobody reads (a server that logs enough would block on a full pipe)."""
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        server = subprocess.Popen(
            [
                *(str(BIN / "placed"), "serve", "--port", str(port), "--log-level", "warning"),
                *("--database", url),
                *args,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=tree_environment(tree),
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                if server.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"placed serve exited: {log.read().strip()}")
                try:
                    httpx.get(f"{base}/healthz", timeout=2)
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            yield Server(base, server.pid)
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.seek(0)
            logged = log.read()
            if "Traceback" in logged:
                progress(f"placed serve logged a traceback:\n{logged[-4000:]}")


def tree_environment(tree: Path | None) -> dict[str, str] | None:
    """The environment a process of `tree`'s `placed` runs in (None: this one's)."""
    return None if tree is None else compare.environment(tree)


def upgrade_with(url: str, tree: Path) -> str:
    """`placed db upgrade` of `tree`'s `placed`, in a process of its own (its schema may
    not be this checkout's); the first root token it prints."""
    done = subprocess.run(
        [str(BIN / "placed"), "db", "upgrade", "--database", url],
        capture_output=True,
        text=True,
        env=tree_environment(tree),
        timeout=APPLY_TIMEOUT,
        check=False,
    )
    token = next((w for w in done.stdout.split() if w.startswith("plc_")), None)
    if done.returncode != 0 or token is None:
        raise RuntimeError(f"placed db upgrade ({tree}): {(done.stderr or done.stdout)[-500:]}")
    return token


def cpu_seconds(pid: int) -> float | None:
    """A process's user and system CPU time from /proc, None where there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- measuring ---------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the clients saw, shared between their threads under one lock."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    committed: int = 0
    refused: int = 0
    gave_up: int = 0
    retried: int = 0
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def record(self, status: int | None, body: bytes, seconds: float, error: str | None) -> None:
        with self.lock:
            if status is None:
                self.errors.append(error or "no answer")
                return
            try:
                answer = json.loads(body) if body else {}
            except ValueError:
                answer = {}
            kind = str(answer.get("type", "")) if isinstance(answer, dict) else ""
            if status == 201:
                self.committed += 1
                self.retried += int(answer.get("conflicts", 0))
                self.latencies.append(seconds)
            elif status == 409 and kind.endswith(":unplaceable"):
                self.refused += 1
            elif status == 409 and kind.endswith(":claim-conflict"):
                self.gave_up += 1
            else:
                self.errors.append(f"{status}: {body[:300].decode(errors='replace')}")


def claim_for(
    base: str, token: str, client_number: int | str, deadline: float, tally: Tally
) -> None:
    """One client: a claim at a time, each a new workload, until the deadline, on one
    kept-alive connection of the standard library's `http.client`. Not httpx: on this
    2-core machine the clients share the cores with the server, and httpx spends about
    1 ms of CPU on a request where `http.client` spends 0.3 ms (both measured here): a
    load generator should take as little of the server's machine as it can."""
    parsed = urllib.parse.urlsplit(base)
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    connection = http.client.HTTPConnection(
        parsed.hostname or "127.0.0.1", parsed.port, timeout=CLAIM_TIMEOUT
    )
    try:
        sent = 0
        while time.monotonic() < deadline:
            body = json.dumps({"name": f"c{client_number}-{sent}", "resources": CLAIM})
            sent += 1
            start = time.perf_counter()
            try:
                connection.request("POST", "/v1/workloads", body, headers)
                answer = connection.getresponse()
                content = answer.read()
            except (OSError, http.client.HTTPException) as error:
                tally.record(None, b"", 0.0, f"{type(error).__name__}: {error}")
                connection.close()  # the next request opens a new connection
                continue
            tally.record(answer.status, content, time.perf_counter() - start, None)
    finally:
        connection.close()


def measure(
    database: str,
    url: str,
    targets: int,
    window: float,
    seed: int,
    running: int = 0,
    tree: Path | None = None,
) -> ClaimRun:
    token = upgrade(url) if tree is None else upgrade_with(url, tree)
    document = inventory_document(targets, random.Random(seed + targets))
    running_workloads = running // RUNNING_PER_WORKLOAD
    document["workloads"] = [
        {"name": f"running-{i}", "units": RUNNING_PER_WORKLOAD, "resources": CLAIM}
        for i in range(running_workloads)
    ]
    body = json.dumps(document)
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    with serving(url, tree) as server:
        base = server.base
        start = time.perf_counter()
        applied = httpx.post(
            f"{base}/v1/apply", content=body, headers=headers, timeout=APPLY_TIMEOUT
        )
        apply_seconds = time.perf_counter() - start
        if applied.status_code != 200:
            raise RuntimeError(f"POST /v1/apply: {applied.status_code} {applied.text[:500]}")
        progress(
            f"service: {database}, {targets:,} targets, {running:,} units applied in "
            f"{apply_seconds:.2f} s; {CLIENTS} clients claiming for {window:g} s"
        )
        start = time.perf_counter()
        first = httpx.post(
            f"{base}/v1/workloads",
            json={"name": "first", "resources": CLAIM},
            headers=headers,
            timeout=CLAIM_TIMEOUT,
        )
        first_claim_seconds = time.perf_counter() - start
        if first.status_code != 201:
            raise RuntimeError(f"the first claim: {first.status_code} {first.text[:500]}")
        tally = Tally()
        # What this process holds (the inventory document, its body) out of the cycle
        # collector's sight while the clients run: a full pass over it holds all 8.
        gc.collect()
        gc.freeze()
        cpu_before = cpu_seconds(server.pid)
        clients_before = time.process_time()
        start = time.perf_counter()
        deadline = time.monotonic() + window
        clients = [
            threading.Thread(target=claim_for, args=(base, token, n, deadline, tally))
            for n in range(CLIENTS)
        ]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        seconds = time.perf_counter() - start
        clients_cpu = time.process_time() - clients_before
        gc.unfreeze()
        cpu_after = cpu_seconds(server.pid)
    stored = stored_workloads(url)
    errors = list(tally.errors)
    if stored != tally.committed + 1 + running_workloads:
        errors.append(
            f"the store holds {stored} workloads, {tally.committed} were committed "
            f"in the window, one before it and {running_workloads} applied"
        )
    run = ClaimRun(
        database,
        targets,
        running_workloads * RUNNING_PER_WORKLOAD,
        apply_seconds,
        first_claim_seconds,
        seconds,
        tally.committed,
        tally.refused,
        tally.gave_up,
        tally.retried,
        sorted(tally.latencies),
        stored,
        errors,
        None if cpu_before is None or cpu_after is None else cpu_after - cpu_before,
        clients_cpu,
    )
    progress(
        f"service: {run.label}: {run.committed} committed in "
        f"{seconds:.1f} s ({run.rate:.1f}/s), {run.conflicts} conflicts, "
        f"{len(errors)} errors"
    )
    return run


def tiered_inventory(targets: int, rng: random.Random) -> tuple[dict[str, Any], set[str]]:
    """The claims' inventory, each host with a `tier` property: gold or silver. The hosts
    that are gold."""
    document = inventory_document(targets, rng)
    gold: set[str] = set()
    for zone in document["inventory"]:
        for rack in zone["children"]:
            for host in rack["children"]:
                tier = "gold" if rng.random() < GOLD_SHARE else "silver"
                host["properties"] = {"tier": tier}
                if tier == "gold":
                    gold.add(host["id"])
    return document, gold


def policy_document(constraint: str | None) -> dict[str, Any]:
    """The every-mode workload alone, in a document of its own: the timed change is the
    policy, not the inventory."""
    workload: dict[str, Any] = {"name": "agents", "mode": "every"}
    if constraint is not None:
        workload["constraints"] = constraint
    return {"name": "policy", "workloads": [workload]}


def reevaluate(database: str, url: str, targets: int, seed: int) -> Reevaluation:
    """The inventory, then the policy on every target, narrowed to the gold ones and
    widened back, each `POST /v1/apply` timed; the moves counted from its answer and the
    units from the store."""
    token = upgrade(url)
    document, gold = tiered_inventory(targets, random.Random(seed + targets + 1))
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    errors: list[str] = []
    steps: list[Step] = []
    with (
        serving(url) as server,
        httpx.Client(base_url=server.base, headers=headers, timeout=APPLY_TIMEOUT) as client,
    ):
        start = time.perf_counter()
        applied = client.post("/v1/apply", content=json.dumps(document))
        apply_seconds = time.perf_counter() - start
        if applied.status_code != 200:
            raise RuntimeError(f"POST /v1/apply: {applied.status_code} {applied.text[:500]}")
        plan = [
            ("place on every target", None, targets, 0, targets),
            ("narrow to tier == gold", "tier == gold", 0, targets - len(gold), len(gold)),
            ("widen back to every target", None, targets - len(gold), 0, targets),
        ]
        for label, constraint, placed, removed, units in plan:
            start = time.perf_counter()
            answer = client.post("/v1/apply", content=json.dumps(policy_document(constraint)))
            seconds = time.perf_counter() - start
            if answer.status_code != 200:
                errors.append(f"{label}: {answer.status_code} {answer.text[:300]}")
                break
            kinds = Counter(change["kind"] for change in answer.json()["changes"])
            on, off_gold = every_mode_units(url, gold)
            step = Step(
                label,
                seconds,
                kinds["unit.placed"],
                kinds["unit.removed"],
                kinds["unit.moved"],
                on,
            )
            steps.append(step)
            if (step.placed, step.removed, step.moved, step.units) != (placed, removed, 0, units):
                errors.append(
                    f"{label}: {step.placed} placed, {step.removed} removed, {step.moved} "
                    f"moved, {step.units} stored; the rule says {placed}, {removed}, 0, {units}"
                )
            if constraint is not None and off_gold:
                errors.append(f"{label}: {off_gold} units remain on targets that are not gold")
            progress(
                f"service: {database}, {targets:,} targets, {label}: {seconds:.2f} s "
                f"({step.placed:,} placed, {step.removed:,} removed)"
            )
    return Reevaluation(database, targets, len(gold), apply_seconds, steps, errors)


def every_mode_units(url: str, gold: set[str]) -> tuple[int, int]:
    """The every-mode workload's placed units, and how many of them are off gold."""
    from placed.store.database import make_engine, reading
    from placed.store.tables import Placement, Target, Unit, Workload

    engine = make_engine(url)
    try:
        with reading(engine) as session:
            where = list(
                session.scalars(
                    select(Target.name)
                    .join(Placement, Placement.target_id == Target.id)
                    .join(Unit, Unit.id == Placement.unit_id)
                    .join(Workload, Workload.id == Unit.workload_id)
                    .where(Workload.name == "agents")
                )
            )
    finally:
        engine.dispose()
    return len(where), sum(1 for name in where if name not in gold)


def stored_workloads(url: str) -> int:
    from placed.store.database import make_engine, reading
    from placed.store.tables import Workload

    engine = make_engine(url)
    try:
        with reading(engine) as session:
            return int(session.scalar(select(func.count()).select_from(Workload)) or 0)
    finally:
        engine.dispose()


@dataclass(frozen=True, slots=True)
class Stage:
    label: str
    calls: int
    seconds: float  # cumulative, over its calls


@dataclass(frozen=True, slots=True)
class Profile:
    targets: int
    plain_seconds: float  # one claim without the profiler
    seconds: float  # the profiled claim, cProfile's overhead included
    stages: list[Stage]
    cumulative: list[HotSpot]
    own: list[HotSpot]


def stage_functions() -> list[tuple[str, list[Callable[..., Any]]]]:
    """The steps a claim takes, in order, each with the functions that are that step
    (none inside another's, so their times add up)."""
    from placed.engine.planner import Planner
    from placed.engine.report import Explainer
    from placed.operations import claim as claiming
    from placed.operations import placing, transactions
    from placed.spec.load import load_spec_data
    from placed.store import world
    from placed.store.world import Snapshot

    return [
        ("read the world (`store.world.read`)", [world.read]),
        (
            "copy the snapshot and add the workload (`claim.with_workload`, deepcopy)",
            [claiming.with_workload],
        ),
        ("the snapshot as one spec document (`Snapshot.document`)", [Snapshot.document]),
        ("the document as a Spec (`load_spec_data`)", [load_spec_data]),
        ("the index (`Planner(spec)`)", [Planner.__init__]),
        ("the plan state (`Planner.initial_state`)", [Planner.initial_state]),
        ("plan every unit (`Planner.plan`)", [Planner.plan]),
        ("explain each placement (`Explainer`)", [Explainer.__init__, Explainer.reason]),
        ("the moves and usage (`placing.diff`, `placing.usage`)", [placing.diff, placing.usage]),
        ("write the rows (`transactions._write`)", [transactions._write]),
        ("the answer (`claim.answer`)", [claiming.answer]),
    ]


def profile_claim(url: str, targets: int) -> Profile:
    """One claim in this process under cProfile, after an unprofiled one (which pays the
    first-call costs a running server has already paid, and gives the plain time)."""
    from placed.operations.claim import claim
    from placed.spec.schema import WorkloadSpec
    from placed.store.claims import Actor
    from placed.store.database import make_engine

    engine = make_engine(url)
    try:
        start = time.perf_counter()
        claim(engine, WorkloadSpec.model_validate({"name": "warm", "resources": CLAIM}), Actor())
        plain = time.perf_counter() - start
        spec = WorkloadSpec.model_validate({"name": "profiled", "resources": CLAIM})
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.runcall(claim, engine, spec, Actor())
        seconds = time.perf_counter() - start
    finally:
        engine.dispose()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("cumulative")
    stats.print_stats(40)
    print(out.getvalue(), file=sys.stderr)
    rows = stats.stats  # type: ignore[attr-defined]
    stages = []
    for label, functions in stage_functions():
        keys = {
            (f.__code__.co_filename, f.__code__.co_firstlineno, f.__code__.co_name)
            for f in functions
        }
        found = [row for key, row in rows.items() if key in keys]
        stages.append(Stage(label, sum(int(r[1]) for r in found), sum(float(r[3]) for r in found)))
    return Profile(
        targets, plain, seconds, stages, hot_spots(rows, 3, seconds), hot_spots(rows, 2, seconds)
    )


def hot_spots(rows: dict[Any, Any], column: int, total: float) -> list[HotSpot]:
    """The TOP functions by a column of cProfile's rows (2: own time, 3: cumulative), each
    with its share of the whole claim."""
    ranked = sorted(rows.items(), key=lambda item: -item[1][column])
    root = str(Path(placed.__file__).resolve().parents[2]) + "/"
    spots = []
    for (file, line, name), row in ranked:
        if "_lsprof" in name or name.startswith("<method 'disable'"):
            continue
        # Library paths are long: from site-packages (or the standard library) on.
        shown = file.replace(root, "")
        for marker in ("site-packages/", "lib/python3."):
            if marker in shown:
                shown = shown.split(marker, 1)[1]
                if marker != "site-packages/":
                    shown = shown.split("/", 1)[1]
                break
        spots.append(
            HotSpot(
                f"{shown}:{line}({name})" if line else name,
                int(row[1]),
                float(row[column]),
                float(row[column]) / total,
            )
        )
        if len(spots) == TOP:
            break
    return spots


def run(
    quick: bool,
    profile: bool,
    seed: int = SEED,
    postgres_url: str = POSTGRES_URL,
    only_claims: bool = False,
) -> ServiceResult:
    began = time.perf_counter()
    sizes = QUICK_SIZES if quick else SIZES
    window = QUICK_WINDOW_SECONDS if quick else WINDOW_SECONDS
    runs: list[ClaimRun] = []
    reevaluations: list[Reevaluation] = []
    reevaluate_sizes: tuple[int, ...] = ()
    if not only_claims:
        reevaluate_sizes = QUICK_REEVALUATE_SIZES if quick else REEVALUATE_SIZES
    skipped: list[tuple[str, str]] = []
    profiled: Profile | None = None
    if importlib.util.find_spec("placed.service") is None:
        why = f"the placed at {Path(placed.__file__).parent} has no service"
        return ServiceResult([], [], [("The service", why)], window, quick, 0.0, 0.0, None)
    with sqlite_database() as base_url:
        for targets, running in sizes:
            # A fresh file per size: the sizes must not share a world.
            url = base_url.replace("placed.db", f"placed-{targets}-{running}.db")
            runs.append(measure("SQLite", url, targets, window, seed, running))
            if profile and not running and targets == max(t for t, _ in sizes):
                progress(f"service: profiling one claim at {targets:,} targets (SQLite)")
                profiled = profile_claim(url, targets)
        for targets in reevaluate_sizes:
            url = base_url.replace("placed.db", f"placed-every-{targets}.db")
            reevaluations.append(reevaluate("SQLite", url, targets, seed))
    unreachable = None if quick else postgres_unreachable(postgres_url)
    if unreachable is not None:
        skipped.append(("PostgreSQL", f"unreachable at {postgres_url}: {unreachable}"))
        progress(f"service: PostgreSQL skipped: {unreachable}")
    elif not quick:
        for targets, running in sizes:
            with postgres_database(postgres_url) as url:
                runs.append(measure("PostgreSQL", url, targets, window, seed, running))
        for targets in reevaluate_sizes:
            with postgres_database(postgres_url) as url:
                reevaluations.append(reevaluate("PostgreSQL", url, targets, seed))
    seconds = time.perf_counter() - began
    return ServiceResult(
        runs, reevaluations, skipped, window, quick, seconds, os.getloadavg()[1], profiled
    )


@dataclass(frozen=True, slots=True)
class Pair:
    """One window of claims on one tree, in an interleaved comparison."""

    round: int
    side: str  # "old" or "new"
    run: ClaimRun


def against(
    old: Path,
    new: Path,
    database: str,
    targets: int,
    window: float,
    rounds: int,
    seed: int = SEED,
    postgres_url: str = POSTGRES_URL,
) -> list[Pair]:
    """Claims through the API of two source trees' `placed serve`, one window each per
    round, alternating (old new, new old, ...) so that the machine's drift weighs on both
    alike; each window on a fresh database and server, set up by that tree's own
    `placed db upgrade`. The rate moves by a third between minutes on a shared machine:
    only pairs taken side by side compare two trees."""
    pairs: list[Pair] = []
    for number in range(1, rounds + 1):
        sides = [("old", old), ("new", new)]
        for side, tree in sides if number % 2 else reversed(sides):
            fresh = sqlite_database() if database == "sqlite" else postgres_database(postgres_url)
            with fresh as url:
                label = "SQLite" if database == "sqlite" else "PostgreSQL"
                pairs.append(
                    Pair(number, side, measure(label, url, targets, window, seed, 0, tree))
                )
    return pairs


def against_section(pairs: list[Pair], old: Path, new: Path) -> list[str]:
    rows = [
        [
            str(p.round),
            f"{p.side} ({old if p.side == 'old' else new})",
            f"{p.run.rate:.1f}",
            "n/a" if p.run.cpu_per_claim is None else f"{p.run.cpu_per_claim * 1000:.2f} ms",
            f"{p.run.conflicts:,}",
            str(len(p.run.errors)),
        ]
        for p in pairs
    ]

    def median(side: str, measure: Callable[[ClaimRun], float | None]) -> float | None:
        found = [v for p in pairs if p.side == side and (v := measure(p.run)) is not None]
        return statistics.median(found) if found else None

    lines = [
        f"## Claims on two trees, interleaved ({pairs[0].run.database}, "
        f"{pairs[0].run.targets:,} targets, {CLIENTS} clients)",
        "",
        *table(
            ["round", "tree", "committed/s", "server CPU per claim", "conflicts", "errors"], rows
        ),
        "",
    ]
    rates = median("old", lambda r: r.rate), median("new", lambda r: r.rate)
    cpus = median("old", lambda r: r.cpu_per_claim), median("new", lambda r: r.cpu_per_claim)
    if rates[0] and rates[1]:
        lines.append(
            f"Median committed/s: old {rates[0]:.1f}, new {rates[1]:.1f} "
            f"(new/old {rates[1] / rates[0]:.2f})."
        )
    if cpus[0] and cpus[1]:
        lines.append(
            f"Median server CPU per claim: old {cpus[0] * 1000:.2f} ms, new "
            f"{cpus[1] * 1000:.2f} ms (new/old {cpus[1] / cpus[0]:.2f})."
        )
    for p in pairs:
        for error in p.run.errors[:3]:
            lines.append(f"- round {p.round}, {p.side}: {error}")
    return [*lines, ""]


# -- the report --------------------------------------------------------------------------------


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted values."""
    if not values:
        return float("nan")
    return values[min(len(values), max(1, math.ceil(share * len(values)))) - 1]


def section(result: ServiceResult) -> list[str]:
    rows = []
    for run in result.runs:
        rows.append(
            [
                # One cell, so that compare.py (which keys a row by its first) tells them apart.
                run.label,
                f"{run.apply_seconds:.2f} s",
                milliseconds(run.first_claim_seconds),
                f"{run.committed + run.refused + run.gave_up + len(run.errors):,}",
                f"{run.committed:,}",
                f"{run.seconds:.1f} s",
                f"{run.rate:,.1f}",
                "n/a" if run.cpu_per_claim is None else f"{run.cpu_per_claim * 1000:.2f} ms",
                "n/a"
                if run.client_cpu_per_claim is None
                else f"{run.client_cpu_per_claim * 1000:.2f} ms",
                f"{run.refused:,}",
                f"{run.conflicts:,} ({run.retried:,} retried, {run.gave_up:,} gave up)",
                milliseconds(percentile(run.latencies, 0.5)) if run.latencies else "n/a",
                milliseconds(percentile(run.latencies, 0.99)) if run.latencies else "n/a",
                f"{len(run.errors):,}",
            ]
        )
    lines = [
        "## The service: claims through the API",
        "",
        f"One `placed serve` process per database and size, on loopback (uvicorn, one "
        f"worker). The inventory is zones of {RACKS_PER_ZONE} racks of {HOSTS_PER_RACK} "
        f"hosts, each with 0-2 of {len(HOST_TAGS)} tags, {'/'.join(map(str, CPU_CHOICES))} "
        f"cpu and {'/'.join(map(str, MEMORY_CHOICES))} memory, applied as one JSON body "
        f"(`POST /v1/apply`, timed). One claim is then sent alone and timed (first claim): "
        "the server builds its in-memory world at the new revision for it, once. Then "
        f"{CLIENTS} clients (a thread and a kept-alive `http.client` connection "
        f"each, every request with the root token) post one-unit claims "
        f"(`POST /v1/workloads`, `{json.dumps({'name': 'c3-17', 'resources': CLAIM})}`) "
        f"for {result.window:g} s; a claim sent before the window closes is waited for, so "
        "the rate is committed claims over the time from the first claim sent to the last "
        "answer. Conflicts are the server-side retries the 201 answers report (`conflicts`) "
        "plus the 409 `claim-conflict` answers (the server gave up); refused are 409 "
        "`unplaceable`. Latency is of the committed claims. The server's CPU per claim is "
        "its process's user and system time over the window (from /proc) per committed "
        "claim: all 8 clients run in the benchmark's own process, so this is what a claim "
        "costs the server, and other jobs on the machine change it less than the rate; the "
        "clients' CPU per claim is the benchmark process's over the window, what the load "
        "generator takes of the same 2 cores. "
        f"With units running, the applied spec holds workloads of {RUNNING_PER_WORKLOAD} "
        "such units too, placed by that apply: the claims then land in a world that is "
        "not empty, as a service's rarely is. "
        "Each database is fresh: a SQLite file in a temporary directory, a PostgreSQL "
        "database of its own "
        "(placed_bench_<random>, dropped afterwards).",
        "",
        *table(
            [
                "database, targets",
                "apply the spec",
                "first claim",
                "claims",
                "committed",
                "time",
                "committed/s",
                "server CPU per claim",
                "clients' CPU per claim",
                "refused",
                "conflicts",
                "p50",
                "p99",
                "errors",
            ],
            rows,
        ),
        "",
    ]
    for database, why in result.skipped:
        lines += [f"{database} did not run: {why}.", ""]
    errors = [(run, error) for run in result.runs for error in run.errors[:3]]
    if errors:
        lines += ["Errors (the first of each run):", ""]
        lines += [f"- {run.label}: `{error}`" for run, error in errors]
        lines += [""]
    goal = f"at least {GOAL_CLAIMS_PER_SECOND:,.0f} claims/s at {GOAL_TARGETS:,} targets"
    goal_rows = []
    for run in result.runs:
        if run.targets == GOAL_TARGETS and not run.running:
            met = run.rate >= GOAL_CLAIMS_PER_SECOND
            goal_rows.append(
                [
                    f"{goal} ({run.database}, {CLIENTS} clients)",
                    f"{run.rate:,.1f}/s ({run.rate / GOAL_CLAIMS_PER_SECOND:.2%} of the goal)",
                    "PASS" if met else "not yet",
                ]
            )
    if not goal_rows:
        goal_rows.append([goal, "n/a", "not judged (quick)" if result.quick else "not run"])
    goal_rows.append(
        [
            "no 5xx, no transport error; the store holds exactly the committed claims",
            f"{sum(len(run.errors) for run in result.runs)} errors",
            "FAIL" if any(run.errors for run in result.runs) else "PASS",
        ]
    )
    lines += [*table(["goal", "measured", "result"], goal_rows), ""]
    lines += [
        "The speed goal is reported, never enforced (it is the machine's as much as "
        "placed's); the last row is correctness and makes the script exit 1.",
        "",
    ]
    single = [run for run in result.runs if run.committed + run.refused <= CLIENTS]
    if single:
        lines += [
            "Where a run shows no more claims than clients ("
            + ", ".join(run.label for run in single)
            + "), every client's first claim outlasted the window: those figures are "
            f"{CLIENTS} claims made at once, and p99 is their slowest.",
            "",
        ]
    if result.runs:
        lines += [
            f"The section took {result.seconds / 60:.1f} min; the machine's load average over "
            f"the last five minutes of it was {result.load:.1f} on {os.cpu_count()} cores "
            "(other jobs share it: a claim's time scales with the load, as one server process "
            "runs its claims on one interpreter).",
            "",
        ]
    if result.reevaluations:
        lines += reevaluation_section(result.reevaluations)
    if result.profile is not None:
        lines += profile_section(result.profile)
    return lines


def reevaluation_section(found: list[Reevaluation]) -> list[str]:
    rows = []
    for run in found:
        at = f"{run.database} {run.targets:,}"
        rows.append([f"{at}: the inventory, no workload", f"{run.apply_seconds:.2f} s", *[""] * 4])
        rows += [
            [
                f"{at}: {step.label}",
                f"{step.seconds:.2f} s",
                f"{step.placed:,}",
                f"{step.removed:,}",
                f"{step.moved:,}",
                f"{step.units:,}",
            ]
            for step in run.steps
        ]
    errors = [(run, error) for run in found for error in run.errors[:3]]
    lines = [
        "### Re-evaluation: a policy change on every-mode units (issue 17)",
        "",
        "On a fresh database per run, one `placed serve`: the inventory above (each host also "
        f"with a `tier` property, gold for {GOLD_SHARE:.0%} of them at random) applied alone, "
        "then a document of its own holding one every-mode workload (`agents`, `mode: every`, "
        "no resources), applied three times and each `POST /v1/apply` timed: without a "
        "constraint (a unit on every target), with `constraints: tier == gold` (the change "
        "re-evaluates every unit: those on silver hosts are removed, the agbot's cancel), "
        "and without it again (the silver hosts gain theirs back). Placed, removed and moved "
        "are the answer's `changes`; units is the workload's placements in the store "
        "afterwards.",
        "",
        *table(
            ["database, targets: change", "time", "placed", "removed", "moved", "units"],
            rows,
        ),
        "",
    ]
    if errors:
        lines += ["Errors:", ""]
        lines += [f"- {run.database}, {run.targets:,}: `{error}`" for run, error in errors]
        lines += [""]
    lines += [
        *table(
            ["check", "measured", "result"],
            [
                [
                    "re-evaluation: each change places and removes exactly the units its rule "
                    "says, and none stays off gold",
                    f"{sum(len(run.errors) for run in found)} errors",
                    "FAIL" if any(run.errors for run in found) else "PASS",
                ]
            ],
        ),
        "",
    ]
    return lines


def profile_section(profile: Profile) -> list[str]:
    accounted = sum(stage.seconds for stage in profile.stages)
    rest = Stage(
        "the rest: transactions, the revision lock, commit", 0, profile.seconds - accounted
    )
    return [
        f"### Where one claim's time goes at {profile.targets:,} targets (`--profile`)",
        "",
        "One claim (`placed.operations.claim.claim(engine, WorkloadSpec(...), Actor())`) "
        "in this process, on the SQLite store the run above left (no other request running): "
        f"{profile.plain_seconds:.2f} s without the profiler, then another "
        f"{profile.seconds:.2f} s under cProfile, which inflates it. Share is of the profiled "
        "claim. First its steps, in the order a claim takes them:",
        "",
        *table(
            ["step", "calls", "time", "share"],
            [
                [
                    stage.label,
                    f"{stage.calls:,}" if stage.calls else "",
                    f"{stage.seconds:.3f} s",
                    f"{stage.seconds / profile.seconds:.1%}",
                ]
                for stage in [*profile.stages, rest]
            ],
        ),
        "",
        f"The top {TOP} functions by cumulative time (the function and everything it calls):",
        "",
        *hot_spot_rows(profile.cumulative, "cumulative"),
        "",
        "And by own time (callees excluded):",
        "",
        *hot_spot_rows(profile.own, "own time"),
        "",
    ]


def hot_spot_rows(spots: list[HotSpot], what: str) -> list[str]:
    return table(
        ["function", "calls", what, "share"],
        [
            [f"`{h.function}`", f"{h.calls:,}", f"{h.seconds:.3f} s", f"{h.share:.1%}"]
            for h in spots
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="SQLite only, small and short")
    parser.add_argument(
        "--profile", action="store_true", help="profile one claim at the largest size"
    )
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--postgres", default=POSTGRES_URL, help="the PostgreSQL server's URL")
    parser.add_argument(
        "--only",
        choices=["claims"],
        help="claims: the claims through the API alone (no re-evaluation)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="DIR",
        help="compare claims with the placed of another source tree (a checkout or its "
        "src), in interleaved windows: the rest of the benchmark does not run",
    )
    parser.add_argument(
        "--tree",
        type=Path,
        metavar="DIR",
        help="with --against: the new tree (default: this checkout's src)",
    )
    parser.add_argument(
        "--rounds", type=int, default=4, help="with --against: windows per tree (default 4)"
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgresql"],
        default="postgresql",
        help="with --against: the database (default postgresql)",
    )
    parser.add_argument(
        "--targets", type=int, default=GOAL_TARGETS, help="with --against: inventory size"
    )
    parser.add_argument(
        "--window", type=float, default=WINDOW_SECONDS, help="with --against: seconds a window"
    )
    args = parser.parse_args(argv)
    if args.against is not None:
        try:
            old = compare.source_tree(args.against)
            new = compare.source_tree(args.tree or BENCHMARKS_CHECKOUT_SRC)
            for tree in (old, new):
                compare.imported_from(sys.executable, tree)
        except compare.CompareError as error:
            print(f"service.py: {error}", file=sys.stderr)
            return 2
        if args.rounds < 1 or args.targets < 1 or args.window <= 0:
            print("service.py: --rounds, --targets and --window must be positive", file=sys.stderr)
            return 2
        pairs = against(
            old,
            new,
            args.database,
            args.targets,
            args.window,
            args.rounds,
            args.seed,
            args.postgres,
        )
        print("\n".join(against_section(pairs, old, new)), end="")
        return 0 if all(not p.run.errors for p in pairs) else 1
    result = run(args.quick, args.profile, args.seed, args.postgres, args.only == "claims")
    lines = section(result)
    # Alone, the section says what produced it (run.py's preamble does that for the report).
    command = " ".join([".venv/bin/python", "benchmarks/service.py", *(argv or sys.argv[1:])])
    lines[1:1] = ["", f"From `{command}`."]
    print("\n".join(lines), end="")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
