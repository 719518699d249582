"""Targets added to a large world through the live world's delta and through the general
path (issue 35): on a world of allocations, a document that brings a new rack of hosts is
applied, then a workload is claimed, each timed in one process on SQLite, from the call to
its answer.

    .venv/bin/python benchmarks/inventory.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from in_process import applied_world, both_ways, median_ms
from placed.operations import claim as claiming
from placed.operations.apply_documents import apply
from placed.operations.placing import silent
from placed.spec.schema import WorkloadSpec
from placed.store.claims import Actor
from readers import world

ROOT = Actor("b" * 16, "root-admin", "bench")
ROUNDS = 3
HOSTS = 4  # in each new rack
CHANGES = ("a rack of 4 hosts added", "the claim after")


@dataclass
class Timed:
    path: str
    times: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CHANGES})
    rebuilds: int = 0


def rack(k: int) -> bytes:
    """Document `new-rack-K`: a rack of HOSTS hosts."""
    hosts = [{"id": f"new{k}-{i}", "capacity": {"cpu": 32, "memory": 64}} for i in range(HOSTS)]
    document = {"name": f"new-rack-{k}", "inventory": [{"id": f"new{k}", "kind": "rack",
                                                         "children": hosts}]}  # fmt: skip
    return json.dumps(document).encode()


def measure(document: dict[str, Any], live: bool) -> Timed:
    found = Timed("delta" if live else "general path")
    with applied_world(document, "inventory") as (replica, engine):
        replica.read_current(engine, lambda cached: cached)  # the world in memory
        built = replica.rebuilds
        through = replica if live else None
        for k in range(ROUNDS):
            started = time.perf_counter()
            body = rack(k)
            answer = apply(engine, body, "rack.json", ROOT, False, False, None, silent, through)
            found.times[CHANGES[0]].append(time.perf_counter() - started)
            if answer.get("changes"):
                raise RuntimeError(f"adding a rack moved units: {answer['changes'][:3]}")
            spec = WorkloadSpec.model_validate(
                {"name": f"after{k}", "units": 2, "resources": {"cpu": 1}}
            )
            started = time.perf_counter()
            claiming.claim(engine, spec, ROOT, replica=replica)
            found.times[CHANGES[1]].append(time.perf_counter() - started)
        found.rebuilds = replica.rebuilds - built
    return found


def run(quick: bool) -> tuple[str, list[Timed]]:
    targets, running = (200, 1_000) if quick else (10_000, 30_000)
    document = world(targets, running)
    size = f"{targets:,} targets, {running:,} units"
    return both_ways("inventory", size, lambda live: measure(document, live))


def section(size: str, found: list[Timed]) -> list[str]:
    lines = [
        "## Targets added (issue 35)",
        "",
        f"`benchmarks/inventory.py`: {size} (racks of 20, allocations only); {ROUNDS} rounds "
        f"of: a document of a new rack of {HOSTS} hosts applied (`POST /v1/apply`'s "
        "`service/apply.py` in one process, SQLite), with the live world and without it "
        "(the general path plans the whole world), then a claim of 2 units through the "
        "live world (after the general path, it reads the world again); medians. "
        "`rebuilds`: times the live world was built again from the rows after the first "
        "build (0: every change a delta).",
        "",
        f"| path | {' | '.join(CHANGES)} | rebuilds |",
        f"|---|{'---|' * len(CHANGES)}---|",
    ]
    lines += [
        f"| {t.path} | {' | '.join(median_ms(t.times[c]) for c in CHANGES)} | {t.rebuilds} |"
        for t in found
    ]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small world")
    args = parser.parse_args(argv)
    print("\n".join(section(*run(args.quick))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
