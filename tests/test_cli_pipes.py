"""Output that pipes (issue 8, items 4 and 5) and user text that is data, never markup.

When stdout is not a terminal, tables are plain aligned columns, one row per line, never
wrapped inside an id; `-o wide` shows every column; a reader that closes the pipe early
ends the output quietly without changing the exit code; JSON keeps non-ASCII characters.
Everything a user wrote (ids, tags, names, reasons, warnings, document names) is printed
literally, on a pipe and on a terminal.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from placed.cli.grid import Grid, Styled, plain, printable, show
from placed.cli.main import app
from placed.cli.render import (
    Table,
    View,
    check_table,
    explain_table,
    plan_table,
    simulate_table,
    validate_table,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PLACED = (sys.executable, "-c", "from placed.cli.main import run; run()")

# Ids and names far wider than any terminal, so a table that wraps them would break them.
HOST = "host-{}.rack-{}.datacenter-with-a-very-long-name.example.internal"
LONG = textwrap.dedent(
    """
    name: long-ids
    inventory:
      - id: rack-a-with-a-long-name-that-goes-on-and-on-and-on
        kind: rack
        tags: [a]
        children:
    {hosts_a}
      - id: rack-b-with-a-long-name-that-goes-on-and-on-and-on
        kind: rack
        hard_anti_affinity: [forbidden-tag-that-is-rather-long-as-well]
        children:
    {hosts_b}
    workloads:
      - name: a-workload-whose-name-is-much-longer-than-a-terminal-is-wide-really-it-is
        units: 6
        resources: {{cpu: 4}}
      - name: another-workload-with-a-forbidden-tag-and-a-name-that-never-ends-at-all
        units: 2
        tags: [a, forbidden-tag-that-is-rather-long-as-well]
        resources: {{cpu: 16}}
    """
)


def long_spec(tmp_path: Path) -> Path:
    def hosts(rack: str) -> str:
        return "\n".join(
            f"      - {{id: {HOST.format(i, rack)}, capacity: {{cpu: 8}}}}" for i in range(3)
        )

    path = tmp_path / "long.yaml"
    path.write_text(LONG.format(hosts_a=hosts("a"), hosts_b=hosts("b")), encoding="utf-8")
    return path


def run(*args: str | Path, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def line_of(lines: list[str], first: str) -> str:
    """The one line whose first column is `first`."""
    found = [line for line in lines if line.split("  ")[0].strip() == first]
    assert len(found) == 1, (first, lines)
    return found[0]


# -- plain columns on a pipe ---------------------------------------------------------------


def test_piped_plan_keeps_every_id_whole_on_its_row(tmp_path: Path) -> None:
    path = long_spec(tmp_path)
    code, out, _ = run("plan", path)
    assert code == 1  # the forbidden workload places nowhere
    _, as_json, _ = run("plan", path, "-f", "json")
    data = json.loads(as_json)
    lines = out.splitlines()
    # A header, one row per unit, the count: nothing folded over two lines.
    assert len(lines) == 1 + len(data["placements"]) + len(data["unplaced"]) + 1
    for placement in data["placements"]:
        row = line_of(lines, placement["unit"])
        assert row.split()[:2] == [placement["unit"], placement["target"]]
        assert row.endswith(placement["reason"])
    for unplaced in data["unplaced"]:
        row = line_of(lines, unplaced["unit"])
        assert row.split()[:2] == [unplaced["unit"], "unplaced"]
        assert row.endswith(unplaced["summary"])


def test_piped_check_keeps_every_id_whole_on_its_row(tmp_path: Path) -> None:
    path = long_spec(tmp_path)
    code, out, _ = run("check", path)
    assert code == 1
    _, as_json, _ = run("check", path, "-f", "json")
    lines = out.splitlines()
    for workload in json.loads(as_json)["workloads"]:
        # The workload's title names it whole, then the header, then one row per target.
        title = lines.index(f"{workload['workload']}: {workload['summary']}")
        rows = lines[title + 2 : title + 2 + len(workload["targets"])]
        for row, verdict in zip(rows, workload["targets"], strict=True):
            target, compatible = row.split()[:2]
            assert (target, compatible) == (
                verdict["target"],
                "yes" if verdict["compatible"] else "no",
            )
            reasons = "; ".join(f"{r['filter']}: {r['message']}" for r in verdict["reasons"])
            assert row.endswith(reasons or "-")


def test_plain_columns_line_up(tmp_path: Path) -> None:
    _, out, _ = run("plan", long_spec(tmp_path))
    header, *rows, _count = out.splitlines()
    # Every column starts where its header starts, in every row (cut -c, awk).
    starts = [header.index(name) for name in ("unit", "target", "score", "why")]
    for row in rows:
        for start in starts[1:]:
            assert row[start - 2 : start] == "  " and row[start] != " ", (row, start)
    assert not any(line != line.rstrip() for line in out.splitlines())


def test_wide_shows_every_column_of_the_contract() -> None:
    spec = EXAMPLES / "balanced-conductors.yaml"
    code, out, _ = run("plan", spec, "-o", "wide")
    assert code == 0
    header = out.splitlines()[0].split()
    assert header == [
        "workload",
        "unit",
        "target",
        "namespace",
        "container",
        "via",
        "score",
        "balance",
        "why",
    ]
    # A max_load unit shows its cap and its choice.
    assert any("choice=1,cap=" in line for line in out.splitlines())
    # --wide and --format wide say the same.
    assert run("plan", spec, "--wide")[1] == out
    assert run("plan", spec, "--format", "wide")[1] == out


def test_wide_check_and_simulate_name_the_workload_on_every_row() -> None:
    spec = EXAMPLES / "ironic-affinity.yaml"
    _, out, _ = run("check", spec, "-o", "wide", "-w", "node3")
    rows = [line for line in out.splitlines() if line.startswith("node3 ")]
    assert len(rows) == 6  # three conductors in each of the two documents
    assert "workload  target      namespace  compatible  score  reasons" in out
    _, out, _ = run("simulate", spec, "--down", "conductor1", "--wide")
    assert "workload  unit     from        to" in out


def test_json_keeps_non_ascii_characters(tmp_path: Path) -> None:
    path = tmp_path / "unicode.yaml"
    path.write_text(
        "name: café\ninventory:\n  - {id: hôte-東京, tags: [zürich]}\n"
        "workloads:\n  - {name: naïve, tags: [zürich]}\n",
        encoding="utf-8",
    )
    code, out, _ = run("plan", path, "-f", "json")
    assert code == 0
    assert '"target": "hôte-東京"' in out and '"name": "café"' in out
    assert "\\u" not in out
    _, table, _ = run("plan", path)
    assert "naïve/0  hôte-東京" in table


# -- a reader that goes away ---------------------------------------------------------------


def big_spec(tmp_path: Path, impossible: bool) -> Path:
    """A plan whose output is far larger than a pipe's buffer."""
    hosts = "\n".join(f"  - {{id: host-{i:03d}, capacity: {{cpu: 1000}}}}" for i in range(50))
    workloads = "\n".join(
        f"  - {{name: service-{w:03d}, units: 100, resources: {{cpu: 1}}}}" for w in range(40)
    )
    extra = "\n  - {name: too-big, resources: {cpu: 5000}}" if impossible else ""
    path = tmp_path / "big.yaml"
    path.write_text(f"inventory:\n{hosts}\nworkloads:\n{workloads}{extra}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("impossible", "args", "code"),
    [
        (True, (), 1),
        (False, (), 0),
        (True, ("-f", "json"), 1),
        (False, ("-o", "wide"), 0),
    ],
)
def test_a_closed_pipe_ends_quietly_with_the_same_exit_code(
    tmp_path: Path, impossible: bool, args: tuple[str, ...], code: int
) -> None:
    command = [
        *PLACED,
        "plan",
        str(big_spec(tmp_path, impossible)),
        *args,
    ]
    # As `placed plan big.yaml | head -1`: read one line, then close the pipe.
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        stderr = process.stderr.read().decode()
        returncode = process.wait(timeout=60)
    assert first.strip()
    assert stderr == "", stderr  # no traceback, no "Broken pipe", no "Exception ignored"
    assert returncode == code


