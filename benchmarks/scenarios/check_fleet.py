"""`placed check` at fleet size (issue 15, point 7): 5,000 workloads against 1,000 hosts,
written as a JSON spec and checked by the command a user runs, `placed check SPEC
--summary`, in a fresh interpreter each time: its wall-clock time and its peak resident
set (its own VmHWM, which it reports as it exits), for the table and for `--format json`.

The same spec without `--summary` must switch to the summary by itself and say so on
stderr. `--all` (every pair, every reason) is run for a sample of the workloads, to show
what a streamed full matrix costs per workload and that its memory stays flat; the
summary's counts for that sample must agree with the full matrix (the compatible count,
and how many targets each filter is the first to reject): a disagreement makes the
benchmark exit 1. The goals (under 3 s, under 300 MB) read PASS or "not yet": speed is
the machine's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import Config, progress, table
from placed.engine.check_summary import summary_rows
from placed.engine.planner import Planner
from placed.spec import load_specs

GOAL_SECONDS = 3.0
GOAL_BYTES = 300 * 2**20
WORKLOADS, TARGETS = 5_000, 1_000
QUICK_WORKLOADS, QUICK_TARGETS = 500, 200
ALL_SAMPLE, QUICK_ALL_SAMPLE = 100, 20  # workloads the --all run checks
TIMEOUT = 600.0

HOSTS_PER_CLUSTER = 20
CLUSTERS_PER_ZONE = 10
TAGS = 40
PURPOSES = ("lab", "prod", "edge", "test")
ARCHES = ("amd64", "arm64")
DOWN = 0.02  # hosts down
FORBIDDING = 0.1  # hosts with a hard-anti-affinity tag
DEDICATED_CLUSTERS = 0.2  # clusters dedicated to one of the domains
TENANT_WORKLOADS = 0.2  # workloads that are an account's VMs (half of them dedicated)
IMPOSSIBLE = 0.01  # workloads whose constraint no host meets (arch ppc64le)
SPREAD = 0.01  # workloads asking for more units on distinct zones than there are zones
MISTYPED = 0.005  # workloads with a tag no host has (a lint warning)
# The child reports its own peak resident set (VmHWM of its own address space) as it
# exits. wait4's ru_maxrss would not do: a child started by vfork, as subprocess starts
# one, carries the parent's high-water mark across exec, so after the benchmark's larger
# sections every command would seem as big as the benchmark itself.
PLACED = """
import atexit, os, sys

def _peak() -> None:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(os.environ["PLACED_BENCH_PEAK"], "w") as out:
                    out.write(str(int(line.split()[1]) * 1024))

