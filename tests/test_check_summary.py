"""`placed check` at fleet size (issue 15, point 7): `--summary` (one row per workload, the
compatible count and kube-style counted reasons), the default above 10,000 workload-target
pairs with a note on stderr, `--all` for the full matrix, both streamed workload by
workload in every format, exit code 1 when a workload has no compatible target in either
mode, and the summary's counts agreeing with the full matrix on random specs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import placed.cli.main as cli
from placed.cli.main import CHECK_PAIRS_SHOWN, app
from placed.engine.check import Checked

PLACED = (sys.executable, "-c", "from placed.cli.main import run; run()")

# h1, h2 fit web; h3 is down; h4 has no purpose and forbids `secret`; h5 is prod; h6 is a
# lab host with too little cpu.
SMALL = """
name: small
inventory:
  - id: z1
    kind: zone
    children:
      - {id: h1, capacity: {cpu: 8}, properties: {purpose: lab}}
      - {id: h2, capacity: {cpu: 8}, properties: {purpose: lab}}
      - {id: h3, capacity: {cpu: 8}, properties: {purpose: lab}, status: down}
      - {id: h4, capacity: {cpu: 8}, hard_anti_affinity: [secret]}
      - {id: h5, capacity: {cpu: 8}, properties: {purpose: prod}}
      - {id: h6, capacity: {cpu: 1}, properties: {purpose: lab}}
workloads:
  - {name: web, resources: {cpu: 4}, constraints: "purpose == lab"}
  - {name: vault, tags: [secret]}
  - {name: spread, distinct: zone, units: 3, tags: [secrett]}
"""
NOWHERE = """
  - {name: nowhere, constraints: "purpose == moon"}
"""


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def fleet(workloads: int, targets: int, impossible: str | None = None) -> dict[str, Any]:
    """`targets` hosts, half of them lab; `workloads` workloads asking for lab hosts, the
    one named `impossible` for a purpose no host has."""
    hosts = [
        {
            "id": f"h{i:04d}",
            "capacity": {"cpu": 4},
            "properties": {"purpose": ["lab", "prod"][i % 2]},
        }
        for i in range(targets)
    ]
    rows = [
        {
            "name": f"w{i:04d}",
            "resources": {"cpu": 1 + i % 4},
            "constraints": "purpose == " + ("moon" if f"w{i:04d}" == impossible else "lab"),
        }
        for i in range(workloads)
    ]
    return {"name": "fleet", "inventory": hosts, "workloads": rows}


def write_fleet(
    tmp_path: Path, workloads: int, targets: int, impossible: str | None = None
) -> Path:
    path = tmp_path / f"fleet-{workloads}x{targets}.json"
    path.write_text(json.dumps(fleet(workloads, targets, impossible)), encoding="utf-8")
    return path


def line_of(out: str, first: str) -> str:
    found = [line for line in out.splitlines() if line.split("  ")[0].strip() == first]
    assert len(found) == 1, (first, out)
    return found[0]


def first_reasons(row: dict[str, Any]) -> dict[str, int]:
    """How many of a full-matrix row's incompatible targets each filter is listed first for."""
    return dict(Counter(t["reasons"][0]["filter"] for t in row["targets"] if not t["compatible"]))


# -- the summary ---------------------------------------------------------------------------


def test_summary_table_gives_each_workload_its_count_and_counted_reasons(tmp_path: Path) -> None:
    code, out, err = run("check", write(tmp_path, SMALL), "--summary")
    assert code == 0, err
    assert err == ""  # asked for: no note
    lines = out.splitlines()
    assert lines[0].split() == ["workload", "compatible", "why", "not"]
    web = line_of(out, "web")
    # Each rejected target charged once, to the first filter that rejects it (h3 is down
    # before its constraint is asked), the largest count first, ties as kube-scheduler and
    # plan order them (by phrase).
    assert web.split()[1] == "2/6"
    assert web.endswith(
        "2 fail the workload's constraints, 1 is down, 1 has insufficient resources"
    ), web
    assert line_of(out, "vault").split()[1] == "4/6"
    assert line_of(out, "vault").endswith("1 is down, 1 has a forbidden tag")
    assert line_of(out, "spread").split()[1] == "5/6"
    # The workload column is as wide as the widest name, known before the first row.
    assert len({line.index("/6") for line in lines[1:4]}) == 1
    assert "3 workloads on 6 targets: every one has a compatible target" in out
    # The spec-level conflicts and warnings are still there, after the rows.
    assert "conflict [distinct-too-few-values] spread: spread asks for 3 units" in out
    assert "warning [tag-matches-nothing] spread:" in out