def test_the_whole_output_still_comes_when_the_reader_reads_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [*PLACED, "plan", str(big_spec(tmp_path, True))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 1 + 4001 + 1


# -- user text is data ---------------------------------------------------------------------

MARKUP = """
name: "[/green]"
inventory:
  - id: "h[red]2"
    tags: ["[/x]", "[bold]", "[/yy]"]
    soft_anti_affinity: ["[i]x"]
  - id: "h[b]3"
    hard_anti_affinity: ["[/x]"]
workloads:
  - name: "[red]web"
    units: 2
    tags: ["[/x]", "[i]x"]
  - name: "[dim]w"
    mode: every
    tags: ["[/y]"]
---
name: "[bold]two"
inventory:
  - {id: "h[red]2", tags: ["[/zz]"]}
workloads:
  - {name: "[dim]w", tags: ["[/z]"]}
"""

SHARED = ["[/green]", "[bold]two", "h[red]2", "h[b]3", "[/x]"]


def markup_spec(tmp_path: Path) -> Path:
    path = tmp_path / "markup.yaml"
    path.write_text(MARKUP, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "literals"),
    [
        (("plan",), [*SHARED, "[i]x", "[red]web/0", "[dim]w/h[red]2", "'[/y]'", "'[/z]'"]),
        (("plan", "-o", "wide"), [*SHARED, "[red]web/1", "[dim]w "]),
        (("check",), [*SHARED, "[dim]w: ", "[red]web: "]),
        (("validate",), ["[/green]", "[bold]two", "'[/y]'", "'[/yy]'", "'[/z]'"]),
        (("simulate", "--down", "h[red]2"), ["[/green]", "[bold]two", "h[red]2", "[red]web/0"]),
        (("explain", "[red]web/0"), ["[red]web/0", "h[red]2", "h[b]3", "[/x]"]),
    ],
)
def test_markup_like_text_is_printed_literally(
    tmp_path: Path, args: tuple[str, ...], literals: list[str]
) -> None:
    path = markup_spec(tmp_path)
    code, out, err = run(args[0], path, *args[1:])
    assert code in (0, 1), err
    for literal in literals:
        assert literal in out, (literal, out)


