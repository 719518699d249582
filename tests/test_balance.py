"""Bounded-load mapping (`max_load`): the cap holds after a plan and after every change,
changes move only the units they must, and the plan is the stable assignment the plain
Gale-Shapley oracle finds."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from placed.cli.main import app
from placed.engine import balance
from placed.engine.planner import Placement, Planner
from placed.engine.rebalance import simulate
from placed.engine.reference import reference_plan
from placed.engine.selection import rendezvous_weight, stable_hashes
from placed.model import Inventory, Location, Settings, Spec, Workload
from placed.spec import load_spec_text
from placed.spec.errors import SpecError

from .strategies import specs


@contextmanager
def one_at_a_time_below(tail: int) -> Iterator[None]:
    saved = balance._TAIL
    balance._TAIL = tail
    try:
        yield
    finally:
        balance._TAIL = saved


MAX_LOADS = st.sampled_from([1.0, 1.05, 1.1, 1.25, 2.0])


def gale_shapley(units: list[str], targets: list[str], cap: int) -> list[int]:
    """One proposal at a time, in whatever order the free list gives."""
    ranking = {
        u: sorted(range(len(targets)), key=lambda t: -rendezvous_weight(u, targets[t]))
        for u in units
    }
    held: dict[int, list[str]] = {t: [] for t in range(len(targets))}
    tried = dict.fromkeys(units, 0)
    free = list(units)
    while free:
        unit = free.pop()
        target = ranking[unit][tried[unit]]
        tried[unit] += 1
        held[target].append(unit)
        if len(held[target]) > cap:
            held[target].sort(
                key=lambda u: (-rendezvous_weight(u, targets[target]), units.index(u))
            )
            free.append(held[target].pop())
    owner = {u: t for t, members in held.items() for u in members}
    return [owner[u] for u in units]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 8), st.integers(1, 60), MAX_LOADS, st.text("abc", max_size=3))
def test_stable_assignment_is_the_gale_shapley_one(
    targets: int, units: int, max_load: float, prefix: str
) -> None:
    target_ids = [f"{prefix}t{i}" for i in range(targets)]
    unit_ids = [f"{prefix}w/{i}" for i in range(units)]
    cap = balance.load_cap(units, targets, max_load)
    expected = gale_shapley(unit_ids, target_ids, cap)
    # Both phases of the fast path: rounds over whole arrays, and one proposal at a time.
    for tail in (0, 1 << 30):
        with one_at_a_time_below(tail):
            fast = balance.stable_assignment(
                stable_hashes(unit_ids), stable_hashes(target_ids), cap
            )
        assert fast.tolist() == expected
        assert np.bincount(fast, minlength=targets).max() <= cap


def test_rounds_and_one_at_a_time_agree_on_a_large_assignment() -> None:
    unit_hashes = stable_hashes([f"n/{i}" for i in range(20_000)])
    target_hashes = stable_hashes([f"c{i}" for i in range(300)])
    found = []
    for tail in (0, 1 << 30, 512):
        with one_at_a_time_below(tail):
            found.append(balance.stable_assignment(unit_hashes, target_hashes, 67))
    assert (found[0] == found[1]).all() and (found[0] == found[2]).all()
    assert np.bincount(found[0]).max() == 67


@pytest.mark.parametrize(
    ("units", "targets", "max_load", "cap"),
    [
        (100_000, 100, 1.10, 1100),
        (100_000, 99, 1.10, 1111),  # 1.1 x 1010.1 = 1111.1, rounded down
        (10, 3, 1.0, 4),  # never below the mean rounded up
        (5, 3, 1.1, 2),
        (7, 1, 1.5, 10),
    ],
)
def test_load_cap(units: int, targets: int, max_load: float, cap: int) -> None:
    assert balance.load_cap(units, targets, max_load) == cap


def _loads(owners: np.ndarray, targets: int) -> np.ndarray:
    return np.bincount(owners, minlength=targets)


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 12), st.integers(1, 400), MAX_LOADS, st.data())
def test_losing_targets_moves_only_their_units_and_keeps_the_cap(
    targets: int, units: int, max_load: float, data: st.DataObject
) -> None:
    unit_hashes = stable_hashes([f"w/{i}" for i in range(units)])
    target_hashes = stable_hashes([f"t{i}" for i in range(targets)])
    owners = balance.stable_assignment(
        unit_hashes, target_hashes, balance.load_cap(units, targets, max_load)
    )
    lost = data.draw(st.sets(st.integers(0, targets - 1), min_size=1, max_size=targets - 1))
    live = np.array([t not in lost for t in range(targets)])
    slot = np.cumsum(live) - 1
    previous = np.where(live[owners], slot[owners], balance.UNPLACED)
    cap = balance.load_cap(units, int(live.sum()), max_load)
    after = balance.repair(
        unit_hashes, target_hashes[live], previous, np.zeros(int(live.sum()), bool), cap
    )
    kept = previous != balance.UNPLACED
    assert (after[kept] == previous[kept]).all()
    assert _loads(after, int(live.sum())).max() <= cap


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10), st.integers(1, 400), MAX_LOADS, st.data())
def test_joining_targets_take_units_and_nothing_else_moves(
    targets: int, units: int, max_load: float, data: st.DataObject
) -> None:
    joining = data.draw(st.integers(1, 4))
    unit_hashes = stable_hashes([f"w/{i}" for i in range(units)])
    target_hashes = stable_hashes([f"t{i}" for i in range(targets + joining)])
    owners = balance.stable_assignment(
        unit_hashes, target_hashes[:targets], balance.load_cap(units, targets, max_load)
    )
    joined = np.arange(targets + joining) >= targets
    cap = balance.load_cap(units, targets + joining, max_load)
    after = balance.repair(unit_hashes, target_hashes, owners, joined, cap)
    moved = after != owners
    assert joined[after[moved]].all()
    loads = _loads(after, targets + joining)
    # The cap holds, unless the joining targets are full themselves (rounding can leave
    # them too little room for the surplus).
    assert loads.max() <= cap or (loads[joined] == cap).all()
    # Joining targets take the units that now rank them first, so they are not idle.
    first, _ = balance.first_choices(unit_hashes, target_hashes)
    assert loads[joined].sum() >= min(int(joined[first].sum()), cap)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10), st.integers(1, 300), MAX_LOADS)
def test_a_unit_whose_first_choice_has_room_gets_it(
    targets: int, units: int, max_load: float
) -> None:
    unit_hashes = stable_hashes([f"w/{i}" for i in range(units)])
    target_hashes = stable_hashes([f"t{i}" for i in range(targets)])
    cap = balance.load_cap(units, targets, max_load)
    owners, passed = balance.stable_assignment_passes(unit_hashes, target_hashes, cap)
    first, _ = balance.first_choices(unit_hashes, target_hashes)
    # The planner explains only the units marked as passed over: the mark must be exact.
    assert (passed == (owners != first)).all()
    assert (
        (balance.choice_ranks(unit_hashes, target_hashes, owners) > 0) == (owners != first)
    ).all()
    full = _loads(owners, targets) == cap
    # Stability: a unit off its first choice was turned away by a full target.
    assert full[first[owners != first]].all()
    if _loads(first, targets).max() <= cap:
        assert (owners == first).all()


def _bounded(spec: Spec) -> bool:
    return any(w.max_load is not None for w in spec.workloads)


def _owners(spec: Spec) -> dict[str, str | None]:
    return {
        o.unit: (o.target if isinstance(o, Placement) else None)
        for o in Planner(spec).plan().outcomes
    }


@settings(max_examples=150, deadline=None)
@given(specs(modes=("mapping",), min_targets=1), st.data())
def test_simulated_changes_keep_every_bounded_workload_under_its_cap(
    spec: Spec, data: st.DataObject
) -> None:
    assume(_bounded(spec))
    ids = [t.id for t in spec.inventory.targets]
    down = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=2))
    up = [
        i
        for i in data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=2))
        if i not in down
    ]
    result = simulate(Planner(spec), down, up)
    for workload in spec.workloads:
        if workload.max_load is None:
            continue
        placed = [o for o in result.after.placements if o.workload == workload.name]
        if not placed:
            continue
        counts: dict[str, int] = {}
        for p in placed:
            counts[p.target] = counts.get(p.target, 0) + 1
        cap = placed[0].cap
        if cap is None:  # one candidate target: nothing to balance
            assert len(counts) == 1
            continue
        joined_full = all(counts.get(t, 0) == cap for t in up if t in counts)
        assert max(counts.values()) <= cap or (up and joined_full)


def _nodes_spec(units: int, conductors: int, max_load: float | None) -> Spec:
    roots = tuple(Location(id=f"conductor{i}", kind="conductor") for i in range(conductors))
    workload = Workload(name="nodes", units=units, mode="mapping", max_load=max_load)
    return Spec(Inventory.from_roots(roots), (workload,), Settings())


def test_max_load_caps_what_plain_mapping_overloads() -> None:
    plain = _nodes_spec(2_000, 10, None)
    loads: dict[str | None, int] = {}
    for target in _owners(plain).values():
        loads[target] = loads.get(target, 0) + 1
    assert max(loads.values()) > 205  # plain mapping: some conductor is over 1.025 x mean
    bounded = _nodes_spec(2_000, 10, 1.025)
    capped: dict[str | None, int] = {}
    for target in _owners(bounded).values():
        capped[target] = capped.get(target, 0) + 1
    assert max(capped.values()) == 205


def test_fast_bounded_mapping_matches_the_reference() -> None:
    spec = _nodes_spec(500, 7, 1.02)
    fast = [(o.unit, o.target) for o in Planner(spec).plan().outcomes if isinstance(o, Placement)]
    assert fast == [(o.unit, o.target) for o in reference_plan(spec)]


def test_reason_names_the_full_targets_a_unit_passed_over() -> None:
    spec = _nodes_spec(30, 3, 1.0)
    planner = Planner(spec)
    later = [p for p in planner.plan().placements if p.choice > 1]
    assert later
    reason = planner.reason(later[0])
    assert "at most 10 units per target (max_load)" in reason
    assert f"ranked higher but {'was' if later[0].choice == 2 else 'were'} full" in reason
    assert later[0].ahead[0] in reason


def test_max_load_outside_mapping_mode_is_a_spec_error() -> None:
    text = "inventory:\n  - {id: a, kind: host}\nworkloads:\n  - name: web\n    max_load: 1.1\n"
    with pytest.raises(SpecError) as failure:
        load_spec_text(text, "spec.yaml")
    message = str(failure.value)
    assert "spec.yaml:5:15" in message
    assert "max_load balances mapping workloads" in message


def test_max_load_below_one_is_a_spec_error() -> None:
    text = (
        "inventory:\n  - {id: a, kind: host}\nworkloads:\n"
        "  - {name: n, mode: mapping, max_load: 0.9}\n"
    )
    with pytest.raises(SpecError) as failure:
        load_spec_text(text, "spec.yaml")
    assert "spec.yaml:4:40: workloads[0].max_load: must be at least 1.0, got 0.9" in str(
        failure.value
    )


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "balanced-conductors.yaml"


def _cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def _per_target(placements: list[dict[str, Any]], workload: str) -> dict[str, int]:
    return dict(Counter(p["target"] for p in placements if p["workload"] == workload))


def test_example_max_load_evens_out_what_plain_mapping_leaves_uneven() -> None:
    plan = _cli_json("plan", str(EXAMPLE))
    plain = _per_target(plan["placements"], "baremetal")
    assert max(plain.values()) > 10  # the hash alone leaves conductors uneven here
    assert _per_target(plan["placements"], "baremetal-balanced") == {
        f"conductor{i}": 10 for i in range(1, 5)
    }
    balanced = [p for p in plan["placements"] if p["workload"] == "baremetal-balanced"]
    assert all(p["balance"]["cap"] == 10 for p in balanced)
    later = [p for p in balanced if p["balance"]["choice"] > 1]
    assert later, "some node should have been passed to a later choice"
    for p in later:
        passed = p["balance"]["ranked_higher"]
        assert len(passed) == min(p["balance"]["choice"] - 1, 5)
        assert p["target"] not in passed
    assert all("balance" not in p for p in plan["placements"] if p["workload"] == "baremetal")


def test_example_losing_a_conductor_moves_only_its_nodes_and_keeps_the_cap() -> None:
    before = _cli_json("plan", str(EXAMPLE))["placements"]
    owned = {p["unit"] for p in before if p["target"] == "conductor2"}
    moves = _cli_json("simulate", str(EXAMPLE), "--down", "conductor2")["moves"]
    assert {m["unit"] for m in moves} == owned
    assert all(m["from"] == "conductor2" and m["to"] for m in moves)
    after = {p["unit"]: p["target"] for p in before}
    after.update({m["unit"]: m["to"] for m in moves})
    balanced = Counter(t for u, t in after.items() if u.startswith("baremetal-balanced/"))
    assert max(balanced.values()) <= 14  # 40 units on 3 conductors: the cap is 14


def test_example_a_returning_conductor_takes_its_share_and_only_it_gains() -> None:
    moves = _cli_json("simulate", str(EXAMPLE), "--up", "conductor5")["moves"]
    assert moves and all(m["to"] == "conductor5" for m in moves)
    taken = Counter(m["workload"] for m in moves)
    assert taken["baremetal-balanced"] == 8  # five conductors of at most 8 for 40 nodes


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 40), st.integers(1, 6), st.data())
def test_ranked_above_lists_the_ranking_up_to_the_owner(
    targets: int, units: int, limit: int, data: st.DataObject
) -> None:
    unit_ids = [f"w/{i}" for i in range(units)]
    target_ids = [f"t{i}" for i in range(targets)]
    owners = np.array(
        data.draw(st.lists(st.integers(0, targets - 1), min_size=units, max_size=units))
    )
    asked = np.arange(units)
    found = balance.ranked_above(
        stable_hashes(unit_ids), stable_hashes(target_ids), owners, asked, limit
    )
    for unit, row in zip(unit_ids, found.tolist(), strict=True):
        ranking = sorted(range(targets), key=lambda t: (-rendezvous_weight(unit, target_ids[t]), t))
        above = ranking[: ranking.index(int(owners[unit_ids.index(unit)]))][:limit]
        assert row == above + [balance.UNPLACED] * (limit - len(above))


@pytest.mark.parametrize(("text", "shown"), [(".inf", "inf"), (".nan", "nan")])
def test_max_load_must_be_finite(text: str, shown: str) -> None:
    spec = (
        "inventory:\n  - {id: a, kind: host}\nworkloads:\n"
        f"  - {{name: n, mode: mapping, max_load: {text}}}\n"
    )
    with pytest.raises(SpecError) as failure:
        load_spec_text(spec, "spec.yaml")
    assert f"spec.yaml:4:40: workloads[0].max_load: must be a finite number, got {shown}" in str(
        failure.value
    )
