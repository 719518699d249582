"""`placed`: plan, check and simulate placements from a spec file, offline."""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from placed import __version__
from placed.cli.grid import printable
from placed.cli.inputs import InputFormat, read_props, read_specs
from placed.cli.output import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    Error,
    Format,
    err,
    error_format,
    fail,
    fail_at,
    fail_spec,
    guarded,
    out,
    write,
)
from placed.cli.progress import DelayedProgress, DelayedStatus
from placed.cli.render import (
    Documents,
    Table,
    View,
    combine,
    dedications_table,
    emit_data,
    explain_table,
    migrations_table,
    plan_table,
    simulate_table,
    validate_table,
)
from placed.cli.streaming import CheckWriter
from placed.engine.changes import Change, changes
from placed.engine.check import check_rows, check_warnings
from placed.engine.check_summary import summary_rows
from placed.engine.cloud import Cloud
from placed.engine.planner import Placement, Planner, PlanResult
from placed.engine.rebalance import Simulation, UnknownTargetError, simulate
from placed.engine.report import plan_document, trace_document
from placed.engine.trace import UnknownUnitError, trace
from placed.model import PropertyError, Spec, Workload, validate_properties
from placed.model.dedications import DedicationError
from placed.model.tenancy import ROOT_ADMIN
from placed.policy.expressions import All, ExpressionError, parse_constraint
from placed.policy.expressions.dialect import dialect_notices
from placed.policy.expressions.evaluate import holds, satisfied
from placed.policy.lint import lint
from placed.spec import SpecError
from placed.spec.hzn import convert_openhorizon, dump_native
from placed.spec.juju.convert import dump_juju_native, native_document
from placed.spec.juju.files import load_status, looks_like_juju_text, non_portable
from placed.spec.schema import SpecDocument

__all__ = ["EXIT_FAILED", "EXIT_INVALID", "EXIT_OK", "app", "run"]

app = typer.Typer(
    name="placed",
    help=(
        "Decide where each unit of work goes, under policy, and explain why.\n\n"
        "Exit codes: 0 success; 1 ran, but something could not be placed or is "
        "incompatible; 2 invalid input (the message points at it)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

FormatOption = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        "-o",
        help="table for people (plain aligned columns when piped); wide: a table with every "
        "column; json or yaml for programs (errors too, as "
        '{"valid": false, "errors": [...]}); changes (plan only): the steps Juju would '
        "run, as juju deploy --dry-run lists them.",
    ),
]
WideOption = Annotated[
    bool, typer.Option("--wide", help="A table with every column (the same as -o wide).")
]


InputsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="A spec file (YAML or JSON; it may hold several documents separated by ---), "
        "- for standard input, several spec files (planned side by side, as if "
        "concatenated; document names must differ), or Open Horizon's own JSON files: "
        "several files, or one directory of them.",
        metavar="PATH",
        show_default=False,
    ),
]
InputFormatOption = Annotated[
    InputFormat,
    typer.Option(
        "--input-format",
        "-i",
        help="native: a placed spec. juju: a juju-deployer file or a bundle (read "
        "unchanged). openhorizon: the JSON files hzn prints and takes (node list, node and "
        "deployment policies, patterns, service definitions; see placed convert). auto: "
        "Open Horizon for a directory or files shaped like hzn's, Juju for a file with "
        "applications:, machines: or deployments of services:, else native.",
    ),
]
StatusOption = Annotated[
    Path | None,
    typer.Option(
        "--status",
        help="What already runs, as `juju status --format yaml` prints it (machines with "
        "their containers, applications with their units): a Juju file's directives "
        "resolve against it, and new machines, containers and units are numbered after it.",
        show_default=False,
    ),
]
WorkloadOption = Annotated[
    list[str] | None,
    typer.Option(
        "--workload",
        "-w",
        help="Only these workloads (repeat for several); a name applies to every document "
        "that has it.",
    ),
]


