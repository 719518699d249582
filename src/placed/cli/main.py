"""`placed`: plan, check and simulate placements from a spec file, offline."""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from rich.console import Console
from rich.markup import escape

from placed import __version__
from placed.cli.progress import DelayedProgress
from placed.cli.render import (
    Format,
    check_table,
    combine,
    emit_data,
    explain_table,
    plan_table,
    simulate_table,
    validate_table,
)
from placed.engine.check import deploy_check
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import UnknownTargetError, simulate
from placed.engine.report import trace_document
from placed.engine.trace import UnknownUnitError, trace
from placed.model import PropertyError, Spec, Workload, validate_properties
from placed.policy.expressions import All, ExpressionError, parse_constraint
from placed.policy.expressions.dialect import dialect_notices
from placed.policy.expressions.evaluate import holds, satisfied
from placed.policy.lint import lint
from placed.spec import SpecError, load_specs
from placed.spec.errors import Problem
from placed.spec.hzn import (
    convert_openhorizon,
    dump_native,
    load_openhorizon,
    looks_like_openhorizon,
)
from placed.spec.schema import SpecDocument

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2

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
out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)

SpecArgument = Annotated[
    Path,
    typer.Argument(
        help="A spec file (YAML or JSON). It may hold several documents separated by ---.",
        show_default=False,
    ),
]
FormatOption = Annotated[
    Format, typer.Option("--format", "-f", help="table for people; json or yaml for programs.")
]


class InputFormat(StrEnum):
    native = "native"
    openhorizon = "openhorizon"
    auto = "auto"


InputsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="A spec file (YAML or JSON; it may hold several documents separated by ---), "
        "or Open Horizon's own JSON files: several files, or one directory of them.",
        metavar="PATH",
        show_default=False,
    ),
]
InputFormatOption = Annotated[
    InputFormat,
    typer.Option(
        "--input-format",
        "-i",
        help="native: a placed spec. openhorizon: the JSON files hzn prints and takes (node "
        "list, node and deployment policies, patterns, service definitions; see placed "
        "convert). auto: Open Horizon for a directory or files shaped like hzn's.",
    ),
]


