"""Deploy check (seed 002): one deployment policy against 10,000 edge nodes (devices,
cluster-scoped and namespace-scoped agents) with every reason per target, and `plan()` in
`every` mode for the same spec; check, plan and the reference oracle must agree on which
nodes are compatible."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from harness import (
    Config,
    HotSpot,
    hot_spot_table,
    microseconds,
    profile_call,
    progress,
    table,
    time_fast,
)
from inventories import DEPLOY_NAMESPACE, NAMESPACES, NODES_PER_SITE, SCOPES, make_deploy_spec
from placed.engine.check import deploy_check
from placed.engine.planner import Planner
from placed.engine.reference import reference_plan


@dataclass(frozen=True, slots=True)
class CheckResult:
    targets: int
    scopes: dict[str, int]
    build_seconds: float  # best Planner(spec)
    check_seconds: float  # best deploy_check(planner, [workload]), planner already built
    check_runs: int
    summary: str
    compatible: int
    reasons: int  # over all targets
    rejected_by: dict[str, int]  # filter -> incompatible targets it gives a reason for
    without_reason: int  # incompatible targets with no reason: must be 0
    compatible_with_reason: int  # must be 0 too
    plan_build_seconds: float
    plan_seconds: float
    placements: int
    reference_seconds: float
    disagreements: int  # targets that check, plan and reference_plan do not all agree on
    hot_spots: list[HotSpot]

    @property
    def total_seconds(self) -> float:
        return self.build_seconds + self.check_seconds

    @property
    def ok(self) -> bool:
        return not (self.without_reason or self.compatible_with_reason or self.disagreements)


def run(config: Config) -> CheckResult:
    size = config.check_targets
    rng = np.random.default_rng([config.seed, 2, size])
    progress(f"deploy check: generating {size:,} edge nodes")
    spec, workload = make_deploy_spec(rng, size)
    repeat = max(1, min(config.repeat, 3))
    builds: list[float] = []
    checks: list[float] = []
    for run in range(repeat):
        progress(f"deploy check: {size:,} targets, run {run + 1} of {repeat}")
        start = time.perf_counter()
        planner = Planner(spec)
        built = time.perf_counter()
        document, _ = deploy_check(planner, [workload])
        checks.append(time.perf_counter() - built)
        builds.append(built - start)
    (row,) = document["workloads"]
    rejected_by: Counter[str] = Counter()
    for target in row["targets"]:
        rejected_by.update({reason["filter"] for reason in target["reasons"]})
    compatible = {t["target"] for t in row["targets"] if t["compatible"]}

    progress(f"deploy check: plan() in every mode x{config.repeat}")
    fast = time_fast(spec, config.repeat)
    placed = {target for _, target in fast.chosen if target is not None}
    placements = sum(target is not None for _, target in fast.chosen)
    progress("deploy check: reference oracle")
    start = time.perf_counter()
    expected = {o.target for o in reference_plan(spec) if o.target is not None}
    reference = time.perf_counter() - start
    everyone = compatible | placed | expected

    hot_spots: list[HotSpot] = []
    if config.profile:
        progress(f"profiling the deploy check on {size:,} targets")
        planner = Planner(spec)
        hot_spots = profile_call(lambda: deploy_check(planner, [workload]))
    return CheckResult(
        targets=size,
        scopes=dict(Counter(t.agent.scope for t in spec.inventory.targets)),
        build_seconds=min(builds),
        check_seconds=min(checks),
        check_runs=repeat,
        summary=row["summary"],
        compatible=row["compatible_targets"],
        reasons=sum(len(t["reasons"]) for t in row["targets"]),
        rejected_by=dict(rejected_by),
        without_reason=sum(not t["compatible"] and not t["reasons"] for t in row["targets"]),
        compatible_with_reason=sum(t["compatible"] and bool(t["reasons"]) for t in row["targets"]),
        plan_build_seconds=fast.build_seconds,
        plan_seconds=fast.plan_seconds,
        placements=placements,
        reference_seconds=reference,
        disagreements=len(everyone - (compatible & placed & expected)),
        hot_spots=hot_spots,
    )


def section(c: CheckResult) -> list[str]:
    scopes = ", ".join(f"{c.scopes.get(scope, 0):,} {scope}" for scope in SCOPES)
    lines = [
        "## Deploy check",
        "",
        f"One deployment policy, `lab-inference` (mode `every`, cluster_namespace "
        f"{DEPLOY_NAMESPACE}, one service), whose constraint is the one above, against "
        f"{c.targets:,} edge nodes in sites of {NODES_PER_SITE}: {scopes} agents (a "
        f"namespace-scoped agent runs in one of {', '.join(NAMESPACES)}). The nodes have the "
        "properties above, except that openhorizon.cpu, openhorizon.memory and "
        "openhorizon.arch are not written on them: placed derives those built-ins from each "
        "node's capacity and agent.",
        "",
    ]
    lines += table(
        [
            "targets",
            "compatible",
            "reasons",
            "incompatible without a reason",
            "`Planner(spec)`",
            "`deploy_check`",
            "total",
            "per target",
        ],
        [
            [
                f"{c.targets:,}",
                f"{c.compatible:,} ({c.compatible / c.targets:.1%})",
                f"{c.reasons:,}",
                f"{c.without_reason:,}",
                f"{c.build_seconds * 1e3:,.0f} ms",
                f"{c.check_seconds:.2f} s",
                f"{c.total_seconds:.2f} s",
                microseconds(c.total_seconds / c.targets),
            ]
        ],
    )
    rejected = ", ".join(
        f"`{name}` for {count:,}"
        for name, count in sorted(c.rejected_by.items(), key=lambda item: -item[1])
    )
    lines += [
        "",
        f"The check is `deploy_check(Planner(spec), [workload])`, with every reason for every "
        f"target; the times are the best of {c.check_runs} runs, each with a fresh Planner, "
        "whose build is timed apart. Its summary: "
        f"`{c.summary}`. Of the {c.targets - c.compatible:,} incompatible targets, these "
        f"filters give a reason: {rejected} (a target can have reasons from several); "
        f"{c.compatible_with_reason} compatible targets have a reason.",
        "",
        "### `plan()` for the same spec",
        "",
    ]
    lines += table(
        [
            "targets",
            "index build",
            "plan warm",
            "placements",
            "`reference_plan`",
            "check, plan and reference disagree on",
        ],
        [
            [
                f"{c.targets:,}",
                f"{c.plan_build_seconds * 1e3:,.0f} ms",
                f"{c.plan_seconds * 1e3:,.0f} ms",
                f"{c.placements:,}",
                f"{c.reference_seconds:.2f} s",
                f"{c.disagreements} targets",
            ]
        ],
    )
    lines += [
        "",
        "`Planner(spec).plan()` in `every` mode places one unit on each compatible target "
        "(best of the runs, fresh Planner each). The reference oracle runs once. The "
        "compatible targets of the check, the targets `plan()` places on and those the "
        "reference places on must be the same set.",
        "",
    ]
    if c.hot_spots:
        lines += [f"### Where the deploy check's time goes at {c.targets:,} targets (`--profile`)"]
        lines += [""]
        lines += hot_spot_table(c.hot_spots)
        lines += [
            "",
            "From one `deploy_check` under cProfile (Planner built beforehand), taken after "
            "the timed runs, so the times are inflated. Own time excludes callees.",
            "",
        ]
    return lines