def test_summary_json_has_the_documented_shape_with_conflicts_and_warnings(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, SMALL + NOWHERE)
    code, out, _ = run("check", path, "--summary", "--format", "json")
    assert code == 1  # nowhere has no compatible target
    data = json.loads(out)
    assert out == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert list(data) == ["name", "view", "workloads", "conflicts", "warnings"]
    assert data["name"] == "small" and data["view"] == "summary"
    rows = {row["workload"]: row for row in data["workloads"]}
    assert list(rows) == ["web", "vault", "spread", "nowhere"]
    web = rows["web"]
    assert set(web) == {"workload", "compatible_targets", "checked_targets", "summary", "filtered"}
    assert web["compatible_targets"] == 2 and web["checked_targets"] == 6
    assert web["filtered"] == {"constraint": 2, "capacity": 1, "status": 1}
    assert web["summary"] == (
        "2/6 targets available: 2 fail the workload's constraints, 1 is down, 1 has "
        "insufficient resources"
    )
    assert rows["spread"]["distinct"] == {"level": "zone", "values": 1}
    assert rows["nowhere"]["compatible_targets"] == 0
    assert rows["nowhere"]["filtered"] == {"constraint": 5, "status": 1}
    assert [c["code"] for c in data["conflicts"]] == ["distinct-too-few-values"]
    assert any(w["code"] == "tag-matches-nothing" for w in data["warnings"])
    # The same spec-level findings as the full matrix gives.
    _, full, _ = run("check", path, "--all", "--format", "json")
    everything = json.loads(full)
    assert data["conflicts"] == everything["conflicts"]
    assert data["warnings"] == everything["warnings"]
    # YAML carries the same data.
    _, as_yaml, _ = run("check", path, "--summary", "--format", "yaml")
    assert yaml.safe_load(as_yaml) == data


def test_several_documents_stream_as_one_json_document(tmp_path: Path) -> None:
    two = SMALL + "---\n" + SMALL.replace("name: small", "name: other")
    path = write(tmp_path, two)
    for mode in ("--summary", "--all"):
        code, out, _ = run("check", path, mode, "--format", "json")
        assert code == 0
        data = json.loads(out)
        # Written piece by piece, laid out as one json.dumps(indent=2), as other commands.
        assert out == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        assert [d["name"] for d in data["documents"]] == ["small", "other"]
        assert all(len(d["workloads"]) == 3 for d in data["documents"])
        _, as_yaml, _ = run("check", path, mode, "--format", "yaml")
        assert yaml.safe_load(as_yaml) == data
    code, out, _ = run("check", path, "--summary")
    assert out.count("workload  compatible") == 2 and "== other ==" in out


def test_wide_summary_shows_the_spread_and_the_filters(tmp_path: Path) -> None:
    code, out, _ = run("check", write(tmp_path, SMALL), "--summary", "-o", "wide")
    assert code == 0
    assert out.splitlines()[0].split() == ["workload", "compatible", "distinct", "why", "not"]
    assert "zone: 1" in line_of(out, "spread")
    assert line_of(out, "web").endswith("by filter: constraint=2, capacity=1, status=1")


def test_a_self_contradicting_policy_is_counted_as_the_full_matrix_reports_it() -> None:
    """On a namespace-scoped node, check lists first a `general` reason for a policy whose
    namespace contradicts its own constraint; the summary counts it so."""
    example = Path(__file__).resolve().parent.parent / "examples" / "edge-namespaces.yaml"
    _, full, _ = run("check", example, "--all", "-f", "json", "-w", "namespaced-4-conflict")
    code, brief, _ = run("check", example, "--summary", "-f", "json", "-w", "namespaced-4-conflict")
    assert code == 1
    (row,) = json.loads(full)["workloads"]
    (counted,) = json.loads(brief)["workloads"]
    assert counted["filtered"] == first_reasons(row)
    assert counted["filtered"]["general"] == 4  # ns-1 to ns-4, the namespace-scoped nodes
    assert "are namespace-scoped, where the policy contradicts itself" in counted["summary"]


# -- which view, and the switch ------------------------------------------------------------


def test_above_the_threshold_the_summary_is_the_default_and_stderr_says_so(
    tmp_path: Path,
) -> None:
    # 101 x 100 = 10,100 pairs: just above.
    path = write_fleet(tmp_path, 101, 100)
    assert CHECK_PAIRS_SHOWN < 101 * 100
    code, out, err = run("check", path)
    assert code == 0
    assert "101 workloads x 100 targets: showing --summary; --all for every pair" in err
    lines = out.splitlines()
    assert lines[0].startswith("workload ")
    assert len(lines) == 1 + 101 + 1  # header, a row per workload, the count
    code, out, err = run("check", path, "--format", "json")
    assert json.loads(out)["view"] == "summary" and "showing --summary" in err
    # Asked for, the summary needs no note.
    code, out, err = run("check", path, "--summary")
    assert err == ""


