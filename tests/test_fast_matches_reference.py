"""The numpy pipeline and the plain-Python reference agree on placements and reasons."""

from __future__ import annotations

from hypothesis import given, settings

from placed.engine.explain import first_rejections
from placed.engine.planner import Placement, Planner
from placed.engine.reference import judge, reference_plan
from placed.model import Spec

from .strategies import specs


def fast_outcomes(spec: Spec) -> list[tuple[str, str | None, float | None, str | None]]:
    result = Planner(spec).plan()
    return [
        (o.unit, o.target, o.score, None)
        if isinstance(o, Placement)
        else (o.unit, None, None, o.summary)
        for o in result.outcomes
    ]


@settings(max_examples=300, deadline=None)
@given(specs())
def test_same_placements_and_summaries(spec: Spec) -> None:
    expected = [(o.unit, o.target, o.score, o.summary) for o in reference_plan(spec)]
    assert fast_outcomes(spec) == expected


@settings(max_examples=200, deadline=None)
@given(specs())
def test_same_reason_for_every_rejected_target(spec: Spec) -> None:
    planner = Planner(spec)
    state = planner.initial_state()
    for workload in spec.workloads:
        _, rejections = first_rejections(planner.pipeline, planner.request(workload), state)
        fast = {r.position: r.reason for r in rejections}
        reference = {}
        for position, target in enumerate(spec.inventory.targets):
            reason, _ = judge(workload, target, target.up, dict(target.capacity))
            if reason is not None:
                reference[position] = reason
        assert fast == reference