atexit.register(_peak)
from placed.cli.main import run
sys.argv[0] = "placed"
run()
"""


@dataclass(frozen=True, slots=True)
class CommandRun:
    args: str  # as a user types them, after `placed check SPEC`
    seconds: float  # best run, wall-clock
    cpu_seconds: float  # the child's user and system time in that run
    peak_bytes: int  # the child's peak resident set in that run
    runs: int
    exit_code: int
    output_bytes: int
    note: str  # what stderr said (the default switch)


@dataclass(frozen=True, slots=True)
class FleetResult:
    workloads: int
    targets: int
    spec_bytes: int
    table: CommandRun
    json: CommandRun
    default: CommandRun
    every: CommandRun  # --all for `sampled` workloads
    sampled: int
    rows: int  # workloads in the --summary JSON
    without_target: int  # of them, with no compatible target
    conflicts: int
    warnings: int
    reasons: dict[str, int]  # filter -> targets it was first to reject, over all workloads
    disagreements: int  # sampled workloads where summary and --all differ
    switched: bool  # the default run printed the summary and said so
    startup_seconds: float
    phases: dict[str, float]  # in-process: load, index, summary rows
    load_average: float  # over the last five minutes, after the runs
    quick: bool

    @property
    def ok(self) -> bool:
        """Correctness, which decides the exit status."""
        return self.disagreements == 0 and self.switched and self.rows == self.workloads

    @property
    def fast(self) -> bool:
        # Judged on CPU time: on a machine shared with other jobs, wall-clock time is
        # mostly theirs (the load average is in the report); the command is one thread.
        return max(self.table.cpu_seconds, self.json.cpu_seconds) < GOAL_SECONDS

    @property
    def small(self) -> bool:
        return max(self.table.peak_bytes, self.json.peak_bytes) < GOAL_BYTES


def fleet_document(rng: np.random.Generator, workloads: int, targets: int) -> dict[str, Any]:
    """Zones of clusters of hosts with tags, properties, capacity, some down, some with a
    forbidden tag, a fifth of the clusters dedicated; workloads with resources, a
    constraint, tags, some of them an account's VMs (dedicated or shared), a few whose
    constraint no host meets."""
    tags = [f"tag{i:02d}" for i in range(TAGS)]
    cpu = rng.integers(4, 65, size=targets)
    memory = rng.integers(8, 257, size=targets)
    purpose = rng.integers(0, len(PURPOSES), size=targets)
    arch = rng.integers(0, len(ARCHES), size=targets)
    down = rng.random(targets) < DOWN
    forbidding = rng.random(targets) < FORBIDDING
    forbidden = rng.integers(0, TAGS, size=targets)
    tag_counts = rng.integers(2, 8, size=targets)
    zones: list[dict[str, Any]] = []
    dedications: list[dict[str, Any]] = []
    cluster: dict[str, Any] | None = None
    for i in range(targets):
        if i % (HOSTS_PER_CLUSTER * CLUSTERS_PER_ZONE) == 0:
            zones.append({"id": f"z{len(zones)}", "kind": "zone", "children": []})
        if i % HOSTS_PER_CLUSTER == 0:
            cluster = {"id": f"c{i // HOSTS_PER_CLUSTER:04d}", "kind": "cluster", "children": []}
            zones[-1]["children"].append(cluster)
            if rng.random() < DEDICATED_CLUSTERS:
                domain = "D1" if rng.random() < 0.5 else "D2"
                dedications.append({"resource": cluster["id"], "domain": domain})
        assert cluster is not None
        host: dict[str, Any] = {
            "id": f"h{i:05d}",
            "kind": "host",
            "capacity": {"cpu": int(cpu[i]), "memory": int(memory[i])},
            "properties": {"purpose": PURPOSES[purpose[i]], "arch": ARCHES[arch[i]]},
            "tags": sorted(rng.choice(tags, size=int(tag_counts[i]), replace=False).tolist()),
        }
        if down[i]:
            host["status"] = "down"
        if forbidding[i]:
            host["hard_anti_affinity"] = [tags[forbidden[i]]]
        cluster["children"].append(host)

    wanted_purpose = rng.integers(0, len(PURPOSES), size=workloads)
    on_arm = rng.random(workloads) < 0.3
    impossible = rng.random(workloads) < IMPOSSIBLE
    tenant = rng.random(workloads) < TENANT_WORKLOADS
    dedicated = rng.random(workloads) < 0.5
    account = rng.integers(0, 4, size=workloads)
    units = rng.integers(1, 4, size=workloads)
    wanted_cpu = rng.integers(1, 33, size=workloads)
    wanted_memory = rng.integers(1, 129, size=workloads)
    tag_counts = rng.integers(0, 4, size=workloads)
    spread = rng.random(workloads) < SPREAD
    mistyped = rng.random(workloads) < MISTYPED
    rows: list[dict[str, Any]] = []
    for i in range(workloads):
        constraint = f"purpose == {PURPOSES[wanted_purpose[i]]}"
        if impossible[i]:
            constraint += " && arch == ppc64le"
        elif on_arm[i]:
            constraint += " && arch == arm64"
        row: dict[str, Any] = {
            "name": f"w{i:05d}",
            "units": int(units[i]),
            "constraints": constraint,
            "tags": sorted(rng.choice(tags, size=int(tag_counts[i]), replace=False).tolist()),
        }
        if mistyped[i]:
            row["tags"].append("tag1O")  # tag10 with a letter O: did you mean?
        if spread[i]:
            row["units"] = len(zones) + 1
            row["distinct"] = "zone"
        if tenant[i]:
            row["account"] = ("A1", "A2", "B1", "B2")[account[i]]
            row["offering"] = "dedicated" if dedicated[i] else "shared"
        else:
            row["resources"] = {"cpu": int(wanted_cpu[i]), "memory": int(wanted_memory[i])}
        rows.append(row)
    return {
        "name": "fleet",
        "tenancy": {
            "domains": {"D1": {"accounts": ["A1", "A2"]}, "D2": {"accounts": ["B1", "B2"]}}
        },
        "offerings": [
            {"name": "dedicated", "cpu": 2, "memory": 4, "dedicated": True},
            {"name": "shared", "cpu": 2, "memory": 4},
        ],
        "dedications": dedications,
        "inventory": zones,
        "workloads": rows,
    }


def _command(args: list[str], output: Path) -> tuple[float, float, int, int, str]:
    """(seconds, CPU seconds, peak resident bytes, exit code, stderr) of one `placed`
    command in a fresh interpreter, its stdout into `output`."""
    peak_file = output.with_suffix(".peak")
    peak_file.unlink(missing_ok=True)
    with output.open("wb") as sink:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", PLACED, *args],
            stdout=sink,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PLACED_BENCH_PEAK": str(peak_file)},
        )
        assert child.stderr is not None
        stderr = child.stderr.read()  # small: a note, or nothing
        # wait4 gives this child's own CPU time (RUSAGE_CHILDREN would add up every
        # child this process ever waited for).
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    peak = int(peak_file.read_text()) if peak_file.exists() else usage.ru_maxrss * 1024
    peak_file.unlink(missing_ok=True)
    return seconds, cpu, peak, child.returncode, stderr.decode("utf-8", "replace")


def time_command(spec: Path, args: list[str], output: Path, runs: int) -> CommandRun:
    best: tuple[float, float, int, int, str] | None = None
    for run in range(runs):
        shown = " ".join(a for a in args if a != "-w" and not a.startswith("w0")) or "(no option)"
        progress(f"check at fleet size: placed check SPEC {shown}, run {run + 1} of {runs}")
        found = _command(["check", str(spec), *args], output)
        if best is None or found[0] < best[0]:
            best = found
    assert best is not None
    seconds, cpu, peak, code, stderr = best
    return CommandRun(
        " ".join(args), seconds, cpu, peak, runs, code, output.stat().st_size, stderr.strip()
    )


def _phases(spec: Path) -> dict[str, float]:
    """Where one --summary run's time goes, in this process (after the timed runs)."""
    start = time.perf_counter()
    (document,) = load_specs(str(spec))
    loaded = time.perf_counter()
    planner = Planner(document)
    built = time.perf_counter()
    for _ in summary_rows(planner, list(document.workloads)):
        pass
    done = time.perf_counter()
    return {"load": loaded - start, "index": built - loaded, "summary": done - built}


