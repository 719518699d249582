"""Every outcome seed 001 (Ironic conductor affinity) states, on examples/ironic-affinity.yaml."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from placed.cli.main import app
from placed.engine.explain import verdicts
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.engine.selection import rendezvous_weight
from placed.model import Spec

from .conftest import EXAMPLES


def placement(spec: Spec, unit: str, down: tuple[str, ...] = ()) -> Placement:
    planner = Planner(spec)
    if down:
        outcome = simulate(planner, list(down), []).after.by_unit()[unit]
    else:
        outcome = planner.plan().by_unit()[unit]
    assert isinstance(outcome, Placement), outcome
    return outcome


def scores(spec: Spec, workload: str) -> dict[str, float | None]:
    """Each conductor's score for a node, or None where a hard rule removes it."""
    planner = Planner(spec)
    request = planner.request(planner.workloads[workload])
    found = verdicts(planner.pipeline, request, planner.initial_state())
    return {v.target: (v.score if v.compatible else None) for v in found}


# -- the first form: conductor tags scored by match count, anti-tags ------------------


def test_node1_scores_3_2_1_and_goes_to_conductor1(ironic_specs: dict[str, Spec]) -> None:
    spec = ironic_specs["first-form"]
    assert scores(spec, "node1") == {"conductor1": 3, "conductor2": 2, "conductor3": 1}
    p = placement(spec, "node1/0")
    assert (p.target, p.score) == ("conductor1", 3)


def test_node1_moves_to_conductor2_when_conductor1_dies(ironic_specs: dict[str, Spec]) -> None:
    p = placement(ironic_specs["first-form"], "node1/0", down=("conductor1",))
    assert (p.target, p.score) == ("conductor2", 2)


def test_node2_ties_and_is_hashed_between_conductor1_and_conductor2(
    ironic_specs: dict[str, Spec],
) -> None:
    spec = ironic_specs["first-form"]
    assert scores(spec, "node2") == {"conductor1": 1, "conductor2": 1, "conductor3": 0}
    p = placement(spec, "node2/0")
    # The tie goes to the higher rendezvous weight among the top scorers only.
    expected = max(("conductor1", "conductor2"), key=lambda c: rendezvous_weight("node2/0", c))
    assert (p.target, p.score) == (expected, 1)
    assert p.tied == ("conductor1", "conductor2")
    assert "tie among conductor1, conductor2 broken by rendezvous hash" in Planner(spec).reason(p)


def test_node2_goes_to_conductor3_at_score_0_when_1_and_2_die(
    ironic_specs: dict[str, Spec],
) -> None:
    p = placement(ironic_specs["first-form"], "node2/0", down=("conductor1", "conductor2"))
    assert (p.target, p.score) == ("conductor3", 0)


def test_node3_anti_tag_removes_conductor2(ironic_specs: dict[str, Spec]) -> None:
    spec = ironic_specs["first-form"]
    assert scores(spec, "node3") == {"conductor1": 1, "conductor2": None, "conductor3": 0}
    p = placement(spec, "node3/0")
    assert (p.target, p.score) == ("conductor1", 1)


def test_node3_skips_anti_tagged_conductor2_when_conductor1_dies(
    ironic_specs: dict[str, Spec],
) -> None:
    p = placement(ironic_specs["first-form"], "node3/0", down=("conductor1",))
    assert (p.target, p.score) == ("conductor3", 0)


# -- Edit2: hard and soft affinity and anti-affinity ------------------------------------


def test_edit2_node1_goes_to_conductor1(ironic_specs: dict[str, Spec]) -> None:
    spec = ironic_specs["edit2"]
    # The seed's prose gives conductor1 a score of 1, but its own pseudo-code (and its
    # conductor1 soft-affinity list, which holds rack10) gives 2: +rack10 +network1.
    # conductor2: +network1 -rack10 = 0. conductor3 lacks datacenter2. Same winner.
    assert scores(spec, "node1") == {"conductor1": 2, "conductor2": 0, "conductor3": None}
    p = placement(spec, "node1/0")
    assert (p.target, p.score) == ("conductor1", 2)


def test_edit2_node2_goes_to_conductor1_at_score_minus_1(ironic_specs: dict[str, Spec]) -> None:
    spec = ironic_specs["edit2"]
    assert scores(spec, "node2") == {"conductor1": -1, "conductor2": None, "conductor3": None}
    p = placement(spec, "node2/0")
    assert (p.target, p.score) == ("conductor1", -1)


def test_edit2_node3_goes_to_conductor3(ironic_specs: dict[str, Spec]) -> None:
    spec = ironic_specs["edit2"]
    assert scores(spec, "node3") == {"conductor1": None, "conductor2": None, "conductor3": 2}
    p = placement(spec, "node3/0")
    assert (p.target, p.score) == ("conductor3", 2)


def test_edit2_reasons_name_the_rules(ironic_specs: dict[str, Spec]) -> None:
    planner = Planner(ironic_specs["edit2"])
    request = planner.request(planner.workloads["node2"])
    found = {v.target: v for v in verdicts(planner.pipeline, request, planner.initial_state())}
    assert [r.text for r in found["conductor2"].reasons] == ["has forbidden tag network3"]
    assert [r.text for r in found["conductor3"].reasons] == [
        "has forbidden tag network3",
        "lacks required tag datacenter2",
    ]


def test_edit2_node2_unplaced_with_summary_when_conductor1_dies(
    ironic_specs: dict[str, Spec],
) -> None:
    after = simulate(Planner(ironic_specs["edit2"]), ["conductor1"], []).after
    (unplaced,) = after.unplaced
    assert unplaced.unit == "node2/0"
    assert unplaced.summary == "0/3 targets available: 2 have forbidden tag network3, 1 is down"
    assert unplaced.filtered == {"status": 1, "hard-anti-affinity": 2}


# -- the same through the CLI ----------------------------------------------------------


def test_cli_plan_json_gives_every_seed_placement() -> None:
    result = CliRunner().invoke(
        app, ["plan", str(EXAMPLES / "ironic-affinity.yaml"), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    got = {
        (doc["name"], p["workload"]): (p["target"], p["score"])
        for doc in data["documents"]
        for p in doc["placements"]
    }
    tie = max(("conductor1", "conductor2"), key=lambda c: rendezvous_weight("node2/0", c))
    assert got == {
        ("first-form", "node1"): ("conductor1", 3),
        ("first-form", "node2"): (tie, 1),
        ("first-form", "node3"): ("conductor1", 1),
        ("edit2", "node1"): ("conductor1", 2),
        ("edit2", "node2"): ("conductor1", -1),
        ("edit2", "node3"): ("conductor3", 2),
    }


@pytest.mark.parametrize("fmt", ["table", "json", "yaml"])
def test_cli_simulate_moves_only_conductor1_nodes(fmt: str) -> None:
    result = CliRunner().invoke(
        app,
        ["simulate", str(EXAMPLES / "ironic-affinity.yaml"), "--down", "conductor1", "-f", fmt],
    )
    # edit2's node2 has nowhere to go once conductor1 is down: exit 1, and it says so.
    assert result.exit_code == 1, result.output
    assert "network3" in result.stdout
    if fmt == "json":
        docs = {d["name"]: d for d in json.loads(result.stdout)["documents"]}
        assert all(m["from"] == "conductor1" for d in docs.values() for m in d["moves"])
        assert {m["unit"]: m["to"] for m in docs["first-form"]["moves"]} == {
            "node1/0": "conductor2",
            "node2/0": "conductor2",
            "node3/0": "conductor3",
        }
