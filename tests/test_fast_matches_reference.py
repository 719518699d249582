"""The numpy pipeline and the plain-Python reference agree on placements and reasons."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from placed.engine.explain import first_rejections
from placed.engine.pipeline import StateWorld
from placed.engine.planner import Placement, Planner
from placed.engine.reference import ReferenceJudge, reference_plan
from placed.model import Spec
from placed.policy import tags

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
    oracle = ReferenceJudge(planner.index)
    for workload in spec.workloads:
        _, rejections = first_rejections(planner.pipeline, planner.request(workload), state)
        fast = {r.position: r.reason for r in rejections}
        reference = {}
        for position, target in enumerate(spec.inventory.targets):
            reason, _ = oracle.judge(workload, target, StateWorld(state))
            if reason is not None:
                reference[position] = reason
        assert fast == reference


@settings(max_examples=150, deadline=None)
@given(specs())
def test_posting_lists_give_the_same_answers_as_dense_rows(spec: Spec) -> None:
    # Big inventories keep tag rules as posting lists instead of dense rows; force that.
    dense = fast_outcomes(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tags, "DENSE_CELLS", 0)
        columns = Planner(spec).pipeline.filter("hard-anti-affinity").columns  # type: ignore[attr-defined]
        assert not columns.scoring.dense or not (columns.size and columns.vocabulary)
        assert fast_outcomes(spec) == dense