def _version(value: bool) -> None:
    if value:
        write(f"placed {__version__}\n")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Decide where each unit of work goes, under policy, and explain why."""
    error_format.set(Format.table)  # until the command says otherwise


def _begin(fmt: Format, wide: bool = False, changes: bool = False) -> Format:
    """The command's output format; from here on an error is reported in it."""
    if fmt is Format.changes and not changes:
        error_format.set(Format.table)
        fail("--format changes lists the steps of a plan: use it with placed plan")
    if wide and not fmt.data:
        fmt = Format.wide
    error_format.set(fmt)
    return fmt


def _load_inputs(
    paths: list[Path], input_format: InputFormat, status: Path | None = None
) -> list[Spec]:
    names = ", ".join("standard input" if str(p) == "-" else str(p) for p in paths[:3])
    try:
        with DelayedStatus(f"reading {names}{', ...' if len(paths) > 3 else ''}", console=err):
            running = load_status(str(status)) if status is not None else None
            return read_specs(paths, input_format, running)
    except SpecError as error:
        fail_spec(error)


def _emit(documents: Documents, fmt: Format, table: Table, view: View = View()) -> None:
    with guarded():
        if fmt.data:
            emit_data(out, combine(documents), fmt)
        else:
            table(out, documents, dataclasses.replace(view, wide=fmt is Format.wide))


def _exit(failed: bool) -> NoReturn:
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@app.command()
def plan(
    spec: InputsArgument,
    workload: WorkloadOption = None,
    unplaced: Annotated[
        bool,
        typer.Option(
            "--unplaced",
            help="Show only the units that could not be placed (JSON: placements is empty).",
        ),
    ] = False,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
) -> None:
    """Place every unit of every workload and say why each landed where it did.

    Units that cannot be placed are listed with a summary such as
    "0/7 targets available: 4 lack required tag datacenter1, 3 have forbidden tag network3".
    Exit code 1 when any unit is unplaced (of the workloads shown, with -w).

    Example: placed plan examples/ironic-affinity.yaml --format json
    Example: placed plan examples/distinct-racks.yaml --unplaced
    Example: placed plan examples/ironic-affinity.yaml -w node2 -o wide
    Example: generate-spec | placed plan - | grep unplaced
    Example: placed plan racks.yaml hosts.yaml   (several specs, planned side by side)
    Example: placed plan examples/openhorizon/   (Open Horizon's files, as hzn prints them)
    Example: placed plan examples/juju-deployer.yaml --format changes   (a Juju file)
    Example: placed plan bundle.yaml --status status.yaml   (juju status --format yaml)
    """
    fmt = _begin(fmt, wide, changes=True)
    documents = []
    hidden: dict[str, int] = {}
    failed = False
    steps: list[tuple[str, list[Change]]] = []
    chosen = _chosen_workloads(_load_inputs(spec, input_format, status), workload)
    with DelayedProgress("placing", console=err) as progress:
        for document, wanted in chosen:
            result = Planner(document).plan(progress=progress)
            if workload:
                result = _only(result, {w.name for w in wanted})
            failed = failed or bool(result.unplaced)
            if unplaced:
                hidden[document.name] = len(result.placements)
                result = dataclasses.replace(result, outcomes=list(result.unplaced))
            if fmt is Format.changes:
                steps.append((document.name, changes(result)))
            else:
                documents.append((document.name, plan_document(result)))
    if fmt is Format.changes:
        with guarded():
            for name, found in steps:
                if len(steps) > 1:
                    write(f"{name}:\n")
                write("".join(f"- {printable(step.text)}\n" for step in found))
        _exit(failed)
    _emit(documents, fmt, plan_table, View(hidden_placements=hidden if unplaced else None))
    _exit(failed)


def _only(result: PlanResult, names: set[str]) -> PlanResult:
    """The plan, as far as the workloads `names` are concerned (planned with all others)."""
    outcomes = [o for o in result.outcomes if o.workload in names]
    units = {o.unit for o in outcomes}
    return dataclasses.replace(
        result,
        outcomes=outcomes,
        warnings=[w for w in result.warnings if w.workload is None or w.workload in names],
        new_targets=[made for made in result.new_targets if made.unit in units],
    )


# Above this many (workload, target) pairs the full matrix is more than anyone reads:
# check shows the summary unless --all asks for every pair.
CHECK_PAIRS_SHOWN = 10_000


