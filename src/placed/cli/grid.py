"""Tables as aligned columns: plain text for pipes and files, styled text for terminals.

Every cell is the user's data, never markup: ids, tags, names and reasons are written
as they are (`[/x]` stays `[/x]`), and characters that would break a row over two lines
or steer a terminal (newlines, escapes, direction overrides) are shown as escapes.

A pipe gets one row per line, columns padded to their widest cell and never wrapped, so
grep, cut and awk see whole ids. A terminal gets the same columns with the last one
(the free text: why, reasons) wrapped under itself when the screen is too narrow; the
other columns, which hold ids, are never broken. Widths are measured once per cell and
rows are written as strings (as rich segments on a terminal): a rich Table measures and
wraps every cell several times, which cost seconds on a plan of twenty thousand units.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style

GAP = "  "
# Narrower than this, the last column is left unwrapped (the terminal folds the line)
# rather than squeezed into a ribbon of a few characters.
MIN_WRAP = 24


@dataclass(frozen=True, slots=True)
class Styled:
    """A cell with a style on a terminal (the text is still data, not markup)."""

    text: str
    style: str


Cell = str | Styled


@dataclass
class Grid:
    columns: Sequence[str]
    rows: list[Sequence[Cell]] = field(default_factory=list)
    title: str | None = None


def printable(text: str) -> str:
    """`text`, with every character that is not printable shown as its escape (\\n,
    \\x1b, \\u202e), so one row stays one line and a terminal cannot be steered."""
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


def width(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


class _Cells:
    """The grid's text, made printable, with each fixed column's cell widths."""

    def __init__(self, grid: Grid) -> None:
        self.header = [printable(c) for c in grid.columns]
        self.rows = [
            [printable(c.text if isinstance(c, Styled) else c) or "-" for c in row]
            for row in grid.rows
        ]
        self.last = len(self.header) - 1
        # Per fixed column: each row's cell width, and the widest (header included).
        self.sizes = [[width(row[i]) for row in self.rows] for i in range(self.last)]
        self.widths = [max([width(self.header[i]), *sizes]) for i, sizes in enumerate(self.sizes)]

    def line(self, r: int) -> str:
        """Row `r` (-1: the header) as plain text."""
        row = self.header if r < 0 else self.rows[r]
        parts = []
        for i in range(self.last):
            size = width(row[i]) if r < 0 else self.sizes[i][r]
            parts.append(row[i] + " " * (self.widths[i] - size))
        parts.append(row[self.last])
        return GAP.join(parts).rstrip(" ")


def plain(grid: Grid) -> str:
    """The grid as lines of aligned columns, no styles, no wrapping."""
    cells = _Cells(grid)
    lines = [printable(grid.title)] if grid.title is not None else []
    lines.extend(cells.line(r) for r in range(-1, len(cells.rows)))
    return "\n".join(lines)


def wrap(text: str, size: int) -> list[str]:
    """`text` in lines of at most `size` cells, broken at spaces only: a word longer
    than a line (an id) keeps its own line whole."""
    measure = len if text.isascii() else cell_len
    if measure(text) <= size:
        return [text]
    lines: list[str] = []
    line: list[str] = []
    used = 0
    for word in text.split(" "):
        taken = measure(word)
        if line and used + 1 + taken > size:
            lines.append(" ".join(line))
            line, used = [], 0
        used += taken + (1 if line else 0)
        line.append(word)
    lines.append(" ".join(line))
    return lines


class _Styled:
    """The grid for a terminal, as rich segments (no Text: a Text of twenty thousand
    lines is split, measured and wrapped again, line by line, at print time)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        grid, cells = self.grid, _Cells(self.grid)
        last = cells.last
        indent = sum(cells.widths) + len(GAP) * last
        room = console.width - indent
        newline = Segment.line()
        if grid.title is not None:
            yield Segment(printable(grid.title), _style("bold"))
            yield newline
        yield Segment(cells.line(-1), _style("bold"))
        yield newline
        for r, (source, row) in enumerate(zip(grid.rows, cells.rows, strict=True)):
            plain: list[str] = []
            for i in range(last):
                original = source[i]
                padding = " " * (cells.widths[i] - cells.sizes[i][r]) + GAP
                if isinstance(original, Styled):
                    if plain:
                        yield Segment("".join(plain))
                        plain = []
                    yield Segment(row[i], _style(original.style))
                    plain.append(padding)
                else:
                    plain.append(row[i] + padding)
            if plain:
                yield Segment("".join(plain))
            original = source[last]
            style = _style(original.style) if isinstance(original, Styled) else None
            lines = wrap(row[last], room) if room >= MIN_WRAP else [row[last]]
            yield Segment(("\n" + " " * indent).join(lines), style)
            yield newline


@functools.lru_cache(maxsize=64)
def _style(name: str) -> Style:
    return Style.parse(name)


def show(console: Console, grid: Grid) -> None:
    """Print the grid on `console`: styled on a terminal, plain otherwise."""
    if console.is_terminal:
        console.print(_Styled(grid), soft_wrap=True, end="")
    else:
        write(console, plain(grid) + "\n")


def write(console: Console, text: str) -> None:
    """Text straight to the console's file: no markup, no measuring, no wrapping."""
    console.file.write(text)
