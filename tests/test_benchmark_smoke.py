"""The benchmark's quick mode runs end to end and its correctness checks hold.

Timings are never asserted: they depend on the machine, and a slow CI runner is not a bug.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
RUN_PY = BENCHMARKS / "run.py"


def load_benchmark() -> ModuleType:
    # run.py imports its siblings (harness, inventories, scenarios) by top-level name, as
    # `python benchmarks/run.py` finds them in the script's own directory; loaded by path
    # here, that directory has to be put on sys.path by hand.
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("placed_benchmark_run", RUN_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses resolve annotations through sys.modules, so a module that defines one
    # must be there before its body runs.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, str]:
    """(exit status, printed report, written report) of one `--quick` run, shared by the
    tests below because a run takes a few seconds."""
    bench = load_benchmark()
    out = tmp_path_factory.mktemp("bench") / "BENCHMARKS.md"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = bench.main(["--quick", "--write", str(out)])
    return status, printed.getvalue(), out.read_text()


def test_quick_run_succeeds_and_writes_what_it_prints(quick_run: tuple[int, str, str]) -> None:
    status, printed, written = quick_run
    assert status == 0
    assert written == printed


def test_targets_added_are_deltas_of_the_live_world(quick_run: tuple[int, str, str]) -> None:
    """Issue 35: a document that adds a rack of hosts to a world of allocations is a delta
    of the live world (never built again), timed both ways; the general path's world is
    read again by the claim after it."""
    _, report, _ = quick_run
    found = report.split("## Targets added (issue 35)", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in found.splitlines()
        if line.startswith(("| delta", "| general path"))
    ]
    assert [row[0] for row in rows] == ["delta", "general path"], found
    delta, general = rows
    assert delta[-1] == "0" and int(general[-1]) > 0, (delta, general)
    assert all(cell.endswith(" ms") for cell in (*delta[1:-1], *general[1:-1])), found


def test_report_has_every_section(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    for heading in (
        "# placed benchmarks",
        "## Allocation: every unit a different workload",
        "## Fast engine against the reference oracle",
        "## Scan floor",
        "## Mapping",
        "## Constraint evaluation",
        "### Where the fast path's time goes",
        "## Deploy check",
        "### `plan()` for the same spec",
        "## Loading",
        "### `placed validate`: the did-you-mean check",
        "### A plan as a table and as JSON",
        "## The service: claims through the API",
        "## Mixed traffic (issue 35)",
        "## Two replicas on one PostgreSQL (issue 35)",
        "## The live world's stateful tests (issue 35)",
        "## A fleet's target lost and back (issue 35)",
        "## Workloads that read others (issue 35)",
        "## Targets added (issue 35)",
        "## The controller: from a missed heartbeat to every unit moved",
        "## Acceptance",
    ):
        assert heading in report
    assert "make bench" in report
    assert "nproc" in report
    assert "numpy" in report


def test_fast_engine_agrees_with_the_reference(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    assert "| fast and reference choose the same targets | 0 mismatches | PASS |" in report


def test_losing_a_target_moves_only_its_units(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    for mode in ("max_load 1.1", "plain"):
        row = re.search(
            rf"\| mapping \({mode}\): moves exactly the lost target's units \| (.*) \|", report
        )
        assert row is not None, mode
        assert row.group(1).endswith("| PASS")


def test_max_load_holds_the_balance_bound(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    row = re.search(r"\| mapping \(max_load 1.1\): max/mean load <= 1.10 \| (.*) \|", report)
    assert row is not None
    measured, verdict = row.group(1).split(" | ")
    assert verdict == "PASS"
    assert float(measured.split(",")[0]) <= 1.10


def test_constraint_fast_path_agrees_with_the_reference(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    assert (
        "| constraint: fast and reference give the same booleans | 0 mismatches | PASS |" in report
    )


def test_deploy_check_gives_every_incompatible_target_a_reason(
    quick_run: tuple[int, str, str],
) -> None:
    _, report, _ = quick_run
    assert (
        "| deploy check: every incompatible target has a reason | 0 without one | PASS |" in report
    )
    assert (
        "| deploy check, plan and reference agree on the compatible targets "
        "| 0 disagreements | PASS |"
    ) in report


def test_generated_specs_load(quick_run: tuple[int, str, str]) -> None:
    _, report, _ = quick_run
    loading = report.split("## Loading", 1)[1].split("###", 1)[0]
    rows = [line for line in loading.splitlines() if re.match(r"\| [\d,]+ \| (JSON|YAML) \|", line)]
    assert len(rows) == 4, loading  # two sizes, each as JSON and as YAML
    assert not any("failed" in row for row in rows), rows
    assert (
        "| loading: every generated spec loads with all its targets; validate accepts its own "
        "| 0 failed | PASS |"
    ) in report


def test_loading_goals_are_reported_not_enforced(quick_run: tuple[int, str, str]) -> None:
    """Issue 8's speed goals have rows, judged only at full size (a quick run says so), and
    whatever they say the exit status does not change (test_quick_run_succeeds...)."""
    _, report, _ = quick_run
    for goal in (
        "loading: 10,000 targets (JSON) in < 0.5 s",
        "loading: 100,000 targets (JSON) in < 5 s",
        "validate: 5,000 targets with unique tags, 1,000 workloads with unknown tags in < 2 s",
        "a 20,000-unit plan as a table within 2x of JSON",
    ):
        row = re.search(rf"\| {re.escape(goal)} \| (.*) \|", report)
        assert row is not None, goal
        assert row.group(1) == "n/a | not run (quick)", row.group(1)


def test_check_at_fleet_size_is_measured_and_agrees_with_the_full_matrix(
    quick_run: tuple[int, str, str],
) -> None:
    """Issue 15, point 7: the scenario runs `placed check --summary` as a user does; its
    agreement with `--all` and the default switch are correctness (PASS), its speed and
    memory goals are judged only at full size."""
    _, report, _ = quick_run
    assert "## `placed check` at fleet size" in report
    assert "| `placed check SPEC --summary` |" in report
    assert (
        "| summary agrees with `--all`; the default switches above 10,000 pairs "
        "| 0 disagreements, switched: yes | PASS |"
    ) in report
    assert "| not judged (quick) |" in report


def test_service_claims_are_counted_and_stored(quick_run: tuple[int, str, str]) -> None:
    """Issue 16: a real `placed serve` on SQLite (PostgreSQL only at full size) takes the
    inventory and 8 clients' claims; every answer is counted, and the store holds exactly
    the committed claims (the correctness row). The speed goal is judged at full size."""
    _, report, _ = quick_run
    service = report.split("## The service: claims through the API", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in service.splitlines() if line.startswith("| SQLite, ")]
    assert len(rows) == 1, service
    assert "PostgreSQL" not in "".join(rows)
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    header = [
        cell.strip()
        for cell in next(line for line in service.splitlines() if "| committed/s |" in line)
        .strip("|")
        .split("|")
    ]
    row = dict(zip(header, cells, strict=True))
    assert row["database, targets"] == "SQLite, 200"
    assert row["apply the spec"].endswith(" s")
    claims, committed = int(row["claims"].replace(",", "")), int(row["committed"].replace(",", ""))
    # The claims fit many times over: every one must be committed, none refused.
    assert committed > 0 and committed == claims, row
    assert row["refused"] == "0" and row["errors"] == "0", row
    assert float(row["committed/s"].replace(",", "")) > 0
    assert re.fullmatch(r"\d+ \(\d+ retried, \d+ gave up\)", row["conflicts"]), row
    assert row["p50"].endswith(" ms") and row["p99"].endswith(" ms")
    assert "| at least 500 claims/s at 10,000 targets | n/a | not judged (quick) |" in service
    assert (
        "| no 5xx, no transport error; the store holds exactly the committed claims "
        "| 0 errors | PASS |"
    ) in service


def test_service_reevaluation_counts_the_moves_its_rule_makes(
    quick_run: tuple[int, str, str],
) -> None:
    """Issue 17: an every-mode workload on every target of a real `placed serve`, then a
    policy change through `POST /v1/apply` narrowing it to the gold hosts and widening it
    back; the moves are counted and must be what the rule says (the correctness row)."""
    _, report, _ = quick_run
    section = report.split("### Re-evaluation: a policy change on every-mode units", 1)[1]
    section = section.split("\n## ", 1)[0]
    steps: dict[str, list[int | None]] = {}
    for line in section.splitlines():
        match = re.match(r"\| SQLite 200: (.+?) \| ([\d.]+) s \|(.*)\|$", line)
        if match:
            counts = [cell.strip().replace(",", "") for cell in match.group(3).split("|")]
            steps[match.group(1)] = [int(c) if c else None for c in counts]
    assert set(steps) == {
        "the inventory, no workload",
        "place on every target",
        "narrow to tier == gold",
        "widen back to every target",
    }, section
    assert steps["place on every target"] == [200, 0, 0, 200]
    narrowed = steps["narrow to tier == gold"]
    assert None not in narrowed, narrowed
    placed, removed, moved, kept = (count or 0 for count in narrowed)
    assert placed == 0 and moved == 0 and 0 < removed < 200 and removed + kept == 200
    assert steps["widen back to every target"] == [removed, 0, 0, 200]
    assert (
        "| re-evaluation: each change places and removes exactly the units its rule says, "
        "and none stays off gold | 0 errors | PASS |"
    ) in section


def test_the_controller_moves_a_silent_conductors_units(quick_run: tuple[int, str, str]) -> None:
    """Issue 17: a real `placed serve`; one conductor stops heartbeating and each of its
    units is seen moved (the time is judged at full size, not here)."""
    _, report, _ = quick_run
    found = report.split("## The controller:", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in found.splitlines() if line.startswith("| SQLite, ")]
    assert len(rows) == 1, found
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert cells[0] == "SQLite, 10 x 1,000"
    assert int(cells[1]) > 0 and cells[1] == cells[2], cells  # every unit on c1 moved
    assert cells[-1] == "-", cells


def test_a_fleet_s_target_lost_and_back_is_a_delta_that_moves_what_the_general_path_moves(
    quick_run: tuple[int, str, str],
) -> None:
    """Issue 35: in a mapping fleet (hashed, and balanced by max_load) and an edge fleet,
    each change of c1 is a delta of the live world (never built again) and moves as many
    units as the general path; a follower reads the delta from the rows (never built
    again either). It reads the general path's moves of mapping units from the rows too
    (transactions.followable: units moved and targets' states alone), and builds its
    world again after each of the general path's changes in the edge fleet (every-mode
    units removed and made)."""
    _, report, _ = quick_run
    found = report.split("## A fleet's target lost and back", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in found.splitlines()
        if line.startswith(("| mapping", "| edge"))
    ]
    assert [row[1] for row in rows] == ["delta", "general path"] * 3, found
    for (delta, general), followed in zip(
        (rows[0:2], rows[2:4], rows[4:6]), (True, True, False), strict=True
    ):
        assert delta[0] == general[0]
        assert delta[5] == "0", delta  # no rebuild
        assert int(delta[4]) > 0 and delta[4] == general[4], (delta, general)
        # The follower: no rebuild after a delta; after the general path's changes none
        # in a mapping fleet, one after each of 3 downs and 3 ups in the edge fleet.
        assert delta[7] == "0", delta
        assert general[7] == ("0" if followed else "6"), (delta, general)
        assert all(cell.endswith(" ms") for cell in (*delta[2:4], *general[2:4]))


def test_workloads_that_read_others_are_deltas_of_the_live_world(
    quick_run: tuple[int, str, str],
) -> None:
    """Issue 35: a workload with avoid or near claimed, resized and deleted is a delta of
    the live world (never built again), each change timed both ways."""
    _, report, _ = quick_run
    found = report.split("## Workloads that read others", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in found.splitlines()
        if line.startswith(("| delta", "| general path"))
    ]
    assert [row[0] for row in rows] == ["delta", "general path"], found
    delta, general = rows
    assert delta[-1] == "0", delta  # no rebuild
    assert all(cell.endswith(" ms") for cell in (*delta[1:-1], *general[1:-1])), found


KUBERNETES_SHAPES = (
    "basic",
    "node affinity",
    "every unit different, dedication",
    "spread over zones, max skew 1",
    "required anti-affinity per host",
    "required affinity to another workload, zone",
    "mixed",
    "large: constraints, tags, dedication",
)


def kubernetes_rows(report: str) -> dict[str, dict[str, str]]:
    """The Kubernetes table's rows by shape, each a {column: cell} mapping."""
    found = report.split("## Kubernetes shapes (issue 18)", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in found.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == len(header) and cells[0] in KUBERNETES_SHAPES:
            rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def check_kubernetes_rows(rows: dict[str, dict[str, str]]) -> None:
    """Every shape has a row; a measured one agrees with the reference on its sample and
    has numbers, one this build's loader refuses says so and has none."""
    assert set(rows) == set(KUBERNETES_SHAPES), rows
    measured = 0
    for shape, row in rows.items():
        if row["placed"].startswith("not supported by this build"):
            assert row["units/s"] == row["mismatches"] == row["scan floors per unit"] == "-"
            continue
        measured += 1
        assert row["mismatches"] == "0", (shape, row)
        assert float(row["units/s"].replace(",", "")) > 0, (shape, row)
        assert float(row["scan floors per unit"].replace(",", "")) > 0, (shape, row)
        assert row["index build"].endswith(" ms"), (shape, row)
        assert re.fullmatch(r"\d+ in [\d.]+ s", row["reference sample"]), (shape, row)
    # The shapes without the new keys run on every build.
    assert measured >= 4, rows


def test_kubernetes_shapes_are_measured_and_agree_with_the_reference(
    quick_run: tuple[int, str, str],
) -> None:
    """Issue 18: the Kubernetes shapes run inside `make bench`, each checked against the
    reference oracle on a prefix of its units."""
    _, report, _ = quick_run
    check_kubernetes_rows(kubernetes_rows(report))
    assert "scheduler_perf" in report


def run_kubernetes_alone(argv: list[str]) -> tuple[int, str]:
    bench = load_benchmark()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = bench.main(argv)
    return status, printed.getvalue()


TINY = ["--only", "kubernetes", "--quick", "--kubernetes-targets", "60", "--kubernetes-large"]


def test_kubernetes_runs_alone_at_a_tiny_size() -> None:
    status, report = run_kubernetes_alone([*TINY, "150"])
    assert status == 0, report
    assert "## Kubernetes shapes (issue 18)" in report
    assert "## Allocation" not in report
    rows = kubernetes_rows(report)
    check_kubernetes_rows(rows)
    assert rows["basic"]["targets"] == "60"
    assert rows["large: constraints, tags, dedication"]["targets"] == "150"


@pytest.mark.parametrize(
    ("shape", "row"),
    [("large", "large: constraints, tags, dedication"), ("basic", "basic")],
)
def test_one_kubernetes_shape_runs_alone(shape: str, row: str) -> None:
    status, report = run_kubernetes_alone([*TINY, "150", "--kubernetes-only", shape])
    assert status == 0, report
    rows = kubernetes_rows(report)
    assert list(rows) == [row]  # the others neither measured nor listed
    assert rows[row]["mismatches"] == "0"
    assert float(rows[row]["units/s"].replace(",", "")) > 0


def test_kubernetes_only_large_needs_the_large_shape(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        run_kubernetes_alone([*TINY, "0", "--kubernetes-only", "large"])
    assert raised.value.code == 2
    assert "--kubernetes-only large needs the large shape" in capsys.readouterr().err


def test_a_kubernetes_mismatch_fails_the_run_and_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference made to put its first unit elsewhere: every measured shape reports a
    mismatch, in its row and in bold below the table, and the run exits 1."""
    load_benchmark()
    shapes = sys.modules["scenarios.kubernetes"]
    honest = shapes.reference_plan

    def shifted(spec: object) -> list[object]:
        outcomes = list(honest(spec))
        first = outcomes[0]
        outcomes[0] = type(first)(first.workload, first.unit, "nowhere", None, None)
        return outcomes

    monkeypatch.setattr(shapes, "reference_plan", shifted)
    status, report = run_kubernetes_alone([*TINY, "0"])
    assert status == 1
    rows = kubernetes_rows(report)
    assert rows["basic"]["mismatches"] == "**1 MISMATCHES**"
    assert "**MISMATCH in basic: 1 of 20 sampled units; first: reference put deploy0/0 on" in report


def test_only_new_keys_make_a_shape_unsupported() -> None:
    """A load error naming only the keys this build lacks is "not supported"; any other
    load error is a failure, never hidden as unsupported."""
    load_benchmark()
    shapes = sys.modules["scenarios.kubernetes"]
    from placed.spec.errors import Problem, SpecError

    unknown = Problem("unknown key 'spread'; allowed keys: account, ...", "workloads[0].spread")
    other = Problem("units must be at least 1", "workloads[1].units")
    assert shapes._unsupported(SpecError("s", [unknown]), ("spread",))
    assert not shapes._unsupported(SpecError("s", [unknown]), ())
    assert not shapes._unsupported(SpecError("s", [unknown, other]), ("spread",))


def test_a_shape_that_crashes_is_reported_and_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan that raises is a row saying so, not a traceback; the run still prints its
    report and exits 1."""
    load_benchmark()
    shapes = sys.modules["scenarios.kubernetes"]

    def crash(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the engine broke")

    monkeypatch.setattr(shapes, "_time_plans", crash)
    status, report = run_kubernetes_alone([*TINY, "0"])
    assert status == 1
    rows = kubernetes_rows(report)
    assert rows["basic"]["placed"] == "**failed: RuntimeError: the engine broke**"
    assert rows["basic"]["units/s"] == "-"


def test_loading_runs_alone_with_its_goals() -> None:
    """`--only loading`: the loading section and its goal rows, nothing else (how the
    issue-18 load and memory figures are refreshed without the whole benchmark)."""
    status, report = run_kubernetes_alone(["--only", "loading", "--quick"])
    assert status == 0, report
    assert "## Loading" in report
    assert "## Loading goals" in report
    assert "## Kubernetes shapes" not in report
    assert "| loading: 100,000 targets" in report


SERVICE_PY = BENCHMARKS / "service.py"
CHECKOUT_SRC = BENCHMARKS.parent / "src"


def test_claims_on_two_trees_alternate_and_are_summed_up() -> None:
    """`service.py --against DIR`: the checkout against its own tree, one round, so each
    side has its window and the medians their ratio."""
    done = subprocess.run(
        [
            *(sys.executable, str(SERVICE_PY), "--against", str(CHECKOUT_SRC)),
            *("--database", "sqlite", "--targets", "40", "--window", "0.5", "--rounds", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if re.match(r"\| \d \| (old|new) ", line)]
    # Round 1 old then new, round 2 new then old: the machine's drift weighs on both.
    assert [row.split("|")[1:3] for row in rows] == [
        [" 1 ", f" old ({CHECKOUT_SRC.resolve()}) "],
        [" 1 ", f" new ({CHECKOUT_SRC.resolve()}) "],
        [" 2 ", f" new ({CHECKOUT_SRC.resolve()}) "],
        [" 2 ", f" old ({CHECKOUT_SRC.resolve()}) "],
    ]
    assert all(row.rstrip().endswith("| 0 |") for row in rows), rows  # no errors
    assert re.search(r"Median committed/s: old [\d.]+, new [\d.]+ \(new/old [\d.]+\)", done.stdout)


def test_claims_against_a_tree_without_placed_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SERVICE_PY), "--against", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert f"{tmp_path}: no placed/__init__.py" in done.stderr


def test_the_mix_runs_with_no_error_and_judges_its_goals(
    quick_run: tuple[int, str, str],
) -> None:
    _, report, _ = quick_run
    found = report.split("## Mixed traffic (issue 35)", 1)[1].split("\n## ", 1)[0]
    [row] = [line for line in found.splitlines() if line.startswith("| sqlite | 200 |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert float(cells[3]) > 0 and float(cells[4]) > 0, cells  # claims/s, mix operations/s
    assert cells[-1] == "0", cells  # no 5xx, no transport error, the store as answered
    judged = [
        line
        for line in found.splitlines()
        if line.startswith("| sqlite | ")
        and (line.rstrip().endswith("| PASS |") or line.rstrip().endswith("| FAIL |"))
    ]
    # The mix's ratio and p99, the first claim after any change, and each change alone.
    changes = (
        *("delete", "spec update", "target down", "target up", "drain of a target holding"),
        *("dedication of a host", "release of a dedication", "setting change", "offering made"),
        *("apply of a new workload's document", "apply of a count", "evacuation of a host"),
        "migration of a VM",
    )
    assert len(judged) == 3 + len(changes), judged
    for change in changes:
        assert sum(f"| {change}" in line for line in judged) == 1, (change, judged)
    # Each change alone is timed once a round: its median judged, its slowest beside it.
    timed = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in found.splitlines()
        if line.startswith("| sqlite | ") and line.rstrip().endswith(" |") and line.count("|") == 6
    ]
    assert timed and all(row[-1] == "2" for row in timed), timed
    assert sum(row[1].startswith("evacuation of a host") for row in timed) == 1, timed
    assert sum(row[1] == "the claim after an evacuation" for row in timed) == 1, timed
    assert all(float(row[2][:-3]) <= float(row[3][:-3]) for row in timed), timed