@app.command()
def check(
    spec: InputsArgument,
    workload: WorkloadOption = None,
    summary: Annotated[
        bool,
        typer.Option(
            "--summary",
            help="One row per workload: how many targets are compatible, and why the others "
            "are not, counted per filter (as in: 0/12 targets available: 5 are dedicated "
            "to another tenant or not to this one, 4 fail the workload's constraints). The "
            f"default above {CHECK_PAIRS_SHOWN:,} workload-target pairs.",
        ),
    ] = False,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every workload against every target, with every reason (the default up "
            f"to {CHECK_PAIRS_SHOWN:,} pairs).",
        ),
    ] = False,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
) -> None:
    """For each workload and each target: compatible or not, and every reason why not.

    Capacity is judged against an empty inventory (nothing placed yet). Exit code 1 when a
    workload has no compatible target at all. Above 10,000 workload-target pairs the
    summary is shown instead of every pair (stderr says so); --all or --summary choose.
    Both print workload by workload as they are checked, JSON and YAML too.

    Example: placed check examples/ironic-affinity.yaml -w node2
    Example: placed check examples/ironic-affinity.yaml -o wide | grep -w no
    Example: placed check nodes.json web.deployment.policy.json web.service.definition.json
    Example: placed check fleet.yaml --summary --format json
    Example: placed check fleet.yaml --all > every-pair.txt
    """
    fmt = _begin(fmt, wide)
    if summary and every:
        fail("--summary and --all ask for different outputs: give one of them")
    specs = _load_inputs(spec, input_format, status)
    chosen = [
        (document.name, Planner(document), wanted)
        for document, wanted in _chosen_workloads(specs, workload)
    ]
    pairs = sum(len(wanted) * len(planner.index) for _, planner, wanted in chosen)
    brief = summary or (not every and pairs > CHECK_PAIRS_SHOWN)
    if brief and not summary:
        if len(chosen) == 1:
            _, planner, wanted = chosen[0]
            many = ("workload", "workloads"), ("target", "targets")
            size = " x ".join(
                f"{n:,} {words[n != 1]}"
                for n, words in zip((len(wanted), len(planner.index)), many, strict=True)
            )
        else:
            size = f"{len(chosen)} documents, {pairs:,} workload-target pairs"
        err.print(Text(f"{size}: showing --summary; --all for every pair"), soft_wrap=True)
    writer = CheckWriter(out, fmt, len(chosen) > 1, brief, View(wide=fmt is Format.wide))
    # On a terminal the bar goes where the rows go, so that rows scroll above it; neither
    # console's file is redirected through the other.
    bar = out if out.is_terminal else err
    with DelayedProgress("checking", console=bar, redirect=False) as progress:
        failed = _stream_check(chosen, writer, brief, progress)
    writer.close()
    _exit(failed)


def _stream_check(
    chosen: list[tuple[str, Planner, list[Workload]]],
    writer: CheckWriter,
    brief: bool,
    progress: DelayedProgress,
) -> bool:
    """Check and print workload by workload; whether some workload has no compatible
    target."""
    total = sum(len(wanted) for _, _, wanted in chosen)
    failed = False
    done = 0
    for number, (name, planner, wanted) in enumerate(chosen):
        writer.begin(name, wanted, len(planner.index))
        rows = summary_rows(planner, wanted) if brief else check_rows(planner, wanted)
        conflicts = []
        for position, checked in enumerate(rows):
            failed = failed or checked.failed
            conflicts.extend(checked.conflicts)
            writer.row(checked.row)
            done += 1
            progress(done, total)
            if writer.closed:
                # Nobody reads the rest, but the exit code still tells whether some
                # workload has no compatible target: the summary's counts are enough.
                rest = [(planner, wanted[position + 1 :])]
                rest += [(p, w) for _, p, w in chosen[number + 1 :]]
                return failed or any(c.failed for p, w in rest for c in summary_rows(p, w))
        writer.end(conflicts, check_warnings(planner, wanted))
    return failed


