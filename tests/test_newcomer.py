"""The first steps of a new user: `python -m placed`, shell completion, and `placed
explain-spec` reading the spec's JSON Schema as `kubectl explain` reads a resource's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from placed.cli.main import app
from placed.spec.schema import SpecDocument

ROOT = Path(__file__).resolve().parent.parent


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


def test_convert_never_writes_over_what_it_reads(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.yaml"
    original = (ROOT / "examples" / "juju-bundle.yaml").read_text()
    bundle.write_text(original)
    code, out, err = invoke("convert", str(bundle), "--output-file", str(bundle), "-o", "json")
    assert code == 2 and bundle.read_text() == original
    (error,) = json.loads(out)["errors"]
    assert error["key"] == "--output-file" and error["file"] is None
    hzn = tmp_path / "hzn"
    hzn.mkdir()
    for source in (ROOT / "examples" / "openhorizon").iterdir():
        (hzn / source.name).write_text(source.read_text())
    code, _, err = invoke("convert", str(hzn), "--output-file", str(hzn / "spec.yaml"))
    assert code == 2 and "inside" in err and not (hzn / "spec.yaml").exists()
    code, _, _ = invoke("convert", str(bundle), "--output-file", str(tmp_path / "native.yaml"))
    assert code == 0 and (tmp_path / "native.yaml").read_text().startswith("# The native")


def test_readers_meet_behaviour_in_words_not_design_document_numbers() -> None:
    # The design documents live outside the repository: "seed 004" means nothing to a
    # reader of the README, the examples, help or the schema's descriptions.
    texts = {"README.md": (ROOT / "README.md").read_text()}
    for example in sorted((ROOT / "examples").rglob("*")):
        if example.is_file():
            texts[str(example.relative_to(ROOT))] = example.read_text()
    texts["schema"] = json.dumps(SpecDocument.model_json_schema())
    for path in (("plan",), ("simulate",), ("dedications",), ("check",), ("validate",)):
        texts[f"{path[0]} --help"] = invoke(*path, "--help")[1]
    pattern = re.compile(r"\bseed(?:'s| 0\d\d)|requirement \d", re.I)
    found = {name: pattern.findall(text) for name, text in texts.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
