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
from placed.cli import db, helptext, online, token
from placed.cli.fieldtext import field_text
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
    fail_option,
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
    warnings_table,
)
from placed.cli.serve import serve
from placed.cli.streaming import CheckWriter
from placed.engine.changes import Change, changes
from placed.engine.check import check_rows, check_warnings
from placed.engine.check_summary import summary_rows
from placed.engine.cloud import Cloud
from placed.engine.documents import (
    ArgumentError,
    Operation,
    dedications_document,
    migration_document,
    only_workloads,
    simulation_document,
    validation_document,
)
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import UnknownTargetError, simulate
from placed.engine.report import plan_document
from placed.engine.trace import UnknownUnitError, trace, trace_document
from placed.model import Notice, PropertyError, Spec, Workload, validate_properties
from placed.policy.expressions import All, ExpressionError, parse_constraint
from placed.policy.expressions.evaluate import holds, satisfied
from placed.policy.namespaces import namespace_findings
from placed.spec import SpecError
from placed.spec.fields import UnknownFieldError
from placed.spec.fields import explain as explain_field
from placed.spec.hzn import convert_openhorizon, dump_native
from placed.spec.juju.convert import dump_juju_native, native_document
from placed.spec.juju.files import (
    JujuFileError,
    load_status,
    looks_like_juju_text,
    non_portable,
    read_overlay,
)
from placed.spec.schema import spec_json_schema

__all__ = ["EXIT_FAILED", "EXIT_INVALID", "EXIT_OK", "app", "run"]

helptext.install()