def _chosen_workloads(
    specs: list[Spec], names: list[str] | None
) -> list[tuple[Spec, list[Workload]]]:
    """The workloads --workload names in each document (all of them when none is named).

    As with simulate's --down, a name applies to every document that has it, documents
    with none of the names are left out, and a name no document has is an error."""
    if not names:
        return [(document, list(document.workloads)) for document in specs]
    known = {w.name for document in specs for w in document.workloads}
    unknown = [name for name in names if name not in known]
    if unknown:
        scope = "any document" if len(specs) > 1 else specs[0].name
        fail_at(
            specs[0].source,
            f"no workload named {', '.join(unknown)} in {scope}{_did_you_mean(unknown, known)}",
            "--workload",
        )
    chosen = []
    for document in specs:
        mine = [w for w in document.workloads if w.name in names]
        if mine:
            chosen.append((document, mine))
    return chosen


@app.command()
def explain(
    spec: InputsArgument,
    unit: Annotated[
        str, typer.Argument(help="The unit, as plan names it: web/2.", show_default=False)
    ],
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
) -> None:
    """Why one unit went where it did: every target, judged as the plan judged it.

    The plan is replayed up to the unit, and each target is judged in the state the unit
    saw (the units placed before it, the capacity they took), with every failing filter
    listed, e.g. "distinct: is in a rack that already holds a unit of web (rack r2
    already holds web/0)". Exit code 1 when the unit is unplaced. The unit comes last,
    after the spec files.

    Example: placed explain examples/distinct-racks.yaml web/3
    Example: placed explain examples/distinct-racks.yaml web/3 --format json
    """
    fmt = _begin(fmt, wide)
    documents = []
    failed = False
    specs = _load_inputs(spec, input_format, status)
    for document in specs:
        planner = Planner(document)
        try:
            found = trace(planner, unit)
        except UnknownUnitError:
            continue
        failed = failed or not isinstance(found.outcome, Placement)
        documents.append((document.name, trace_document(found)))
    if not documents:
        known = {
            w.unit_key(i) if w.mode != "every" else f"{w.name}/*"
            for document in specs
            for w in document.workloads
            for i in range(min(w.units, 1000))
        }
        fail_at(specs[0].source, f"no unit named {unit}{_did_you_mean([unit], known)}", "UNIT")
    _emit(documents, fmt, explain_table)
    _exit(failed)


@app.command(name="simulate")
def simulate_command(
    spec: InputsArgument,
    down: Annotated[
        list[str] | None,
        typer.Option(
            "--down", "-d", help="A target (or a location: all targets in it) that fails."
        ),
    ] = None,
    up: Annotated[
        list[str] | None, typer.Option("--up", "-u", help="A target that comes (back) up.")
    ] = None,
    migrate: Annotated[
        list[str] | None,
        typer.Option(
            "--migrate",
            "-m",
            help="VM=HOST: move a running VM (a unit of the spec's running: section) to a "
            "host, under the dedication rules (seed 004): refused, with the reason and an "
            "event, onto a host its account may not use.",
        ),
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option("--targets", help="A running VM: list the hosts it may migrate to."),
    ] = None,
    maintenance: Annotated[
        list[str] | None,
        typer.Option(
            "--maintenance",
            help="A host into maintenance: each running VM on it is placed again under the "
            "same rules, or the command says why one cannot move (and nothing moves).",
        ),
    ] = None,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
) -> None:
    """Take targets down or bring them up, and show which units move, where, and why;
    or migrate running VMs (--migrate VM=HOST) and list where one may go (--targets VM).

    mapping units move only if their target went down or a target that came up now ranks
    first (with max_load, a target that came up also takes the surplus of targets over the
    new cap); allocation units move only if their target went down; an every-mode unit
    whose target goes down is removed (it ran there and nowhere else). The table also
    lists the units that were unplaced already before the change, and says when a target
    named was already down (or up). Exit code 1 when a unit is left unplaced afterwards.

    Example: placed simulate examples/ironic-affinity.yaml --down conductor1
    Example: placed simulate examples/balanced-conductors.yaml --up conductor5
    Example: placed simulate examples/distinct-racks.yaml --down r1 --format json
    Example: placed simulate cloud.yaml --migrate web/0=H2a --targets web/1
    Example: placed simulate cloud.yaml --maintenance H1a
    """
    fmt = _begin(fmt, wide)
    if migrate or targets or maintenance:
        if down or up:
            fail(
                "--migrate, --targets and --maintenance move running VMs one by one; "
                "simulate --down/--up apart"
            )
        _migrations(
            _load_inputs(spec, input_format, status),
            migrate or [],
            targets or [],
            maintenance or [],
            fmt,
        )
    if not down and not up:
        fail(
            "nothing to simulate: give at least one --down TARGET or --up TARGET (or "
            "--migrate VM=HOST, --targets VM)"
        )
    specs = _load_inputs(spec, input_format, status)
    documents = []
    failed = False
    for document, (mine_down, mine_up) in _scope(specs, down or [], up or []):
        planner = Planner(document)
        try:
            result = simulate(planner, mine_down, mine_up)
        except UnknownTargetError as error:
            flag = "--up" if str(error).startswith("--up") else "--down"
            fail_at(document.source, str(error), flag)
        failed = failed or bool(result.after.unplaced)
        documents.append((document.name, _simulation(planner, result)))
    _emit(documents, fmt, simulate_table)
    _exit(failed)


