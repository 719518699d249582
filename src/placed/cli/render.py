"""Results for people (tables) and for programs (JSON, YAML).

Tables go through cli/grid.py: plain aligned columns when stdout is not a terminal (one
row per line, nothing wrapped), styled columns on a terminal. `wide` shows every field
of the output contract as a column. Every user string is data, never markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.text import Text

from placed.cli.grid import Cell, Grid, Styled, printable, show, write
from placed.cli.output import Format, dump

__all__ = [
    "Format",
    "View",
    "check_table",
    "combine",
    "emit_data",
    "explain_table",
    "plan_table",
    "simulate_table",
    "validate_table",
]

Documents = list[tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class View:
    """How a table is cut: every column (wide), and what a filter left out."""

    wide: bool = False
    # plan --unplaced: placements are not shown; how many there were, per document.
    hidden_placements: dict[str, int] | None = None


Table = Callable[[Console, Documents, View], None]


def emit_data(console: Console, data: Any, fmt: Format) -> None:
    write(console, dump(data, fmt))


def combine(documents: Documents) -> dict[str, Any]:
    """One document's result as is (the output contract); several under `documents`."""
    if len(documents) == 1:
        name, data = documents[0]
        return {"name": name, **data}
    return {"documents": [{"name": name, **data} for name, data in documents]}


def say(console: Console, *parts: str | Styled) -> None:
    """One line of text, user strings included, styled on a terminal, literal always."""
    if console.is_terminal:
        text = Text(end="\n")
        for part in parts:
            if isinstance(part, Styled):
                text.append(printable(part.text), part.style)
            else:
                text.append(printable(part))
        console.print(text, soft_wrap=True)
    else:
        write(
            console,
            "".join(printable(p.text if isinstance(p, Styled) else p) for p in parts) + "\n",
        )


def _heading(console: Console, name: str, several: bool) -> None:
    if not several:
        return
    if console.is_terminal:
        console.rule(Text(printable(name), style="bold"))
    else:
        write(console, f"== {printable(name)} ==\n")


def warnings_table(console: Console, warnings: list[dict[str, Any]]) -> None:
    """Warnings on their own (convert's, on stderr: what --force let through)."""
    _warnings(console, warnings)


def _warnings(console: Console, warnings: list[dict[str, Any]]) -> None:
    for warning in warnings:
        subject = warning.get("unit") or warning.get("workload") or warning.get("target")
        where = f" {subject}:" if subject else ""
        say(console, Styled(f"warning [{warning['code']}]{where} {warning['message']}", "yellow"))


def _namespace(placement: dict[str, Any]) -> str:
    """One namespace, or where each service of a pattern goes when they differ."""
    if "namespaces" in placement:
        return ", ".join(f"{url}: {ns}" for url, ns in placement["namespaces"].items())
    return str(placement.get("namespace") or "-")


def _balance(placement: dict[str, Any]) -> str:
    balance = placement.get("balance")
    if not balance:
        return "-"
    ahead = ",".join(balance["ranked_higher"])
    return f"choice={balance['choice']},cap={balance['cap']}" + (f",after={ahead}" if ahead else "")


UNPLACED = Styled("unplaced", "bold red")


