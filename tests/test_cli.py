"""The CLI's output contract (README, "Output contract") and exit codes."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import yaml
from rich.console import Console
from typer.testing import CliRunner

from placed import __version__
from placed.cli.main import app
from placed.cli.progress import DelayedProgress, DelayedStatus

SEVEN = """
name: seven
inventory:
  - id: dc1
    kind: datacenter
    hard_affinity: [datacenter1]
    children:
      - {id: h1}
      - {id: h2}
      - {id: h3}
      - {id: h4}
  - id: dc2
    kind: datacenter
    hard_anti_affinity: [network3]
    children:
      - {id: h5, capacity: {cpu: 4}}
      - {id: h6, capacity: {cpu: 4}}
      - {id: h7, capacity: {cpu: 4}}
workloads:
  - name: web
    units: 2
    tags: [network1]
    resources: {cpu: 3}
  - name: db
    tags: [network3]
"""


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return str(path)


def test_plan_json_has_the_contract_keys_and_summary(tmp_path: Path) -> None:
    code, out = run("plan", write(tmp_path, SEVEN), "--format", "json")
    assert code == 1  # db cannot be placed
    data = json.loads(out)
    assert set(data) == {
        "name",
        "placements",
        "unplaced",
        "new_targets",
        "warnings",
        "dedications_created",
        "events",
    }
    assert [(p["unit"], p["via"]) for p in data["placements"]] == [
        ("web/0", "policy"),
        ("web/1", "policy"),
    ]
    # Each web unit takes 3 of a host's 4 cpu, so the two land on different hosts.
    assert len({p["target"] for p in data["placements"]}) == 2
    assert data["unplaced"] == [
        {
            "workload": "db",
            "unit": "db/0",
            "summary": "0/7 targets available: "
            "4 lack required tag datacenter1, 3 have forbidden tag network3",
            "filtered": {"hard-affinity": 4, "hard-anti-affinity": 3},
        }
    ]


def test_capacity_runs_out_and_says_so(tmp_path: Path) -> None:
    spec = SEVEN.replace("units: 2", "units: 4")
    code, out = run("plan", write(tmp_path, spec), "-f", "json")
    assert code == 1
    unplaced = {u["unit"]: u for u in json.loads(out)["unplaced"]}
    assert unplaced["web/3"]["summary"] == (
        "0/7 targets available: 4 lack required tag datacenter1, 3 have insufficient cpu"
    )


def test_plan_yaml_is_the_same_data(tmp_path: Path) -> None:
    path = write(tmp_path, SEVEN)
    _, as_json = run("plan", path, "-f", "json")
    _, as_yaml = run("plan", path, "-f", "yaml")
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_plan_table_names_targets_and_unplaced(tmp_path: Path) -> None:
    code, out = run("plan", write(tmp_path, SEVEN))
    assert code == 1
    assert "unplaced" in out and "2 placed, 1 unplaced" in out


def test_every_mode_runs_on_every_compatible_target(tmp_path: Path) -> None:
    spec = SEVEN + "  - {name: agent, mode: every, tags: [datacenter1, network3]}\n"
    _, out = run("plan", write(tmp_path, spec), "-f", "json")
    agents = [p for p in json.loads(out)["placements"] if p["workload"] == "agent"]
    assert [(p["unit"], p["target"], p["via"]) for p in agents] == [
        (f"agent/h{i}", f"h{i}", "every") for i in range(1, 5)
    ]


def test_check_lists_every_failing_filter(tmp_path: Path) -> None:
    code, out = run("check", write(tmp_path, SEVEN), "-w", "db", "-f", "json")
    assert code == 1  # db has no compatible target
    (db,) = json.loads(out)["workloads"]
    assert db["compatible_targets"] == 0
    h1 = next(t for t in db["targets"] if t["target"] == "h1")
    assert h1 == {
        "target": "h1",
        "compatible": False,
        "score": None,
        "reasons": [{"filter": "hard-affinity", "message": "lacks required tag datacenter1"}],
        "reason": {"general": "lacks required tag datacenter1"},
    }


def test_check_exit_0_when_every_workload_fits_somewhere(tmp_path: Path) -> None:
    code, _ = run("check", write(tmp_path, SEVEN), "-w", "web")
    assert code == 0


def test_simulate_up_brings_a_down_target_back(tmp_path: Path) -> None:
    spec = """