def _migrations(
    specs: list[Spec], migrate: list[str], targets: list[str], maintenance: list[str], fmt: Format
) -> None:
    """Seed 004's migrations and maintenance on each document's running VMs, in order, as
    the root admin."""
    documents = []
    refused_any = False
    for document in specs:
        cloud = Cloud(document)
        before = len(cloud.events)
        moved, refused = [], []
        for asked in migrate:
            name, sep, host = asked.partition("=")
            if not sep or not name or not host:
                fail_at("--migrate", f"{asked!r}: write VM=HOST, as in web/0=H2a", "--migrate")
            try:
                was = cloud.where(name)
                cloud.migrate(ROOT_ADMIN, name, host)
                moved.append({"unit": name, "from": was, "to": host})
            except DedicationError as error:
                if error.kind == "invalid-parameter":
                    fail_at("--migrate", error.message, "--migrate")
                refused.append({"unit": name, "to": host, "kind": error.kind, "why": error.message})
        for host in maintenance:
            try:
                for name, to in cloud.evacuate(ROOT_ADMIN, host).items():
                    moved.append({"unit": name, "from": host, "to": to})
            except DedicationError as error:
                if error.kind == "invalid-parameter" and "no host" in error.message:
                    fail_at("--maintenance", error.message, "--maintenance")
                refused.append({"unit": host, "to": "-", "kind": error.kind, "why": error.message})
        where: dict[str, list[str]] = {}
        for name in targets:
            try:
                where[name] = cloud.migration_targets(name)
            except DedicationError as error:
                fail_at("--targets", error.message, "--targets")
        refused_any = refused_any or bool(refused)
        documents.append(
            (
                document.name,
                {
                    "migrated": moved,
                    "refused": refused,
                    "targets": where,
                    "events": [e.to_dict() for e in cloud.events[before:]],
                },
            )
        )
    _emit(documents, fmt, migrations_table)
    _exit(refused_any)


def _simulation(planner: Planner, result: Simulation) -> dict[str, Any]:
    """The output contract of a simulation, with what explains it (all added keys):
    units_before, unplaced_before, already_down, already_up, removed (and per move)."""
    data = result.to_dict()
    every = {w.name for w in planner.spec.workloads if w.mode == "every"}
    after = result.after.by_unit()
    removed = 0
    for move in data["moves"]:
        # An every-mode unit is named after its target: once that is gone, so is the unit.
        gone = move["workload"] in every and move["to"] is None and move["unit"] not in after
        move["removed"] = gone
        removed += gone
    index = planner.index
    was_up = {target: bool(index.up[index.position[target]]) for target in index.ids}
    data.update(
        units_before=len(result.before.outcomes),
        unplaced_before=plan_document(
            dataclasses.replace(result.before, outcomes=list(result.before.unplaced))
        )["unplaced"],
        already_down=[t for t in result.down if not was_up.get(t, True)],
        already_up=[t for t in result.up if was_up.get(t, False)],
        removed=removed,
    )
    return data