def plan_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        placements, unplaced = data["placements"], data["unplaced"]
        rows: list[Sequence[Cell]] = []
        if view.wide:
            columns: tuple[str, ...] = (
                "workload",
                "unit",
                "target",
                "namespace",
                "container",
                "via",
                "score",
                "balance",
                "why",
            )
            for p in placements:
                rows.append(
                    (
                        p["workload"],
                        p["unit"],
                        p["target"],
                        _namespace(p),
                        p.get("container") or "-",
                        p["via"],
                        f"{p['score']:g}",
                        _balance(p),
                        p["reason"],
                    )
                )
            for u in unplaced:
                rows.append(
                    (u["workload"], u["unit"], UNPLACED, "-", "-", "-", "-", "-", u["summary"])
                )
        else:
            # The unit names its workload (web/2), so no workload column: the reasons get
            # room. The namespace only where some unit has one.
            spaced = any("namespace" in p or "namespaces" in p for p in placements)
            columns = ("unit", "target", *(("namespace",) if spaced else ()), "score", "why")
            for p in placements:
                middle = (_namespace(p),) if spaced else ()
                rows.append((p["unit"], p["target"], *middle, f"{p['score']:g}", p["reason"]))
            for u in unplaced:
                middle = ("-",) if spaced else ()
                rows.append((u["unit"], UNPLACED, *middle, "-", u["summary"]))
        if rows:
            show(console, Grid(columns, rows))
        hidden = (view.hidden_placements or {}).get(name)
        if hidden is not None:
            count = f"{hidden} placed (not shown)"
        else:
            count = f"{len(placements)} placed"
        if unplaced:
            say(console, f"{count}, ", Styled(f"{len(unplaced)} unplaced", "red"))
        else:
            say(console, count + (", nothing unplaced" if hidden is not None else ""))
        _warnings(console, data["warnings"])


def _reasons(verdict: dict[str, Any]) -> str:
    return "; ".join(f"{r['filter']}: {r['message']}" for r in verdict["reasons"])


def check_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        for workload in data["workloads"]:
            check_workload_table(console, workload, view)
        check_footer(console, data["conflicts"], data["warnings"])


def check_workload_table(console: Console, workload: dict[str, Any], view: View) -> None:
    """One workload of the full matrix: its title, then a row per target."""
    # The node's own namespace, where any node has one (seed 002: shown in node
    # commands), so a namespace refusal can be read off the row.
    spaced = view.wide or any(v.get("namespace") for v in workload["targets"])
    first = ("workload",) if view.wide else ()
    middle = ("namespace",) if spaced else ()
    columns = (*first, "target", *middle, "compatible", "score", "reasons")
    rows: list[Sequence[Cell]] = []
    for verdict in workload["targets"]:
        ok = verdict["compatible"]
        rows.append(
            (
                *((workload["workload"],) if view.wide else ()),
                verdict["target"],
                *((verdict.get("namespace") or "-",) if spaced else ()),
                Styled("yes", "green") if ok else Styled("no", "red"),
                f"{verdict['score']:g}" if ok else "-",
                _reasons(verdict),
            )
        )
    title = f"{workload['workload']}: {workload['summary']}"
    show(console, Grid(columns, rows, title=title))


def check_footer(
    console: Console, conflicts: list[dict[str, Any]], warnings: list[dict[str, Any]]
) -> None:
    for conflict in conflicts:
        say(
            console,
            Styled(
                f"conflict [{conflict['code']}] {conflict['workload']}: {conflict['message']}",
                "bold red",
            ),
        )
    _warnings(console, warnings)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _listed(ids: list[str], most: int = 10) -> str:
    more = len(ids) - most
    return ", ".join(ids[:most]) + (f" and {more} more" if more > 0 else "")


def simulate_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        change = ", ".join([*(f"{t} down" for t in data["down"]), *(f"{t} up" for t in data["up"])])
        moved = {move["unit"] for move in data["moves"]}
        before = {u["unit"] for u in data.get("unplaced_before", [])}
        rows: list[Sequence[Cell]] = []
        for move in data["moves"]:
            if move.get("removed"):
                to: Cell = Styled("removed", "yellow")
            else:
                to = move["to"] or UNPLACED
            # No source: unplaced before the change, or a unit that did not exist then.
            source = move["from"] or (Styled("unplaced", "red") if move["unit"] in before else "-")
            first = (move["workload"],) if view.wide else ()
            rows.append((*first, move["unit"], source, to, move["why"]))
        for u in data["unplaced"]:
            if u["unit"] in moved:
                continue
            why = (
                f"already unplaced before the change: {u['summary']}"
                if u["unit"] in before
                else u["summary"]
            )
            first = (u["workload"],) if view.wide else ()
            source = Styled("unplaced", "red") if u["unit"] in before else "-"
            rows.append((*first, u["unit"], source, UNPLACED, why))
        if rows:
            columns = (*(("workload",) if view.wide else ()), "unit", "from", "to", "why")
            show(console, Grid(columns, rows))
        units: int = data["units_before"] if "units_before" in data else data["units"]
        removed = data.get("removed", 0)
        if data["moved"]:
            summary = f"{change}: {data['moved']} of {_plural(units, 'unit')} move"
            if removed:
                summary += f" ({removed} removed: every-mode units whose target is gone)"
        else:
            summary = f"{change}: no unit moves ({_plural(units, 'unit')})"
        say(console, summary)
        left = len(data["unplaced"])
        if left:
            already = len([u for u in data["unplaced"] if u["unit"] in before])
            note = f" ({already} already before the change)" if already else ""
            say(console, Styled(f"{left} unplaced after the change{note}", "red"))
        for key, state in (("already_down", "down"), ("already_up", "up")):
            ids = data.get(key) or []
            if ids:
                verb = "was" if len(ids) == 1 else "were"
                say(console, Styled(f"{_listed(ids)} {verb} already {state}", "yellow"))
        _seen(console, data)


