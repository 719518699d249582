"""Input conveniences (issue 8, item 6) and a simulation that says everything (item 9),
through the CLI.

`-` reads a spec from standard input (`--props @-` too); several spec files are planned
side by side; with `--format json` every command reports errors as data, in the shape
`validate` uses; `validate --strict` fails on warnings; `plan --unplaced` and `plan -w`
narrow the plan's output. `simulate` lists units unplaced before the change, counts the
units before it, says when a target was already down (or up), and calls an every-mode
unit whose target is gone removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from placed.cli.main import EXIT_INVALID, app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RACKS = EXAMPLES / "distinct-racks.yaml"  # web/3 stays unplaced
PLACED = (sys.executable, "-c", "from placed.cli.main import run; run()")

SMALL = """
name: {name}
inventory:
  - {{id: {prefix}1, capacity: {{cpu: 4}}}}
  - {{id: {prefix}2, capacity: {{cpu: 4}}}}
workloads:
  - {{name: web, units: 2, resources: {{cpu: 3}}}}
"""


def run(*args: str | Path, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def small(name: str, prefix: str = "h") -> str:
    return SMALL.format(name=name, prefix=prefix)


# -- standard input ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "check", "validate"])
def test_a_dash_reads_the_spec_from_standard_input(command: str) -> None:
    text = RACKS.read_text(encoding="utf-8")
    code, out, err = run(command, "-", "-f", "json", input=text)
    _, from_file, _ = run(command, RACKS, "-f", "json")
    assert code in (0, 1), err
    assert json.loads(out) == json.loads(from_file)


def test_simulate_and_explain_read_standard_input_too() -> None:
    text = RACKS.read_text(encoding="utf-8")
    code, out, _ = run("simulate", "-", "--down", "r1", "-f", "json", input=text)
    assert code == 1 and json.loads(out)["down"] == ["h1", "h2"]
    code, out, _ = run("explain", "-", "web/3", "-f", "json", input=text)
    assert code == 1 and json.loads(out)["placed"] is False


def test_an_error_on_standard_input_names_it_with_the_position() -> None:
    code, _, err = run("validate", "-", input="inventory:\n  - id: a\n    tags: rack1, rack2\n")
    assert code == EXIT_INVALID
    assert "<stdin>:3:11: inventory[0].tags: expected a list" in err


def test_standard_input_in_a_real_pipe_and_its_bad_bytes(tmp_path: Path) -> None:
    done = subprocess.run(
        [*PLACED, "plan", "-", "-f", "json"],
        input=RACKS.read_bytes(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and json.loads(done.stdout)["name"] == "distinct-racks"
    done = subprocess.run(
        [*PLACED, "validate", "-"],
        input=b"inventory:\n  - id: caf\xe9\n",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == EXIT_INVALID
    assert b"<stdin>:2:12:" in done.stderr and b"Traceback" not in done.stderr


def test_standard_input_is_read_once() -> None:
    code, _, err = run("plan", "-", "-", input=small("a"))
    assert code == EXIT_INVALID and "standard input (-) can be read only once" in err


def test_props_from_standard_input() -> None:
    code, out, _ = run("expr", "cpu > 2", "--props", "@-", input="{cpu: 4}\n")
    assert (code, out.strip()) == (0, "true")
    code, _, err = run("expr", "v == 1", "--props", "@-", input="[{name: v, type: int,\n")
    assert code == EXIT_INVALID and "<stdin>:2:1: not valid JSON or YAML" in err


def test_a_props_file_error_points_at_the_property(tmp_path: Path) -> None:
    props = write(tmp_path, "props.yaml", "cpu: 4\nversion: {type: version}\n")
    code, _, err = run("expr", "cpu > 2", "--props", f"@{props}")
    assert code == EXIT_INVALID
    assert f"{props}:2:10: property 'version'" in err


# -- several spec files --------------------------------------------------------------------


def test_several_spec_files_are_planned_side_by_side(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", small("first", "a"))
    second = write(tmp_path, "b.yaml", small("second", "b"))
    code, out, _ = run("plan", first, second, "-f", "json")
    assert code == 0
    documents = json.loads(out)["documents"]
    assert [(d["name"], {p["target"] for p in d["placements"]}) for d in documents] == [
        ("first", {"a1", "a2"}),
        ("second", {"b1", "b2"}),
    ]
    # The same as one file holding both documents.
    both = write(tmp_path, "both.yaml", small("first", "a") + "---\n" + small("second", "b"))
    assert json.loads(run("plan", both, "-f", "json")[1]) == json.loads(out)
    # A file and standard input, and every command that reads specs.
    code, out, _ = run("check", first, "-", "-f", "json", input=small("second", "b"))
    assert code == 0 and len(json.loads(out)["documents"]) == 2
    code, out, _ = run("simulate", first, second, "--down", "a1", "-f", "json")
    assert code == 1 and json.loads(out)["name"] == "first"  # only first has a1
    code, out, _ = run("explain", first, second, "web/1", "-f", "json")
    assert code == 0 and len(json.loads(out)["documents"]) == 2
    code, out, _ = run("validate", first, second)
    assert code == 0 and "ok first:" in out and "ok second:" in out


def test_documents_read_together_need_distinct_names(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", small("scenario"))
    second = write(tmp_path, "b.yaml", "# the same name again\n" + small("scenario"))
    code, _, err = run("plan", first, second)
    assert code == EXIT_INVALID
    assert f"{second}:3:7: name: duplicate document name 'scenario' (first in {first})" in err
    # Without a name, a document is named after its file, so files in different
    # directories with the same name clash too, and say so.
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    one = write(tmp_path, "x/spec.yaml", small("one").replace("name: one\n", ""))
    two = write(tmp_path, "y/spec.yaml", small("two").replace("name: two\n", ""))
    code, _, err = run("validate", one, two)
    assert code == EXIT_INVALID and "duplicate document name 'spec'" in err


# -- errors as data ------------------------------------------------------------------------


BAD = "inventory:\n  - id: a\n    status: sideways\n"


@pytest.mark.parametrize(
    "command",
    [
        ("plan",),
        ("check",),
        ("simulate", "--down", "a"),
        ("explain", "web/0"),
        ("validate",),
    ],
)
@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_every_command_reports_errors_as_data(
    tmp_path: Path, command: tuple[str, ...], fmt: str
) -> None:
    path = write(tmp_path, "bad.yaml", BAD)
    code, out, err = run(command[0], path, *command[1:], "--format", fmt)
    assert code == EXIT_INVALID
    data = json.loads(out) if fmt == "json" else yaml.safe_load(out)
    assert data == {
        "valid": False,
        "errors": [
            {
                "file": str(path),
                "line": 3,
                "column": 13,
                "key": "inventory[0].status",
                "message": data["errors"][0]["message"],
            }
        ],
    }
    assert "sideways" in data["errors"][0]["message"]
    assert f"{path}:3:13: inventory[0].status" in err  # and for people, on stderr


@pytest.mark.parametrize(
    ("args", "key", "message"),
    [
        (("simulate", RACKS, "--down", "r9"), "--down", "r9: no target or location"),
        (("simulate", RACKS), None, "nothing to simulate"),
        (("check", RACKS, "-w", "webb"), "--workload", "no workload named webb"),
        (("plan", RACKS, "-w", "webb"), "--workload", "did you mean 'web'?"),
        (("explain", RACKS, "web/9"), "UNIT", "no unit named web/9"),
        (("plan", "nosuch.yaml"), None, "no such file"),
    ],
)
def test_errors_about_arguments_are_data_too(
    args: tuple[Any, ...], key: str | None, message: str
) -> None:
    code, out, _ = run(*args, "-f", "json")
    assert code == EXIT_INVALID
    [error] = json.loads(out)["errors"]
    assert set(error) == {"file", "line", "column", "key", "message"}
    assert error["key"] == key and message in error["message"]
    if key is not None:  # an argument's error names the argument, not a file
        assert error["file"] is None, error


def test_expr_reports_its_errors_as_data() -> None:
    code, out, _ = run("expr", "cpu < abc", "-f", "json")
    assert code == EXIT_INVALID
    [error] = json.loads(out)["errors"]
    assert (error["key"], error["column"]) == ("EXPRESSION", 7)
    code, out, _ = run("expr", "cpu > 1", "-p", "{cpu: [1", "-f", "json")
    assert code == EXIT_INVALID
    [error] = json.loads(out)["errors"]
    assert (error["file"], error["line"], error["column"]) == ("--props", 1, 9)


def test_table_errors_stay_off_stdout(tmp_path: Path) -> None:
    code, out, err = run("plan", write(tmp_path, "bad.yaml", BAD))
    assert code == EXIT_INVALID and out == "" and err.startswith("error: ")


# -- validate --strict ---------------------------------------------------------------------


def test_validate_strict_fails_on_warnings(tmp_path: Path) -> None:
    clean = write(tmp_path, "clean.yaml", small("clean"))
    # A workload tag close to one a target has: valid, with a warning.
    warned = write(
        tmp_path,
        "warned.yaml",
        small("warned")
        .replace("{id: h1,", "{id: h1, tags: [rack],")
        .replace("resources:", "tags: [rackk], resources:"),
    )
    assert run("validate", clean, "--strict")[0] == 0
    code, out, _ = run("validate", warned)
    assert code == 0 and "tag-matches-nothing" in out
    code, out, _ = run("validate", warned, "--strict")
    assert code == 1 and "tag-matches-nothing" in out
    code, out, _ = run("validate", warned, "--strict", "-f", "json")
    assert code == 1 and json.loads(out)["valid"] is True  # valid, but warned
    assert run("validate", write(tmp_path, "bad.yaml", BAD), "--strict")[0] == EXIT_INVALID


# -- plan --unplaced and -w ----------------------------------------------------------------


def test_plan_unplaced_shows_only_what_did_not_place() -> None:
    code, out, _ = run("plan", RACKS, "--unplaced")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["unit", "target", "score", "why"]
    assert [line.split()[:2] for line in lines[1:-1]] == [["web/3", "unplaced"]]
    assert lines[-1] == "8 placed (not shown), 1 unplaced"
    code, out, _ = run("plan", RACKS, "--unplaced", "-f", "json")
    data = json.loads(out)
    assert code == 1 and data["placements"] == []
    assert [u["unit"] for u in data["unplaced"]] == ["web/3"]


def test_plan_unplaced_when_everything_placed() -> None:
    code, out, _ = run("plan", RACKS, "--unplaced", "-w", "db")
    assert code == 0 and out == "2 placed (not shown), nothing unplaced\n"


def test_plan_workload_narrows_the_plan_and_its_exit_code() -> None:
    code, out, _ = run("plan", RACKS, "-w", "cache", "-f", "json")
    assert code == 0  # web/3 is unplaced, but only cache is asked about
    data = json.loads(out)
    assert {p["workload"] for p in data["placements"]} == {"cache"}
    # Planned with every workload: the same targets as in the full plan.
    full = json.loads(run("plan", RACKS, "-f", "json")[1])
    assert data["placements"] == [p for p in full["placements"] if p["workload"] == "cache"]
    code, out, _ = run("plan", RACKS, "-w", "web", "-w", "db")
    assert code == 1 and "web/3" in out and "cache/" not in out


def test_plan_workload_applies_to_each_document_that_has_it() -> None:
    code, out, _ = run("plan", EXAMPLES / "ironic-affinity.yaml", "-w", "node3", "-f", "json")
    assert code == 0
    documents = json.loads(out)["documents"]
    assert [[p["unit"] for p in d["placements"]] for d in documents] == [["node3/0"]] * 2


# -- simulate says everything --------------------------------------------------------------

FLEET = """
name: fleet
inventory:
  - id: r1
    kind: rack
    children:
      - {id: h1, capacity: {cpu: 4}}
      - {id: h2, capacity: {cpu: 4}}
  - {id: h3, capacity: {cpu: 4}, status: down}
  - {id: edge, capacity: {gpu: 1}}