def _scope(
    specs: list[Spec], down: list[str], up: list[str]
) -> list[tuple[Spec, tuple[list[str], list[str]]]]:
    """Which --down/--up names apply to which document of a file.

    In a file of several documents a name applies to every document that has it, and
    documents that have none of the names are left out; a name no document has is an
    error. A single document takes every name (and reports unknown ones itself)."""
    if len(specs) == 1:
        return [(specs[0], (down, up))]
    ids = [{location.id for location in s.inventory.locations()} for s in specs]
    unknown = [name for name in [*down, *up] if not any(name in known for known in ids)]
    if unknown:
        hint = _did_you_mean(unknown, set().union(*ids))
        fail_at(
            specs[0].source,
            f"{', '.join(unknown)}: no document has a target or location with that id{hint}",
            "--down" if unknown[0] in down else "--up",
        )
    scoped = []
    for document, known in zip(specs, ids, strict=True):
        mine = ([n for n in down if n in known], [n for n in up if n in known])
        if mine[0] or mine[1]:
            scoped.append((document, mine))
    return scoped


def _did_you_mean(unknown: list[str], known: Iterable[str]) -> str:
    close = difflib.get_close_matches(unknown[0], sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if len(unknown) == 1 and close else ""


class Dialect(StrEnum):
    placed = "placed"
    openhorizon = "openhorizon"


@app.command()
def validate(
    spec: InputsArgument,
    fmt: FormatOption = Format.table,
    input_format: InputFormatOption = InputFormat.auto,
    dialect: Annotated[
        Dialect,
        typer.Option(
            "--dialect",
            help="openhorizon: also warn wherever a constraint or property list uses one of "
            "placed's extensions that an Open Horizon hub would reject (blanks or short "
            "versions in a range, && without blanks, ':' inside quotes, a YAML list value), "
            "before a policy goes back to a hub.",
        ),
    ] = Dialect.placed,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Warnings fail: exit code 1 when there is any (for CI)."),
    ] = False,
    portable: Annotated[
        bool,
        typer.Option(
            "--portable",
            help="Juju files: a directive that names a machine other than 0 is an error, as "
            "the charm store's validation makes it (only machine 0 exists everywhere).",
        ),
    ] = False,
    status: StatusOption = None,
) -> None:
    """Check a spec without placing anything: syntax, types, unknown keys, duplicate ids,
    and warnings for what is valid but probably unintended.

    Exit code 0 when valid (1 with --strict when there are warnings), 2 when invalid.

    Example: placed validate examples/ironic-affinity.yaml
    Example: placed validate --strict spec.yaml   (in CI: warnings fail the build)
    Example: placed validate --input-format openhorizon examples/openhorizon/
    Example: placed validate --dialect openhorizon examples/edge-namespaces.yaml
    Example: placed validate --portable examples/juju-proposed.yaml
    """
    fmt = _begin(fmt)
    specs = _load_inputs(spec, input_format, status)
    if portable:
        problems = non_portable(specs)
        if problems:
            fail_spec(SpecError(specs[0].source, problems))
    documents = [
        (
            document.name,
            {
                "valid": True,
                "targets": len(document.inventory.targets),
                "workloads": len(document.workloads),
                "warnings": [
                    n.to_dict()
                    for n in [
                        *lint(document),
                        *(dialect_notices(document) if dialect is Dialect.openhorizon else []),
                    ]
                ],
            },
        )
        for document in specs
    ]
    _emit(documents, fmt, validate_table)
    _exit(strict and any(data["warnings"] for _, data in documents))


