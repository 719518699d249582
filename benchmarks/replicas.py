"""Two replicas on one PostgreSQL database (issue 35's goal): one-unit claims from clients
alternating between two `placed serve`, against the same clients on one server, in the
same run on the same world.

One fresh PostgreSQL database (dropped afterwards), an inventory of `--targets` hosts
(and `--running` units) applied, one warm claim, then for each of `--rounds` rounds:

1. **One replica**: the server that holds the lease alone; 8 clients (a thread and an
   `http.client` connection each, as service.py's) post one-unit claims for `--window`
   seconds.
2. **Two replicas**: a second `placed serve` started on the database (it follows: the
   first holds the lease and advertises its address), one claim through it that must
   come back forwarded (`X-Placed-Forwarded-To`), then the 8 clients again for
   `--window` seconds, client n sending to replica n mod 2.

Each round does this twice, with fresh servers each time: forwarding, then, for
comparison, both servers listening on every address, so they advertise none and each
commits its own claims (optimistic commits from every replica, as before issue 35's
forwarding). The ratio is the pair's rate over one replica's, per round and of the
medians. Afterwards
the store must hold exactly the workloads the clients' answers say were committed; a
mismatch, a 5xx, a transport error or a claim the second replica did not forward is a
correctness failure (exit 1).

    .venv/bin/python benchmarks/replicas.py [--targets 10000] [--running 0]
        [--window 10] [--rounds 2]

`make bench` (run.py) runs it at 10,000 targets after mixed.py, unless PostgreSQL is
unreachable (then the section says so); `--quick` leaves it out (SQLite only).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field

import httpx

from harness import progress
from service import (
    APPLY_TIMEOUT,
    CLAIM,
    CLAIM_TIMEOUT,
    CLIENTS,
    POSTGRES_URL,
    RUNNING_PER_WORKLOAD,
    Server,
    Tally,
    claim_for,
    cpu_seconds,
    inventory_document,
    postgres_database,
    postgres_unreachable,
    serving,
    stored_workloads,
    upgrade,
)

SEED = 35
GOAL_RATIO = 0.9  # issue 35: two replicas, clients alternating, against one
FULL = (10_000, 0, 10.0, 2)  # targets, units running, window, rounds
FORWARDED_TO = "x-placed-forwarded-to"  # placed.service.forwarding.ANSWERED_BY
# How the pair runs: the follower forwarding its writes to the leader (the servers
# advertise the address they listen on), and, for comparison in the same run, each
# committing its own (listening on every address, they advertise none).
FORWARDING, EACH_COMMITS = "forwarding", "each commits"
MODES: dict[str, tuple[str, ...]] = {FORWARDING: (), EACH_COMMITS: ("--host", "0.0.0.0")}


@dataclass
class Round:
    mode: str  # a key of MODES
    one: float  # claims/s, one replica
    two: float  # claims/s, two replicas, clients alternating
    # CPU seconds per claim committed: the leader alone; the leader and the follower
    # in the pair's window (None where /proc has none)
    one_cpu: float | None = None
    leader_cpu: float | None = None
    follower_cpu: float | None = None

    @property
    def ratio(self) -> float:
        return self.two / self.one if self.one else 0.0


@dataclass
class PairRun:
    targets: int
    running: int
    window: float
    rounds: list[Round] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def one(self, mode: str = FORWARDING) -> float:
        found = [r.one for r in self.rounds if r.mode == mode]
        return statistics.median(found) if found else 0.0

    def two(self, mode: str = FORWARDING) -> float:
        found = [r.two for r in self.rounds if r.mode == mode]
        return statistics.median(found) if found else 0.0

    def ratio(self, mode: str = FORWARDING) -> float:
        one = self.one(mode)
        return self.two(mode) / one if one else 0.0


def _window(
    servers: list[Server], token: str, label: str, window: float, tally: Tally
) -> tuple[float, list[float | None]]:
    """Claims/s of 8 clients, client n on servers[n mod len(servers)], for one window,
    and each server's CPU seconds per claim committed in it."""
    bases = [server.base for server in servers]
    before = tally.committed
    cpu_before = [cpu_seconds(server.pid) for server in servers]
    start = time.perf_counter()
    deadline = time.monotonic() + window
    clients = [
        threading.Thread(
            target=claim_for,
            args=(bases[n % len(bases)], token, f"{label}-{n}", deadline, tally),
        )
        for n in range(CLIENTS)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    seconds = time.perf_counter() - start
    committed = tally.committed - before
    cpu = [
        None if a is None or b is None or not committed else (b - a) / committed
        for a, b in zip(cpu_before, [cpu_seconds(server.pid) for server in servers], strict=True)
    ]
    return (committed / seconds if seconds else 0.0), cpu


def _claim(base: str, token: str, name: str) -> httpx.Response:
    return httpx.post(
        f"{base}/v1/workloads",
        json={"name": name, "resources": CLAIM},
        headers={"authorization": f"Bearer {token}"},
        timeout=CLAIM_TIMEOUT,
    )


def measure(targets: int, running: int, window: float, rounds: int, seed: int) -> PairRun:
    found = PairRun(targets, running, window)
    tally = Tally()
    made = 0  # claims made outside the windows, committed
    with postgres_database(POSTGRES_URL) as url:
        token = upgrade(url)
        document = inventory_document(targets, random.Random(seed + targets))
        running_workloads = running // RUNNING_PER_WORKLOAD
        document["workloads"] = [
            {"name": f"running-{i}", "units": RUNNING_PER_WORKLOAD, "resources": CLAIM}
            for i in range(running_workloads)
        ]
        headers = {"authorization": f"Bearer {token}"}
        with serving(url) as first:
            applied = httpx.post(
                f"{first.base}/v1/apply", json=document, headers=headers, timeout=APPLY_TIMEOUT
            )
            if applied.status_code != 200:
                raise RuntimeError(f"POST /v1/apply: {applied.status_code} {applied.text[:300]}")
        for number in range(rounds):
            for mode in MODES:
                made += _round(url, token, number, mode, window, tally, found)
        stored = stored_workloads(url)
    found.errors += tally.errors[:20]
    if stored != tally.committed + made + running_workloads:
        found.errors.append(
            f"the store holds {stored} workloads: {tally.committed} were committed in the "
            f"windows, {made} outside them and {running_workloads} applied"
        )
    return found


def _round(
    url: str, token: str, number: int, mode: str, window: float, tally: Tally, found: PairRun
) -> int:
    """One round of `mode`: the leader alone, then the pair; the claims committed outside
    the windows."""
    label = f"r{number}-{mode.replace(' ', '-')}"
    args = MODES[mode]
    made = 0
    # The first to start takes the lease (the last round's leader released it).
    with serving(url, args=args) as first:
        warm = _claim(first.base, token, f"{label}-warm")  # its world, built
        if warm.status_code != 201:
            raise RuntimeError(f"the first claim: {warm.status_code} {warm.text[:300]}")
        made += 1
        progress(f"replicas: round {number + 1}, {mode}: one replica, {window:g} s")
        one, (one_cpu,) = _window([first], token, f"{label}-one", window, tally)
        with serving(url, args=args) as second:
            through = _claim(second.base, token, f"{label}-through")
            if through.status_code == 201:
                made += 1
            forwarded = FORWARDED_TO in through.headers
            if through.status_code != 201 or forwarded != (mode == FORWARDING):
                found.errors.append(
                    f"round {number + 1}, {mode}: a claim through the second replica: "
                    f"{through.status_code}, forwarded: {forwarded}"
                )
            progress(f"replicas: round {number + 1}, {mode}: two replicas, {window:g} s")
            two, (leader_cpu, follower_cpu) = _window(
                [first, second], token, f"{label}-two", window, tally
            )
    found.rounds.append(Round(mode, one, two, one_cpu, leader_cpu, follower_cpu))
    progress(
        f"replicas: round {number + 1}, {mode}: one {one:.1f}/s, two {two:.1f}/s "
        f"({found.rounds[-1].ratio:.2f}x)"
    )
    return made


@dataclass
class Replicas:
    run: PairRun | None
    skipped: str | None

    @property
    def ok(self) -> bool:
        return self.run is None or not self.run.errors


def run(quick: bool, seed: int = SEED) -> Replicas:
    """The pair on PostgreSQL, unless `quick` or it is unreachable."""
    if quick:
        return Replicas(None, "--quick runs SQLite only")
    why = postgres_unreachable(POSTGRES_URL)
    if why is not None:
        return Replicas(None, f"PostgreSQL at {POSTGRES_URL}: {why}")
    targets, running, window, rounds = FULL
    return Replicas(measure(targets, running, window, rounds, seed), None)


def section(found: Replicas) -> list[str]:
    lines = ["## Two replicas on one PostgreSQL (issue 35)", ""]
    if found.run is None:
        return [*lines, f"- skipped: {found.skipped}", ""]
    result = found.run
    lines += [
        f"8 one-unit claim clients, {result.window:g} s windows, {result.targets:,} targets, "
        f"{result.running:,} units running: the lease holder alone, then clients alternating "
        "between it and a second replica, which forwards its writes to it (`forwarding`) or, "
        "for comparison, commits them itself (`each commits`: servers that advertise no "
        "address).",
        "",
        "| round | pair | one replica claims/s | two replicas claims/s | two / one | CPU per "
        "claim: alone; leader, follower in the pair |",
        "|---|---|---|---|---|---|",
    ]
    for number, measured in enumerate(result.rounds):
        cpu = ", ".join(
            "-" if seconds is None else f"{seconds * 1000:.2f} ms"
            for seconds in (measured.one_cpu, measured.leader_cpu, measured.follower_cpu)
        )
        lines.append(
            f"| {number // len(MODES) + 1} | {measured.mode} | {measured.one:.1f} | "
            f"{measured.two:.1f} | {measured.ratio:.2f}x | {cpu} |"
        )
    for mode in MODES:
        lines.append(
            f"| median | {mode} | {result.one(mode):.1f} | {result.two(mode):.1f} | "
            f"{result.ratio(mode):.2f}x | |"
        )
    ratio = result.ratio(FORWARDING)
    lines += [
        "",
        f"Goal: two replicas (forwarding) at least {GOAL_RATIO}x one: {ratio:.2f}x, "
        f"{'PASS' if ratio >= GOAL_RATIO else 'FAIL'} (reported, never enforced).",
    ]
    lines += [f"- error: {error}" for error in result.errors[:10]]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, default=FULL[0])
    parser.add_argument("--running", type=int, default=FULL[1])
    parser.add_argument("--window", type=float, default=FULL[2])
    parser.add_argument("--rounds", type=int, default=FULL[3])
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.targets < 1 or args.running < 0 or args.window <= 0 or args.rounds < 1:
        print("replicas.py: --targets, --window and --rounds must be positive", file=sys.stderr)
        return 2
    why = postgres_unreachable(POSTGRES_URL)
    if why is not None:
        print(f"replicas.py: PostgreSQL at {POSTGRES_URL}: {why}", file=sys.stderr)
        return 2
    found = measure(args.targets, args.running, args.window, args.rounds, args.seed)
    print("\n".join(section(Replicas(found, None))))
    return 1 if found.errors else 0


if __name__ == "__main__":
    sys.exit(main())
