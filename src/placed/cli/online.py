"""The commands that talk to a running `placed serve`, as kubectl talks to its API
server: apply, get, describe, replace, target down|up|drain, heartbeat. Each prints what the offline
commands print for the same document (the engine's document functions, through the
server), a table for people or json/yaml for programs. A server that cannot be reached
or a refused token is one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from placed.cli.grid import Cell, Grid, printable, show
from placed.cli.inputs import STDIN_SOURCE, is_stdin, read_stdin
from placed.cli.output import (
    Format,
    dump,
    err,
    error_format,
    fail_option,
    fail_spec,
    guarded,
    out,
    write,
)
from placed.cli.render import explain_table, plan_table
from placed.cli.token import (
    CaCertOption,
    ClientCertOption,
    ClientKeyOption,
    DataFormat,
    Reach,
    ServerOption,
    TokenOption,
    connected,
    refused,
)
from placed.model import Notice
from placed.spec import SpecError
from placed.spec.hzn import convert_openhorizon, dump_native, looks_like_openhorizon
from placed.spec.source import read_bounded

MOST = 10_000  # items a get lists at most (the server pages; this bounds the client)


class GetFormat(StrEnum):
    table = "table"
    wide = "wide"
    json = "json"
    yaml = "yaml"


GetFormatOption = Annotated[
    GetFormat,
    typer.Option(
        "--format",
        "-f",
        "-o",
        help="table for people, wide for more columns; json or yaml for programs ({items: "
        "[...]}, every page).",
    ),
]
FormatOption = Annotated[
    DataFormat,
    typer.Option("--format", "-f", "-o", help="table for people; json or yaml for programs."),
]


class TargetState(StrEnum):
    up = "up"
    down = "down"
    maintenance = "maintenance"
    stale = "stale"
    unknown = "unknown"


def _begin(chosen: StrEnum) -> Format:
    fmt = Format(chosen.value)
    error_format.set(fmt)
    return fmt


def _emit(data: Any, fmt: Format, table: Callable[[Any, bool], None]) -> None:
    with guarded():
        if fmt.data:
            write(dump(data, fmt))
        else:
            table(data, fmt is Format.wide)


def _second(moment: Any) -> str:
    """A server time to the second, as the events table shows times (the server keeps
    microseconds and the offset; a table row has no room for them)."""
    if moment is None:
        return "-"
    return str(moment).split(".")[0].split("+")[0]


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _amounts(used: dict[str, float], capacity: dict[str, float]) -> str:
    return (
        ", ".join(
            f"{name} {_text(used.get(name, 0.0))}/{_text(amount)}"
            for name, amount in sorted(capacity.items())
        )
        or "-"
    )


def _moves_table(moves: Sequence[dict[str, Any]], wide: bool) -> None:
    if not moves:
        write("no unit changes place\n")
        return
    rows: list[Sequence[Cell]] = [
        (
            str(m["unit"]),
            m["kind"].removeprefix("unit."),
            _text(m.get("from")),
            _text(m.get("to")),
            str(m.get("why", "")),
        )
        for m in moves
    ]
    show(out, Grid(("unit", "change", "from", "to", "why"), rows))


# A change's diff of placements, as Nomad's `job plan` marks it.
_MARKS = {
    "unit.placed": "+",
    "unit.removed": "-",
    "unit.unplaced": "-",
    "unit.moved": "~",
}


def _diff(
    changes: Sequence[dict[str, Any]],
    incompatible: Sequence[dict[str, Any]],
    refused: Sequence[dict[str, Any]] = (),
    tense: str = "would",
) -> None:
    """What a change moves and why, one line per unit: + placed, - removed or unplaced,
    ~ moved (or run differently on the same target), ! stays although it no longer
    fits there (incompatible, or a drain found it no other place)."""
    rows: list[Sequence[Cell]] = [
        (
            _MARKS.get(str(m["kind"]), "?"),
            str(m["unit"]),
            _text(m.get("from")),
            _text(m.get("to")),
            str(m.get("why", "")),
        )
        for m in changes
    ]
    rows += [
        (
            "!",
            str(m["unit"]),
            str(m["target"]),
            str(m["target"]),
            f"stays; no longer fits ({m['rule']}: {m['why']}); placed replace "
            f"{m['workload']} moves it",
        )
        for m in incompatible
    ]
    rows += [
        ("!", str(m["unit"]), _text(m.get("from")), _text(m.get("from")), str(m["why"]))
        for m in refused
    ]
    if not rows:
        write("no unit changes place\n")
        return
    show(out, Grid(("", "unit", "from", "to", "why"), rows))
    counted = [
        (sum(1 for m in changes if m["kind"] == "unit.placed"), "place"),
        (sum(1 for m in changes if m["kind"] == "unit.moved"), "move"),
        (sum(1 for m in changes if m["kind"] in ("unit.removed", "unit.unplaced")), "remove"),
    ]
    parts = [f"{count} to {verb}" for count, verb in counted if count]
    if incompatible:
        parts.append(f"{len(incompatible)} incompatible (stay)")
    if refused:
        parts.append(f"{len(refused)} refused (stay)")
    lead = "would: " if tense == "would" else ""
    write(f"{lead}{', '.join(parts)}\n")


def apply(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Spec files (native, or a Juju bundle or deployer file), applied in order, "
            "each in one transaction; or Open Horizon's files (or their directory), read "
            "together as placed plan reads them and applied as one.",
            metavar="FILE...",
            show_default=False,
        ),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    prune: Annotated[
        bool,
        typer.Option("--prune", help="Delete what a document defined before and names no more."),
    ] = False,
    expected_revision: Annotated[
        int | None,
        typer.Option(
            "--expected-revision",
            min=0,
            help="Refuse if the world changed since this revision (as simulate saw it).",
            show_default=False,
        ),
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Apply spec files to a running placed serve: create or update what they name, keep
    what they do not (--prune deletes what their documents no longer name), and plan.
    Prints the plan of the files' workloads and every unit that changed place, and the
    units that no longer fit where they run (they stay: placed replace moves them).
    With --dry-run, only the diff of placements the change would make, one line per
    unit: + placed, - removed, ~ moved, ! stays although it no longer fits; -o json
    prints the whole answer (changes, incompatible, the plan).

    \b
    FILE - reads standard input.

    \b
    Examples:
      # exit code 2: it needs a running placed serve; nothing listens on port 9
      placed apply examples/ironic-service.yaml --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      placed apply examples/openhorizon --dry-run --server http://127.0.0.1:9
      # exit code 2: no such file
      placed apply no-such-file.yaml
    """
    fmt = _begin(format_choice)
    texts = []
    if looks_like_openhorizon(files):
        # Open Horizon's files are read together (policies, services, nodes), here as
        # placed plan reads them, and applied as the native spec they make.
        try:
            notices: list[Notice] = []
            document = convert_openhorizon(files, notices)
            texts.append((files[0], dump_native(document, notices)))
        except SpecError as error:
            fail_spec(error)
        files = []
    if sum(is_stdin(path) for path in files) > 1:
        fail_option("FILE", "standard input (-) is read once: name it once")
    for path in files:
        # Read as placed plan reads a spec: bounded, UTF-8 checked where it is not.
        try:
            if is_stdin(path):
                texts.append((path, read_stdin()))
            else:
                texts.append((path, read_bounded(str(path), str(path))))
        except SpecError as error:
            fail_spec(error)
        except OSError as error:
            fail_option("FILE", f"{path}: {error.strerror or error}")

    def table(found: list[dict[str, Any]], wide: bool) -> None:
        for answer in found:
            incompatible = [m for m in answer.get("incompatible") or [] if m.get("new")]
            if answer.get("dry_run"):
                # Nomad's job plan: the diff of placements, nothing else.
                _diff(answer.get("changes") or [], incompatible)
                write(f"(dry run: nothing changed, at revision {answer['revision']})\n")
                continue
            names = ", ".join(answer.get("documents") or [])
            plan_table(out, [(names, answer)])
            _moves_table(answer.get("changes") or [], wide)
            for m in incompatible:
                write(
                    f"{m['unit']} no longer fits {m['target']} ({m['rule']}: {m['why']}): "
                    f"it stays; placed replace {m['workload']} moves it\n"
                )
            write(f"revision {answer['revision']}\n")

    def show_answers(found: list[dict[str, Any]]) -> None:
        _emit(
            found[0] if len(found) == 1 else found,
            fmt,
            lambda d, w: table([d] if isinstance(d, dict) else d, w),
        )

    from placed.client import ClientError  # as connected() does: httpx only when online

    answers: list[dict[str, Any]] = []
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        for done, (path, text) in enumerate(texts):
            try:
                # A document without a name is named after its file; one from standard
                # input after "stdin".
                source, shown = (
                    ("stdin", STDIN_SOURCE) if is_stdin(path) else (path.name, str(path))
                )
                answers.append(client.apply(text, source, dry_run, prune, expected_revision, shown))
            except ClientError:
                if answers:
                    # Each file is its own transaction: what went before this one is in
                    # the store. A table shows it before the error; json and yaml keep
                    # stdout one document (the error's), and the note says it either way.
                    if not fmt.data:
                        show_answers(answers)
                    before = ", ".join(_named(p) for p, _ in texts[:done])
                    rest = " and the files after it" if done + 1 < len(texts) else ""
                    verb = "checked (dry run)" if dry_run else "applied"
                    note = (
                        f"{before} {verb} at revision {answers[-1].get('revision')}; "
                        f"{_named(path)}{rest} not {verb}"
                    )
                    err.print(Text(printable(note)), soft_wrap=True)
                raise

    show_answers(answers)


