"""Bad input through the CLI: exit code 2, a message on stderr naming file:line:column and
the key at fault, and never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from placed.cli.main import EXIT_INVALID, app

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ironic-affinity.yaml"
PLACED = Path(sys.executable).parent / "placed"

VALID = """
inventory:
  - id: conductor1
    kind: conductor
    tags: [rack10]
  - id: conductor2
    kind: conductor
    tags: [rack11]
workloads:
  - name: node1
    mode: mapping
    tags: [rack10]
"""


def write(tmp_path: Path, spec: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(spec).lstrip("\n"), encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Result:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    # CliRunner catches what the program raises; only the exit itself may come out.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def invalid(*args: str | Path) -> str:
    """Run a command that must refuse its input; what it said on stderr."""
    result = invoke(*args)
    assert result.exit_code == EXIT_INVALID, result.output
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


# -- spec files the CLI refuses ------------------------------------------------------------


def test_malformed_yaml(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        inventory:
          - id: conductor1
            tags: [rack10, network1
        workloads: []
        """,
    )
    stderr = invalid("plan", path)
    assert f"{path}:4:10: not valid YAML: expected ',' or ']'" in stderr


def test_bad_indentation(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        inventory:
          - id: conductor1
           kind: conductor
        """,
    )
    stderr = invalid("validate", path)
    assert f"{path}:3:4: not valid YAML: expected <block end>" in stderr


def test_malformed_json(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{\n  "inventory": [\n    {"id": "a" "kind": "rack"}\n  ]\n}\n', "s.json"
    )
    stderr = invalid("check", path)
    assert f"{path}:3:16: not valid YAML: expected ',' or '}}'" in stderr


def test_json_with_a_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, '{"inventory": [{"id": "a"}],\n "workloads": [{"name": 7}]}\n', "s.json")
    stderr = invalid("validate", path)
    assert f"{path}:2:25: workloads[0].name: expected a string, got an integer 7" in stderr


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    stderr = invalid("plan", path)
    assert f"{path}:1:1: the spec is empty; it needs at least an inventory" in stderr


def test_file_holding_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "- id: conductor1\n- id: conductor2\n")
    stderr = invalid("validate", path)
    assert f"{path}:1:1: the spec must be a mapping with an inventory, got a list" in stderr


def test_file_holding_a_scalar(tmp_path: Path) -> None:
    path = write(tmp_path, "# comment\n42\n")
    stderr = invalid("validate", path)
    assert f"{path}:2:1: the spec must be a mapping with an inventory, got an integer 42" in stderr


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nosuch.yaml"
    stderr = invalid("plan", path)
    assert stderr.strip() == f"error: {path}: no such file"


def test_directory(tmp_path: Path) -> None:
    stderr = invalid("validate", tmp_path)
    assert stderr.strip() == f"error: {tmp_path}: is a directory, not a spec file"


def test_units_as_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("mode: mapping", 'units: "3"'))
    stderr = invalid("plan", path)
    assert f"{path}:10:12: workloads[0].units: expected an integer, got a string '3'" in stderr


def test_units_zero(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("mode: mapping", "units: 0"))
    stderr = invalid("plan", path)
    assert f"{path}:10:12: workloads[0].units: must be at least 1, got 0" in stderr


def test_capacity_as_a_string(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", 'capacity: {cpu: "8"}'))
    stderr = invalid("check", path)
    assert f"{path}:7:21: inventory[1].capacity.cpu: expected a number, got a string '8'" in stderr


def test_status_sideways(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", "status: sideways"))
    stderr = invalid("validate", path)
    assert f"{path}:7:13: inventory[1].status: got 'sideways'" in stderr


def test_mode_mapped(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("mode: mapping", "mode: mapped"))
    stderr = invalid("plan", path)
    assert f"{path}:10:11: workloads[0].mode: got 'mapped'; expected one of" in stderr


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", "hard-anti-affinity: [network3]"))
    stderr = invalid("plan", path)
    assert (
        f"{path}:7:5: inventory[1].hard-anti-affinity: unknown key 'hard-anti-affinity'; "
        "did you mean 'hard_anti_affinity'?"
    ) in stderr


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("workloads:", "workload:"))
    stderr = invalid("validate", path)
    assert f"{path}:8:1: workload: unknown key 'workload'; did you mean 'workloads'?" in stderr


def test_duplicate_target_id(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("id: conductor2", "id: conductor1"))
    stderr = invalid("plan", path)
    assert (
        f"{path}:5:9: inventory[1].id: duplicate target id 'conductor1' (first at line 2)"
    ) in stderr


def test_tags_as_a_string_keep_their_brackets(tmp_path: Path) -> None:
    # The message's example, [rack10, network1], must not be eaten as console markup.
    path = write(tmp_path, VALID.replace("tags: [rack11]", "tags: rack10, network1"))
    stderr = invalid("plan", path)
    assert (
        f"{path}:7:11: inventory[1].tags: expected a list, got a string 'rack10, network1' "
        "(write tags as a YAML list, e.g. [rack10, network1])"
    ) in stderr


def test_tag_with_a_comma(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", 'tags: ["rack10, network1"]'))
    stderr = invalid("validate", path)
    assert f"{path}:7:12: inventory[1].tags[0]: tag 'rack10, network1' contains a comma" in stderr


def test_key_that_looks_like_console_markup(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", '"[/bold]": 1'))
    stderr = invalid("validate", path)
    assert f"{path}:7:5: inventory[1].[/bold]: unknown key '[/bold]'" in stderr


def test_capacity_on_a_location_with_children(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        inventory:
          - id: rack1
            capacity: {cpu: 8}
            children: [{id: host1}]
        """,
    )
    stderr = invalid("plan", path)
    assert f"{path}:3:15: inventory[0].capacity: capacity belongs on targets" in stderr


