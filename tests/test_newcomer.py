"""The first steps of a new user: `python -m placed`, shell completion, and `placed
explain-spec` reading the spec's JSON Schema as `kubectl explain` reads a resource's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from placed.cli.main import app
from placed.spec.schema import SpecDocument


def invoke(*args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, list(args))
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, done.stdout, done.stderr


def test_python_dash_m_placed_is_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "placed", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.startswith("placed ")


def test_shell_completion_is_offered_and_completes_commands() -> None:
    code, out, _ = invoke("--help")
    assert code == 0 and "--install-completion" in out
    code, script, _ = invoke("--show-completion", "bash")
    assert code == 0 and "_placed_completion" in script
    env = {**os.environ, "_PLACED_COMPLETE": "complete_bash", "COMP_WORDS": "placed sim"}
    env["COMP_CWORD"] = "1"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "placed")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["simulate"]


def test_explain_spec_prints_type_default_and_description_from_the_schema() -> None:
    code, out, _ = invoke("explain-spec", "workloads.distinct")
    assert code == 0
    described = SpecDocument.model_json_schema()["$defs"]["WorkloadSpec"]["properties"]
    first_words = " ".join(described["distinct"]["description"].split()[:6])
    assert "FIELD:       workloads.distinct" in out
    assert "TYPE:        string or null" in out
    assert "DEFAULT:     null" in out
    assert first_words in " ".join(out.split())


def test_explain_spec_lists_the_fields_of_an_object_and_marks_required_ones() -> None:
    code, out, _ = invoke("explain-spec", "workloads")
    assert code == 0
    assert "name  <string>  -required-" in out
    assert "units  <integer>" in out
    code, data, _ = invoke("explain-spec", "inventory[].children.capacity", "--format", "json")
    parsed = json.loads(data)
    assert parsed["field"] == "inventory.children.capacity"
    assert parsed["type"].startswith("mapping of name to number")


def test_explain_spec_of_the_whole_spec_lists_its_sections() -> None:
    code, out, _ = invoke("explain-spec")
    assert code == 0
    for section in ("inventory", "workloads", "settings", "tenancy", "dedications"):
        assert f"\n  {section}  <" in out


def test_an_unknown_field_is_an_error_with_its_column_and_a_suggestion() -> None:
    code, out, err = invoke("explain-spec", "workloads.distnct", "--format", "json")
    assert code == 2
    (error,) = json.loads(out)["errors"]
    assert error["key"] == "FIELD" and error["column"] == 11 and error["file"] is None
    assert "did you mean 'distinct'?" in error["message"]
    assert "Traceback" not in err
    code, _, err = invoke("explain-spec", "workloads.units.more")
    assert code == 2 and "workloads.units has no fields" in err