settings: {default_mode: mapping}
inventory:
  - {id: c1, tags: [rack10]}
  - {id: c2, tags: [rack11], status: down}
workloads:
  - {name: n, units: 20, tags: [rack11]}
"""
    code, out = run("simulate", write(tmp_path, spec), "--up", "c2", "-f", "json")
    assert code == 0
    data = json.loads(out)
    assert data["moved"] == 20 and data["units"] == 20
    assert {(m["from"], m["to"]) for m in data["moves"]} == {("c1", "c2")}
    assert all("c2 is up and ranks first" in m["why"] for m in data["moves"])


def test_validate_reports_counts_and_warnings(tmp_path: Path) -> None:
    spec = SEVEN + "  - {name: typo, tags: [datacentre1]}\n"
    code, out = run("validate", write(tmp_path, spec), "-f", "json")
    assert code == 0
    data = json.loads(out)
    assert (data["valid"], data["targets"], data["workloads"]) == (True, 7, 3)
    assert data["warnings"] == [
        {
            "code": "tag-matches-nothing",
            "message": "tag 'datacentre1' appears on no target; did you mean 'datacenter1'?",
            "workload": "typo",
            "unit": None,
            "target": None,
        }
    ]


def test_version() -> None:
    code, out = run("--version")
    assert (code, out.strip()) == (0, f"placed {__version__}")


def test_help_teaches_with_examples() -> None:
    code, out = run("simulate", "--help")
    assert code == 0
    assert "--down" in out and "Examples:\n    placed simulate" in out


def test_progress_bar_appears_only_after_the_delay() -> None:
    def console() -> Console:
        return Console(file=io.StringIO(), force_terminal=True, width=80)

    quick = DelayedProgress("placing", delay=3600, console=console())
    with quick:
        quick(5, 10)
    assert not quick.shown

    slow = DelayedProgress("placing", delay=0, console=console())
    with slow:
        slow(5, 10)
    assert slow.shown
    assert "5/10" in slow.console.file.getvalue()  # type: ignore[attr-defined]


def test_a_long_load_shows_what_it_reads_a_short_one_nothing() -> None:
    def console() -> Console:
        return Console(file=io.StringIO(), force_terminal=True, width=80)

    quick = DelayedStatus("reading big.yaml", delay=3600, console=console())
    with quick:
        pass
    assert not quick.shown

    slow = DelayedStatus("reading big.yaml", delay=0, console=console())
    with slow:
        deadline = time.monotonic() + 5
        while not slow.shown and time.monotonic() < deadline:
            time.sleep(0.01)  # the timer thread starts the spinner, even mid-call
    assert slow.shown
    assert "reading big.yaml" in slow.console.file.getvalue()  # type: ignore[attr-defined]

    piped = DelayedStatus("reading", delay=0, console=Console(file=io.StringIO()))
    with piped:
        time.sleep(0.05)
    assert not piped.shown  # not on a terminal: nothing to erase later, nothing shown


def test_check_workload_applies_to_each_document_that_has_it() -> None:
    example = str(Path(__file__).parent.parent / "examples" / "ironic-affinity.yaml")
    code, out = run("check", example, "-w", "node2", "-f", "json")
    assert code == 0
    docs = {d["name"]: d["workloads"] for d in json.loads(out)["documents"]}
    assert {name: [w["compatible_targets"] for w in rows] for name, rows in docs.items()} == {
        "first-form": [3],
        "edit2": [1],
    }
