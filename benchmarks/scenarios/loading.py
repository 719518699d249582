"""Loading (issue 8): `placed.spec.load_specs` on generated JSON and YAML inventories of
10,000 and 100,000 targets (seconds, and peak memory per target), `placed validate` on
5,000 targets with unique tags and 1,000 workloads whose tags no target has (the "did you
mean" check), and a 20,000-unit plan rendered as a table against the same plan as JSON.

Each load runs in a fresh interpreter, as the CLI does, so that its peak memory is its
own: the growth of the process's peak resident set (ru_maxrss) from just before
`load_specs` to just after. `placed validate` is timed as a user sees it, the whole
command, with the interpreter's start and placed's import given apart.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from harness import Config, best_of, progress, table
from inventories import make_mapping_spec
from placed.cli.render import combine, plan_table
from placed.engine.planner import Planner
from placed.engine.report import plan_document

# Issue 8's goals. They are shown in the acceptance table as PASS or "not yet" and never
# change the exit status: the loader is being rewritten, and speed depends on the machine.
LOAD_10K_SECONDS = 0.5
LOAD_100K_SECONDS = 5.0
# Issue 18's, at the largest size: JSON and YAML both within LOAD_100K_SECONDS, what the
# spec and the planner's index keep per target, and the index faster than the load.
LARGEST = 100_000
KEPT_PER_TARGET = 2048
VALIDATE_SECONDS = 2.0
TABLE_OVER_JSON = 2.0
# Full-size figures the goals are stated for: validate's inventory and the plan's units.
VALIDATE_TARGETS, VALIDATE_WORKLOADS = 5_000, 1_000
RENDER_UNITS = 20_000

# A load or a command that takes longer than this is reported as not finishing.
TIMEOUT = 600.0

TARGETS_PER_RACK = 40
RACKS_PER_ZONE = 25
TAG_VOCABULARY = 300
PURPOSES = ("lab", "prod", "edge", "test")
ARCHES = ("amd64", "arm64")
FEATURES = ("tpu", "fpga", "camera", "lidar")

# Runs in a fresh interpreter: one load, its time, the resident set just before it and
# the peak resident set after it (KiB; Linux). The growth is the load's own peak, unless
# it fits in memory the import had already taken (then 0). With a second argument, the
# planner's index is built too (`Planner(spec)`, timed), and the resident set is read
# again once it is built, after a collection: what the spec and its index keep.
PROBE = """
import gc, json, os, resource, sys, time
from placed.engine.planner import Planner
from placed.spec import SpecError, load_specs
def resident():  # the resident set now, in KiB
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
gc.collect()
before = resident()
start = time.perf_counter()
try:
    specs = load_specs(sys.argv[1])
except SpecError as error:
    sys.exit(error.render())
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
index_seconds, kept = float("nan"), 0
if len(sys.argv) > 2:
    start = time.perf_counter()
    planners = [Planner(spec) for spec in specs]
    index_seconds = time.perf_counter() - start
    gc.collect()
    kept = resident()
print(json.dumps({"seconds": seconds, "before": before, "after": after,
                  "index_seconds": index_seconds, "kept": kept,
                  "targets": sum(len(s.inventory.targets) for s in specs),
                  "workloads": sum(len(s.workloads) for s in specs)}))
