"""The README's examples work as shown."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from placed.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_the_first_plan_spec_plans(tmp_path: Path) -> None:
    block = re.search(r"```yaml\n# spec.yaml\n(.*?)```", README, re.S)
    assert block is not None
    spec = tmp_path / "spec.yaml"
    spec.write_text(block.group(1))
    result = CliRunner().invoke(app, ["plan", str(spec), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert "node3/0" in result.stdout
    result = CliRunner().invoke(app, ["simulate", str(spec), "--down", "conductor1"])
    # node3 carries customer1, which conductor2 refuses: with conductor1 gone it has nowhere.
    assert result.exit_code == 1, result.output
    assert "1 has forbidden tag customer1" in " ".join(result.stdout.split())


def test_the_expr_examples_print_what_the_readme_says() -> None:
    result = CliRunner().invoke(
        app, ["expr", 'cpu >= 2 && purpose == "lab"', "--props", "{cpu: 4, purpose: lab}"]
    )
    assert result.stdout.strip() == "true"
    result = CliRunner().invoke(app, ["expr", "cpu < abc"])
    shown = re.search(r"\$ placed expr 'cpu < abc'\n(.*?)```", README, re.S)
    assert shown is not None
    assert result.stderr.strip() == shown.group(1).strip()


def test_the_tag_list_error_example_is_real(tmp_path: Path) -> None:
    shown = re.search(r"```\n(error: spec\.yaml:\d+:\d+: .*?)```", README, re.S)
    assert shown is not None
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "inventory:\n  - id: dc1\n    children:\n      - id: a\n      - id: b\n"
        "        tags: rack10, network1\n"
    )
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    got = " ".join(result.stderr.split()).replace(str(spec), "spec.yaml")
    assert got == " ".join(shown.group(1).split())


def readme_commands() -> list[tuple[str, int]]:
    """Every `placed ...` line of the README's shell blocks, with the exit code its comment
    documents ("(exit N" in the comment; 0 when it says none)."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        # A block inside a list item is indented as the item is.
        for line in (text.strip() for text in block.splitlines()):
            if not line.startswith("placed "):
                continue
            command, _, comment = line.partition(" #")
            code = re.search(r"\(exit (\d)", comment)
            found.append((command.strip(), int(code.group(1)) if code else 0))
    return found


def test_the_readme_shows_commands_of_every_family() -> None:
    commands = " ".join(command for command, _ in readme_commands())
    for needed in ("juju-bundle.yaml --status", "--overlay", "--maintenance", "spec.yaml"):
        assert needed in commands, needed


@pytest.mark.parametrize(("command", "code"), readme_commands())
def test_every_readme_command_runs_as_written(
    command: str, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From a directory holding the examples and the first plan's spec.yaml, as a reader
    # who follows the README has them.
    block = re.search(r"```yaml\n# spec.yaml\n(.*?)```", README, re.S)
    assert block is not None
    (tmp_path / "spec.yaml").write_text(block.group(1))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, shlex.split(command)[1:])
    output = done.stdout + done.stderr
    assert "Traceback" not in output
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == code, output
