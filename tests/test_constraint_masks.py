"""The constraint masks a plan keeps (policy/expressions/masks.py): one parse and one
mask per distinct constraint text, terms shared between constraints, a separate cache
per index (the same text means something else where a property has another type), a
bounded size, and always the mask the one-target rule gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placed.engine.planner import Planner
from placed.model import Inventory, Location, Settings, Spec, Workload, validate_properties
from placed.policy.builtins import node_columns, node_properties
from placed.policy.deployment import Deployment
from placed.policy.expressions import masks, parse_constraint
from placed.policy.expressions.evaluate import satisfied
from placed.policy.expressions.masks import ConstraintMasks

from .strategies import property_maps


def hosts(values: list[dict[str, Any]]) -> Inventory:
    return Inventory.from_roots(
        tuple(
            Location(id=f"h{i}", kind="host", properties=validate_properties(v))
            for i, v in enumerate(values)
        )
    )


def constrained(name: str, *texts: str) -> Workload:
    return Workload(name=name, requests=(Deployment(constraints=texts),))


def expected(inventory: Inventory, texts: tuple[str, ...]) -> list[bool]:
    constraint = parse_constraint(texts)
    return [satisfied(constraint, node_properties(t)) for t in inventory.targets]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every constraint the masks parse, as they ask for it."""
    seen: list[tuple[str, ...]] = []
    real = parse_constraint  # what the masks module imported

    def counting(texts: Any) -> Any:
        seen.append(tuple(texts))
        return real(texts)

    monkeypatch.setattr(masks, "parse_constraint", counting)
    return seen


def constraint_mask(planner: Planner, workload: Workload) -> list[bool]:
    position = [f.name for f in planner.pipeline.filters].index("constraint")
    mask: list[bool] = planner.request(workload).static_masks[position].tolist()
    return mask


INVENTORY = hosts([{"gen": g, "disk": d} for g in (1, 2, 3) for d in ("ssd", "hdd")])


def test_the_same_text_is_parsed_once_per_plan(parses: list[tuple[str, ...]]) -> None:
    text = 'gen >= 2 AND disk != "ssd"'
    loads = tuple(constrained(f"w{i}", text) for i in range(5))
    planner = Planner(Spec(INVENTORY, loads, Settings()))
    for workload in loads:
        assert constraint_mask(planner, workload) == expected(INVENTORY, (text,))
    assert parses == [(text,)]


def test_different_texts_compile_separately(parses: list[tuple[str, ...]]) -> None:
    texts = ["gen >= 2", "gen >= 3", 'disk == "hdd" OR gen < 2', "gen >= 2"]
    loads = tuple(constrained(f"w{i}", text) for i, text in enumerate(texts))
    planner = Planner(Spec(INVENTORY, loads, Settings()))
    for workload, text in zip(loads, texts, strict=True):
        assert constraint_mask(planner, workload) == expected(INVENTORY, (text,))
    assert parses == [(t,) for t in texts[:3]]


def test_the_same_text_over_other_property_types_is_its_own_compile(
    parses: list[tuple[str, ...]],
) -> None:
    # gen is a number on one fleet and text on the other: `gen >= 2` holds only on the
    # first, `gen == "3"` only on the second.
    numbers = hosts([{"gen": 1}, {"gen": 3}])
    texts = hosts([{"gen": "1"}, {"gen": "3"}])
    wanted = {
        ("gen >= 2", 0): [False, True],
        ("gen >= 2", 1): [False, False],
        ('gen == "3"', 0): [False, False],
        ('gen == "3"', 1): [False, True],
    }
    for (text, which), mask in wanted.items():
        inventory = (numbers, texts)[which]
        workload = constrained("w", text)
        planner = Planner(Spec(inventory, (workload,), Settings()))
        assert constraint_mask(planner, workload) == mask == expected(inventory, (text,))
    assert len(parses) == 4  # once in each plan


def test_the_caches_are_bounded_and_stay_right(parses: list[tuple[str, ...]]) -> None:
    inventory = hosts([{"gen": g} for g in range(40)])
    cache = ConstraintMasks(node_columns(inventory.targets), 1)
    texts = [f"gen >= {g} AND gen != {g + 5}" for g in range(40)]
    for text in [*texts, *texts[:3]]:
        assert cache.satisfied((text,)).tolist() == expected(inventory, (text,))
        assert len(cache) <= 2 * cache.limit
    assert cache.limit == 8
    assert len(parses) == 43  # the first three were let go, and parsed again


TERMS = ['purpose == "lab"', "cpu >= 2", "purpose != prod", "gpu == true", 'zone in "east,west"']
TERMS += ["cpu < 3", "zone == east", "cpu == 2", 'purpose in "lab,prod"', "gpu != false"]


@st.composite
def expressions(draw: st.DrawFn) -> str:
    terms = draw(st.lists(st.sampled_from(TERMS), min_size=1, max_size=3))
    if len(terms) > 1 and draw(st.booleans()):
        return f"({terms[0]} OR {terms[1]})" + "".join(f" AND {t}" for t in terms[2:])
    return draw(st.sampled_from([" AND ", " OR "])).join(terms)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(property_maps, min_size=1, max_size=8),
    st.lists(st.lists(expressions(), min_size=1, max_size=2).map(tuple), min_size=1, max_size=12),
    st.sampled_from([1, 1 << 20]),
)
def test_cached_masks_equal_the_one_target_rule(
    maps: list[Any], asked: list[tuple[str, ...]], max_bytes: int
) -> None:
    inventory = Inventory.from_roots(
        tuple(Location(id=f"h{i}", kind="host", properties=p) for i, p in enumerate(maps))
    )
    columns = node_columns(inventory.targets)
    cache = ConstraintMasks(columns, max_bytes)
    for texts in [*asked, *reversed(asked)]:
        assert cache.satisfied(texts).tolist() == expected(inventory, texts)


def test_terms_written_differently_keep_their_own_masks() -> None:
    # One plan, so one term cache: `gen == 3` and `gen == "3"` name the same property and
    # operator, and differ only in how the value is written (a number, a quoted string),
    # which changes what they hold on; a key that dropped the quoting would share a mask.
    inventory = hosts([{"gen": 3}, {"gen": "3"}, {"gen": 4}, {"gen": "x"}])
    texts = ["gen == 3", 'gen == "3"', "gen != 3", 'gen != "3"', "gen == 3 AND gen != x"]
    loads = tuple(constrained(f"w{i}", text) for i, text in enumerate(texts))
    planner = Planner(Spec(inventory, loads, Settings()))
    found = {text: constraint_mask(planner, w) for w, text in zip(loads, texts, strict=True)}
    assert found == {text: expected(inventory, (text,)) for text in texts}
    assert found["gen == 3"] != found['gen == "3"']