"""
PLACED = "from placed.cli.main import run; import sys; sys.argv[0] = 'placed'; run()"


@dataclass(frozen=True, slots=True)
class LoadRun:
    fmt: str  # json or yaml
    targets: int
    workloads: int
    size_bytes: int
    seconds: float  # the best run
    runs: int
    peak_bytes: int  # growth of the peak resident set during the best run's load
    error: str | None  # why a run did not give a spec of `targets` targets
    # With the index built (the largest size only): `Planner(spec)`'s time, and the
    # growth of the resident set from before the load to after the index, collected.
    index_seconds: float = float("nan")
    kept_bytes: int = 0

    @property
    def peak_per_target(self) -> float:
        return self.peak_bytes / self.targets

    @property
    def kept_per_target(self) -> float:
        return self.kept_bytes / self.targets


@dataclass(frozen=True, slots=True)
class ValidateRun:
    targets: int
    workloads: int
    unknown_tags: int
    seconds: float  # the whole `placed validate FILE` command, best run
    startup_seconds: float  # `python -c 'import placed.cli.main'`, best run
    runs: int
    warnings: int  # in the JSON report
    error: str | None  # a failed or unfinished command


@dataclass(frozen=True, slots=True)
class RenderRun:
    units: int
    placed: int
    json_seconds: float  # json.dumps(combine(documents), indent=2), best
    table_seconds: float  # plan_table to a Console on a StringIO (not a terminal), best
    terminal_seconds: float  # the same with force_terminal=True: styled, wrapped cells
    runs: int
    json_chars: int
    table_chars: int

    @property
    def ratio(self) -> float:
        return self.table_seconds / self.json_seconds


@dataclass(frozen=True, slots=True)
class LoadingResult:
    loads: list[LoadRun]
    validate: ValidateRun
    render: RenderRun
    full: bool  # measured at the sizes the goals are stated for

    @property
    def correct(self) -> bool:
        """Every generated spec loaded with all its targets, and validate accepted its
        spec (exit 0): anything else is a bug in the loader or in this generator."""
        return all(run.error is None for run in self.loads) and self.validate.error is None


# -- generated specs -------------------------------------------------------------------------


def inventory_document(rng: np.random.Generator, targets: int) -> dict[str, Any]:
    """Zones of racks of hosts, each host with 3-6 tags, five properties and a capacity,
    and five workloads (allocation, mapping, a constraint, every mode)."""
    vocabulary = [f"tag{i:03d}" for i in range(TAG_VOCABULARY)]
    weights = 1.0 / np.arange(1, TAG_VOCABULARY + 1) ** 0.8
    weights /= weights.sum()
    counts = rng.integers(3, 7, size=targets)
    chosen = rng.choice(TAG_VOCABULARY, size=(targets, 6), p=weights)
    purpose = rng.integers(0, len(PURPOSES), size=targets)
    gpu = rng.random(targets) < 0.3
    cpus = rng.choice([4, 8, 16, 32, 64], size=targets)
    memory = rng.choice([16, 32, 64, 128, 256], size=targets)
    arch = rng.integers(0, len(ARCHES), size=targets)
    minor = rng.integers(0, 10, size=targets)
    feature = rng.integers(0, len(FEATURES), size=targets)
    hosts = [
        {
            "id": f"h{i:06d}",
            "kind": "host",
            "tags": sorted({vocabulary[t] for t in chosen[i, : counts[i]]}),
            "properties": {
                "purpose": PURPOSES[purpose[i]],
                "gpu": bool(gpu[i]),
                "arch": ARCHES[arch[i]],
                "agentVersion": f"2.{minor[i]}.1",
                "features": f"{FEATURES[feature[i]]},gps",
            },
            "capacity": {"cpu": int(cpus[i]), "memory": int(memory[i])},
        }
        for i in range(targets)
    ]
    racks = [
        {
            "id": f"r{r:05d}",
            "kind": "rack",
            "tags": [f"rack{r}"],
            "children": hosts[start : start + TARGETS_PER_RACK],
        }
        for r, start in enumerate(range(0, targets, TARGETS_PER_RACK))
    ]
    zones = [
        {
            "id": f"z{z:03d}",
            "kind": "zone",
            "tags": [f"zone{z}"],
            "children": racks[start : start + RACKS_PER_ZONE],
        }
        for z, start in enumerate(range(0, len(racks), RACKS_PER_ZONE))
    ]
    workloads: list[dict[str, Any]] = [
        {"name": "web", "units": 20, "tags": ["tag000", "tag001"], "resources": {"cpu": 2}},
        {"name": "db", "units": 3, "distinct": "zone", "resources": {"cpu": 8, "memory": 64}},
        {"name": "cache", "mode": "mapping", "units": 100, "tags": ["tag002"]},
        {
            "name": "inference",
            "units": 10,
            "constraints": ['purpose == "lab" && gpu == true && agentVersion in [2.3.0,INFINITY)'],
            "resources": {"cpu": 4},
        },
        {"name": "agent", "mode": "every", "constraints": 'arch == "amd64"'},
    ]
    return {"name": f"load-{targets}", "inventory": zones, "workloads": workloads}


def yaml_text(document: dict[str, Any]) -> str:
    """Block-style YAML as an inventory script writes it: one key per line, flow lists and
    mappings for the short values. Written by hand, since PyYAML's own dumper would take
    minutes at 100,000 targets."""
    lines = [f"name: {document['name']}", "inventory:"]

    def flow(value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
        if isinstance(value, list):
            return "[" + ", ".join(flow(v) for v in value) + "]"
        if isinstance(value, str):
            return json.dumps(value)
        return str(value).lower()  # true, false and numbers

    def location(node: dict[str, Any], indent: str) -> None:
        first = True
        for key, value in node.items():
            lead = f"{indent}- " if first else f"{indent}  "
            first = False
            if key == "children":
                lines.append(f"{lead}children:")
                for child in value:
                    location(child, indent + "    ")
            elif key == "properties":
                lines.append(f"{lead}properties:")
                lines.extend(f"{indent}    {k}: {flow(v)}" for k, v in value.items())
            else:
                lines.append(f"{lead}{key}: {flow(value)}")

    for zone in document["inventory"]:
        location(zone, "  ")
    lines.append("workloads:")
    lines.extend(f"  - {flow(workload)}" for workload in document["workloads"])
    return "\n".join(lines) + "\n"


def write_spec(directory: Path, document: dict[str, Any], fmt: str) -> Path:
    path = directory / f"{document['name']}.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    else:
        path.write_text(yaml_text(document), encoding="utf-8")
    return path


def validate_document(rng: np.random.Generator, targets: int, workloads: int) -> dict[str, Any]:
    """`targets` hosts with one tag each, all different, and `workloads` workloads with two
    tags each that no host has: each a host's tag with its last digit made a letter, a
    near miss of that tag and of every tag that shares its prefix, so that the did-you-mean
    search has many close candidates for each."""
    tags = [f"svc-{i:05d}-{int(rng.integers(0, 100_000)):05d}" for i in range(targets)]
    picked = rng.integers(0, targets, size=2 * workloads)
    unknown = [f"{tags[k][:-1]}q" for k in picked]
    return {
        "name": "did-you-mean",
        "inventory": [{"id": f"h{i:05d}", "tags": [tag]} for i, tag in enumerate(tags)],
        "workloads": [
            {"name": f"w{j:04d}", "mode": "mapping", "tags": unknown[2 * j : 2 * j + 2]}
            for j in range(workloads)
        ],
    }


# -- measuring -------------------------------------------------------------------------------


def _python(code: str, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    return done, time.perf_counter() - start


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    return f"exit {done.returncode}: {lines[-1][:200] if lines else 'no output'}"


def time_load(
    path: Path, fmt: str, targets: int, workloads: int, runs: int, index: bool = False
) -> LoadRun:
    best: dict[str, Any] | None = None
    error = None
    done_runs = 0
    for attempt in range(runs):
        progress(f"loading: {targets:,} targets, {fmt}, run {attempt + 1} of {runs}")
        try:
            done, _ = _python(PROBE, str(path), *(["index"] if index else []))
        except subprocess.TimeoutExpired:
            error = f"no answer within {TIMEOUT:g} s"
            break
        done_runs += 1
        if done.returncode != 0:
            error = _failure(done)
            break
        figures = json.loads(done.stdout)
        if figures["targets"] != targets:
            error = f"{figures['targets']:,} targets loaded, not {targets:,}"
            break
        if best is None or figures["seconds"] < best["seconds"]:
            best = figures
    return LoadRun(
        fmt=fmt,
        targets=targets,
        workloads=workloads,
        size_bytes=path.stat().st_size,
        seconds=best["seconds"] if best else float("nan"),
        runs=done_runs,
        peak_bytes=(best["after"] - best["before"]) * 1024 if best else 0,
        error=error,
        index_seconds=best["index_seconds"] if best and index else float("nan"),
        kept_bytes=(best["kept"] - best["before"]) * 1024 if best and index else 0,
    )


def time_validate(directory: Path, targets: int, workloads: int, runs: int) -> ValidateRun:
    rng = np.random.default_rng([targets, workloads])
    document = validate_document(rng, targets, workloads)
    path = write_spec(directory, document, "yaml")
    commands: list[float] = []
    startups: list[float] = []
    warnings = 0
    error = None
    for attempt in range(runs):
        progress(
            f"validate: {targets:,} targets, {workloads:,} workloads, run {attempt + 1} of {runs}"
        )
        _, startup = _python("import placed.cli.main")
        startups.append(startup)
        try:
            done, seconds = _python(PLACED, "validate", str(path), "--format", "json")
        except subprocess.TimeoutExpired:
            error = f"no answer within {TIMEOUT:g} s"
            break
        if done.returncode != 0:
            error = _failure(done)
            break
        commands.append(seconds)
        report = json.loads(done.stdout)
        documents = report.get("documents", [report])
        warnings = sum(len(d.get("warnings", [])) for d in documents)
    return ValidateRun(
        targets=targets,
        workloads=workloads,
        unknown_tags=2 * workloads,
        seconds=min(commands) if commands else float("nan"),
        startup_seconds=min(startups),
        runs=len(commands),
        warnings=warnings,
        error=error,
    )


def time_render(units: int, runs: int) -> RenderRun:
    progress(f"render: planning {units:,} units")
    spec = make_mapping_spec(units, 100)
    result = Planner(spec).plan()
    documents = [(spec.name, plan_document(result))]

    def as_json() -> str:
        return json.dumps(combine(documents), indent=2, ensure_ascii=False)

    def as_table(terminal: bool) -> str:
        buffer = io.StringIO()
        console = Console(
            file=buffer, width=120, force_terminal=terminal or None, color_system=None
        )
        plan_table(console, documents)
        return buffer.getvalue()

    progress(f"render: {units:,} units as JSON and as a table, best of {runs}")
    json_seconds = best_of(as_json, runs)
    table_seconds = best_of(lambda: as_table(False), runs)
    terminal_seconds = best_of(lambda: as_table(True), runs)
    return RenderRun(
        units=units,
        placed=len(result.placements),
        json_seconds=json_seconds,
        table_seconds=table_seconds,
        terminal_seconds=terminal_seconds,
        runs=runs,
        json_chars=len(as_json()),
        table_chars=len(as_table(False)),
    )


def run(config: Config) -> LoadingResult:
    if config.quick:
        sizes, validate_size, units = (1_000, 2_000), (500, 100), 2_000
    else:
        sizes, validate_size, units = (
            (10_000, 100_000),
            (VALIDATE_TARGETS, VALIDATE_WORKLOADS),
            RENDER_UNITS,
        )
    runs = max(1, min(config.repeat, 3))
    loads: list[LoadRun] = []
    with tempfile.TemporaryDirectory(prefix="placed-bench-") as scratch:
        directory = Path(scratch)
        for size in sizes:
            progress(f"loading: generating {size:,} targets")
            document = inventory_document(np.random.default_rng([config.seed, 8, size]), size)
            workloads = len(document["workloads"])
            for fmt in ("json", "yaml"):
                path = write_spec(directory, document, fmt)
                # One run of the largest size: it is the slow one, and its figure is clear.
                # There the planner's index is built too, and what stays resident read.
                largest = size == max(sizes)
                loads.append(time_load(path, fmt, size, workloads, 1 if largest else runs, largest))
                path.unlink()
        validate = time_validate(directory, *validate_size, runs)
    render = time_render(units, runs)
    return LoadingResult(loads, validate, render, full=not config.quick)


# -- the report ------------------------------------------------------------------------------


def _seconds(value: float) -> str:
    if value != value:  # nan: not measured
        return "-"
    return f"{value * 1e3:,.0f} ms" if value < 1 else f"{value:.2f} s"


def _bytes(value: float) -> str:
    if value >= 1024 * 1024:
        return f"{value / (1024 * 1024):,.1f} MiB"
    return f"{value / 1024:,.1f} KiB"


def section(result: LoadingResult) -> list[str]:
    lines = ["## Loading", ""]
    lines += table(
        [
            "targets",
            "format",
            "file",
            "`load_specs`",
            "per target",
            "peak memory",
            "peak per target",
            "index (`Planner`)",
            "kept per target, index built",
            "runs",
        ],
        [
            [
                f"{run.targets:,}",
                run.fmt.upper(),
                _bytes(run.size_bytes),
                _seconds(run.seconds) if run.error is None else f"failed: {run.error}",
                f"{run.seconds / run.targets * 1e6:,.1f} µs" if run.error is None else "-",
                _bytes(run.peak_bytes) if run.error is None else "-",
                _bytes(run.peak_per_target) if run.error is None else "-",
                _seconds(run.index_seconds) if run.error is None else "-",
                f"{run.kept_per_target:,.0f} B" if run.error is None and run.kept_bytes else "-",
                str(run.runs),
            ]
            for run in result.loads
        ],
    )
    lines += [
        "",
        f"Zones of {RACKS_PER_ZONE} racks of {TARGETS_PER_RACK} hosts; each host has 3-6 tags "
        f"(Zipf over {TAG_VOCABULARY}), five properties (purpose, gpu, arch, agentVersion, "
        "features) and a capacity (cpu, memory); five workloads (allocation with tags and "
        "resources, distinct zone, mapping, a constraint, every mode). JSON is written with "
        "indent=2, YAML in block style with flow lists. Each load is `load_specs(path)` in a "
        "fresh interpreter, best of the runs (one at the largest size); its peak memory is "
        "the growth of the process's peak resident set during the load. At the largest size the "
        "same process then builds the planner's index (`Planner(spec)`, timed), collects, "
        "and reads its resident set again: what the spec and its index keep, as the growth "
        "of the resident set from before the load (RSS, not tracemalloc: it counts what the "
        "allocator holds, freed or not).",
        "",
        "### `placed validate`: the did-you-mean check",
        "",
    ]
    v = result.validate
    lines += table(
        ["targets", "workloads", "unknown tags", "did-you-mean warnings", "command", "startup"],
        [
            [
                f"{v.targets:,}",
                f"{v.workloads:,}",
                f"{v.unknown_tags:,}",
                f"{v.warnings:,} of {v.unknown_tags:,}" if v.error is None else "-",
                _seconds(v.seconds) if v.error is None else f"failed: {v.error}",
                _seconds(v.startup_seconds),
            ]
        ],
    )
    r = result.render
    lines += [
        "",
        "Each target has one tag of its own (svc-00042-31337); each workload two tags no "
        "target has, each a target's tag with its last digit made a letter "
        "(svc-00042-3133q): a near miss that difflib.get_close_matches finds at the "
        "lint's cutoff of 0.8, so each should give a warning, and one that shares its "
        "prefix with many tags. The command is `placed validate FILE --format json` timed "
        "from outside (best of the runs); startup is `python -c 'import placed.cli.main'`, "
        "part of the command's time.",
        "",
        "### A plan as a table and as JSON",
        "",
    ]
    lines += table(
        ["units", "JSON", "table (not a terminal)", "table / JSON", "table (terminal)"],
        [
            [
                f"{r.units:,}",
                _seconds(r.json_seconds),
                _seconds(r.table_seconds),
                f"{r.ratio:.1f}x",
                _seconds(r.terminal_seconds),
            ]
        ],
    )
    lines += [
        "",
        f"One mapping workload of {r.units:,} units on 100 targets, planned once "
        f"({r.placed:,} placed). JSON is `json.dumps(combine(documents), indent=2)` "
        f"({r.json_chars:,} characters); the table is `plan_table` writing to a rich "
        f"Console on a StringIO, 120 columns ({r.table_chars:,} characters), and again "
        f"with force_terminal=True; best of {r.runs}.",
        "",
    ]
    return lines


def acceptance_rows(result: LoadingResult) -> list[list[str]]:
    """Issue 8's goals as rows of the acceptance table: PASS or "not yet", never FAIL,
    since they do not change the exit status yet."""
    skipped = ["n/a", "not run (quick)"]

    def goal(ok: bool) -> str:
        return "PASS" if ok else "not yet"

    def loads(targets: int, limit: float) -> list[str]:
        runs = [run for run in result.loads if run.targets == targets]
        if not runs:
            return skipped
        measured = ", ".join(
            f"{run.fmt.upper()} {_seconds(run.seconds) if run.error is None else 'failed'}"
            for run in runs
        )
        # The goal is the issue's, stated for JSON specs (the files it timed); YAML is
        # shown beside it, and is slower (PyYAML's nodes), which BENCHMARKS.md says.
        judged = [run for run in runs if run.fmt == "json"]
        return [
            measured,
            goal(bool(judged) and all(r.error is None and r.seconds < limit for r in judged)),
        ]

    v, r = result.validate, result.render
    validate = (
        [
            _seconds(v.seconds) if v.error is None else "failed",
            goal(v.error is None and v.seconds < VALIDATE_SECONDS),
        ]
        if result.full
        else skipped
    )
    render = (
        [f"{r.ratio:.1f}x", goal(r.ratio <= TABLE_OVER_JSON)]
        if r.units == RENDER_UNITS
        else skipped
    )
    failed = [run for run in result.loads if run.error is not None]
    largest = [run for run in result.loads if run.targets == LARGEST and run.error is None]

    def at_largest(measure: Callable[[LoadRun], str], ok: Callable[[LoadRun], bool]) -> list[str]:
        if not largest:
            return skipped
        return [
            ", ".join(f"{run.fmt.upper()} {measure(run)}" for run in largest),
            goal(all(ok(run) for run in largest)),
        ]

    return [
        [
            f"loading (issue 18): {LARGEST:,} targets from JSON and from YAML in < "
            f"{LOAD_100K_SECONDS:g} s",
            *at_largest(lambda run: _seconds(run.seconds), lambda run: run.seconds < 5.0),
        ],
        [
            f"loading (issue 18): {LARGEST:,} targets keep < {KEPT_PER_TARGET:,} B each with "
            "the index built (resident set)",
            *at_largest(
                lambda run: f"{run.kept_per_target:,.0f} B",
                lambda run: run.kept_per_target < KEPT_PER_TARGET,
            ),
        ],
        [
            f"loading (issue 18): the index of {LARGEST:,} targets builds faster than they load",
            *at_largest(
                lambda run: f"{_seconds(run.index_seconds)} vs {_seconds(run.seconds)}",
                lambda run: run.index_seconds < run.seconds,
            ),
        ],
        [
            f"loading: 10,000 targets (JSON) in < {LOAD_10K_SECONDS:g} s",
            *loads(10_000, LOAD_10K_SECONDS),
        ],
        [
            f"loading: 100,000 targets (JSON) in < {LOAD_100K_SECONDS:g} s",
            *loads(100_000, LOAD_100K_SECONDS),
        ],
        [
            f"validate: {VALIDATE_TARGETS:,} targets with unique tags, {VALIDATE_WORKLOADS:,} "
            f"workloads with unknown tags in < {VALIDATE_SECONDS:g} s",
            *validate,
        ],
        [
            f"a {RENDER_UNITS:,}-unit plan as a table within {TABLE_OVER_JSON:g}x of JSON",
            *render,
        ],
        [
            "loading: every generated spec loads with all its targets; validate accepts its own",
            f"{len(failed)} failed" + ("" if v.error is None else ", validate failed"),
            "PASS" if result.correct else "FAIL",
        ],
    ]
