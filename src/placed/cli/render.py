"""Results for people (rich tables) and for programs (JSON, YAML)."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text


class Format(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def emit_data(console: Console, data: Any, fmt: Format) -> None:
    if fmt is Format.json:
        console.out(json.dumps(data, indent=2), highlight=False)
    else:
        console.out(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip(), highlight=False
        )


def combine(documents: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """One document's result as is (the output contract); several under `documents`."""
    if len(documents) == 1:
        name, data = documents[0]
        return {"name": name, **data}
    return {"documents": [{"name": name, **data} for name, data in documents]}


def _heading(console: Console, name: str, several: bool) -> None:
    if several:
        console.rule(f"[bold]{name}")


def _warnings(console: Console, warnings: list[dict[str, Any]]) -> None:
    for warning in warnings:
        subject = warning.get("unit") or warning.get("workload") or warning.get("target")
        where = f" {subject}:" if subject else ""
        console.print(
            Text(f"warning [{warning['code']}]{where} {warning['message']}", style="yellow")
        )


def _namespace(placement: dict[str, Any]) -> str:
    """One namespace, or where each service of a pattern goes when they differ."""
    if "namespaces" in placement:
        return ", ".join(f"{url}: {ns}" for url, ns in placement["namespaces"].items())
    return str(placement.get("namespace") or "-")


def plan_table(console: Console, documents: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        # The unit names its workload (web/2), so no workload column: the reasons get room.
        table = Table(show_edge=False, header_style="bold")
        namespaces = any("namespace" in p or "namespaces" in p for p in data["placements"])
        middle = ("namespace",) if namespaces else ()
        for column in ("unit", "target", *middle, "score", "why"):
            table.add_column(column, overflow="fold", ratio=3 if column == "why" else None)
        for p in data["placements"]:
            extra = (_namespace(p),) if namespaces else ()
            table.add_row(p["unit"], p["target"], *extra, f"{p['score']:g}", p["reason"])
        for u in data["unplaced"]:
            extra = ("",) if namespaces else ()
            marker = Text("unplaced", style="bold red")
            table.add_row(u["unit"], marker, *extra, "", u["summary"])
        console.print(table)
        placed, unplaced = len(data["placements"]), len(data["unplaced"])
        status = f"{placed} placed" + (f", [red]{unplaced} unplaced[/red]" if unplaced else "")
        console.print(status)
        _warnings(console, data["warnings"])


def check_table(console: Console, documents: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        for workload in data["workloads"]:
            table = Table(
                title=f"{workload['workload']}: {workload['summary']}",
                title_justify="left",
                show_edge=False,
                header_style="bold",
            )
            # The node's own namespace, where any node has one (seed 002: shown in node
            # commands), so a namespace refusal can be read off the row.
            spaced = any(v.get("namespace") for v in workload["targets"])
            middle = ("namespace",) if spaced else ()
            for column in ("target", *middle, "compatible", "score", "reasons"):
                table.add_column(column, overflow="fold")
            for verdict in workload["targets"]:
                ok = verdict["compatible"]
                extra = (verdict.get("namespace") or "-",) if spaced else ()
                table.add_row(
                    verdict["target"],
                    *extra,
                    Text("yes", style="green") if ok else Text("no", style="red"),
                    f"{verdict['score']:g}" if ok else "",
                    "; ".join(f"{r['filter']}: {r['message']}" for r in verdict["reasons"]),
                )
            console.print(table)
        for conflict in data["conflicts"]:
            console.print(
                Text(
                    f"conflict [{conflict['code']}] {conflict['workload']}: {conflict['message']}",
                    style="bold red",
                )
            )
        _warnings(console, data["warnings"])


def simulate_table(console: Console, documents: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        change = ", ".join([*(f"{t} down" for t in data["down"]), *(f"{t} up" for t in data["up"])])
        if not data["moves"]:
            console.print(f"{change}: no unit moves ({data['units']} units)")
            continue
        table = Table(show_edge=False, header_style="bold")
        for column in ("unit", "from", "to", "why"):
            table.add_column(column, overflow="fold")
        for move in data["moves"]:
            table.add_row(
                move["unit"],
                move["from"] or "-",
                move["to"] or Text("unplaced", style="bold red"),
                move["why"],
            )
        console.print(table)
        console.print(f"{change}: {data['moved']} of {data['units']} units move")


def validate_table(console: Console, documents: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in documents:
        console.print(
            f"[green]ok[/green] {name}: {data['targets']} targets, {data['workloads']} workloads"
        )
        _warnings(console, data["warnings"])


def explain_table(console: Console, documents: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in documents:
        _heading(console, name, len(documents) > 1)
        if data["placed"]:
            title = f"{data['unit']} -> {data['target']}: {data['reason']}"
        else:
            title = f"{data['unit']} unplaced: {data['summary']}"
        table = Table(title=title, title_justify="left", show_edge=False, header_style="bold")
        for column in ("target", "compatible", "score", "reasons"):
            table.add_column(column, overflow="fold")
        for verdict in data["targets"]:
            ok = verdict["compatible"]
            chosen = data["placed"] and verdict["target"] == data["target"]
            table.add_row(
                verdict["target"],
                Text("chosen" if chosen else "yes", style="bold green" if chosen else "green")
                if ok
                else Text("no", style="red"),
                f"{verdict['score']:g}" if ok else "",
                "; ".join(f"{r['filter']}: {r['message']}" for r in verdict["reasons"]),
            )
        console.print(table)
