"""Benchmarks for the placement engine: `make bench`, or `.venv/bin/python benchmarks/run.py`.

This file reads the command line, runs the scenarios in order and writes the report. A
scenario is one module in `scenarios/`, whose docstring says what it measures and why:
`allocation` (with the reference oracle and the scan floor), `mapping`, `mapping_scale`,
`constraints`, `check`, `loading` (issue 8: spec loading, validate's did-you-mean check,
tables against JSON), `juju` (issue 9: a 10,000-unit bundle against the plain pipeline),
`dedication` (issue 10: 10,000 hosts, a 3-level domain tree, fast path against the
reference), and `acceptance`, which judges what the others measured. `check_fleet` (issue
15: `placed check --summary` on 5,000 workloads x 1,000 targets, run as a user runs it)
runs after `check`. `kubernetes` (issue 18: the shapes kube-scheduler's scheduler_perf
publishes figures for, at 5,000 and 100,000 hosts, each against the reference) runs after
`dedication`; `--only kubernetes` runs it alone, `--only loading` the loading section.
`service.py` (issue 16: claims through
the HTTP API of a real `placed serve`, on SQLite and PostgreSQL; issue 17: a policy
change re-evaluating 10,000 every-mode units) runs after `dedication`, and
`controller.py` (issue 17: from a missed heartbeat to every unit moved) after it; both
also run alone. `mixed.py` (issue 35: claims, deletes and spec updates mixed, against
pure claims in the same run, and each change alone) runs after `service.py`, and alone;
`replicas.py` (issue 35: two replicas on one PostgreSQL, clients alternating, against one
in the same run) after it, and alone; `failover.py` (issue 35: a mapping fleet's and an
edge fleet's target lost and back, the live world's delta against the general path)
after the stateful tests, and alone; `readers.py` (issue 35: workloads with near and avoid
claimed, resized and deleted, the delta against the general path) after it, and alone;
`inventory.py` (issue 35: a rack of hosts added, the delta against the general path)
after it, and alone.
`harness.py` holds the configuration and the timing, profiling and table helpers;
`inventories.py` the random problems the scenarios share. `compare.py` runs this file
against two source trees.

Timings are wall-clock, each run from a fresh Planner so its per-workload cache starts
empty. The first run in the process is reported apart ("cold") from the best of
`--repeat` runs ("warm"): at 10,000 targets the first run can pay hundreds of thousands
of page faults while the allocator adapts to the engine's large per-unit temporaries, and a
long-running service would not. Exit status is 1 when a correctness check fails (fast
and reference disagree on a placement or a constraint's verdict, losing a target moves
units it did not own, a returning target takes units it should not, the max_load run
goes over 1.10, a deploy check leaves an incompatible target without a reason, check,
plan and reference disagree on the compatible nodes, a generated spec does not load, or the
service answers a claim with an error or stores other claims than it committed, or a
policy change moves other every-mode units than its rule says);
speed targets are reported, never enforced, since they depend on the machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import controller
import failover
import inventory
import live_world
import mixed
import readers
import replicas
import service
from harness import SEED, Config, machine, progress
from inventories import (
    COMMON_HEAD,
    CPU_CAPACITY,
    RARE_FROM,
    TARGET_ZIPF,
    TARGETS_PER_RACK,
    VOCABULARY_SIZE,
    WORKLOAD_ZIPF,
)
from scenarios import (
    acceptance,
    allocation,
    check,
    check_fleet,
    constraints,
    dedication,
    juju,
    kubernetes,
    loading,
    mapping,
    mapping_scale,
)

# The scenarios `--only` can run alone.
ONLY = ("kubernetes", "loading")


def render(config: Config, sections: list[list[str]], argv: list[str]) -> str:
    """The report: the preamble, then each scenario's section in the order given."""
    command = " ".join([".venv/bin/python", "benchmarks/run.py", *argv])
    lines = [
        "# placed benchmarks",
        "",
        "`make bench` runs `.venv/bin/python benchmarks/run.py` and prints this report to "
        f"stdout; this one comes from `{command}`.",
        "",
        f"Machine: {machine()}.",
        "",
    ]
    if config.only is not None:
        lines += [f"Seed {config.seed}. Only the `{config.only}` scenario (`--only`).", ""]
        for section in sections:
            lines += section
        return "\n".join(lines) + "\n"
    lines += [
        f"Seed {config.seed}. A vocabulary of {VOCABULARY_SIZE} tags. Each target has 10-30 "
        f"tags, 0-2 hard-affinity tags from the {COMMON_HEAD} most common ones, 1-4 "
        f"hard-anti-affinity tags from the rarer ones (rank >= {RARE_FROM}), 8-12 soft-affinity "
        f"and 8-12 soft-anti-affinity tags (tags and soft lists Zipf {TARGET_ZIPF}), and "
        f"{CPU_CAPACITY[0]}-{CPU_CAPACITY[1]} cpu. There are {TARGETS_PER_RACK} targets per "
        f"rack. Each unit is its own allocation workload with 10-20 tags (Zipf "
        f"{WORKLOAD_ZIPF}) and asks for 1 cpu. Every run starts from a fresh Planner. "
        f'"Cold" is the first run in the process; "warm" is the best of {config.repeat}.',
        "",
    ]
    for section in sections:
        lines += section
    return "\n".join(lines) + "\n"


