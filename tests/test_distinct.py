"""`distinct: LEVEL`: no two units of a workload under the same host, rack or zone, from a
spec file through plan, explain, check and simulate, and the fast path against the
reference on random inventories."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from placed.cli.main import app
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.engine.reference import reference_plan
from placed.model import Spec
from placed.policy.distinct import Distinct, ancestor_at
from placed.spec import SpecError, load_spec, load_spec_text

from .strategies import specs

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "distinct-racks.yaml"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def level_of(spec: Spec, target_id: str, level: str) -> str | None:
    (target,) = [t for t in spec.inventory.targets if t.id == target_id]
    return ancestor_at(target, level)


@pytest.fixture(scope="module")
def example() -> Spec:
    return load_spec(EXAMPLE)


def test_units_land_on_distinct_zones_racks_and_hosts(example: Spec) -> None:
    result = Planner(example).plan()
    for workload, level in (("db", "zone"), ("web", "rack"), ("cache", "host")):
        values = [
            level_of(example, p.target, level) for p in result.placements if p.workload == workload
        ]
        assert len(values) == len(set(values)), (workload, values)
    placed = Counter(p.workload for p in result.placements)
    assert placed == {"db": 2, "web": 3, "cache": 3}


def test_the_unit_past_the_last_rack_is_unplaced_and_counted(example: Spec) -> None:
    (unplaced,) = Planner(example).plan().unplaced
    assert unplaced.unit == "web/3"
    assert unplaced.summary == (
        "0/6 targets available: 6 are in a rack that already holds a unit of web"
    )
    assert unplaced.filtered == {"distinct": 6}


def test_explain_names_the_unit_that_holds_each_rack(example: Spec) -> None:
    code, out, _ = run("explain", str(EXAMPLE), "web/3", "-f", "json")
    assert code == 1
    data = json.loads(out)
    assert data["placed"] is False
    holder = {
        level_of(example, p.target, "rack"): p.unit
        for p in Planner(example).plan().placements
        if p.workload == "web"
    }
    assert len(data["targets"]) == 6
    for verdict in data["targets"]:
        rack = level_of(example, verdict["target"], "rack")
        assert verdict["compatible"] is False
        assert verdict["reasons"] == [
            {
                "filter": "distinct",
                "message": "is in a rack that already holds a unit of web "
                f"({'rack'} {rack} already holds {holder[rack]})",
            }
        ]


def test_explain_of_a_host_level_unit_says_the_host_itself_holds_it(example: Spec) -> None:
    placements = {p.unit: p for p in Planner(example).plan().placements}
    code, out, _ = run("explain", str(EXAMPLE), "cache/1", "-f", "json")
    assert code == 0
    data = json.loads(out)
    assert data["placed"] is True and data["target"] == placements["cache/1"].target
    first = placements["cache/0"].target
    (taken,) = [v for v in data["targets"] if v["target"] == first]
    assert taken["reasons"] == [
        {
            "filter": "distinct",
            "message": f"already holds a unit of cache (host {first} already holds cache/0)",
        }
    ]
    # Only the target cache/0 holds is refused; the other five were open to cache/1.
    assert sum(v["compatible"] for v in data["targets"]) == 5


def test_explain_table_and_unknown_unit() -> None:
    code, out, _ = run("explain", str(EXAMPLE), "web/3")
    assert code == 1
    assert "already holds web/" in " ".join(out.split())
    code, _, err = run("explain", str(EXAMPLE), "web/9")
    assert code == 2
    assert "no unit named web/9" in err and "did you mean 'web/3'?" in err


def test_check_counts_the_values_and_reports_too_few() -> None:
    code, out, _ = run("check", str(EXAMPLE), "-f", "json")
    data = json.loads(out)
    rows = {row["workload"]: row for row in data["workloads"]}
    assert rows["web"]["distinct"] == {"level": "rack", "values": 3}
    assert rows["db"]["distinct"] == {"level": "zone", "values": 2}
    assert rows["cache"]["distinct"] == {"level": "host", "values": 6}
    assert [c["code"] for c in data["conflicts"]] == ["distinct-too-few-values"]
    assert data["conflicts"][0]["message"] == (
        "web asks for 4 units on distinct racks, but its compatible targets span 3; "
        "1 would stay unplaced"
    )
    assert code == 0  # every workload has compatible targets


def test_simulate_keeps_units_distinct_from_the_ones_that_stay(example: Spec) -> None:
    before = {p.unit: p.target for p in Planner(example).plan().placements}
    lost = before["web/0"]
    result = simulate(Planner(example), [lost], [])
    after = {p.unit: p.target for p in result.after.placements}
    # Units on live targets stay where they were.
    for unit, target in before.items():
        if target != lost:
            assert after[unit] == target
    for workload, level in (("db", "zone"), ("web", "rack"), ("cache", "host")):
        values = [level_of(example, t, level) for u, t in after.items() if u.startswith(workload)]
        assert len(values) == len(set(values)), (workload, values)
    moved = {move.unit for move in result.moves}
    assert moved == {unit for unit, target in before.items() if target == lost} | (
        {"web/3"} if "web/3" in after else set()
    )


def test_distinct_target_is_one_unit_per_target() -> None:
    spec = load_spec_text(
        """