app = typer.Typer(
    name="placed",
    help=(
        "Decide where each unit of work goes, under policy, and explain why.\n\n"
        "Exit codes: 0 success; 1 ran, but something could not be placed or is "
        "incompatible; 2 invalid input (the message points at it)."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(db.app, name="db")
app.add_typer(token.app, name="token")


class PlanFormat(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"
    changes = "changes"


class ReportFormat(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


class DataFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


_FORMAT_HELP = (
    "table for people (plain aligned columns when piped); json or yaml for programs "
    '(errors too, as {"valid": false, "errors": [...]})'
)
PlanFormatOption = Annotated[
    PlanFormat,
    typer.Option(
        "--format",
        "-f",
        "-o",
        help=f"{_FORMAT_HELP}; wide: a table with every column; changes: the steps Juju "
        "would run, as juju deploy --dry-run lists them.",
    ),
]
FormatOption = Annotated[
    ReportFormat,
    typer.Option(
        "--format",
        "-f",
        "-o",
        help=f"{_FORMAT_HELP}; wide: a table with every column.",
    ),
]
DataFormatOption = Annotated[
    DataFormat, typer.Option("--format", "-f", "-o", help=f"{_FORMAT_HELP}.")
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
        metavar="FILE",
        show_default=False,
    ),
]
OverlayOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--overlay",
        metavar="FILE",
        help="A bundle overlay to merge into the bundle, as `juju deploy --overlay` does "
        "(repeat for several, applied in order): applications merged key by key, an empty "
        "one removed, machines replaced.",
        show_default=False,
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Juju and Open Horizon files: read keys the format does not know (a bundle's "
        "name:, variables:, docs:; a key no anax struct has; a misspelt key...) as `juju "
        "deploy` and hzn do: each is ignored, with a warning at its file:line:column, and "
        "placement goes on. Without it they are errors (exit 2), as one may be a misspelt "
        "key.",
    ),
]
WorkloadOption = Annotated[
    list[str] | None,
    typer.Option(
        "--workload",
        "-w",
        help="Only these workloads (repeat for several); a name applies to every document "
        "that has it.",
        metavar="NAME",
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


def _begin(chosen: StrEnum, wide: bool = False) -> Format:
    """The command's output format; from here on an error is reported in it."""
    fmt = Format(chosen.value)
    if wide and not fmt.data:
        fmt = Format.wide
    error_format.set(fmt)
    return fmt


def _load_inputs(
    paths: list[Path],
    input_format: InputFormat,
    status: Path | None = None,
    portable: bool = False,
    overlays: list[Path] | None = None,
    force: bool = False,
) -> list[Spec]:
    names = ", ".join("standard input" if str(p) == "-" else str(p) for p in paths[:3])
    try:
        with DelayedStatus(f"reading {names}{', ...' if len(paths) > 3 else ''}", console=err):
            running = load_status(str(status)) if status is not None else None
            merged = [(read_overlay(str(path)), str(path)) for path in overlays or ()]
            return read_specs(paths, input_format, running, merged, force)
    except JujuFileError as error:
        # --portable: the machines it refuses are told with every other mistake.
        fail_spec(error.with_portability() if portable else error)
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
    format_choice: PlanFormatOption = PlanFormat.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
    overlay: OverlayOption = None,
    force: ForceOption = False,
) -> None:
    """Place every unit of every workload and say why each landed where it did.

    Units that cannot be placed are listed with a summary such as
    "0/7 targets available: 4 lack required tag datacenter1, 3 have forbidden tag network3".
    Exit code 1 when any unit is unplaced (of the workloads shown, with -w).

    \b
    Examples:
      placed plan examples/ironic-affinity.yaml --format json
      placed plan examples/distinct-racks.yaml --unplaced
      placed plan examples/ironic-affinity.yaml -w node2 -o wide
      cat examples/distinct-racks.yaml | placed plan - | grep unplaced
      # several specs, planned side by side:
      placed plan examples/distinct-racks.yaml examples/balanced-conductors.yaml
      # Open Horizon's own files, as hzn prints them:
      placed plan examples/openhorizon/
      # a Juju file, as the steps juju deploy --dry-run lists:
      placed plan examples/juju-deployer.yaml --format changes
      # a bundle against what runs (juju status --format yaml):
      placed plan examples/juju-bundle.yaml \\
          --status examples/juju-bundle-status.yaml
      # a published bundle (name:, docs:...), read as juju deploy reads it:
      placed plan --force examples/juju-bundle-published.yaml
    """
    fmt = _begin(format_choice, wide)
    documents = []
    hidden: dict[str, int] = {}
    failed = False
    steps: list[tuple[str, list[Change]]] = []
    chosen = _chosen_workloads(
        _load_inputs(spec, input_format, status, overlays=overlay, force=force), workload
    )
    with DelayedProgress("placing", console=err) as progress:
        for document, wanted in chosen:
            result = Planner(document).plan(progress=progress)
            if workload:
                result = only_workloads(result, {w.name for w in wanted})
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
    format_choice: FormatOption = ReportFormat.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
    overlay: OverlayOption = None,
    force: ForceOption = False,
) -> None:
    """For each workload and each target: compatible or not, and every reason why not.

    Capacity is judged against an empty inventory (nothing placed yet). Exit code 1 when a
    workload has no compatible target at all. Above 10,000 workload-target pairs the
    summary is shown instead of every pair (stderr says so); --all or --summary choose.
    Both print workload by workload as they are checked, JSON and YAML too.

    \b
    Examples:
      placed check examples/ironic-affinity.yaml -w node2
      placed check examples/ironic-affinity.yaml -o wide | grep -w no
      cd examples/openhorizon && placed check nodes.json \\
          web.deployment.policy.json web.service.definition.json
      placed check examples/cloudstack-dedication.yaml --summary --format json
      placed check examples/cloudstack-dedication.yaml --all > every-pair.txt
      placed check --force examples/juju-bundle-published.yaml
    """
    fmt = _begin(format_choice, wide)
    if summary and every:
        fail("--summary and --all ask for different outputs: give one of them")
    specs = _load_inputs(spec, input_format, status, overlays=overlay, force=force)
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
        fail_option(
            "--workload",
            f"no workload named {', '.join(unknown)} in {scope}{_did_you_mean(unknown, known)}",
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
    format_choice: FormatOption = ReportFormat.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
    overlay: OverlayOption = None,
    force: ForceOption = False,
) -> None:
    """Why one unit went where it did: every target, judged as the plan judged it.

    The plan is replayed up to the unit, and each target is judged in the state the unit
    saw (the units placed before it, the capacity they took), with every failing filter
    listed, e.g. "distinct: is in a rack that already holds a unit of web (rack r2
    already holds web/0)". Exit code 1 when the unit is unplaced. The unit comes last,
    after the spec files.

    \b
    Examples:
      placed explain examples/distinct-racks.yaml web/3
      placed explain examples/distinct-racks.yaml web/3 --format json
    """
    fmt = _begin(format_choice, wide)
    documents = []
    failed = False
    specs = _load_inputs(spec, input_format, status, overlays=overlay, force=force)
    for document in specs:
        planner = Planner(document)
        try:
            found = trace(planner, unit)
        except UnknownUnitError:
            continue
        failed = failed or not isinstance(found.outcome, Placement)
        documents.append((document.name, trace_document(found)))
    if not documents:
        # An every-mode workload's units are named after their targets, not numbered.
        known = {
            name
            for document in specs
            for w in document.workloads
            for name in (
                [f"{w.name}/{t.id}" for t in document.inventory.targets[:1000]]
                if w.mode == "every"
                else [w.unit_key(i) for i in range(min(w.units, 1000))]
            )
        }
        scope = "any document" if len(specs) > 1 else specs[0].name
        every = next(
            (
                (w, document)
                for document in specs
                for w in document.workloads
                if w.mode == "every" and w.name == unit.rpartition("/")[0]
            ),
            None,
        )
        if every is not None:
            workload, document = every
            examples = ", ".join(f"{workload.name}/{t.id}" for t in document.inventory.targets[:3])
            fail_option(
                "UNIT",
                f"no unit named {unit} in {scope}: {workload.name} runs in every mode, one "
                f"unit per target, each named after its target (e.g. {examples})",
            )
        fail_option("UNIT", f"no unit named {unit} in {scope}{_did_you_mean([unit], known)}")
    _emit(documents, fmt, explain_table)
    _exit(failed)


@app.command(name="simulate")
def simulate_command(
    spec: Annotated[
        list[Path] | None,
        typer.Argument(
            help="A spec file, as plan reads it (several, - for standard input, Open "
            "Horizon's files). Without one: the world of placed serve at --server.",
            metavar="[PATH]",
            show_default=False,
        ),
    ] = None,
    down: Annotated[
        list[str] | None,
        typer.Option(
            "--down",
            "-d",
            help="A target (or a location: all targets in it) that fails.",
            metavar="TARGET",
        ),
    ] = None,
    up: Annotated[
        list[str] | None,
        typer.Option("--up", "-u", help="A target that comes (back) up.", metavar="TARGET"),
    ] = None,
    migrate: Annotated[
        list[str] | None,
        typer.Option(
            "--migrate",
            "-m",
            metavar="VM=HOST",
            help="VM=HOST: move a running VM (a unit of the spec's running: section) to a "
            "host, under CloudStack's dedication rules: refused, with the reason and an "
            "event, onto a host its account may not use.",
        ),
    ] = None,
    targets: Annotated[
        list[str] | None,
        typer.Option(
            "--targets", metavar="VM", help="A running VM: list the hosts it may migrate to."
        ),
    ] = None,
    maintenance: Annotated[
        list[str] | None,
        typer.Option(
            "--maintenance",
            metavar="HOST",
            help="A host into maintenance: each running VM on it is placed again under the "
            "same rules, or the command says why one cannot move (and nothing moves), or "
            "that the host runs no VMs.",
        ),
    ] = None,
    format_choice: FormatOption = ReportFormat.table,
    wide: WideOption = False,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
    overlay: OverlayOption = None,
    force: ForceOption = False,
    server: token.ServerOption = None,
    access: token.TokenOption = None,
    ca_cert: token.CaCertOption = None,
    client_cert: token.ClientCertOption = None,
    client_key: token.ClientKeyOption = None,
) -> None:
    """Take targets down or bring them up, and show which units move, where, and why;
    or migrate running VMs (--migrate VM=HOST) and list where one may go (--targets VM).

    Without a PATH it asks placed serve (--server, else $PLACED_URL) about its stored
    world (POST /v1/simulate): the same table, and the revision it saw; a domain admin
    or user sees its own accounts' moves, with a count of the others. Nothing changes.

    mapping units move only if their target went down or a target that came up now ranks
    first (with max_load, a target that came up also takes the surplus of targets over the
    new cap); allocation units move only if their target went down; an every-mode unit
    whose target goes down is removed (it ran there and nowhere else). The table also
    lists the units that were unplaced already before the change, and says when a target
    named was already down (or up). Exit code 1 when a unit is left unplaced afterwards.

    \b
    Examples:
      placed simulate examples/ironic-affinity.yaml --down conductor1
      placed simulate examples/balanced-conductors.yaml --up conductor5
      placed simulate examples/distinct-racks.yaml --down r1 --format json
      placed simulate examples/juju-deployer.yaml --down 1
      placed simulate examples/cloudstack-dedication.yaml \\
          --migrate dedicated-a1/0=H1b --targets dedicated-a7/0
      placed simulate examples/cloudstack-dedication.yaml --maintenance H1a
      # exit code 2: it needs a running placed serve; nothing listens on port 9
      placed simulate --down conductor1 --up conductor3 \\
          --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice, wide)
    if not spec:
        if status or overlay or force or input_format is not InputFormat.auto:
            fail_option(
                "--status"
                if status
                else "--overlay"
                if overlay
                else "--force"
                if force
                else "--input-format",
                "an option of a spec file: give one, or leave it out for the server's world",
            )
        reach = token.Reach(server, access, ca_cert, client_cert, client_key)
        _simulate_online(down or [], up or [], migrate or [], targets, maintenance, reach)
        return
    if server:
        fail_option("--server", "give a spec file or --server, not both")
    if migrate or targets or maintenance:
        if down or up:
            fail(
                "--migrate, --targets and --maintenance move running VMs one by one; "
                "simulate --down/--up apart"
            )
        _migrations(
            _load_inputs(spec, input_format, status, overlays=overlay, force=force),
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
    specs = _load_inputs(spec, input_format, status, overlays=overlay, force=force)
    documents = []
    failed = False
    for document, (mine_down, mine_up) in _scope(specs, down or [], up or []):
        planner = Planner(document)
        try:
            result = simulate(planner, mine_down, mine_up)
        except UnknownTargetError as error:
            fail_option(error.option, str(error))
        failed = failed or bool(result.after.unplaced)
        documents.append((document.name, simulation_document(planner, result)))
    _emit(documents, fmt, simulate_table)
    _exit(failed)


def _simulate_online(
    down: list[str],
    up: list[str],
    migrate: list[str],
    targets: list[str] | None,
    maintenance: list[str] | None,
    reach: token.Reach,
) -> NoReturn:
    """`placed simulate` on the world of placed serve: the same documents and tables."""
    if targets or maintenance:
        fail_option(
            "--targets" if targets else "--maintenance",
            "a spec file's option: the server simulates --down, --up and --migrate",
        )
    if migrate and (down or up):
        fail("--migrate moves running VMs one by one; simulate --down/--up apart")
    if not (down or up or migrate):
        fail("nothing to simulate: give at least one --down TARGET or --up TARGET (or --migrate)")
    fmt = error_format.get()
    pairs = [_migration(asked) for asked in migrate]
    with token.connected(reach) as client:
        data = client.simulate(down, up, pairs)
        name = client.server
    if pairs:
        _emit([(name, data)], fmt, migrations_table)
        _exit(bool(data["refused"]))
    _emit([(name, data)], fmt, simulate_table)
    _exit(bool(data["unplaced"]))


def _migration(asked: str) -> tuple[str, str]:
    name, sep, host = asked.partition("=")
    if not sep or not name or not host:
        fail_option("--migrate", f"{asked!r}: write VM=HOST, as in web/0=H2a")
    return name, host


def _migrations(
    specs: list[Spec], migrate: list[str], targets: list[str], maintenance: list[str], fmt: Format
) -> None:
    """CloudStack migrations and maintenance on each document's running VMs, in order, as
    the root admin."""
    moves = []
    for asked in migrate:
        moves.append(_migration(asked))
    documents = []
    refused_any = False
    for document in specs:
        try:
            data, refused = migration_document(Cloud(document), moves, targets, maintenance)
        except ArgumentError as error:
            fail_option(f"--{error.argument}", str(error))
        refused_any = refused_any or refused
        documents.append((document.name, data))
    _emit(documents, fmt, migrations_table)
    _exit(refused_any)


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
        fail_option(
            "--down" if unknown[0] in down else "--up",
            f"{', '.join(unknown)}: no document has a target or location with that id{hint}",
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
    format_choice: DataFormatOption = DataFormat.table,
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
    overlay: OverlayOption = None,
    force: ForceOption = False,
) -> None:
    """Check a spec without placing anything: syntax, types, unknown keys, duplicate ids,
    and warnings for what is valid but probably unintended.

    Exit code 0 when valid (1 with --strict when there are warnings), 2 when invalid.

    \b
    Examples:
      placed validate examples/ironic-affinity.yaml
      # in CI: warnings fail the build (exit code 1)
      placed validate --strict examples/juju-deployer.yaml
      placed validate --input-format openhorizon examples/openhorizon/
      placed validate --dialect openhorizon examples/edge-namespaces.yaml
      # exit code 2: machines other than 0 are errors, with every other error
      placed validate --portable examples/juju-proposed.yaml
      # exit code 2: name:, docs:, variables: are keys juju's bundle schema lacks
      placed validate examples/juju-bundle-published.yaml
      # each of them a warning, as juju deploy ignores them (exit code 0)
      placed validate --force examples/juju-bundle-published.yaml
    """
    fmt = _begin(format_choice)
    specs = _load_inputs(spec, input_format, status, portable, overlay, force)
    if portable:
        problems = non_portable(specs)
        if problems:
            fail_spec(SpecError(specs[0].source, problems))
    in_error = [
        Error(finding.message, file=document.source, key=f"workloads.{finding.workload}")
        for document in specs
        for workload in document.workloads
        for finding in namespace_findings(workload, document.inventory.targets)
        if finding.code == "pattern-namespaces-differ" and finding.real
    ]
    if in_error:
        # The design calls such a pattern "in error" where a namespace-scoped node would
        # take it; elsewhere it stays a warning (lint).
        fail("\n".join(f"{e.file}: {e.key}: {e.message}" for e in in_error), in_error)
    documents = [
        (document.name, validation_document(document, dialect is Dialect.openhorizon))
        for document in specs
    ]
    _emit(documents, fmt, validate_table)
    _exit(strict and any(data["warnings"] for _, data in documents))


@app.command()
def dedications(
    spec: InputsArgument,
    format_choice: DataFormatOption = DataFormat.table,
    coverage: Annotated[
        bool,
        typer.Option(
            "--coverage",
            help="Every zone, pod, cluster and host the dedications cover, with its owner and "
            "why: its own dedication, or inherited from which ancestor.",
        ),
    ] = False,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind", metavar="KIND", help="Only one kind: zone, pod, cluster, host (or pool)."
        ),
    ] = None,
    domain: Annotated[
        str | None, typer.Option("--domain", metavar="DOMAIN", help="Only this domain's.")
    ] = None,
    account: Annotated[
        str | None,
        typer.Option(
            "--account",
            metavar="ACCOUNT",
            help="Only this account's; give its domain with --domain (an account is named "
            "inside its domain, as in CloudStack's listDedicated* commands).",
        ),
    ] = None,
    principal: Annotated[
        str,
        typer.Option(
            "--as",
            metavar="PRINCIPAL",
            help="List as this principal: root-admin (everything), domain-admin:D1 or user:A7 "
            "(only what applies to their domain chain and account).",
        ),
    ] = "root-admin",
    dedicate: Annotated[
        list[str] | None,
        typer.Option(
            "--dedicate",
            metavar="RESOURCE=OWNER",
            help="RESOURCE=DOMAIN or RESOURCE=DOMAIN/ACCOUNT: dedicate it, as --as, before "
            "listing (on a copy: the spec is not changed). A refused operation exits 2 with "
            "the rule's kind and message.",
        ),
    ] = None,
    update: Annotated[
        list[str] | None,
        typer.Option(
            "--update",
            metavar="RESOURCE=OWNER",
            help="RESOURCE=DOMAIN[/ACCOUNT]: give it to a new owner.",
        ),
    ] = None,
    release: Annotated[
        list[str] | None,
        typer.Option("--release", metavar="RESOURCE", help="RESOURCE: release its dedication."),
    ] = None,
    input_format: InputFormatOption = InputFormat.auto,
) -> None:
    """List the dedications of a spec (CloudStack): which zones, pods, clusters and hosts
    belong to which domain or account, after its dedications: section is applied; and try
    dedicate, update and release (in that order) as a principal.

    \b
    Examples:
      placed dedications examples/cloudstack-dedication.yaml
      placed dedications examples/cloudstack-dedication.yaml --coverage \\
          --kind host
      placed dedications examples/cloudstack-dedication.yaml --as user:A7 -f json
      placed dedications examples/cloudstack-dedication.yaml --domain D2 \\
          --account A13
      placed dedications examples/cloudstack-dedication.yaml \\
          --dedicate c22=SD2/A5 --release c3 --as root-admin
      # exit code 2: a user may not dedicate (the rule's kind and message)
      placed dedications examples/cloudstack-dedication.yaml --dedicate c2=SD2 \\
          --as user:A7
    """
    fmt = _begin(format_choice)
    operations = [
        *(_owner_operation("dedicate", text) for text in dedicate or []),
        *(_owner_operation("update", text) for text in update or []),
        *(Operation("release", text) for text in release or []),
    ]
    documents = []
    for document in _load_inputs(spec, input_format):
        try:
            data = dedications_document(
                Cloud(document), principal, operations, kind, domain, account, coverage
            )
        except ArgumentError as error:
            where = f" ({document.name})" if error.argument == "as" else ""
            fail_option(f"--{error.argument}", f"{error}{where}")
        documents.append((document.name, data))
    _emit(documents, fmt, dedications_table)


def _owner_operation(operation: str, text: str) -> Operation:
    """RESOURCE=DOMAIN[/ACCOUNT] as an operation, or the option's error."""
    resource, _, owner = text.partition("=")
    owner_domain, _, owner_account = owner.partition("/")
    if not resource or not owner_domain:
        fail_option(f"--{operation}", f"{text!r}: write RESOURCE=DOMAIN[/ACCOUNT]")
    return Operation(operation, resource, owner_domain, owner_account or None)


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
            metavar="PROPS",
            help="Properties as JSON or YAML text, or @FILE (@- for standard input): a "
            "mapping {name: value}, Open Horizon's list [{name, value, type}], or a node "
            "policy as hzn policy list prints it (its deployment properties over the top "
            "level's).",
        ),
    ] = "{}",
    format_choice: DataFormatOption = DataFormat.table,
) -> None:
    """Evaluate a constraint expression against a set of properties.

    Prints true or false; exit code 0 for true, 1 for false, 2 for an invalid expression
    or property (the message shows the column).

    \b
    Examples:
      placed expr 'purpose == "lab" && cpu >= 2' --props '{purpose: lab, cpu: 4}'
      # on a node, its policy as hzn policy list prints it:
      #   hzn policy list | placed expr 'tier == silver' --props @-
      # the same policy from a file (its deployment properties win):
      cat examples/openhorizon/edge-device.node.policy.json \\
          | placed expr 'tier == silver && cameras >= 2' --props @-
    """
    fmt = _begin(format_choice)
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