def _seen(console: Console, data: dict[str, Any]) -> None:
    """A server's simulation: the revision it saw, and what this token may not see."""
    hidden = data.get("hidden") or {}
    moves, unplaced = hidden.get("moves", 0), hidden.get("unplaced", 0)
    if moves or unplaced:
        say(
            console,
            f"not shown: {_plural(moves, 'move')} and {_plural(unplaced, 'unplaced unit')} "
            "of other accounts' workloads",
        )
    if "revision" in data:
        say(console, f"at revision {data['revision']}: nothing changed")


def validate_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        say(
            console,
            Styled("ok", "green"),
            f" {name}: {data['targets']} targets, {data['workloads']} workloads",
        )
        _warnings(console, data["warnings"])


def explain_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        if data["placed"]:
            title = f"{data['unit']} -> {data['target']}: {data['reason']}"
        else:
            title = f"{data['unit']} unplaced: {data['summary']}"
        # Every field of a verdict is a column already: wide shows the same.
        rows: list[Sequence[Cell]] = []
        for verdict in data["targets"]:
            ok = verdict["compatible"]
            chosen = data["placed"] and verdict["target"] == data["target"]
            mark = (
                Styled("chosen", "bold green")
                if chosen
                else Styled("yes", "green")
                if ok
                else Styled("no", "red")
            )
            score = f"{verdict['score']:g}" if ok else "-"
            rows.append((verdict["target"], mark, score, _reasons(verdict)))
        columns = ("target", "compatible", "score", "reasons")
        show(console, Grid(columns, rows, title=title))


def dedications_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        if "coverage" in data:
            rows: list[Sequence[Cell]] = [
                (
                    row["resource"],
                    row["kind"],
                    row["domain"],
                    row.get("account") or "-",
                    f"inherited from {row['inherited_from']}" if row["inherited_from"] else "own",
                )
                for row in data["coverage"]
            ]
            columns: tuple[str, ...] = ("resource", "kind", "domain", "account", "why")
        else:
            rows = [
                (
                    row["resource"],
                    row["kind"],
                    row["domain"],
                    row.get("account") or "-",
                    "implicit" if row["implicit"] else "explicit",
                )
                for row in data["dedications"]
            ]
            columns = ("resource", "kind", "domain", "account", "how")
        if rows:
            show(console, Grid(columns, rows))
        else:
            say(console, "no dedications")


def migrations_table(console: Console, documents: Documents, view: View = View()) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        rows: list[Sequence[Cell]] = [
            (move["unit"], move["from"], move["to"], Styled("migrated", "green"))
            for move in data["migrated"]
        ]
        rows += [
            (
                no["unit"],
                no.get("from") or "-",
                no["to"] or "-",
                Styled(f"refused: {no['why']}", "red"),
            )
            for no in data["refused"]
        ]
        if rows:
            show(console, Grid(("vm", "from", "to", "outcome"), rows))
        for vm, hosts in data["targets"].items():
            say(console, f"{vm} may migrate to: {', '.join(hosts) if hosts else 'no host'}")
        for note in data.get("notes", ()):
            say(console, note)
        _seen(console, data)