@pytest.mark.parametrize(
    ("command", "table", "extra", "literals"),
    [
        ("plan", plan_table, (), ["[/green]", "[bold]two", "h[red]2", "[red]web/0", "'[/y]'"]),
        ("check", check_table, (), ["[/green]", "h[b]3", "[red]web: ", "[/x]"]),
        ("validate", validate_table, (), ["[/green]", "[bold]two", "'[/z]'", "'[/zz]'"]),
        ("simulate", simulate_table, ("--down", "h[red]2"), ["[/green]", "h[red]2 down"]),
        ("explain", explain_table, ("[red]web/0",), ["[red]web/0 -> ", "h[b]3", "[/x]"]),
    ],
)
def test_markup_like_text_is_literal_on_a_terminal_too(
    tmp_path: Path, command: str, table: Table, extra: tuple[str, ...], literals: list[str]
) -> None:
    _, out, _ = run(command, markup_spec(tmp_path), *extra, "-f", "json")
    data = json.loads(out)
    documents = [(d["name"], d) for d in data.get("documents", [data])]
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system="standard")
    table(console, documents, View())
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in shown  # styled: this is the terminal's path
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    for literal in literals:
        assert literal in text, (literal, text)


def test_error_messages_quote_markup_literally(tmp_path: Path) -> None:
    path = markup_spec(tmp_path)
    code, _, err = run("simulate", path, "--down", "[/nosuch]")
    assert code == 2 and "[/nosuch]: no document has a target or location with that id" in err
    code, _, err = run("check", path, "-w", "[/green]w")
    assert code == 2 and "no workload named [/green]w in any document" in err
    code, _, err = run("explain", path, "[i]nope/0")
    assert code == 2 and "no unit named [i]nope/0" in err


def test_a_terminal_wraps_only_the_last_column(tmp_path: Path) -> None:
    _, out, _ = run("plan", long_spec(tmp_path), "-f", "json")
    data = json.loads(out)
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    plan_table(console, [(data["name"], data)], View())
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    for placement in data["placements"]:
        row = line_of(lines, placement["unit"])
        assert row.split()[:2] == [placement["unit"], placement["target"]]
    # Reasons are wider than what is left of 200 columns: they wrap under their column.
    why = lines[0].index("why")
    continued = [line for line in lines[1:] if line.startswith(" " * why) and line.strip()]
    assert continued
    assert all(not line[:why].strip() for line in continued)


# -- the grid itself -------------------------------------------------------------------------


def test_control_characters_are_shown_as_escapes() -> None:
    assert printable("a\nb\tc\x1b[2Jd\u202ee") == "a\\nb\\tc\\x1b[2Jd\\u202ee"
    assert printable("café 東京 [/x]") == "café 東京 [/x]"
    grid = Grid(("id", "why"), [("x\ny", Styled("a\x07b", "red"))])
    assert plain(grid).splitlines() == ["id    why", "x\\ny  a\\x07b"]


def test_wide_characters_are_aligned_by_their_width() -> None:
    grid = Grid(("id", "why"), [("東京", "1"), ("ab", "2")])
    assert plain(grid).splitlines() == ["id    why", "東京  1", "ab    2"]


def test_show_writes_plain_text_when_not_a_terminal() -> None:
    console = Console(file=io.StringIO(), width=20)
    show(console, Grid(("a", "b"), [("x" * 50, "[/x] y")]))
    assert console.file.getvalue() == "a" + " " * 51 + "b\n" + "x" * 50 + "  [/x] y\n"  # type: ignore[attr-defined]
