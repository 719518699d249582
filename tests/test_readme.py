"""The README's examples work as shown."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from placed.cli.main import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


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