workloads:
  - {name: web, units: 2, resources: {cpu: 3}}
  - {name: huge, resources: {cpu: 64}}
  - {name: agent, mode: every, resources: {cpu: 1}}     # on h1 and h2
  - {name: probe, mode: every, resources: {gpu: 1}}     # on edge only
"""


def test_simulate_lists_units_unplaced_before_the_change(tmp_path: Path) -> None:
    path = write(tmp_path, "fleet.yaml", FLEET)
    code, out, _ = run("simulate", path, "--up", "h3", "-f", "json")
    data = json.loads(out)
    assert code == 1  # huge fits nowhere, before or after
    assert [u["unit"] for u in data["unplaced_before"]] == ["huge/0"]
    assert [u["unit"] for u in data["unplaced"]] == ["huge/0"]
    code, out, _ = run("simulate", path, "--up", "h3")
    assert code == 1
    row = next(line for line in out.splitlines() if line.startswith("huge/0"))
    assert row.split()[:3] == ["huge/0", "unplaced", "unplaced"]
    assert "already unplaced before the change: 0/4 targets available" in row
    assert "1 unplaced after the change (1 already before the change)" in out


def test_simulate_counts_units_before_the_change(tmp_path: Path) -> None:
    path = write(tmp_path, "fleet.yaml", FLEET)
    _, out, _ = run("simulate", path, "--down", "r1", "-f", "json")
    data = json.loads(out)
    # Before: web/0, web/1, huge/0, agent/h1, agent/h2, probe/edge. After, agent's units
    # are gone and agent/* (no target left) stands for the workload.
    assert data["units_before"] == 6
    assert data["units"] == 5
    _, table, _ = run("simulate", path, "--down", "r1")
    assert f"h1 down, h2 down: {data['moved']} of 6 units move" in table


def test_simulate_says_a_target_was_already_down_or_up(tmp_path: Path) -> None:
    path = write(tmp_path, "fleet.yaml", FLEET)
    code, out, _ = run("simulate", path, "--down", "h3", "-f", "json")
    data = json.loads(out)
    assert (code, data["already_down"], data["moves"]) == (1, ["h3"], [])
    _, table, _ = run("simulate", path, "--down", "h3")
    assert "h3 down: no unit moves (6 units)" in table
    assert "h3 was already down" in table
    code, out, _ = run("simulate", path, "--up", "h1", "--up", "edge", "-f", "json")
    assert json.loads(out)["already_up"] == ["h1", "edge"]
    _, table, _ = run("simulate", path, "--up", "h1", "--up", "edge")
    assert "h1, edge were already up" in table
    # A target that really changes is not listed.
    _, out, _ = run("simulate", path, "--down", "h1", "-f", "json")
    assert json.loads(out)["already_down"] == []


def test_simulate_shows_every_mode_units_that_lose_their_target_as_removed(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "fleet.yaml", FLEET)
    code, out, _ = run("simulate", path, "--down", "edge", "-f", "json")
    data = json.loads(out)
    [move] = data["moves"]
    assert (move["unit"], move["from"], move["to"], move["removed"]) == (
        "probe/edge",
        "edge",
        None,
        True,
    )
    assert data["removed"] == 1
    # Every existing key keeps its meaning; one is added.
    assert set(move) == {"workload", "unit", "from", "to", "why", "removed"}
    _, table, _ = run("simulate", path, "--down", "edge")
    rows = {line.split()[0]: line.split()[:3] for line in table.splitlines()}
    assert rows["probe/edge"] == ["probe/edge", "edge", "removed"]
    # probe now runs nowhere: that is what is unplaced, and what exit code 1 says.
    assert code == 1
    assert rows["probe/*"] == ["probe/*", "-", "unplaced"]
    assert "edge down: 1 of 6 units move (1 removed" in table


def test_simulate_removes_an_every_unit_and_moves_the_others(tmp_path: Path) -> None:
    path = write(tmp_path, "fleet.yaml", FLEET)
    _, out, _ = run("simulate", path, "--down", "h1", "-f", "json")
    moves = {m["unit"]: m for m in json.loads(out)["moves"]}
    assert moves["agent/h1"]["removed"] is True  # agent still runs on h2
    web = [m for unit, m in moves.items() if unit.startswith("web/")]
    assert web and all(m["removed"] is False for m in web)
    assert "agent/*" not in out


# -- help ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "example"),
    [
        ("plan", "placed plan - "),
        ("plan", "--unplaced"),
        ("validate", "--strict"),
        ("expr", "--props @-"),
        ("simulate", "Examples: placed simulate"),
    ],
)
def test_help_teaches_the_new_options_by_example(command: str, example: str) -> None:
    code, out, _ = run(command, "--help")
    assert code == 0
    assert example in " ".join(out.split()), out
