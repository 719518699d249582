"""Juju directives at scale (issue 9): a bundle of 1,000 applications and 10,000 units
with mixed directives (none, beside another application's units, containers on them,
declared machines, new machines and containers, per-unit constraints), read from its
YAML text and planned as `placed plan` does; and, in the same run, the plain pipeline
placing the same 10,000 units (1,000 allocation workloads) on 10,000 existing machines,
the cost of a plan without directives for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from harness import Config, best_of, progress, table
from placed.engine.planner import Planner
from placed.model import Inventory, Location, Settings, Spec, Workload
from placed.spec.juju.files import read_juju

APPLICATIONS, UNITS_EACH, DECLARED = 1_000, 10, 100


@dataclass(frozen=True, slots=True)
class JujuRun:
    applications: int
    units: int
    placed: int
    created: int
    read_seconds: float
    plan_seconds: float
    plain_seconds: float
    warnings: int
    runs: int


def bundle_text(rng: np.random.Generator, applications: int, units: int) -> str:
    """A bundle whose directives name only earlier applications (no cycles)."""
    apps: dict[str, Any] = {}
    for i in range(applications):
        app: dict[str, Any] = {"charm": f"ch:app{i}", "num_units": units}
        kind = rng.random()
        if i and kind < 0.2:
            app["to"] = [f"app{int(rng.integers(0, i))}"]  # beside its units, in turn
        elif i and kind < 0.35:
            other = int(rng.integers(0, i))
            app["to"] = [f"lxd:app{other}/{j}" for j in range(units)]
        elif kind < 0.45:
            app["to"] = ["lxd:new"]
        elif kind < 0.55:
            app["to"] = [str(int(rng.integers(0, DECLARED)))]
        elif kind < 0.6:
            app["to"] = ["constraints: cores=4 mem=8G", "new"]
        if rng.random() < 0.3:
            app["constraints"] = "mem=4G"
        apps[f"app{i}"] = app
    machines = {str(m): {"constraints": "cores=8"} for m in range(DECLARED)}
    # Every declared machine is named by some directive (an unused one is an error).
    apps["pinned"] = {
        "charm": "ch:pinned",
        "num_units": DECLARED,
        "to": [str(m) for m in range(DECLARED)],
    }
    return yaml.safe_dump({"applications": apps, "machines": machines}, sort_keys=False)


def plain_spec(applications: int, units: int) -> Spec:
    machines = tuple(Location(str(m), "machine") for m in range(applications * units))
    workloads = tuple(Workload(f"app{i}", units, "allocation") for i in range(applications))
    return Spec(Inventory.from_roots(machines), workloads, Settings(), "<plain>", "plain")


def run(config: Config) -> JujuRun:
    applications = 100 if config.quick else APPLICATIONS
    runs = max(1, min(config.repeat, 3))
    rng = np.random.default_rng([config.seed, 9])
    text = bundle_text(rng, applications, UNITS_EACH)
    progress(f"juju: reading a bundle of {applications:,} applications, best of {runs}")
    read_seconds = best_of(lambda: read_juju(text, "bundle.yaml"), runs)
    [spec] = read_juju(text, "bundle.yaml")
    progress(f"juju: planning {sum(w.units for w in spec.workloads):,} units, best of {runs}")
    results = []

    def plan() -> None:
        results.append(Planner(spec).plan())

    plan_seconds = best_of(plan, runs)
    result = results[-1]
    plain = plain_spec(applications, UNITS_EACH)
    progress(f"juju: the plain pipeline on {applications * UNITS_EACH:,} units, best of {runs}")
    plain_seconds = best_of(lambda: Planner(plain).plan(), runs)
    return JujuRun(
        applications=len(spec.workloads),
        units=sum(w.units for w in spec.workloads),
        placed=len(result.placements),
        created=len(result.new_targets),
        read_seconds=read_seconds,
        plan_seconds=plan_seconds,
        plain_seconds=plain_seconds,
        warnings=len(result.warnings),
        runs=runs,
    )


def section(found: JujuRun) -> list[str]:
    lines = ["## Juju directives", ""]
    lines += table(
        [
            "applications",
            "units",
            "placed",
            "machines and containers made",
            "read",
            "plan",
            "plain pipeline, same units",
            "plan / plain",
        ],
        [
            [
                f"{found.applications:,}",
                f"{found.units:,}",
                f"{found.placed:,}",
                f"{found.created:,}",
                f"{found.read_seconds:.2f} s",
                f"{found.plan_seconds:.2f} s",
                f"{found.plain_seconds:.2f} s",
                f"{found.plan_seconds / found.plain_seconds:.1f}x",
            ]
        ],
    )
    lines += [
        "",
        f"A bundle of {APPLICATIONS:,} applications of {UNITS_EACH} units and {DECLARED} "
        "declared machines: 20% of applications beside an earlier one's units in turn, 15% "
        "in lxd containers beside an earlier one's units, 10% in lxd containers on new "
        "machines, 10% on a declared machine (padded: the rest get new machines), 5% with "
        "per-unit constraints, the rest with no directive (a new machine each); 30% have "
        "service constraints. Read is `read_juju` on the YAML text; plan is "
        "`Planner(spec).plan()`; the plain pipeline places the same units as "
        f"{APPLICATIONS:,} allocation workloads on {APPLICATIONS * UNITS_EACH:,} existing "
        f"machines. Best of {found.runs}. The plan does more than the plain pipeline: "
        f"every unit it cannot put on an existing machine creates one ({found.created:,} "
        "here), and the index grows with them.",
        "",
    ]
    return lines