def _named(path: Path) -> str:
    return "standard input" if is_stdin(path) else str(path)


get_app = typer.Typer(
    help="List what a running placed serve holds: targets, locations, workloads, "
    "placements, events, dedications, offerings. "
    "-o wide adds columns; json and yaml print {items: [...]} with every page.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed get targets --help\n"
    "  # exit code 2: nothing listens on port 9\n"
    "  placed get placements --server http://127.0.0.1:9\n",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _listing(
    path: str,
    params: dict[str, Any],
    reach: Reach,
    fmt: Format,
    table: Callable[[list[dict[str, Any]], bool], None],
) -> None:
    with connected(reach) as client:
        items = client.listed(path, params, MOST)
    _emit({"items": items}, fmt, lambda data, wide: table(data["items"], wide))


@get_app.command(name="targets")
def get_targets(
    under: Annotated[
        list[str] | None,
        typer.Option(
            "--under",
            help="Only the targets below this location (or so named); repeat it for several.",
            show_default=False,
        ),
    ] = None,
    state: Annotated[
        TargetState | None,
        typer.Option(
            "--state",
            help="Only targets in this admin state (up, down, maintenance) or liveness (stale: "
            "down for want of heartbeats; unknown: never heard from).",
            show_default=False,
        ),
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """The targets: admin state, liveness, what they use of what they have.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get targets -o wide --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      placed get targets --under z1 --state down --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no targets\n")
            return
        columns: tuple[str, ...] = ("name", "kind", "admin", "liveness", "used/capacity")
        if wide:
            columns += ("parent", "tags", "last seen", "generation", "document")
        rows: list[Sequence[Cell]] = []
        for t in items:
            row = [
                t["name"],
                t["kind"],
                t["admin_state"],
                t["liveness"],
                _amounts(t["used"], t["capacity"]),
            ]
            if wide:
                row += [
                    _text(t["parent"]),
                    ",".join(t["tags"]) or "-",
                    _second(t["last_seen"]),
                    str(t["generation"]),
                    _text(t["document"]),
                ]
            rows.append(row)
        show(out, Grid(columns, rows))

    params: dict[str, Any] = {}
    if under:
        params["under"] = under
    if state is not None:
        params["state"] = state.value
    _listing(
        "/v1/targets",
        params,
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="locations")
def get_locations(
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """The locations above the targets (zones, pods, clusters, racks), each with its
    parent (a domain-admin or user sees those it may use).

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get locations -o wide --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no locations\n")
            return
        columns: tuple[str, ...] = ("name", "kind", "parent")
        if wide:
            columns += ("tags",)
        rows: list[Sequence[Cell]] = []
        for place in items:
            row = [place["name"], place["kind"], _text(place["parent"])]
            if wide:
                row.append(",".join(place["tags"]) or "-")
            rows.append(row)
        show(out, Grid(columns, rows))

    _listing(
        "/v1/locations",
        {},
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="dedications")
def get_dedications(
    kind: Annotated[
        str | None,
        typer.Option("--kind", help="Only this kind: zone, pod, cluster, host or pool."),
    ] = None,
    domain: Annotated[
        str | None, typer.Option("--domain", help="Only this domain's (and its accounts').")
    ] = None,
    account: Annotated[
        str | None,
        typer.Option("--account", help="Only this account's (an account of --domain)."),
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """The dedications, as CloudStack's listDedicatedZones, Pods, Clusters and Hosts
    list them: a root-admin sees every one, a domain-admin those of its domain's chain
    and accounts, a user those that apply to its account.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get dedications --kind host --domain D1 --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no dedications\n")
            return
        rows: list[Sequence[Cell]] = [
            (
                d["resource"],
                d["kind"],
                d["domain"],
                _text(d["account"]),
                "implicit" if d["implicit"] else "explicit",
            )
            for d in items
        ]
        show(out, Grid(("resource", "kind", "domain", "account", "dedication"), rows))

    params = {
        k: v for k, v in (("kind", kind), ("domain", domain), ("account", account)) if v is not None
    }
    _listing(
        "/v1/dedications",
        params,
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="offerings")
def get_offerings(
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """The service offerings: what a VM of each asks for, and whether it asks for
    dedicated resources (strict, or preferred: it may fall back to shared hosts).

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get offerings -o yaml --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no offerings\n")
            return
        rows: list[Sequence[Cell]] = [
            (
                o["name"],
                _text(o["cpu"]),
                _text(o["memory"]),
                _text(o["disk"]),
                f"yes ({o['implicit']})" if o["dedicated"] else "no",
            )
            for o in items
        ]
        show(out, Grid(("name", "cpu", "memory", "disk", "dedicated"), rows))

    _listing(
        "/v1/offerings",
        {},
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="workloads")
def get_workloads(
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """The workloads: mode, units asked for and placed, account.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get workloads --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no workloads\n")
            return
        columns: tuple[str, ...] = ("name", "mode", "units", "placed", "account")
        if wide:
            columns += ("generation", "document")
        rows: list[Sequence[Cell]] = []
        for w in items:
            row = [w["name"], w["mode"], str(w["units"]), str(w["placed"]), _text(w["account"])]
            if wide:
                row += [str(w["generation"]), _text(w["document"])]
            rows.append(row)
        show(out, Grid(columns, rows))

    _listing(
        "/v1/workloads",
        {},
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="placements")
def get_placements(
    workload: Annotated[
        str | None, typer.Option("--workload", "-w", help="Only this workload's units.")
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="Only the units on this target.")
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """Where each unit is (a unit placed nowhere shows -).

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get placements --workload node1 --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no units\n")
            return
        columns: tuple[str, ...] = ("unit", "workload", "target")
        if wide:
            columns += ("placed at", "account")
        rows: list[Sequence[Cell]] = []
        for p in items:
            row = [p["unit"], p["workload"], _text(p["target"])]
            if wide:
                row += [_second(p["placed_at"]), _text(p["account"])]
            rows.append(row)
        show(out, Grid(columns, rows))

    params = {k: v for k, v in (("workload", workload), ("target", target)) if v is not None}
    _listing(
        "/v1/placements",
        params,
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
        table,
    )


@get_app.command(name="events")
def get_events(
    kind: Annotated[
        str | None,
        typer.Option("--kind", "-k", help="One kind (unit.moved), or a prefix (unit.)."),
    ] = None,
    after: Annotated[int, typer.Option("--after", min=0, help="Only events after this id.")] = 0,
    watch: Annotated[
        bool,
        typer.Option("--watch", "-w", help="Then follow new events as they happen, until Ctrl-C."),
    ] = False,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: GetFormatOption = GetFormat.table,
) -> None:
    """What changed, oldest first: each move with its reason. With -w, new events as
    they come (json: one object a line), until interrupted.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed get events --kind unit. --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      placed get events -w --server http://127.0.0.1:9
    """

    def table(items: list[dict[str, Any]], wide: bool) -> None:
        if not items:
            write("no events\n")
            return
        columns: tuple[str, ...] = ("id", "time", "kind", "subject", "detail")
        if wide:
            columns += ("actor", "request")
        show(out, Grid(columns, [_event_row(e, wide) for e in items]))

    params: dict[str, Any] = {"after": after}
    if kind is not None:
        params["kind"] = kind
    fmt = _begin(format_choice)
    if not watch:
        _listing(
            "/v1/events", params, Reach(server, token, ca_cert, client_cert, client_key), fmt, table
        )
        return
    _follow(params, Reach(server, token, ca_cert, client_cert, client_key), fmt)


def _event_row(e: dict[str, Any], wide: bool) -> list[str]:
    details = e.get("details") or {}
    if "to" in details or "from" in details:
        detail = f"{_text(details.get('from'))} -> {_text(details.get('to'))}"
        if wide and details.get("why"):
            detail += f": {details['why']}"
    else:
        detail = str(details.get("reason") or "")
    if e["kind"] == "unit.incompatible" and details.get("rule"):
        # What no longer fits, and by which rule (the event's point).
        detail = f"on {details.get('target')}: {details['rule']}"
        if wide and details.get("why"):
            detail += f": {details['why']}"
    elif e["kind"] == "placement.failed":
        # Why no host took it: the deploy's own 409 said the same.
        detail = str(details.get("why") or details.get("cause") or "")
    elif e["kind"] == "setting.changed":
        detail = f"{_text(details.get('was'))} -> {_text(details.get('value'))}"
    elif e["kind"] == "document.pruned":
        detail = "deleted " + ", ".join(str(d) for d in details.get("deleted") or [])
    elif details.get("document") and e["kind"].endswith((".created", ".changed", ".deleted")):
        # An audit event (operations/audit.py): which document the object belongs to.
        detail = f"document {details['document']}"
    elif e["kind"] == "migration.refused" and details.get("operation") == "drain":
        detail = f"stays on {details.get('from')}: {details.get('error')}"
        if wide and details.get("why"):
            detail += f": {details['why']}"
    row = [str(e["id"]), _second(e["time"]), e["kind"], e["subject"], detail]
    if wide:
        actor = e.get("actor") or {}
        row += [_text(actor.get("role")), _text(e.get("request_id"))]
    return row


# A followed event's columns keep these widths (rows come one at a time, unmeasured).
WATCH_WIDTHS = (6, 19, 16, 12)


def _watched(row: list[str]) -> str:
    cells = [printable(cell) for cell in row]
    padded = [cell.ljust(width) for cell, width in zip(cells, WATCH_WIDTHS, strict=False)]
    return "  ".join(padded + cells[len(WATCH_WIDTHS) :]).rstrip() + "\n"


WATCH_WAIT_S = 25  # under the server's longest wait, so each poll is answered


def _follow(params: dict[str, Any], reach: Reach, fmt: Format) -> None:
    """Every event after `params["after"]`, then each new one, by long polls."""
    query = dict(params)
    try:
        with connected(reach) as client:
            client.extend_timeout(WATCH_WAIT_S + 10)
            while True:
                page = client.request("GET", "/v1/events", params={**query, "limit": 1000})
                items = page.get("items") or []
                with guarded():
                    for e in items:
                        if fmt.data:
                            line = json.dumps(e, ensure_ascii=False, sort_keys=True)
                            write(line + "\n" if fmt is Format.json else dump([e], fmt))
                        else:
                            write(_watched(_event_row(e, fmt is Format.wide)))
                    out.file.flush()
                if items:
                    query["after"] = items[-1]["id"]
                query["wait"] = 0 if len(items) >= 1000 else WATCH_WAIT_S
    except KeyboardInterrupt:
        return


describe_app = typer.Typer(
    help="One target, workload or unit of a running placed serve, in full: a unit with "
    "its moves and the explanation placed explain gives.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed describe unit --help\n"
    "  # exit code 2: nothing listens on port 9\n"
    "  placed describe unit node1/0 --server http://127.0.0.1:9\n",
    no_args_is_help=True,
    rich_markup_mode=None,
)

NameArgument = Annotated[str, typer.Argument(metavar="NAME", show_default=False)]


def _fields(pairs: Sequence[tuple[str, Any]]) -> None:
    show(out, Grid(("field", "value"), [(name, _text(value)) for name, value in pairs]))


@describe_app.command(name="target")
def describe_target(
    name: NameArgument,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """A target and the units on it.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed describe target conductor1 --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice)
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        data = client.target(name)
        data["units"] = client.listed("/v1/placements", {"target": name}, MOST)

    def table(found: dict[str, Any], wide: bool) -> None:
        _fields(
            [
                ("name", found["name"]),
                ("kind", found["kind"]),
                ("parent", found["parent"]),
                ("admin state", found["admin_state"]),
                ("liveness", found["liveness"]),
                ("last seen", found["last_seen"]),
                ("used/capacity", _amounts(found["used"], found["capacity"])),
                ("tags", ",".join(found["tags"]) or None),
                ("generation", found["generation"]),
                ("document", found["document"]),
                ("units", ", ".join(u["unit"] for u in found["units"]) or None),
            ]
        )

    _emit(data, fmt, table)


@describe_app.command(name="workload")
def describe_workload(
    name: NameArgument,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """A workload, its spec and where its units are.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed describe workload node1 --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice)
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        data = client.workload(name)
        data["placements"] = client.listed("/v1/placements", {"workload": name}, MOST)

    def table(found: dict[str, Any], wide: bool) -> None:
        _fields(
            [
                ("name", found["name"]),
                ("mode", found["mode"]),
                ("units", f"{found['placed']} placed of {found['units']}"),
                ("account", found["account"]),
                ("generation", found["generation"]),
                ("document", found["document"]),
            ]
        )
        rows: list[Sequence[Cell]] = [(u["unit"], _text(u["target"])) for u in found["placements"]]
        if rows:
            show(out, Grid(("unit", "target"), rows))

    _emit(data, fmt, table)


@describe_app.command(name="unit")
def describe_unit(
    name: NameArgument,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """A unit: where it is, each move it made and why, and every target judged for it
    as placed explain judges them (its workload planned again in the world as it is).

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed describe unit node1/0 -o json --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice)
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        data = client.unit(name)

    def table(found: dict[str, Any], wide: bool) -> None:
        write(f"{found['unit']} of {found['workload']} runs on {_text(found['target'])}\n")
        moves: list[Sequence[Cell]] = [
            (
                str(h["id"]),
                str(h["at"]).split(".")[0],
                _text(h["from"]),
                _text(h["to"]),
                h["reason"],
            )
            for h in found["history"]
        ]
        if moves:
            show(out, Grid(("#", "at", "from", "to", "why"), moves))
        if found.get("explanation"):
            explain_table(out, [("now", found["explanation"])])

    _emit(data, fmt, table)


target_app = typer.Typer(
    help="Take a target of a running placed serve down, or bring it up: its units move as "
    "placed simulate --down/--up says, each move an event.\n\n"
    "\b\n"
    "Examples:\n"
    "  placed target down --help\n"
    "  # exit code 2: nothing listens on port 9\n"
    "  placed target down conductor1 --server http://127.0.0.1:9\n",
    no_args_is_help=True,
    rich_markup_mode=None,
)

ReasonOption = Annotated[
    str, typer.Option("--reason", "-r", help="Why, for the event (up to 255 characters).")
]


def _check_reason(reason: str) -> None:
    """A reason is kept with the target's events: 255 characters at most."""
    if len(reason) > 255:
        fail_option("--reason", f"{len(reason)} characters; at most 255")


def _state(name: str, state: str, reason: str, reach: Reach, fmt: Format) -> None:
    _check_reason(reason)
    with connected(reach) as client:
        data = client.set_state(name, state, reason)

    def table(found: dict[str, Any], wide: bool) -> None:
        if found["changed"]:
            write(f"{found['target']} is {found['admin_state']} (revision {found['revision']})\n")
        else:
            write(f"{found['target']} was {found['admin_state']} already: nothing moves\n")
        _moves_table(found["moves"], wide)

    _emit(data, fmt, table)


@target_app.command(name="down")
def target_down(
    name: NameArgument,
    reason: ReasonOption = "",
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Take a target down: its units move to where placed simulate --down says.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed target down conductor1 --reason "disk swap" \\
          --server http://127.0.0.1:9
    """
    _state(
        name,
        "down",
        reason,
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
    )


@target_app.command(name="up")
def target_up(
    name: NameArgument,
    reason: ReasonOption = "",
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Bring a target up: the mapping units it owns come back to it.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed target up conductor1 --server http://127.0.0.1:9
    """
    _state(
        name,
        "up",
        reason,
        Reach(server, token, ca_cert, client_cert, client_key),
        _begin(format_choice),
    )


EVERY = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
EVERY_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def every_of(text: str) -> float | None:
    """`10s`, `0.5s`, `500ms`, `1m`, `10` (seconds): seconds; None when not one."""
    found = EVERY.fullmatch(text.strip().lower())
    if found is None:
        return None
    seconds = float(found.group(1)) * EVERY_UNITS[found.group(2) or "s"]
    return seconds if 0.01 <= seconds <= 86400 else None


def heartbeat(
    name: NameArgument,
    every: Annotated[
        str | None,
        typer.Option(
            "--every",
            help="Keep sending one this often (10s, 500ms, 1m) until interrupted, as the "
            "settings' heartbeat_interval_s says. While the server cannot be reached or "
            "fails, it says so once and keeps trying; a refusal (bad token, no such "
            "target) is exit 2.",
            metavar="DURATION",
            show_default=False,
        ),
    ] = None,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Tell a running placed serve that a target is alive, as an Ironic conductor or an
    edge agent does for itself (with an agent token of that target, or the root-admin's).
    Without --every, one heartbeat; with it, one each period until Ctrl-C (exit 0).

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed heartbeat conductor1 --server http://127.0.0.1:9
      # exit code 2: not a duration
      placed heartbeat conductor1 --every soon
    """
    fmt = _begin(format_choice)
    period = None
    if every is not None:
        period = every_of(every)
        if period is None:
            fail_option("--every", f"{every!r} is not a duration from 10ms to 24h (10s, 500ms)")

    def table(found: dict[str, Any], wide: bool) -> None:
        seen = str(found["last_seen"]).split(".")[0]
        write(
            f"{found['target']} is {found['liveness']} (seen {seen}; stale after "
            f"{found['timeout_s']:g} s without a heartbeat)\n"
        )

    if period is None:
        with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
            data = client.heartbeat(name)
        _emit(data, fmt, table)
        return
    try:
        _beat(name, period, Reach(server, token, ca_cert, client_cert, client_key), fmt, table)
    except KeyboardInterrupt:
        return


def _beat(
    name: str,
    period: float,
    reach: Reach,
    fmt: Format,
    table: Callable[[dict[str, Any], bool], None],
) -> None:
    """A heartbeat each `period` until interrupted: printed when its answer changes (so
    a log shows the changes, not every beat); an outage is one line on stderr."""
    import time

    from placed.client import ClientError

    shown: str | None = None
    failing: str | None = None
    with connected(reach) as client:
        client.extend_timeout(max(period, 2.0))
        while True:
            started = time.monotonic()
            try:
                data = client.heartbeat(name)
            except ClientError as error:
                if error.status is not None and error.status < 500:
                    refused(error, client)
                if failing != error.detail:
                    err.print(f"placed heartbeat: {error.detail}; trying again", markup=False)
                failing = error.detail
                shown = None
            else:
                if failing is not None:
                    err.print(f"placed heartbeat: {client.server} answers again", markup=False)
                failing = None
                if data.get("liveness") != shown:
                    _emit(data, fmt, table)
                    out.file.flush()
                    shown = data.get("liveness")
            time.sleep(max(0.0, period - (time.monotonic() - started)))


def replace(
    name: NameArgument,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would move; change nothing.")
    ] = False,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Move a workload's units that no longer fit where they run (after a change of
    its policy, a target's properties or a dedication) to where the plan puts them now.
    A unit that fits nowhere else stays where it is, and says why.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed replace db --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      placed replace db --dry-run -o json --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice)
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        data = client.replace(name, dry_run)

    def table(found: dict[str, Any], wide: bool) -> None:
        stayed = [
            {"unit": m["unit"], "from": m["target"], "why": f"stays: {m['summary']}"}
            for m in found["stayed"]
        ]
        tense = "would" if found["dry_run"] else "did"
        _diff(found["changes"], [], stayed, tense)
        if found["dry_run"]:
            write(f"(dry run: nothing changed, at revision {found['revision']})\n")
        else:
            write(f"revision {found['revision']}\n")

    _emit(data, fmt, table)


MAX_DRAIN = 1000  # targets in one drain, as POST /v1/targets:drain takes


@target_app.command(name="drain")
def target_drain(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", show_default=False)],
    reason: ReasonOption = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would move; change nothing.")
    ] = False,
    server: ServerOption = None,
    token: TokenOption = None,
    ca_cert: CaCertOption = None,
    client_cert: ClientCertOption = None,
    client_key: ClientKeyOption = None,
    format_choice: FormatOption = DataFormat.table,
) -> None:
    """Drain targets for maintenance (CloudStack's): they take nothing new, and each
    unit on them is placed again elsewhere under the same rules (dedication included).
    Several targets are drained in one change, so no unit leaving one lands on another.
    A unit no other target takes stays, recorded as migration.refused. placed target
    up NAME ends the maintenance. Root-admin only.

    \b
    Examples:
      # exit code 2: nothing listens on port 9
      placed target drain H1a --reason "firmware" --server http://127.0.0.1:9
      # exit code 2: nothing listens on port 9
      placed target drain H1a H1b --dry-run --server http://127.0.0.1:9
    """
    fmt = _begin(format_choice)
    _check_reason(reason)
    wanted = list(dict.fromkeys(names))
    if len(wanted) > MAX_DRAIN:
        fail_option("NAME", f"{len(wanted):,} targets; at most {MAX_DRAIN:,} in one drain")
    with connected(Reach(server, token, ca_cert, client_cert, client_key)) as client:
        if len(wanted) == 1:
            data = client.drain(wanted[0], reason, dry_run)
        else:
            data = client.drain_all(wanted, reason, dry_run)

    def table(found: dict[str, Any], wide: bool) -> None:
        states = found.get("targets") or [found]
        changed = [t["target"] for t in states if t["changed"]]
        already = [t["target"] for t in states if not t["changed"]]
        if found["dry_run"]:
            write(f"{', '.join(t['target'] for t in states)} would go into maintenance\n")
        elif changed:
            verb = "is" if len(changed) == 1 else "are"
            write(f"{', '.join(changed)} {verb} in maintenance (revision {found['revision']})\n")
        if already and not found["dry_run"]:
            verb = "was" if len(already) == 1 else "were"
            write(f"{', '.join(already)} {verb} in maintenance already\n")
        refused = [{**m, "from": m.get("target", found.get("target"))} for m in found["refused"]]
        _diff(found["moves"], [], refused, "would" if found["dry_run"] else "did")
        if found["dry_run"]:
            write(f"(dry run: nothing changed, at revision {found['revision']})\n")

    _emit(data, fmt, table)
