"""Workloads that read others (near, avoid) through the live world's delta and through the
general path (issue 35): on a large world of allocations, a workload that avoids another
is claimed, grown, shrunk and deleted, and another near a third is claimed and deleted,
each change timed in one process on SQLite, from the call to its answer.

    .venv/bin/python benchmarks/readers.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from in_process import applied_world, both_ways, median_ms
from placed.operations import claim as claiming
from placed.operations import remove as removing
from placed.operations import update as updating
from placed.spec.schema import WorkloadSpec
from placed.store.claims import Actor
from placed.store.database import reading
from placed.store.tables import Workload

ROOT = Actor("b" * 16, "root-admin", "bench")
ROUNDS = 3
UNITS = 10  # of each reader
# Each round's changes, in order: the avoiding reader claimed, grown, shrunk; the near one
# claimed; both deleted.
CHANGES = ("claim avoid", "grow", "shrink", "claim near", "delete avoid", "delete near")


def world(targets: int, running: int) -> dict[str, Any]:
    """`targets` hosts in racks of 20, `db` and `web` of 100 units each, and plain
    workloads of 10 units making `running` units in all."""
    plain = max(0, (running - 200) // 10)
    return {
        "name": "readers",
        "inventory": [
            {
                "id": f"rack{r}",
                "kind": "rack",
                "children": [
                    {"id": f"h{r}-{i}", "capacity": {"cpu": 32, "memory": 64}}
                    for i in range(min(20, targets - r * 20))
                ],
            }
            for r in range((targets + 19) // 20)
        ],
        "workloads": [
            {"name": "db", "units": 100, "resources": {"cpu": 1}},
            {"name": "web", "units": 100, "resources": {"cpu": 1}},
            *(
                {"name": f"app{k}", "units": 10, "resources": {"cpu": 1, "memory": 1}}
                for k in range(plain)
            ),
        ],
    }


@dataclass
class Timed:
    path: str
    times: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CHANGES})
    rebuilds: int = 0


def measure(document: dict[str, Any], live: bool) -> Timed:
    found = Timed("delta" if live else "general path")
    with applied_world(document, "readers") as (replica, engine):
        replica.read_current(engine, lambda cached: cached)  # the world in memory
        built = replica.rebuilds
        through = replica if live else None
        for k in range(ROUNDS):
            avoiding: dict[str, Any] = {
                "name": f"cache{k}",
                "units": UNITS,
                "resources": {"cpu": 1},
                "avoid": {"workload": "db", "level": "target"},
            }
            near: dict[str, Any] = {
                "name": f"sidecar{k}",
                "units": UNITS,
                "resources": {"cpu": 1},
                "near": {"workload": "web", "level": "target"},
            }
            for change in CHANGES:
                asked: WorkloadSpec | None = None
                generation = 0
                if change in ("grow", "shrink"):
                    generation = generation_of(engine, avoiding["name"])
                    asked = WorkloadSpec.model_validate(
                        {**avoiding, "units": UNITS + 2 if change == "grow" else UNITS}
                    )
                started = time.perf_counter()
                if asked is not None:
                    updating.update(
                        engine, avoiding["name"], asked, generation, ROOT, replica=through
                    )
                elif change.startswith("claim"):
                    body = avoiding if change == "claim avoid" else near
                    spec = WorkloadSpec.model_validate(body)
                    claiming.claim(engine, spec, ROOT, replica=through)
                else:
                    name = avoiding["name"] if change == "delete avoid" else near["name"]
                    removing.remove(engine, name, None, ROOT, replica=through)
                found.times[change].append(time.perf_counter() - started)
        found.rebuilds = replica.rebuilds - built
    return found


def generation_of(engine: Any, name: str) -> int:
    with reading(engine) as session:
        found = session.scalar(select(Workload.generation).where(Workload.name == name))
    assert found is not None, name
    return int(found)


def run(quick: bool) -> tuple[str, list[Timed]]:
    targets, running = (200, 1_000) if quick else (10_000, 30_000)
    document = world(targets, running)
    size = f"{targets:,} targets, {running:,} units"
    return both_ways("readers", size, lambda live: measure(document, live))


def section(size: str, found: list[Timed]) -> list[str]:
    lines = [
        "## Workloads that read others (issue 35)",
        "",
        f"`benchmarks/readers.py`: {size} (racks of 20; `db` and `web` of 100 units); "
        f"{ROUNDS} rounds of: a workload of {UNITS} units that avoids db's hosts claimed, "
        "grown by 2 and shrunk back, one on web's hosts (near) claimed, and both deleted, "
        "through the operations (`operations/claim.py`, `update.py`, `remove.py`) in one "
        "process (SQLite), with the live world and "
        "without it (the general path plans the whole world); medians. `rebuilds`: "
        "times the live world was built again from the rows after the first build (0: "
        "every change a delta).",
        "",
        f"| path | {' | '.join(CHANGES)} | rebuilds |",
        f"|---|{'---|' * len(CHANGES)}---|",
    ]
    lines += [
        f"| {t.path} | {' | '.join(median_ms(t.times[c]) for c in CHANGES)} | "
        f"{t.rebuilds if t.path == 'delta' else '-'} |"
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