@app.command()
def dedications(
    spec: InputsArgument,
    fmt: FormatOption = Format.table,
    coverage: Annotated[
        bool,
        typer.Option(
            "--coverage",
            help="Every zone, pod, cluster and host the dedications cover, with its owner and "
            "why: its own dedication, or inherited from which ancestor.",
        ),
    ] = False,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only zones, pods, clusters or hosts.")
    ] = None,
    domain: Annotated[str | None, typer.Option("--domain", help="Only this domain's.")] = None,
    account: Annotated[str | None, typer.Option("--account", help="Only this account's.")] = None,
    principal: Annotated[
        str,
        typer.Option(
            "--as",
            help="List as this principal: root-admin (everything), domain-admin:D1 or user:A7 "
            "(only what applies to their domain chain and account).",
        ),
    ] = "root-admin",
    dedicate: Annotated[
        list[str] | None,
        typer.Option(
            "--dedicate",
            help="RESOURCE=DOMAIN or RESOURCE=DOMAIN/ACCOUNT: dedicate it, as --as, before "
            "listing (on a copy: the spec is not changed). A refused operation exits 2 with "
            "the rule's kind and message.",
        ),
    ] = None,
    update: Annotated[
        list[str] | None,
        typer.Option("--update", help="RESOURCE=DOMAIN[/ACCOUNT]: give it to a new owner."),
    ] = None,
    release: Annotated[
        list[str] | None, typer.Option("--release", help="RESOURCE: release its dedication.")
    ] = None,
    input_format: InputFormatOption = InputFormat.auto,
) -> None:
    """List the dedications of a spec (seed 004): which zones, pods, clusters and hosts
    belong to which domain or account, after its dedications: section is applied; and try
    dedicate, update and release (in that order) as a principal.

    Example: placed dedications examples/cloudstack-dedication.yaml
    Example: placed dedications examples/cloudstack-dedication.yaml --coverage --kind host
    Example: placed dedications examples/cloudstack-dedication.yaml --as user:A7 -f json
    Example: placed dedications SPEC --dedicate c2=SD11 --release p2 --as root-admin
    """
    fmt = _begin(fmt)
    documents = []
    for document in _load_inputs(spec, input_format):
        cloud = Cloud(document)
        who = cloud.tenancy.principal(principal)
        if who is None:
            fail_at(
                "--as",
                f"{principal!r} is not a principal of {document.name}: write root-admin, "
                "domain-admin:DOMAIN or user:ACCOUNT",
                "--as",
            )
        operations = [
            *(("dedicate", text) for text in dedicate or []),
            *(("update", text) for text in update or []),
            *(("release", text) for text in release or []),
        ]
        for operation, text in operations:
            resource, _, owner = text.partition("=")
            owner_domain, _, owner_account = owner.partition("/")
            try:
                if operation == "release":
                    cloud.release(who, resource)
                elif not owner_domain:
                    fail_at(f"--{operation}", f"{text!r}: write RESOURCE=DOMAIN[/ACCOUNT]")
                elif operation == "dedicate":
                    cloud.dedicate(who, resource, owner_domain, owner_account or None)
                else:
                    cloud.update(who, resource, owner_domain, owner_account or None)
            except DedicationError as error:
                fail_at(f"--{operation}", f"{error.kind}: {error.message}", f"--{operation}")
        listed = cloud.list_dedications(who, kind, domain, account)
        data: dict[str, Any] = {"dedications": [d.to_dict() for d in listed]}
        if coverage:
            # What a dedication of any kind covers; --kind picks the rows.
            shown = {d.resource for d in cloud.list_dedications(who, None, domain, account)}
            rows = []
            for resource, resource_kind in cloud.rules.topology.kinds.items():
                found, inherited = cloud.rules.owner(resource)
                if found is None or found.resource not in shown:
                    continue
                if kind is not None and resource_kind != kind:
                    continue
                rows.append(
                    {
                        "resource": resource,
                        "kind": resource_kind,
                        "domain": found.owner.domain,
                        "account": found.owner.account,
                        "inherited_from": found.resource if inherited else None,
                    }
                )
            data["coverage"] = rows
        documents.append((document.name, data))
    _emit(documents, fmt, dedications_table)