# -- command line --------------------------------------------------------------------------


def parse(argv: list[str]) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run, for smoke tests")
    parser.add_argument("--write", type=Path, metavar="FILE", help="also write the report here")
    parser.add_argument("--reference-units", type=int, help="units the oracle places")
    parser.add_argument("--repeat", type=int, help="fast-engine runs to take the best of")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of the fast engine at the largest size to stderr, and a "
        "pyinstrument profile of each Kubernetes shape",
    )
    parser.add_argument(
        "--only",
        choices=ONLY,
        help="run this scenario alone (its section and exit status only)",
    )
    parser.add_argument(
        "--kubernetes-targets",
        type=int,
        metavar="N",
        help="targets of the Kubernetes shapes (default 5,000; 500 with --quick)",
    )
    parser.add_argument(
        "--kubernetes-large",
        type=int,
        metavar="N",
        help="targets and units of the large Kubernetes shape (default 100,000; 2,000 with "
        "--quick; 0 leaves it out)",
    )
    parser.add_argument(
        "--kubernetes-budget",
        type=float,
        metavar="SECONDS",
        help="stop the large Kubernetes shape's plan after this long and report the units "
        "placed by then (default 60; 0: no limit)",
    )
    parser.add_argument(
        "--kubernetes-only",
        choices=kubernetes.SHAPE_KEYS,
        metavar="SHAPE",
        help="run this Kubernetes shape alone: " + ", ".join(kubernetes.SHAPE_KEYS),
    )
    args = parser.parse_args(argv)
    if args.kubernetes_budget is not None and not 0 <= args.kubernetes_budget <= 86_400:
        parser.error("--kubernetes-budget must be between 0 and 86,400 seconds")
    for option in ("kubernetes_targets", "kubernetes_large"):
        value = getattr(args, option)
        if value is not None and not 0 <= value <= 1_000_000:
            parser.error(f"--{option.replace('_', '-')} must be between 0 and 1,000,000")
    # Fewer hosts than zones would leave a zone without hosts, a target of its own.
    if args.kubernetes_targets is not None and args.kubernetes_targets < 3:
        parser.error("--kubernetes-targets must be at least 3 (one host per zone)")
    if args.kubernetes_only == "large" and args.kubernetes_large == 0:
        parser.error("--kubernetes-only large needs the large shape (--kubernetes-large N)")
    if args.kubernetes_large is not None and 0 < args.kubernetes_large < 3:
        parser.error("--kubernetes-large must be 0 or at least 3 (one host per zone)")
    sizes: tuple[int, ...]
    constraint_sizes: tuple[int, ...]
    if args.quick:
        sizes, units, reference, mapping, names, repeat = (1000,), 500, 50, 10_000, 3, 2
        constraint_sizes, check_targets = (2_000,), 1_000
    else:
        sizes, units, reference, mapping, names, repeat = (
            (1000, 10_000),
            10_000,
            200,
            100_000,
            20,
            5,
        )
        constraint_sizes, check_targets = (10_000, 100_000), 10_000
    return Config(
        sizes=sizes,
        units=units,
        reference_units=min(args.reference_units or reference, units),
        mapping_units=mapping,
        mapping_targets=100,
        mapping_names=names,
        scale_targets=0 if args.quick else 10_000,
        constraint_sizes=constraint_sizes,
        check_targets=check_targets,
        repeat=max(1, args.repeat or repeat),
        seed=args.seed,
        quick=args.quick,
        profile=args.profile,
        write=args.write,
        kubernetes_targets=args.kubernetes_targets,
        kubernetes_large=args.kubernetes_large,
        kubernetes_budget=args.kubernetes_budget,
        kubernetes_only=args.kubernetes_only,
        only=args.only,
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    config = parse(argv)
    if config.only == "kubernetes":
        return _report(config, argv, *_kubernetes(config))
    if config.only == "loading":
        return _report(config, argv, *_loading(config))
    allocations = allocation.run(config)
    mappings = mapping.run(config)
    scale = mapping_scale.run(config)
    evaluations = constraints.run(config)
    checked = check.run(config)
    fleet = check_fleet.run(config)
    loaded = loading.run(config)
    directed = juju.run(config)
    dedicated = dedication.run(config)
    shapes = kubernetes.run(config)
    served = service.run(config.quick, config.profile, config.seed)
    controlled = controller.run(config.quick)
    mix = mixed.run(config.quick, config.seed)
    paired = replicas.run(config.quick)
    stateful = live_world.run(config.quick)
    failed_over = failover.run(config.quick)
    read_by = readers.run(config.quick)
    grown = inventory.run(config.quick)
    judged = acceptance.run(allocations, mappings, evaluations, checked, loaded)
    sections = [
        allocation.section(allocations),
        mapping.section(mappings),
        mapping_scale.section(scale),
        constraints.section(evaluations),
        check.section(checked),
        check_fleet.section(fleet),
        loading.section(loaded),
        juju.section(directed),
        dedication.section(dedicated),
        kubernetes.section(shapes),
        service.section(served),
        mixed.section(mix.runs, mix.window) + [f"- skipped: {why}" for why in mix.skipped],
        replicas.section(paired),
        live_world.section(stateful),
        failover.section(failed_over),
        readers.section(*read_by),
        inventory.section(*grown),
        controller.section(controlled),
        acceptance.section(judged),
    ]
    # The fast path and the reference must agree on every placement with dedication and
    # in every Kubernetes shape, and check's summary with its full matrix; the service must
    # store exactly what it committed.
    ok = (
        judged.correct
        and dedicated.mismatches == 0
        and shapes.ok
        and fleet.ok
        and served.ok
        and mix.ok
        and paired.ok
        and stateful.ok
        and controlled.ok
    )
    return _report(config, argv, sections, ok)


def _kubernetes(config: Config) -> tuple[list[list[str]], bool]:
    shapes = kubernetes.run(config)
    return [kubernetes.section(shapes)], shapes.ok


def _loading(config: Config) -> tuple[list[list[str]], bool]:
    loaded = loading.run(config)
    rows = ["| target | measured | result |", "|---|---|---|"]
    rows += [f"| {' | '.join(row)} |" for row in loading.acceptance_rows(loaded)]
    return [loading.section(loaded), ["## Loading goals", "", *rows, ""]], loaded.correct


def _report(config: Config, argv: list[str], sections: list[list[str]], ok: bool) -> int:
    report = render(config, sections, argv)
    print(report, end="")
    if config.write is not None:
        config.write.write_text(report)
        progress(f"wrote {config.write}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