def run(config: Config) -> FleetResult:
    workloads, targets = (QUICK_WORKLOADS, QUICK_TARGETS) if config.quick else (WORKLOADS, TARGETS)
    sample = QUICK_ALL_SAMPLE if config.quick else ALL_SAMPLE
    rng = np.random.default_rng([config.seed, 15, workloads, targets])
    runs = max(1, min(config.repeat, 3))
    with tempfile.TemporaryDirectory(prefix="placed-check-fleet-") as scratch:
        directory = Path(scratch)
        progress(f"check at fleet size: generating {workloads:,} workloads x {targets:,} targets")
        spec = directory / "fleet.json"
        spec.write_text(json.dumps(fleet_document(rng, workloads, targets)))
        output = directory / "out"
        shown = time_command(spec, ["--summary"], output, runs)
        as_json = time_command(spec, ["--summary", "--format", "json"], output, runs)
        summary = json.loads(output.read_text())
        default = time_command(spec, [], output, 1)
        switched = (
            "showing --summary; --all for every pair" in default.note
            and output.read_text().startswith("workload ")
        )
        names = [row["workload"] for row in summary["workloads"]]
        chosen = names[:: max(1, len(names) // sample)][:sample]
        picks = [arg for name in chosen for arg in ("-w", name)]
        every = time_command(spec, ["--all", "--format", "json", *picks], output, 1)
        full = json.loads(output.read_text())
        startup = min(
            _command(["--version"], directory / "version")[1] for _ in range(max(1, runs))
        )
        phases = _phases(spec)
        spec_bytes = spec.stat().st_size
    by_name = {row["workload"]: row for row in summary["workloads"]}
    disagreements = 0
    for row in full["workloads"]:
        first = Counter(t["reasons"][0]["filter"] for t in row["targets"] if not t["compatible"])
        brief = by_name[row["workload"]]
        if brief["compatible_targets"] != row["compatible_targets"] or brief["filtered"] != dict(
            first
        ):
            disagreements += 1
    reasons: Counter[str] = Counter()
    for row in summary["workloads"]:
        reasons.update(row["filtered"])
    return FleetResult(
        workloads=workloads,
        targets=targets,
        spec_bytes=spec_bytes,
        table=shown,
        json=as_json,
        default=default,
        every=every,
        sampled=len(chosen),
        rows=len(summary["workloads"]),
        without_target=sum(row["compatible_targets"] == 0 for row in summary["workloads"]),
        conflicts=len(summary["conflicts"]),
        warnings=len(summary["warnings"]),
        reasons=dict(reasons),
        disagreements=disagreements,
        switched=switched,
        startup_seconds=startup,
        phases=phases,
        load_average=os.getloadavg()[1],
        quick=config.quick,
    )


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def _goal(ok: bool, quick: bool) -> str:
    if quick:
        return "not judged (quick)"
    return "PASS" if ok else "not yet"


def section(r: FleetResult) -> list[str]:
    lines = [
        "## `placed check` at fleet size",
        "",
        f"{r.workloads:,} workloads against {r.targets:,} hosts, a {r.spec_bytes / 2**20:.1f} "
        "MiB JSON spec (`benchmarks/scenarios/check_fleet.py` writes it): zones of "
        f"{CLUSTERS_PER_ZONE} clusters of {HOSTS_PER_CLUSTER} hosts, each with 2-7 of "
        f"{TAGS} tags, a purpose and an arch property, 4-64 cpu and 8-256 memory; "
        f"{DOWN:.0%} are down, {FORBIDDING:.0%} have a hard-anti-affinity tag, "
        f"{DEDICATED_CLUSTERS:.0%} of the clusters are dedicated to one of two domains. "
        "Each workload has 1-3 units and a constraint on purpose (and arch for 30%); "
        f"{TENANT_WORKLOADS:.0%} are an account's VMs (half asking for dedicated hosts), the "
        "others ask for 1-32 cpu and 1-128 memory; "
        f"{IMPOSSIBLE:.0%} want an arch no host has, {SPREAD:.0%} more units on distinct zones "
        f"than there are zones (a conflict), {MISTYPED:.1%} a mistyped tag (a warning).",
        "",
    ]
    commands = [
        ("`placed check SPEC --summary`", r.table),
        ("`placed check SPEC --summary --format json`", r.json),
        ("`placed check SPEC`", r.default),
        (f"`placed check SPEC --all --format json -w ...` ({r.sampled} workloads)", r.every),
    ]
    rows = [
        [
            label,
            f"{command.seconds:.2f} s",
            f"{command.cpu_seconds:.2f} s",
            _mib(command.peak_bytes),
            f"{command.output_bytes / 2**20:,.1f} MiB",
            str(command.exit_code),
            str(command.runs),
        ]
        for label, command in commands
    ]
    lines += table(["command", "time", "CPU time", "peak memory", "output", "exit", "runs"], rows)
    # Less the interpreter's start, which a run of every workload pays once too.
    per_workload = max(0.0, r.every.cpu_seconds - r.startup_seconds) / max(1, r.sampled)
    reasons = ", ".join(
        f"`{name}` {count:,}" for name, count in sorted(r.reasons.items(), key=lambda i: -i[1])
    )
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in r.phases.items())
    lines += [
        "",
        "Each command runs in a fresh interpreter, as a user's does (best of the runs); the "
        "time is wall-clock, the CPU time the child's user and system time (from wait4), the "
        "peak memory its own peak resident set (VmHWM, which the child reports as it exits: "
        "wait4's figure would carry the benchmark's own, through vfork). The machine's load "
        "average over the "
        f"five minutes of the runs: {r.load_average:.1f} on {os.cpu_count()} cores; the goal "
        "is judged on CPU time, which other jobs do not inflate as they do wall-clock. "
        f"Starting the interpreter and importing placed (`placed --version`) takes "
        f"{r.startup_seconds:.2f} s of CPU time. In one process, after the timed runs: {phases} "
        "(the summary's rows, nothing printed). "
        f"The summary has {r.rows:,} rows, {r.without_target:,} of them with no compatible "
        f"target (hence exit 1), {r.conflicts:,} conflicts and {r.warnings:,} warnings; the "
        f"first filter to reject a target, over all rows: {reasons}.",
        "",
        f"Without `--summary` the command switches by itself above 10,000 pairs: "
        f"{'yes' if r.switched else 'NO'}, stderr saying `{r.default.note}`. `--all` prints "
        f"every pair as it goes: {r.sampled} workloads took {r.every.cpu_seconds:.2f} s of CPU "
        f"({per_workload * 1e3:,.0f} ms a workload after the start, so about "
        f"{per_workload * r.workloads:,.0f} s for all {r.workloads:,}) at a peak of "
        f"{_mib(r.every.peak_bytes)}: one workload's rows are in memory at a time. For those "
        "workloads the summary and the full "
        f"matrix disagree on {r.disagreements} (the compatible count, and how many targets "
        "each filter is the first to reject).",
        "",
    ]
    lines += table(
        ["goal", "measured", "result"],
        [
            [
                f"`placed check --summary`, {WORKLOADS:,} x {TARGETS:,}, in < {GOAL_SECONDS:g} s "
                "(CPU time)",
                f"table {r.table.cpu_seconds:.2f} s, JSON {r.json.cpu_seconds:.2f} s "
                f"(wall-clock {r.table.seconds:.2f} s, {r.json.seconds:.2f} s)",
                _goal(r.fast, r.quick),
            ],
            [
                f"... and < {GOAL_BYTES // 2**20} MB peak memory",
                f"table {_mib(r.table.peak_bytes)}, JSON {_mib(r.json.peak_bytes)}",
                _goal(r.small, r.quick),
            ],
            [
                "summary agrees with `--all`; the default switches above 10,000 pairs",
                f"{r.disagreements} disagreements, switched: {'yes' if r.switched else 'no'}",
                "PASS" if r.ok else "FAIL",
            ],
        ],
    )
    lines += [""]
    return lines