def test_alias_loop(tmp_path: Path) -> None:
    path = write(tmp_path, "inventory: &all\n  - id: a\n    children: *all\n")
    stderr = invalid("plan", path)
    assert f"{path}:3:5: inventory[0].children: this alias refers to a node" in stderr


@pytest.mark.parametrize(
    "command",
    [("plan",), ("check",), ("validate",), ("simulate", "--down", "conductor1")],
)
def test_every_command_refuses_a_bad_spec(tmp_path: Path, command: tuple[str, ...]) -> None:
    path = write(tmp_path, VALID.replace("mode: mapping", "mode: mapped"))
    stderr = invalid(command[0], path, *command[1:])
    assert f"{path}:10:11: workloads[0].mode:" in stderr


def test_all_problems_are_listed(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        VALID.replace("tags: [rack11]", "status: sideways").replace("mode: mapping", "units: '2'"),
    )
    lines = invalid("validate", path).removeprefix("error: ").splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{path}:7:13", f"{path}:10:12"]


# -- several documents ------------------------------------------------------------------------


def test_documents_with_the_same_name(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        name: scenario
        inventory: [{id: c1}]
        ---
        name: scenario
        inventory: [{id: c2}]
        """,
    )
    stderr = invalid("plan", path)
    assert f"{path}:4:7: name: duplicate document name 'scenario' (first at line 1)" in stderr


def test_error_in_the_second_document_reports_the_line_in_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        name: first
        inventory:
          - id: c1
        ---
        name: second
        inventory:
          - id: c1
        workloads:
          - name: n1
            units: "3"
        """,
    )
    stderr = invalid("validate", path)
    assert f"{path}:10:12: workloads[0].units: expected an integer" in stderr


# -- command-line arguments that name what is not there -----------------------------------------


