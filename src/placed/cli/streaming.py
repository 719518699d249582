"""Output written as it is computed: `placed check` prints workload by workload, so that
5,000 workloads on 1,000 targets start showing at once and never sit in memory as one
document.

The data formats give the same data as the whole document would (`dump(combine(...))`):
JSON with the same layout, YAML with the same structure. A table of the summary is one
aligned row per workload; the widths of its fixed columns come from what is known before
the first row (the workloads' names, the number of targets), so that rows can be written
as they come and still line up for `cut` and `awk`.

A reader that closes the pipe ends the output quietly (output.guarded); `closed` tells
the caller, which still owes the exit code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml
from rich.console import Console
from rich.text import Text

from placed.cli.grid import GAP, MIN_WRAP, Cell, Styled, printable, width, wrap
from placed.cli.output import Format, guarded
from placed.cli.render import View, check_footer, check_workload_table, say
from placed.model import Workload
from placed.policy.distinct import Distinct

__all__ = ["CheckWriter", "DataStream", "RowStream"]

ITEMS = "workloads"  # the streamed list of a check document


def put(console: Console, text: str) -> None:
    """Text as is: through the console on a terminal (where a progress bar may be drawn
    below it), straight to the file otherwise."""
    if console.is_terminal:
        console.print(Text(text, end=""), soft_wrap=True)
    else:
        console.file.write(text)


def _shifted(text: str, indent: int) -> str:
    """Every line of `text` but the first moved right by `indent` spaces."""
    return text.replace("\n", "\n" + " " * indent)


class DataStream:
    """JSON or YAML of one document, or of several under `documents`, whose `workloads`
    list is written item by item."""

    def __init__(self, console: Console, fmt: Format, several: bool) -> None:
        assert fmt.data
        self.console = console
        self.json = fmt is Format.json
        self.several = several
        self.documents = 0
        self.items = 0
        self.first_line = False  # YAML, several documents: the next line starts an item

    # JSON: `json.dumps(..., indent=2)` of the whole, one piece at a time.
    def _depth(self) -> int:
        return 4 if self.several else 0

    def _pair(self, key: str, value: Any) -> str:
        indent = self._depth() + 2
        dumped = json.dumps(value, indent=2, ensure_ascii=False)
        return " " * indent + json.dumps(key, ensure_ascii=False) + ": " + _shifted(dumped, indent)

    # YAML: `yaml.safe_dump` of the pieces; several documents are items of `documents`.
    def _yaml(self, data: Any) -> None:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        if self.several:
            lines = text.splitlines(keepends=True)
            shifted = []
            for line in lines:
                shifted.append(("- " if self.first_line else "  ") + line)
                self.first_line = False
            text = "".join(shifted)
        put(self.console, text)

    def begin(self, head: dict[str, Any]) -> None:
        """A document starts: its keys before the list."""
        self.items = 0
        if self.json:
            opening = ""
            if self.several:
                opening = '{\n  "documents": [\n' if not self.documents else ",\n"
                opening += " " * self._depth() + "{\n"
            else:
                opening = "{\n"
            pairs = [self._pair(key, value) for key, value in head.items()]
            pairs.append(" " * (self._depth() + 2) + json.dumps(ITEMS) + ": [")
            put(self.console, opening + ",\n".join(pairs))
        else:
            if self.several and not self.documents:
                put(self.console, "documents:\n")
            self.first_line = True
            self._yaml(head)
        self.documents += 1

    def item(self, value: Any) -> None:
        if self.json:
            dumped = json.dumps(value, indent=2, ensure_ascii=False)
            indent = self._depth() + 4
            lead = "\n" if not self.items else ",\n"
            put(self.console, lead + " " * indent + _shifted(dumped, indent))
        else:
            if not self.items:
                self._yaml_line(f"{ITEMS}:\n")
            self._yaml([value])
        self.items += 1

    def _yaml_line(self, text: str) -> None:
        put(self.console, ("  " + text) if self.several else text)

    def end(self, tail: dict[str, Any]) -> None:
        """The document's keys after the list; it ends."""
        if self.json:
            closing = "\n" + " " * (self._depth() + 2) + "]" if self.items else "]"
            pairs = "".join(",\n" + self._pair(key, value) for key, value in tail.items())
            put(self.console, closing + pairs + "\n" + " " * self._depth() + "}")
        else:
            if not self.items:
                self._yaml_line(f"{ITEMS}: []\n")
            self._yaml(tail)

    def close(self) -> None:
        if self.json:
            if self.several:
                put(self.console, "\n  ]\n}\n" if self.documents else '{\n  "documents": []\n}\n')
            else:
                put(self.console, "\n")
        elif self.several and not self.documents:
            put(self.console, "documents: []\n")


