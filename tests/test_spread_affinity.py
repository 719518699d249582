"""spread, near and avoid: the rules as written, their explanations, and the numpy fast path
held to the one-target-at-a-time reference on random inventories."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from placed.engine.explain import first_rejections
from placed.engine.pipeline import StateWorld
from placed.engine.planner import Placement, Planner
from placed.engine.reference import ReferenceJudge, reference_plan
from placed.model import Spec, Target, Workload
from placed.policy.deployment import Deployment
from placed.spec.load import load_spec_data

LEVELS = ["zone", "rack", "host", "target"]


def host(ident: str, ssd: bool, cpu: int) -> dict[str, Any]:
    found: dict[str, Any] = {"id": ident, "kind": "host", "capacity": {"cpu": cpu}}
    if ssd:
        found["properties"] = {"disk": "ssd"}
    return found


@st.composite
def inventories(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """Zones of racks of hosts, and a few hosts under no zone or rack at all."""
    roots: list[dict[str, Any]] = []
    hosts: list[str] = []

    def hosts_here(count: int) -> list[dict[str, Any]]:
        made = []
        for _ in range(count):
            ident = f"h{len(hosts)}"
            hosts.append(ident)
            made.append(host(ident, draw(st.integers(0, 2)) == 0, draw(st.integers(1, 4))))
            if draw(st.integers(0, 5)) == 0:
                made[-1]["status"] = "down"  # a zone of only such hosts is not eligible
        return made

    for z in range(draw(st.integers(1, 3))):
        racks = [
            {"id": f"r{z}{r}", "kind": "rack", "children": hosts_here(draw(st.integers(1, 3)))}
            for r in range(draw(st.integers(1, 3)))
        ]
        roots.append({"id": f"z{z}", "kind": "zone", "children": racks})
    roots.extend(hosts_here(draw(st.integers(0, 2))))
    return roots, hosts


@st.composite
def terms(draw: st.DrawFn, names: list[str], key: str) -> dict[str, Any]:
    mode = draw(st.sampled_from(["hard", "hard", "preferred"]))
    found: dict[str, Any] = {"mode": mode}
    if key == "spread":
        found.update(over=draw(st.sampled_from(LEVELS)), max_skew=draw(st.integers(1, 2)))
    else:
        found.update(workload=draw(st.sampled_from(names)), level=draw(st.sampled_from(LEVELS)))
    if mode == "preferred" and draw(st.booleans()):
        found["weight"] = draw(st.integers(1, 3))
    return found


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    roots, hosts = draw(inventories())
    names = [f"w{i}" for i in range(draw(st.integers(1, 3)))]
    workloads = []
    for name in names:
        workload: dict[str, Any] = {
            "name": name,
            "units": draw(st.integers(1, 8)),
            "resources": {"cpu": 1},
        }
        if draw(st.booleans()):
            workload["constraints"] = ["disk == ssd"]  # static: fewer eligible domains
        for key in ("spread", "near", "avoid"):
            if draw(st.booleans()):
                many = draw(st.lists(terms(names, key), min_size=1, max_size=2))
                workload[key] = many[0] if len(many) == 1 and draw(st.booleans()) else many
        workloads.append(workload)
    running = []
    for number in range(draw(st.integers(0, 4))):
        name = draw(st.sampled_from([*names, "other"]))
        running.append({"unit": f"{name}/{100 + number}", "target": draw(st.sampled_from(hosts))})
    document: dict[str, Any] = {"inventory": roots, "workloads": workloads}
    if running:
        document["running"] = running
    return load_spec_data(document)


def statically_kept(
    oracle: ReferenceJudge, bare: StateWorld, workload: Workload
) -> Sequence[Target]:
    return oracle.statically_kept(workload, bare)


def fast_outcomes(spec: Spec) -> list[tuple[str, str | None, float | None, str | None]]:
    return [
        (o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else (o.unit, None, None, o.summary)
        for o in Planner(spec).plan().outcomes
    ]


@settings(max_examples=300, deadline=None)
@given(specs())
def test_fast_path_places_as_the_reference_does(spec: Spec) -> None:
    expected = [(o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)]
    assert fast_outcomes(spec) == expected


@settings(max_examples=150, deadline=None)
@given(specs(), st.data())
def test_fast_path_gives_the_reference_reasons_midway(spec: Spec, data: st.DataObject) -> None:
    # Part way through a plan (the running units and some placed ones), every rejected
    # target's reason is the reference's, word for word.
    planner = Planner(spec)
    state = planner.initial_state()
    placed = [o for o in planner.plan().outcomes if isinstance(o, Placement)]
    for o in placed[: data.draw(st.integers(0, len(placed)))]:
        position = state.position(o.target)
        assert position is not None
        state.place(o.unit, o.workload, position)
    oracle = ReferenceJudge(planner.index)
    for workload in spec.workloads:
        request = planner.request(workload)
        _, rejections = first_rejections(planner.pipeline, request, state)
        fast = {r.position: r.reason for r in rejections}
        # Static filters read nothing of the world they are given.
        bare = StateWorld(state)
        world = StateWorld(state, functools.partial(statically_kept, oracle, bare))
        reference = {}
        for position, target in enumerate(spec.inventory.targets):
            reason, _ = oracle.judge(workload, target, world)
            if reason is not None:
                reference[position] = reason
        assert fast == reference
        scores = planner.pipeline.scores(request, state)
        for position, target in enumerate(spec.inventory.targets):
            if position not in reference:
                assert scores[position] == oracle.judge(workload, target, world)[1]


def plan(document: dict[str, Any]) -> dict[str, str | None]:
    spec = load_spec_data(document)
    outcomes = Planner(spec).plan().outcomes
    assert fast_outcomes(spec) == [
        (o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)
    ]
    return {o.unit: o.target if isinstance(o, Placement) else None for o in outcomes}


def zones(count: int, hosts: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": f"z{z}",
            "kind": "zone",
            "children": [
                {"id": f"z{z}h{h}", "kind": "host", "capacity": {"cpu": 8}, **extra}
                for h in range(hosts)
            ],
        }
        for z in range(count)
    ]


def zone_of(target: str | None) -> str | None:
    return None if target is None else target.split("h")[0]


def test_hard_spread_keeps_the_skew_within_max_skew() -> None:
    where = plan(
        {
            "inventory": zones(3, 4),
            "workloads": [{"name": "web", "units": 9, "spread": {"over": "zone", "max_skew": 1}}],
        }
    )
    per_zone = [sum(zone_of(t) == f"z{z}" for t in where.values()) for z in range(3)]
    assert per_zone == [3, 3, 3]


def test_eligible_zones_are_those_the_static_filters_keep() -> None:
    # z2 has no ssd host: with every zone counting, its 0 units would hold the others to
    # one unit each (Kubernetes' nodeAffinityPolicy: Honor leaves it out).
    bare = {"id": "z2", "kind": "zone", "children": [{"id": "z2h0", "capacity": {"cpu": 8}}]}
    inventory = [*zones(2, 3, properties={"disk": "ssd"}), bare]
    where = plan(
        {
            "inventory": inventory,
            "workloads": [
                {
                    "name": "web",
                    "units": 6,
                    "constraints": ["disk == ssd"],
                    "spread": {"over": "zone", "max_skew": 1},
                }
            ],
        }
    )
    assert None not in where.values()


def test_a_zone_whose_every_host_is_down_is_not_eligible() -> None:
    # Kubernetes' default would keep z2's 0 as the minimum and leave web/2.. pending;
    # placed spreads over the zones that are up.
    inventory = zones(3, 3)
    for child in inventory[2]["children"]:
        child["status"] = "down"
    where = plan(
        {
            "inventory": inventory,
            "workloads": [{"name": "web", "units": 6, "spread": {"over": "zone", "max_skew": 1}}],
        }
    )
    assert sorted(zone_of(t) or "" for t in where.values()) == ["z0"] * 3 + ["z1"] * 3


def test_a_target_outside_every_zone_is_rejected_by_hard_spread() -> None:
    spec = load_spec_data(
        {
            "inventory": [*zones(1, 1), {"id": "loose", "capacity": {"cpu": 8}}],
            "workloads": [{"name": "web", "units": 1, "spread": {"over": "zone"}}],
        }
    )
    planner = Planner(spec)
    _, rejections = first_rejections(
        planner.pipeline, planner.request(spec.workloads[0]), planner.initial_state()
    )
    (only,) = rejections
    assert only.reason.text == (
        "is in no zone, which spread over zone needs (a target outside every zone is "
        "rejected, as kube-scheduler does)"
    )


def test_the_skew_reason_names_the_zone_with_the_fewest() -> None:
    spec = load_spec_data(
        {
            "inventory": zones(2, 2),
            "workloads": [{"name": "web", "units": 3, "spread": {"over": "zone"}}],
            "running": [{"unit": "web/0", "target": "z0h0"}, {"unit": "web/1", "target": "z0h1"}],
        }
    )
    planner = Planner(spec)
    request = planner.request(spec.workloads[0])
    _, rejections = first_rejections(planner.pipeline, request, planner.initial_state())
    assert {r.reason.text for r in rejections} == {
        "would exceed web's max skew 1 over zone (zone z0 would exceed max skew 1: 3 units "
        "vs 0 in z1)"
    }


def test_each_plan_state_explains_spread_with_its_own_requests_eligible_zones() -> None:
    # One pipeline, two versions of web (the spec changed): z1 has no ssd host, so the
    # ssd version's fewest is z2's 0 and the other's z1's. The filter keeps nothing of
    # either; each plan state has the eligible zones its own request judged with.
    inventory = zones(3, 2, properties={"disk": "ssd"})
    for child in inventory[1]["children"]:
        del child["properties"]
    document = {
        "inventory": inventory,
        "workloads": [
            {
                "name": "web",
                "units": 3,
                "constraints": ["disk == ssd"],
                "spread": {"over": "zone"},
            }
        ],
        "running": [{"unit": "web/0", "target": "z0h0"}],
    }
    spec = load_spec_data(document)
    other = dataclasses.replace(
        spec.workloads[0],
        requests=tuple(r for r in spec.workloads[0].requests if not isinstance(r, Deployment)),
    )
    planner = Planner(spec)
    first, second = planner.pipeline.compile(spec.workloads[0]), planner.pipeline.compile(other)
    one, two = planner.initial_state(), planner.initial_state()
    _, second_rejections = first_rejections(planner.pipeline, second, two)
    _, first_rejections_ = first_rejections(planner.pipeline, first, one)
    skew = "would exceed web's max skew 1 over zone (zone z0 would exceed max skew 1: 2 units vs"
    assert {r.reason.text for r in first_rejections_ if r.reason.filter == "spread"} == {
        f"{skew} 0 in z2)"
    }
    assert {r.reason.text for r in second_rejections} == {f"{skew} 0 in z1)"}
    # Asked again of the second state, after the first request was judged on the first.
    assert [r.reason for r in first_rejections(planner.pipeline, second, two)[1]] == [
        r.reason for r in second_rejections
    ]


def test_near_follows_the_other_workload_and_counts_running_units() -> None:
    where = plan(
        {
            "inventory": zones(3, 2),
            "workloads": [
                {"name": "db", "units": 2},  # db/7 runs: the plan adds one, db/8
                {"name": "web", "units": 4, "near": {"workload": "db", "level": "zone"}},
            ],
            "running": [{"unit": "db/7", "target": "z2h1"}],
        }
    )
    db_zones = {zone_of(where["db/8"]), "z2"}
    assert {zone_of(where[f"web/{n}"]) for n in range(4)} <= db_zones


def test_near_itself_lets_the_first_unit_anywhere_then_gathers_the_rest() -> None:
    where = plan(
        {
            "inventory": zones(3, 3),
            "workloads": [
                {"name": "web", "units": 3, "near": {"workload": "web", "level": "zone"}}
            ],
        }
    )
    assert None not in where.values() and len({zone_of(t) for t in where.values()}) == 1


def test_near_a_workload_with_no_unit_places_nothing_and_says_why() -> None:
    spec = load_spec_data(
        {
            "inventory": zones(1, 1),
            "workloads": [
                {"name": "web", "units": 1, "near": {"workload": "db", "level": "zone"}},
                {"name": "db", "units": 1},
            ],
        }
    )
    result = Planner(spec).plan()
    (unplaced,) = [o for o in result.outcomes if not isinstance(o, Placement)]
    assert unplaced.unit == "web/0"
    assert unplaced.summary == "0/1 targets available: 1 has no unit of db in its zone"
    assert [w.code for w in result.warnings] == ["near-planned-later"]


def test_avoid_itself_per_target_is_one_unit_per_target() -> None:
    where = plan(
        {
            "inventory": zones(1, 3),
            "workloads": [
                {"name": "web", "units": 4, "avoid": {"workload": "web", "level": "target"}}
            ],
        }
    )
    assert where["web/3"] is None and len(set(where.values()) - {None}) == 3


def test_required_anti_affinity_is_symmetric() -> None:
    # db runs in z0 and avoids web per zone: web, which says nothing of db, stays out of z0.
    spec_document = {
        "inventory": zones(2, 2),
        "workloads": [
            {"name": "db", "units": 1, "avoid": {"workload": "web", "level": "zone"}},
            {"name": "web", "units": 2},
        ],
        "running": [{"unit": "db/5", "target": "z0h0"}],
    }
    where = plan(spec_document)
    assert {zone_of(where["web/0"]), zone_of(where["web/1"])} == {"z1"}
    spec = load_spec_data(spec_document)
    web = next(w for w in spec.workloads if w.name == "web")
    planner = Planner(spec)
    _, rejections = first_rejections(
        planner.pipeline, planner.request(web), planner.initial_state()
    )
    assert {r.reason.text for r in rejections} == {
        "is in a zone that holds a unit of db (zone z0 holds db/5, and db avoids web)"
    }


def test_preferred_terms_rank_but_never_reject() -> None:
    where = plan(
        {
            "inventory": zones(2, 2),
            "workloads": [
                {"name": "db", "units": 1},
                {
                    "name": "web",
                    "units": 5,
                    "near": {"workload": "db", "level": "zone", "mode": "preferred", "weight": 3},
                    "avoid": {"workload": "web", "level": "target", "mode": "preferred"},
                },
            ],
        }
    )
    assert None not in where.values()
    assert zone_of(where["web/0"]) == zone_of(where["db/0"])


def test_preferred_spread_fills_the_emptiest_zone_first() -> None:
    where = plan(
        {
            "inventory": zones(3, 3),
            "workloads": [
                {"name": "web", "units": 6, "spread": {"over": "zone", "mode": "preferred"}}
            ],
        }
    )
    per_zone = [sum(zone_of(t) == f"z{z}" for t in where.values()) for z in range(3)]
    assert per_zone == [2, 2, 2]


def test_check_judges_near_before_the_plan_places_what_it_is_near() -> None:
    from placed.engine.check_summary import summary_check

    spec = load_spec_data(
        {
            "inventory": zones(2, 1),
            "workloads": [
                {"name": "db", "units": 1},
                {"name": "web", "units": 1, "near": {"workload": "db", "level": "zone"}},
            ],
        }
    )
    document, failed = summary_check(Planner(spec), list(spec.workloads))
    assert not failed
    assert [row["compatible_targets"] for row in document["workloads"]] == [2, 2]


def test_running_units_that_break_the_rules_are_misfits() -> None:
    from placed.engine.fit import misfits

    spec = load_spec_data(
        {
            "inventory": zones(2, 2),
            "workloads": [
                {
                    "name": "web",
                    "units": 3,
                    "spread": {"over": "zone"},
                    "avoid": {"workload": "web", "level": "target"},
                }
            ],
            "running": [
                {"unit": "web/0", "target": "z0h0"},
                {"unit": "web/1", "target": "z0h0"},
                {"unit": "web/2", "target": "z0h1"},
            ],
        }
    )
    found = {m.unit: m.reason.text for m in misfits(Planner(spec))}
    assert found == {
        "web/1": "would exceed web's max skew 1 over zone (zone z0 would exceed max skew 1: "
        "2 units vs 0 in z1)",
        "web/2": "would exceed web's max skew 1 over zone (zone z0 would exceed max skew 1: "
        "3 units vs 0 in z1)",
    }