def test_simulate_down_unknown_target(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("simulate", path, "--down", "nosuch")
    assert "error: --down: nosuch: no target or location with that id" in stderr


def test_simulate_down_suggests_a_close_id(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("simulate", path, "--down", "conductr1")
    assert "--down: conductr1: no target or location with that id" in stderr
    assert "did you mean 'conductor1'?" in stderr


def test_simulate_up_unknown_target(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("simulate", path, "--up", "nosuch")
    assert "error: --up: nosuch: no target or location with that id" in stderr


def test_simulate_same_target_down_and_up(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("simulate", path, "--down", "conductor1", "--up", "conductor1")
    assert "error: --up: conductor1 named by both --down and --up" in stderr


def test_simulate_with_nothing_to_do(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("simulate", path)
    assert "nothing to simulate: give at least one --down TARGET or --up TARGET" in stderr


def test_simulate_unknown_target_in_a_file_of_several_documents() -> None:
    stderr = invalid("simulate", EXAMPLE, "--down", "conductr2")
    assert "--down: conductr2: no document has a target or location with that id" in stderr
    assert "did you mean 'conductor2'?" in stderr


def test_simulate_unknown_target_with_nothing_close() -> None:
    stderr = invalid("simulate", EXAMPLE, "--up", "nosuch")
    assert "nosuch: no document has a target or location with that id" in stderr
    assert "did you mean" not in stderr


def test_check_unknown_workload(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("check", path, "--workload", "nosuch")
    assert "--workload: no workload named nosuch in spec" in stderr
    assert "did you mean" not in stderr


def test_check_unknown_workload_suggests_a_close_name(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    stderr = invalid("check", path, "-w", "node")
    assert "no workload named node in spec; did you mean 'node1'?" in stderr


def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path, VALID)
    result = invoke("plan", path, "--format", "xml")
    assert result.exit_code == EXIT_INVALID
    assert "'xml' is not one of" in result.output
    assert "Traceback" not in result.output


# -- validate for programs -------------------------------------------------------------------


def test_validate_json_reports_every_error(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("tags: [rack11]", "tag: [rack11]"))
    result = invoke("validate", path, "--format", "json")
    assert result.exit_code == EXIT_INVALID
    assert "Traceback" not in result.output
    assert json.loads(result.stdout) == {
        "valid": False,
        "errors": [
            {
                "file": str(path),
                "line": 7,
                "column": 5,
                "key": "inventory[1].tag",
                "message": "unknown key 'tag'; did you mean 'tags'?",
            }
        ],
    }
    assert f"{path}:7:5: inventory[1].tag:" in result.stderr


def test_validate_json_on_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nosuch.yaml"
    result = invoke("validate", path, "-f", "json")
    assert result.exit_code == EXIT_INVALID
    assert json.loads(result.stdout) == {
        "valid": False,
        "errors": [
            {
                "file": str(path),
                "line": None,
                "column": None,
                "key": None,
                "message": "no such file",
            }
        ],
    }


def test_validate_json_on_malformed_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "inventory:\n  - id: a\n   kind: host\n")
    result = invoke("validate", path, "-f", "json")
    assert result.exit_code == EXIT_INVALID
    [error] = json.loads(result.stdout)["errors"]
    assert (error["line"], error["column"], error["key"]) == (3, 4, None)
    assert error["message"].startswith("not valid YAML")


def test_validate_yaml_format_on_a_bad_spec(tmp_path: Path) -> None:

    path = write(tmp_path, VALID.replace("mode: mapping", "units: 0"))
    result = invoke("validate", path, "-f", "yaml")
    assert result.exit_code == EXIT_INVALID
    data = yaml.safe_load(result.stdout)
    assert data["valid"] is False
    assert [(e["line"], e["column"], e["key"]) for e in data["errors"]] == [
        (10, 12, "workloads[0].units")
    ]


# -- what works -------------------------------------------------------------------------------


def test_validate_the_example() -> None:
    result = invoke("validate", EXAMPLE)
    assert result.exit_code == 0, result.output
    assert "ok first-form: 3 targets, 3 workloads" in result.stdout
    assert "ok edit2: 3 targets, 3 workloads" in result.stdout
    assert result.stderr == ""


def test_validate_the_example_as_json() -> None:
    result = invoke("validate", EXAMPLE, "--format", "json")
    assert result.exit_code == 0, result.output
    documents = json.loads(result.stdout)["documents"]
    assert [(d["name"], d["valid"]) for d in documents] == [("first-form", True), ("edit2", True)]


def test_schema_is_json_with_its_title() -> None:
    result = invoke("schema")
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["title"] == "placed spec v1"
    assert schema["additionalProperties"] is False
    assert {"inventory", "workloads", "settings"} <= set(schema["properties"])


# -- the installed command, in its own process ---------------------------------------------------


@pytest.mark.skipif(not PLACED.exists(), reason="no placed script beside this Python")
@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ("inventory:\n  - id: a\n    tags: [x\n", ":4:1: not valid YAML"),
        ('inventory:\n  - id: a\n    "[/b]": 1\n', ":3:5: inventory[0].[/b]: unknown key"),
        ("inventory:\n  - &a\n    id: a\n    children: [*a]\n", ":4:15: inventory[0].children[0]:"),
        ("inventory:\n  - !!binary id: a\n", ":2:5: the YAML tag '!!binary' is not supported"),
    ],
)
def test_the_command_exits_2_without_a_traceback(tmp_path: Path, spec: str, where: str) -> None:
    path = write(tmp_path, spec)
    done = subprocess.run(
        [str(PLACED), "plan", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == EXIT_INVALID, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{path}{where}" in done.stderr
    assert done.stdout == ""