def test_at_the_threshold_the_full_matrix_is_the_default(tmp_path: Path) -> None:
    path = write_fleet(tmp_path, 100, 100)  # 10,000 pairs: not above
    code, out, err = run("check", path)
    assert code == 0 and err == ""
    assert "w0000: 50/100 targets compatible" in out
    assert len(out.splitlines()) == 100 * (2 + 100)  # a title, a header, a row per target


def test_all_restores_the_full_matrix_above_the_threshold(tmp_path: Path) -> None:
    path = write_fleet(tmp_path, 101, 100)
    code, out, err = run("check", path, "--all")
    assert code == 0 and err == ""
    assert len(out.splitlines()) == 101 * (2 + 100)
    # Every target under every workload: h0001 is prod, refused by each.
    refusals = [line.split()[1] for line in out.splitlines() if line.startswith("h0001 ")]
    assert refusals == ["no"] * 101
    code, out, err = run("check", path, "--all", "--format", "json")
    data = json.loads(out)
    assert data["view"] == "all"  # every pair, whatever the size
    assert [len(row["targets"]) for row in data["workloads"]] == [100] * 101


def test_summary_and_all_together_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, SMALL)
    code, _, err = run("check", path, "--summary", "--all")
    assert code == 2 and "--summary and --all" in err
    code, out, _ = run("check", path, "--summary", "--all", "--format", "json")
    assert code == 2 and json.loads(out)["valid"] is False


@pytest.mark.parametrize("mode", ["--summary", "--all", None])
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_exit_code_1_when_some_workload_has_no_compatible_target(
    tmp_path: Path, mode: str | None, fmt: str
) -> None:
    options = [*([mode] if mode else []), "--format", fmt]
    assert run("check", write(tmp_path, SMALL), *options)[0] == 0
    assert run("check", write(tmp_path, SMALL + NOWHERE), *options)[0] == 1
    # At fleet size too, where the default is the summary.
    assert run("check", write_fleet(tmp_path, 120, 100), *options)[0] == 0
    assert run("check", write_fleet(tmp_path, 120, 100, impossible="w0119"), *options)[0] == 1


# -- streaming -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--summary", "--all"])
@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_each_workload_is_printed_before_the_next_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, fmt: str
) -> None:
    """What stdout holds each time the engine hands over the next workload: every
    workload before it, already printed."""
    printed: list[str] = []
    name = "summary_rows" if mode == "--summary" else "check_rows"
    real = getattr(cli, name)

    def watched(*args: Any) -> Iterator[Checked]:
        for checked in real(*args):
            sys.stdout.flush()
            printed.append(cast(io.BytesIO, sys.stdout.buffer).getvalue().decode())
            yield checked

    monkeypatch.setattr(cli, name, watched)
    assert run("check", write_fleet(tmp_path, 5, 10), mode, "--format", fmt)[0] == 0
    assert len(printed) == 5
    for number, before in enumerate(printed):
        for earlier in range(5):
            assert (f"w{earlier:04d}" in before) == (earlier < number), (number, before)