inventory:
  - {id: a, capacity: {cpu: 4}}
  - {id: b, capacity: {cpu: 4}}
workloads:
  - {name: w, units: 3, distinct: target, resources: {cpu: 1}}
""",
        "spec.yaml",
    )
    result = Planner(spec).plan()
    assert sorted(p.target for p in result.placements) == ["a", "b"]
    (unplaced,) = result.unplaced
    assert unplaced.summary == "0/2 targets available: 2 already hold a unit of w"


def test_targets_without_that_level_are_not_limited() -> None:
    spec = load_spec_text(
        """
inventory:
  - id: r1
    kind: rack
    children: [{id: a}, {id: b}]
  - {id: loose}
workloads:
  - {name: w, units: 4, distinct: rack}
""",
        "spec.yaml",
    )
    result = Planner(spec).plan()
    targets = Counter(p.target for p in result.placements)
    assert sum(targets.values()) == 4
    assert targets["a"] + targets["b"] == 1  # one unit in rack r1, the rest on `loose`


@pytest.mark.parametrize(
    ("text", "message", "line", "column"),
    [
        (
            "inventory: [{id: a, kind: host}]\n"
            "workloads:\n  - {name: w, mode: mapping, distinct: host}\n",
            "distinct spreads the units of an allocation workload; this one is in mapping mode",
            3,
            40,
        ),
        (
            "inventory:\n  - {id: r, kind: rack, children: [{id: a, kind: host}]}\n"
            "workloads:\n  - {name: w, distinct: rak}\n",
            "no location in the inventory is of kind 'rak'; did you mean 'rack'? "
            "levels: host, rack, target",
            4,
            25,
        ),
    ],
)
def test_bad_levels_are_spec_errors_at_their_place(
    text: str, message: str, line: int, column: int
) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, "spec.yaml")
    (problem,) = caught.value.problems
    assert problem.message.startswith(message)
    assert problem.key == "workloads[0].distinct"
    assert problem.position is not None
    assert (problem.position.line, problem.position.column) == (line, column)


def test_a_bad_level_exits_2_on_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("inventory: [{id: a}]\nworkloads: [{name: w, distinct: zone}]\n")
    code, _, err = run("plan", str(path))
    assert code == 2
    assert "spec.yaml:2:33: workloads[0].distinct: no location" in " ".join(err.split())


def fast(spec: Spec) -> list[tuple[str, str | None, float | None, str | None]]:
    return [
        (o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else (o.unit, None, None, o.summary)
        for o in Planner(spec).plan().outcomes
    ]


def with_distinct(spec: Spec, level: str) -> Spec:
    from dataclasses import replace

    loads = tuple(
        replace(w, requests=(Distinct(level),), units=max(w.units, 3))
        if w.mode == "allocation"
        else w
        for w in spec.workloads
    )
    return replace(spec, workloads=loads)


@settings(max_examples=150, deadline=None)
@given(specs(modes=("allocation",), min_targets=1), st.sampled_from(["rack", "zone", "target"]))
def test_fast_path_agrees_with_the_reference(spec: Spec, level: str) -> None:
    spec = with_distinct(spec, level)
    expected = [(o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)]
    assert fast(spec) == expected


@settings(max_examples=100, deadline=None)
@given(specs(modes=("allocation",), min_targets=1), st.sampled_from(["rack", "zone", "target"]))
def test_no_two_units_share_a_value(spec: Spec, level: str) -> None:
    spec = with_distinct(spec, level)
    by_workload: dict[str, list[Any]] = {}
    targets = {t.id: t for t in spec.inventory.targets}
    for placement in Planner(spec).plan().placements:
        value = ancestor_at(targets[placement.target], level)
        if value is not None:
            by_workload.setdefault(placement.workload, []).append(value)
    for values in by_workload.values():
        assert len(values) == len(set(values))
