"""The hzn_files section of tests/data/openhorizon_cases.yaml: sets of Open Horizon
documents through the CLI, each case holding placed to the anax code it names (issue 15,
point 4: the files read as hzn and deploycheck read them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from placed.cli.main import EXIT_INVALID, app

CASES = yaml.safe_load(
    (Path(__file__).parent / "data" / "openhorizon_cases.yaml").read_text(encoding="utf-8")
)["hzn_files"]
KEYS = {
    "name",
    "source",
    "files",
    "args",
    "exit",
    "error",
    "reasons",
    "first",
    "conflicts",
    "warnings",
    "not_warnings",
}


def test_cases_are_well_formed() -> None:
    assert CASES
    for case in CASES:
        assert set(case) <= KEYS, (case["name"], set(case) - KEYS)
        assert {"name", "source", "files", "args", "exit"} <= set(case), case["name"]
        # Every case says which anax code it follows.
        assert ("/" in case["source"] and ".go" in case["source"]) or "seed" in case["source"]
    assert len({case["name"] for case in CASES}) == len(CASES)


def _run(case: dict[str, Any], directory: Path) -> tuple[int, str, str]:
    for name, document in case["files"].items():
        (directory / name).write_text(json.dumps(document, indent=2))
    args = [*case["args"], str(directory)]
    if case["exit"] != EXIT_INVALID and args[0] == "check":
        args += ["-f", "json"]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("case", [pytest.param(c, id=c["name"]) for c in CASES])
def test_hzn_files(case: dict[str, Any], tmp_path: Path) -> None:
    code, out, err = _run(case, tmp_path)
    assert code == case["exit"], (case["source"], out, err)
    assert "Traceback" not in out + err
    if "error" in case:
        file, key, message = case["error"]
        # file:line:column: key: message, as every hzn file error reads.
        flat = " ".join(err.split())
        head = f"{tmp_path / file}:"
        assert head in flat, flat
        after = flat[flat.index(head) + len(head) :]
        line, column, rest = after.split(":", 2)
        assert line.isdigit() and column.isdigit(), flat
        assert rest.strip().startswith(f"{key}: "), rest
        assert message in rest, rest
        return
    if case["args"][0] != "check":
        return
    report = json.loads(out)
    rows = {row["workload"]: row for row in report["workloads"]}
    for workload, targets in case.get("reasons", {}).items():
        found = {t["target"]: t["reason"] for t in rows[workload]["targets"]}
        for target, expected in targets.items():
            assert set(found[target]) == set(expected), (target, found[target])
            for key, part in expected.items():
                assert part in found[target][key], (target, key, found[target][key])
    for workload, targets in case.get("first", {}).items():
        found = {t["target"]: t["reason"] for t in rows[workload]["targets"]}
        for target, key in targets.items():
            assert next(iter(found[target])) == key, found[target]
    if "conflicts" in case:
        assert [c["code"] for c in report["conflicts"]] == case["conflicts"]
    warnings = {w["code"] for w in report["warnings"]}
    assert set(case.get("warnings", [])) <= warnings, warnings
    assert not set(case.get("not_warnings", [])) & warnings


def test_explain_names_an_every_mode_workloads_units_after_their_targets() -> None:
    """An every-mode workload's units are WORKLOAD/TARGET: a numbered name is refused
    with the names it has, never with a pattern that explain refuses too."""
    project = Path(__file__).resolve().parent.parent / "examples" / "openhorizon-project"
    refused = CliRunner().invoke(app, ["explain", str(project), "hello-deployment/0"])
    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert "runs in every mode" in message and "hello-deployment/gw1" in message
    assert "/*" not in message
    shown = CliRunner().invoke(app, ["explain", str(project), "hello-deployment/gw1"])
    assert shown.exit_code in (0, 1), shown.stderr
    assert shown.stdout.startswith("hello-deployment/gw1 -> gw1")