def test_a_closed_pipe_ends_the_check_quietly_with_the_exit_code_of_the_whole(
    tmp_path: Path,
) -> None:
    # Far more than a pipe holds; only the last workload has no compatible target.
    path = write_fleet(tmp_path, 200, 100, impossible="w0199")
    for options in (["--all"], ["--all", "--format", "json"]):
        with subprocess.Popen(
            [*PLACED, "check", str(path), *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdout is not None and process.stderr is not None
            first = process.stdout.readline()
            process.stdout.close()
            stderr = process.stderr.read().decode()
            returncode = process.wait(timeout=120)
        assert first.strip()
        assert stderr == "", stderr
        assert returncode == 1, options


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_terminal_leaves_stdout_alone(tmp_path: Path) -> None:
    """stderr a terminal, stdout a file: the bar is drawn on stderr, and the file holds
    every row and nothing of the bar (the bar must not carry stdout's rows to stderr
    while it runs, nor draw itself into the file)."""
    # --all takes well over the bar's first second here (some 3 s of checking).
    workloads = 200
    path = write_fleet(tmp_path, workloads, 1000)
    master, slave = os.openpty()
    target = tmp_path / "out.txt"
    with target.open("wb") as sink:
        process = subprocess.Popen(
            [*PLACED, "check", str(path), "--all"], stdout=sink, stderr=slave, stdin=slave
        )
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(timeout=300) == 0
    os.close(master)
    written = target.read_bytes()
    assert len(written.splitlines()) == workloads * (2 + 1000)  # every row, in the file
    assert b"\x1b" not in written and b"checking" not in written
    assert written.startswith(b"w0000: 500/1000 targets compatible\n")
    assert b"checking" in shown  # the bar, on the terminal
    assert b"w0000" not in shown  # and no row of the output


# -- the summary agrees with the full matrix -----------------------------------------------

TAGS = ["a", "b", "c"]
CONSTRAINTS = [
    "purpose == lab",
    "purpose != prod",
    "openhorizon.kubernetesNamespace == ns2",
    "purpose == lab || placed.zone == z1",
]


@st.composite
def hosts(draw: st.DrawFn, name: str) -> dict[str, Any]:
    host: dict[str, Any] = {"id": name, "kind": "host"}
    host["capacity"] = {"cpu": draw(st.integers(0, 4))}
    for key in ("tags", "hard_affinity", "hard_anti_affinity"):
        chosen = draw(st.lists(st.sampled_from(TAGS), unique=True, max_size=2))
        if chosen:
            host[key] = chosen
    purpose = draw(st.sampled_from([None, "lab", "prod"]))
    if purpose:
        host["properties"] = {"purpose": purpose}
    if draw(st.booleans()) and draw(st.booleans()):
        host["status"] = "down"
    scope = draw(st.sampled_from(["device", "device", "cluster", "namespace"]))
    if scope != "device":
        host["scope"] = scope
        if scope == "namespace":
            host["namespace"] = draw(st.sampled_from(["ns1", "ns2"]))
    return host


@st.composite
def workloads(draw: st.DrawFn, name: str) -> dict[str, Any]:
    row: dict[str, Any] = {"name": name}
    tags = draw(st.lists(st.sampled_from(TAGS), unique=True, max_size=2))
    if tags:
        row["tags"] = tags
    if draw(st.booleans()):
        row["constraints"] = draw(st.sampled_from(CONSTRAINTS))
    if draw(st.booleans()):
        row["cluster_namespace"] = draw(st.sampled_from(["ns1", "ns2"]))
    if draw(st.integers(0, 3)) == 0:
        # A policy that contradicts itself: check gives one reason on namespaced nodes.
        row["cluster_namespace"] = "ns1"
        row["constraints"] = "openhorizon.kubernetesNamespace == ns2"
    tenant = draw(st.sampled_from([None, "A1", "B1"]))
    if tenant:
        row["account"] = tenant
        row["offering"] = draw(st.sampled_from(["dedicated", "shared"]))
    elif draw(st.booleans()):
        row["mode"] = "every"
    else:
        row["resources"] = {"cpu": draw(st.integers(0, 3))}
        if draw(st.booleans()):
            row["distinct"] = "zone"
            row["units"] = draw(st.integers(1, 3))
    return row


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    zones = []
    count = 0
    for z in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 4))
        children = [draw(hosts(f"h{count + i}")) for i in range(size)]
        count += size
        zones.append({"id": f"z{z}", "kind": "zone", "children": children})
    names = [f"h{i}" for i in range(count)]
    dedicated = draw(st.lists(st.sampled_from(names), unique=True, max_size=2))
    return {
        "name": "random",
        "tenancy": {"domains": {"D1": {"accounts": ["A1"]}, "D2": {"accounts": ["B1"]}}},
        "offerings": [
            {"name": "dedicated", "cpu": 1, "dedicated": True},
            {"name": "shared", "cpu": 1},
        ],
        "dedications": [
            {"resource": h, "domain": draw(st.sampled_from(["D1", "D2"]))} for h in dedicated
        ],
        "inventory": zones,
        "workloads": [draw(workloads(f"w{i}")) for i in range(draw(st.integers(1, 4)))],
    }


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=specs())
def test_summary_counts_agree_with_the_full_matrix(
    tmp_path: Path, document: dict[str, Any]
) -> None:
    path = tmp_path / "random.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    full_code, full, _ = run("check", path, "--all", "--format", "json")
    brief_code, brief, _ = run("check", path, "--summary", "--format", "json")
    assert full_code == brief_code and full_code in (0, 1), (full, brief)
    everything, summary = json.loads(full), json.loads(brief)
    assert len(everything["workloads"]) == len(summary["workloads"])
    for row, counted in zip(everything["workloads"], summary["workloads"], strict=True):
        assert counted["workload"] == row["workload"]
        assert counted["compatible_targets"] == row["compatible_targets"]
        assert counted["checked_targets"] == len(row["targets"])
        assert counted["filtered"] == first_reasons(row), (row, counted)
        assert sum(counted["filtered"].values()) == len(row["targets"]) - row["compatible_targets"]
        assert counted.get("distinct") == row.get("distinct")
    assert summary["conflicts"] == everything["conflicts"]
    assert summary["warnings"] == everything["warnings"]