def _version(value: bool) -> None:
    if value:
        out.print(f"placed {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Decide where each unit of work goes, under policy, and explain why."""


def _load(path: Path) -> list[Spec]:
    try:
        return load_specs(path)
    except SpecError as error:
        _fail(error.render())


def _read_inputs(paths: list[Path], input_format: InputFormat) -> list[Spec]:
    """The specs the inputs hold, native or Open Horizon (raises SpecError)."""
    if input_format is InputFormat.openhorizon or (
        input_format is InputFormat.auto and looks_like_openhorizon(paths)
    ):
        return load_openhorizon(paths)
    if len(paths) > 1:
        message = (
            f"{len(paths)} paths given; a native spec is one file (for Open Horizon files, "
            "add --input-format openhorizon)"
        )
        raise SpecError(str(paths[0]), [Problem(message)])
    return load_specs(paths[0])


def _load_inputs(paths: list[Path], input_format: InputFormat) -> list[Spec]:
    try:
        return _read_inputs(paths, input_format)
    except SpecError as error:
        _fail(error.render())


def _fail(message: str) -> NoReturn:
    # The message quotes the spec, whose [brackets] are not markup.
    err.print(
        f"[bold red]error:[/bold red] {escape(message)}",
        markup=True,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_INVALID)


def _emit(
    documents: list[tuple[str, dict[str, Any]]],
    fmt: Format,
    table: Callable[[Console, list[tuple[str, dict[str, Any]]]], None],
) -> None:
    if fmt is Format.table:
        table(out, documents)
    else:
        emit_data(out, combine(documents), fmt)


@app.command()
def plan(
    spec: InputsArgument,
    fmt: FormatOption = Format.table,
    input_format: InputFormatOption = InputFormat.auto,
) -> None:
    """Place every unit of every workload and say why each landed where it did.

    Units that cannot be placed are listed with a summary such as
    "0/7 targets available: 4 lack required tag datacenter1, 3 have forbidden tag network3".
    Exit code 1 when any unit is unplaced.

    Example: placed plan examples/ironic-affinity.yaml --format json
    Example: placed plan examples/openhorizon/   (Open Horizon's files, as hzn prints them)
    """
    documents = []
    failed = False
    specs = _load_inputs(spec, input_format)
    with DelayedProgress("placing", console=err) as progress:
        for document in specs:
            result = Planner(document).plan(progress=progress)
            failed = failed or bool(result.unplaced)
            documents.append((document.name, result.to_dict()))
    _emit(documents, fmt, plan_table)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@app.command()
def check(
    spec: InputsArgument,
    workload: Annotated[
        list[str] | None, typer.Option("--workload", "-w", help="Only these workloads.")
    ] = None,
    fmt: FormatOption = Format.table,
    input_format: InputFormatOption = InputFormat.auto,
) -> None:
    """For each workload and each target: compatible or not, and every reason why not.

    Capacity is judged against an empty inventory (nothing placed yet). Exit code 1 when a
    workload has no compatible target at all.

    Example: placed check examples/ironic-affinity.yaml -w node2
    Example: placed check nodes.json web.deployment.policy.json web.service.definition.json
    """
    documents = []
    failed = False
    for document, wanted in _chosen_workloads(_load_inputs(spec, input_format), workload):
        report, incompatible = deploy_check(Planner(document), wanted)
        failed = failed or incompatible
        documents.append((document.name, report))
    _emit(documents, fmt, check_table)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


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
        _fail(
            f"{specs[0].source}: no workload named {', '.join(unknown)} in {scope}"
            f"{_did_you_mean(unknown, known)}"
        )
    chosen = []
    for document in specs:
        mine = [w for w in document.workloads if w.name in names]
        if mine:
            chosen.append((document, mine))
    return chosen


@app.command()
def explain(
    spec: SpecArgument,
    unit: Annotated[
        str, typer.Argument(help="The unit, as plan names it: web/2.", show_default=False)
    ],
    fmt: FormatOption = Format.table,
) -> None:
    """Why one unit went where it did: every target, judged as the plan judged it.

    The plan is replayed up to the unit, and each target is judged in the state the unit
    saw (the units placed before it, the capacity they took), with every failing filter
    listed, e.g. "distinct: is in a rack that already holds a unit of web (rack r2
    already holds web/0)". Exit code 1 when the unit is unplaced.

    Example: placed explain examples/distinct-racks.yaml web/3
    """
    documents = []
    failed = False
    specs = _load(spec)
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
        _fail(f"{specs[0].source}: no unit named {unit}{_did_you_mean([unit], known)}")
    _emit(documents, fmt, explain_table)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@app.command(name="simulate")
def simulate_command(
    spec: SpecArgument,
    down: Annotated[
        list[str] | None,
        typer.Option(
            "--down", "-d", help="A target (or a location: all targets in it) that fails."
        ),
    ] = None,
    up: Annotated[
        list[str] | None, typer.Option("--up", "-u", help="A target that comes (back) up.")
    ] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Take targets down or bring them up, and show which units move, where, and why.

    mapping units move only if their target went down or a target that came up now ranks
    first (with max_load, a target that came up also takes the surplus of targets over the
    new cap); allocation units move only if their target went down. Exit code 1 when a
    unit is left unplaced afterwards.

    Example: placed simulate examples/ironic-affinity.yaml --down conductor1
    Example: placed simulate examples/balanced-conductors.yaml --up conductor5
    """
    if not down and not up:
        _fail("nothing to simulate: give at least one --down TARGET or --up TARGET")
    specs = _load(spec)
    documents = []
    failed = False
    for document, (mine_down, mine_up) in _scope(specs, down or [], up or []):
        try:
            result = simulate(Planner(document), mine_down, mine_up)
        except UnknownTargetError as error:
            _fail(f"{document.source}: {error}")
        failed = failed or bool(result.after.unplaced)
        documents.append((document.name, result.to_dict()))
    _emit(documents, fmt, simulate_table)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


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
        _fail(
            f"{specs[0].source}: {', '.join(unknown)}: "
            f"no document has a target or location with that id{hint}"
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
) -> None:
    """Check a spec without placing anything: syntax, types, unknown keys, duplicate ids,
    and warnings for what is valid but probably unintended.

    Example: placed validate examples/ironic-affinity.yaml
    Example: placed validate --input-format openhorizon examples/openhorizon/
    Example: placed validate --dialect openhorizon examples/edge-namespaces.yaml
    """
    try:
        specs = _read_inputs(spec, input_format)
    except SpecError as error:
        if fmt is not Format.table:
            problems = [
                {
                    "file": error.source,
                    "line": p.position.line if p.position else None,
                    "column": p.position.column if p.position else None,
                    "key": p.key or None,
                    "message": p.message,
                }
                for p in error.problems
            ]
            emit_data(out, {"valid": False, "errors": problems}, fmt)
        _fail(error.render())
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
            help="Properties as JSON or YAML text, or @FILE: a mapping {name: value} or "
            "Open Horizon's list [{name, value, type}].",
        ),
    ] = "{}",
    fmt: FormatOption = Format.table,
) -> None:
    """Evaluate a constraint expression against a set of properties.

    Prints true or false; exit code 0 for true, 1 for false, 2 for an invalid expression
    or property (the message shows the column).

    Example: placed expr 'purpose == "lab" && cpu >= 2' --props '{purpose: lab, cpu: 4}'
    """
    raw = _read_props(props)
    try:
        properties = validate_properties(raw)
        constraint = parse_constraint(expression)
    except PropertyError as error:
        _fail(f"--props: {error}")
    except ExpressionError as error:
        _fail(f"invalid expression: {error.render()}")
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
    if fmt is Format.table:
        out.print("true" if result else "false")
        if not result:
            failing = [t["term"] for t in data["terms"] if not t["result"]]
            err.print(f"false: {'; '.join(failing)}", markup=False)
    else:
        emit_data(out, data, fmt)
    raise typer.Exit(EXIT_OK if result else EXIT_FAILED)


def _read_props(text: str) -> Any:
    source = "--props"
    if text.startswith("@"):
        source = text[1:]
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as error:
            _fail(f"--props {source}: cannot read: {error.strerror or error}")
    try:
        return yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        _fail(f"{source}{where}: not valid JSON or YAML: {getattr(error, 'problem', error)}")


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
) -> None:
    """Convert Open Horizon's files into the equivalent native spec (YAML).

    Each node becomes a target (device or cluster, with its scope, namespace, arch and the
    deployment view of its node policy), each deployment policy a workload deploying on
    every compatible node, each pattern a workload only its registered nodes take. plan,
    check and validate read the same files directly; convert shows what they see.

    Example: placed convert examples/openhorizon/ -o spec.yaml
    """
    try:
        text = dump_native(convert_openhorizon(paths))
    except SpecError as error:
        _fail(error.render())
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        _fail(f"{output}: cannot write: {error.strerror or error}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the spec format (for editors and CI linters)."""
    out.out(json.dumps(SpecDocument.model_json_schema(), indent=2), highlight=False)


def run() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