@app.command()
def expr(
    expression: Annotated[
        list[str],
        typer.Argument(
            help="A constraint expression; several arguments are ANDed, as Open Horizon's "
            "constraint lists are.",
            show_default=False,
        ),
    ],
    props: Annotated[
        str,
        typer.Option(
            "--props",
            "-p",
            help="Properties as JSON or YAML text, or @FILE (@- for standard input): a "
            "mapping {name: value} or Open Horizon's list [{name, value, type}].",
        ),
    ] = "{}",
    fmt: FormatOption = Format.table,
) -> None:
    """Evaluate a constraint expression against a set of properties.

    Prints true or false; exit code 0 for true, 1 for false, 2 for an invalid expression
    or property (the message shows the column).

    Example: placed expr 'purpose == "lab" && cpu >= 2' --props '{purpose: lab, cpu: 4}'
    Example: hzn policy list | placed expr 'purpose == "lab"' --props @-
    """
    fmt = _begin(fmt)
    try:
        given = read_props(props)
    except SpecError as error:
        fail_spec(error)
    try:
        properties = validate_properties(given.data)
        constraint = parse_constraint(expression)
    except PropertyError as error:
        at = given.position(error.name)
        where = f"{given.source}:{at.line}:{at.column}" if at else given.source
        fail(
            f"{where}: {error}",
            [
                Error(
                    str(error),
                    file=given.source,
                    line=at.line if at else None,
                    column=at.column if at else None,
                    key=error.name or None,
                )
            ],
        )
    except ExpressionError as error:
        fail(
            f"invalid expression: {error.render()}",
            [Error(error.message, column=error.column, key="EXPRESSION")],
        )
    result = satisfied(constraint, properties)
    terms = (
        constraint.tree.terms
        if isinstance(constraint.tree, All)
        else ((constraint.tree,) if constraint.tree is not None else ())
    )
    data: dict[str, Any] = {
        "expression": str(constraint),
        "result": result,
        "terms": [{"term": str(t), "result": holds(t, properties)} for t in terms],
    }
    with guarded():
        if fmt.data:
            emit_data(out, data, fmt)
        else:
            write("true\n" if result else "false\n")
    if not result and not fmt.data:
        failing = [t["term"] for t in data["terms"] if not t["result"]]
        err.print(Text(f"false: {'; '.join(failing)}"), soft_wrap=True)
    _exit(not result)


@app.command()
def convert(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Open Horizon's JSON files, or one directory of them: the node list (hzn "
            "exchange node list -l), node policies (NODE.node.policy.json), deployment "
            "policies, patterns, service definitions or the service list.",
            metavar="PATH",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the spec to this file instead of printing."),
    ] = None,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
) -> None:
    """Convert Open Horizon's files, or a Juju bundle or deployer file, into the
    equivalent native spec (YAML).

    Each node becomes a target (device or cluster, with its scope, namespace, arch and the
    deployment view of its node policy), each deployment policy a workload deploying on
    every compatible node, each pattern a workload only its registered nodes take. plan,
    check and validate read the same files directly; convert shows what they see.

    A Juju file's services become workloads whose to: lists each unit's entry as Juju
    resolves it (svc/N, new, lxd:new...), with juju_constraints and new_machines: true, so
    that the native spec plans to the same layout.

    Example: placed convert examples/openhorizon/ -o spec.yaml
    Example: placed convert examples/juju-deployer.yaml
    """
    try:
        if input_format is InputFormat.juju or (
            input_format is InputFormat.auto and _is_juju_file(paths)
        ):
            specs = _load_inputs(paths, InputFormat.juju, status)
            text = "---\n".join(dump_juju_native(native_document(spec)) for spec in specs)
        else:
            text = dump_native(convert_openhorizon(paths))
    except SpecError as error:
        fail_spec(error)
    if output is None:
        with guarded():
            write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        fail_at(str(output), f"cannot write: {error.strerror or error}", "--output")


def _is_juju_file(paths: list[Path]) -> bool:
    if len(paths) != 1 or not paths[0].is_file():
        return False
    try:
        with paths[0].open("rb") as handle:
            head = handle.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return False
    return looks_like_juju_text(head)


@app.command()
def schema() -> None:
    """Print the JSON Schema of the spec format (for editors and CI linters)."""
    with guarded():
        write(json.dumps(SpecDocument.model_json_schema(), indent=2, ensure_ascii=False) + "\n")


def run() -> None:
    # A string the encoding cannot hold (a lone surrogate from a JSON escape) is shown as
    # an escape rather than ending the program.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