class SpecFormat(StrEnum):
    yaml = "yaml"
    json = "json"


@app.command()
def convert(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="A Juju bundle or juju-deployer file, or Open Horizon's JSON files (or one "
            "directory of them): the node list (hzn exchange node list -l), node policies "
            "(NODE.node.policy.json), deployment policies, patterns, service definitions "
            "or the service list.",
            metavar="PATH",
            show_default=False,
        ),
    ],
    output_file: Annotated[
        Path | None,
        typer.Option(
            "--output-file",
            help="Write the spec to this file instead of printing it (never one of the "
            "files read).",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    spec_format: Annotated[
        SpecFormat,
        typer.Option(
            "--format", "-f", "-o", help="yaml (with a comment saying where it came from) or json."
        ),
    ] = SpecFormat.yaml,
    input_format: InputFormatOption = InputFormat.auto,
    status: StatusOption = None,
    overlay: OverlayOption = None,
    force: ForceOption = False,
) -> None:
    """Convert Open Horizon's files, or a Juju bundle or deployer file, into the
    equivalent native spec.

    Each node becomes a target (device or cluster, with its scope, namespace, arch and the
    deployment view of its node policy), each deployment policy a workload deploying on
    every compatible node, each pattern a workload only its registered nodes take. plan,
    check and validate read the same files directly; convert shows what they see.

    A Juju file's services become workloads whose to: lists each unit's entry as Juju
    resolves it (svc/N, new, lxd:new...), with juju_constraints and new_machines: true, so
    that the native spec plans to the same layout.

    \b
    Examples:
      placed convert examples/openhorizon/ --output-file spec.yaml
      placed convert examples/juju-deployer.yaml
      placed convert examples/juju-bundle.yaml -o json
      placed convert --force examples/juju-bundle-published.yaml
    """
    error_format.set(Format.json if spec_format is SpecFormat.json else Format.table)
    if output_file is not None:
        _refuse_to_overwrite(output_file, paths)
    try:
        if input_format is InputFormat.juju or (
            input_format is InputFormat.auto and _is_juju_file(paths)
        ):
            specs = _load_inputs(paths, InputFormat.juju, status, overlays=overlay, force=force)
            # The native spec has no place for what --force let through: it is told here.
            told = dict.fromkeys(n for spec in specs for n in spec.notices)
            warnings_table(err, [n.to_dict() for n in told])
            documents = [native_document(spec) for spec in specs]
            text = "---\n".join(dump_juju_native(document) for document in documents)
        else:
            notices: list[Notice] = []
            documents = [convert_openhorizon(paths, notices, force)]
            text = dump_native(documents[0], notices)
            for notice in notices:
                err.file.write(f"warning [{notice.code}]: {notice.message}\n")
    except SpecError as error:
        fail_spec(error)
    if spec_format is SpecFormat.json:
        text = json.dumps(
            documents[0] if len(documents) == 1 else {"documents": documents},
            indent=2,
            ensure_ascii=False,
        )
        text += "\n"
    if output_file is None:
        with guarded():
            write(text)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as error:
        fail_option("--output-file", f"{output_file}: cannot write: {error.strerror or error}")


def _refuse_to_overwrite(output_file: Path, inputs: list[Path]) -> None:
    """convert never writes over what it reads: a typo would lose the user's file."""
    try:
        target = output_file.resolve()
    except OSError:
        return
    for path in inputs:
        if str(path) == "-":
            continue
        try:
            source = path.resolve()
        except OSError:
            continue
        if target == source or (source.is_dir() and source in target.parents):
            fail_option(
                "--output-file",
                f"{output_file} is "
                + (f"inside {path}, which" if target != source else "a file")
                + " convert reads; write the spec to another file",
            )


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
    """Print the JSON Schema of the spec format (for editors and CI linters).

    placed explain-spec shows one field of it for people.

    \b
    Examples:
      placed schema > placed-spec.schema.json
      placed schema | grep -c description
    """
    with guarded():
        write(json.dumps(spec_json_schema(), indent=2, ensure_ascii=False) + "\n")


@app.command(name="explain-spec")
def explain_spec(
    path: Annotated[
        str,
        typer.Argument(
            help="A field of the spec, its keys joined by dots (a list by its name alone): "
            "workloads.distinct, inventory.children.capacity. Empty: the whole spec.",
            metavar="FIELD",
            show_default=False,
        ),
    ] = "",
    format_choice: DataFormatOption = DataFormat.table,
) -> None:
    """What a field of the spec format takes and means: its type, default and description,
    and the fields inside it, from the spec's JSON Schema (as kubectl explain does).

    \b
    Examples:
      placed explain-spec
      placed explain-spec workloads
      placed explain-spec workloads.distinct
      placed explain-spec inventory.children.capacity --format json
    """
    fmt = _begin(format_choice)
    try:
        found = explain_field(path)
    except UnknownFieldError as error:
        fail(
            f"FIELD {path}: {error} (column {error.column})",
            [Error(str(error), column=error.column, key="FIELD")],
        )
    with guarded():
        if fmt.data:
            emit_data(out, found.to_dict(), fmt)
        else:
            write(field_text(found))


app.command()(serve)
# Online: what talks to a running placed serve, in the order a newcomer uses it.
app.command(name="apply")(online.apply)
app.command(name="replace")(online.replace)
app.add_typer(online.get_app, name="get")
app.add_typer(online.describe_app, name="describe")
app.add_typer(online.target_app, name="target")
app.command(name="heartbeat")(online.heartbeat)


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
