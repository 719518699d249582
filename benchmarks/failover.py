"""A fleet's target lost and back through the live world's delta and through the general
path (issue 35): a mapping fleet (Ironic's conductors, one mapping workload of nodes),
the same with its load balanced (max_load), and an edge fleet (every-mode workloads
beside an allocation), each change timed in one process on SQLite, from the call to its
answer; and a second replica on the same store brought up to date after each (a
follower: from the rows after a delta, and after a general path's change that moved
units alone, as in a mapping fleet; its world built again after any other).

    .venv/bin/python benchmarks/failover.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from harness import progress
from in_process import applied_world
from placed.operations import target_states
from placed.operations.replica import ReplicaWorld
from placed.store.claims import Actor

ROOT = Actor("b" * 16, "root-admin", "bench")
ROUNDS = 3  # each a target down, then up


def mapping_fleet(conductors: int, nodes: int, max_load: float | None = None) -> dict[str, Any]:
    balanced = {} if max_load is None else {"max_load": max_load}
    return {
        "name": "fleet",
        "settings": {"default_mode": "mapping"},
        "inventory": [
            {"id": f"c{i}", "kind": "conductor", "tags": ["ironic"]}
            for i in range(1, conductors + 1)
        ],
        "workloads": [{"name": "nodes", "units": nodes, "tags": ["ironic"], **balanced}],
    }


def edge_fleet(sites: int, apps: int) -> dict[str, Any]:
    return {
        "name": "edge",
        "inventory": [{"id": f"c{i}", "capacity": {"cpu": 8}} for i in range(1, sites + 1)],
        "workloads": [
            {"name": "agent", "mode": "every", "resources": {"cpu": 1}},
            {"name": "apps", "units": apps, "resources": {"cpu": 1}},
        ],
    }


@dataclass
class Timed:
    fleet: str
    path: str
    down: list[float] = field(default_factory=list)
    up: list[float] = field(default_factory=list)
    moves: int = 0
    rebuilds: int = 0
    caught_up: list[float] = field(default_factory=list)  # the follower's, after each
    follower_rebuilds: int = 0


def measure(fleet: str, document: dict[str, Any], live: bool) -> Timed:
    found = Timed(fleet, "delta" if live else "general path")
    with applied_world(document, fleet) as (replica, engine):
        if live:
            replica.read_current(engine, lambda world: world)  # the world in memory
        follower = ReplicaWorld()
        follower.read_current(engine, lambda world: world)
        built, followed = replica.rebuilds, follower.rebuilds
        for _ in range(ROUNDS):
            for state, times in (("down", found.down), ("up", found.up)):
                started = time.perf_counter()
                answer = target_states.change_state(
                    engine, "c1", state, "benchmark", ROOT, replica=replica if live else None
                )
                times.append(time.perf_counter() - started)
                found.moves = max(found.moves, len(answer["moves"]))
                started = time.perf_counter()
                follower.read_current(engine, lambda world: world)
                found.caught_up.append(time.perf_counter() - started)
        found.rebuilds = replica.rebuilds - built
        found.follower_rebuilds = follower.rebuilds - followed
    return found


def run(quick: bool) -> list[Timed]:
    sizes = (10, 1_000, 20, 40) if quick else (100, 10_000, 1_000, 2_000)
    conductors, nodes, sites, apps = sizes
    fleets = {
        f"mapping: {conductors} conductors, {nodes:,} nodes": mapping_fleet(conductors, nodes),
        f"mapping: {conductors} conductors, {nodes:,} nodes, max_load 1.0": mapping_fleet(
            conductors, nodes, 1.0
        ),
        f"edge: {sites:,} sites, an agent on each, {apps:,} app units": edge_fleet(sites, apps),
    }
    found = []
    for name, document in fleets.items():
        for live in (True, False):
            progress(f"failover: {name}, {'delta' if live else 'general path'}")
            found.append(measure(name, document, live))
    return found


def section(found: list[Timed]) -> list[str]:
    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} ms"

    lines = [
        "## A fleet's target lost and back (issue 35)",
        "",
        f"`benchmarks/failover.py`: c1 down, then up, {ROUNDS} times, through "
        "`target_states.change_state` in one process (SQLite), with the live world and without "
        "it (the general path plans the whole world); medians. `rebuilds`: times the "
        "live world was built again from the rows after the first build (0: every change "
        "a delta). `follower`: a second replica on the store brought up to date after each "
        "change, and the times it built its world again.",
        "",
        "| fleet | path | down | up | units moved (most) | rebuilds | follower | "
        "follower rebuilds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {t.fleet} | {t.path} | {ms(t.down)} | {ms(t.up)} | {t.moves} | "
        f"{t.rebuilds if t.path == 'delta' else '-'} | {ms(t.caught_up)} | "
        f"{t.follower_rebuilds} |"
        for t in found
    ]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small fleets")
    args = parser.parse_args(argv)
    print("\n".join(section(run(args.quick))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