class RowStream:
    """Aligned rows written one at a time: every column but the last padded to a width
    known before the first row; the last (free text) wraps under itself on a terminal."""

    def __init__(self, console: Console, columns: Sequence[str], widths: Sequence[int]) -> None:
        assert len(widths) == len(columns) - 1
        self.console = console
        self.widths = [max(w, width(c)) for w, c in zip(widths, columns, strict=False)]
        self.indent = sum(self.widths) + len(GAP) * len(self.widths)
        self.row([Styled(c, "bold") for c in columns], header=True)

    def row(self, cells: Sequence[Cell], header: bool = False) -> None:
        texts = [printable(c.text if isinstance(c, Styled) else c) or "-" for c in cells]
        if not self.console.is_terminal:
            parts = [t + " " * (w - width(t)) for t, w in zip(texts, self.widths, strict=False)]
            self.console.file.write(GAP.join([*parts, texts[-1]]).rstrip(" ") + "\n")
            return
        line = Text(end="\n")
        for cell, text, size in zip(cells, texts, self.widths, strict=False):
            line.append(text, cell.style if isinstance(cell, Styled) else None)
            line.append(" " * (size - width(text)) + GAP)
        last = cells[-1]
        room = self.console.width - self.indent
        lines = wrap(texts[-1], room) if room >= MIN_WRAP and not header else [texts[-1]]
        line.append(
            ("\n" + " " * self.indent).join(lines), last.style if isinstance(last, Styled) else None
        )
        self.console.print(line, soft_wrap=True)


def _distinct_cell(row: dict[str, Any]) -> str:
    spread = row.get("distinct")
    if spread is None:
        return "-"
    values = spread["values"]
    return f"{spread['level']}: {'no limit' if values is None else values}"


class CheckWriter:
    """`placed check` output, document by document and workload by workload: the full
    matrix (a table per workload) or the summary (a row per workload), in any format."""

    def __init__(
        self, console: Console, fmt: Format, several: bool, summary: bool, view: View = View()
    ) -> None:
        self.console = console
        self.fmt = fmt
        self.several = several
        self.summary = summary
        self.view = view
        self.data = DataStream(console, fmt, several) if fmt.data else None
        self.rows: RowStream | None = None
        self.failed = 0
        self.count = 0

    @property
    def closed(self) -> bool:
        """The reader went away: nothing more is written."""
        return self.console.quiet

    def begin(self, name: str, workloads: Sequence[Workload], targets: int) -> None:
        self.failed = self.count = 0
        self.targets = targets
        with guarded():
            if self.data is not None:
                head: dict[str, Any] = {"name": name}
                head["view"] = "summary" if self.summary else "all"
                self.data.begin(head)
                return
            if self.several:
                if self.console.is_terminal:
                    self.console.rule(Text(printable(name), style="bold"))
                else:
                    self.console.file.write(f"== {printable(name)} ==\n")
            if self.summary:
                names = [width(printable(w.name)) for w in workloads]
                columns: list[str] = ["workload", "compatible"]
                widths = [max(names, default=0), 2 * len(str(targets)) + 1]
                if self.view.wide:
                    levels = [
                        len(wanted.level)
                        for w in workloads
                        if (wanted := w.request(Distinct)) is not None
                    ]
                    columns.append("distinct")
                    widths.append(max(levels, default=0) + 2 + max(len(str(targets)), 8))
                columns.append("why not")
                self.rows = RowStream(self.console, columns, widths)

    def row(self, row: dict[str, Any]) -> None:
        self.count += 1
        self.failed += int(row["compatible_targets"]) == 0
        with guarded():
            if self.data is not None:
                self.data.item(row)
            elif self.rows is None:
                check_workload_table(self.console, row, self.view)
            else:
                self._summary_row(row)

    def _summary_row(self, row: dict[str, Any]) -> None:
        assert self.rows is not None
        available, total = row["compatible_targets"], row["checked_targets"]
        _, _, why = str(row["summary"]).partition(": ")
        if self.view.wide and row["filtered"]:
            counts = ", ".join(f"{name}={n}" for name, n in row["filtered"].items())
            why = f"{why}; by filter: {counts}"
        cells: list[Cell] = [
            row["workload"],
            Styled(f"{available}/{total}", "green" if available else "bold red"),
        ]
        if self.view.wide:
            cells.append(_distinct_cell(row))
        cells.append(why or "-")
        self.rows.row(cells)

    def end(self, conflicts: list[dict[str, Any]], warnings: list[dict[str, Any]]) -> None:
        with guarded():
            if self.data is not None:
                self.data.end({"conflicts": conflicts, "warnings": warnings})
                return
            if self.summary:
                checked = f"{_count(self.count, 'workload')} on {_count(self.targets, 'target')}"
                if not self.count:
                    say(self.console, f"no workloads to check on {_count(self.targets, 'target')}")
                elif self.failed:
                    say(
                        self.console,
                        f"{checked}: ",
                        Styled(f"{self.failed} with no compatible target", "red"),
                    )
                else:
                    say(self.console, f"{checked}: every one has a compatible target")
            check_footer(self.console, conflicts, warnings)
            self.rows = None

    def close(self) -> None:
        with guarded():
            if self.data is not None:
                self.data.close()


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"
