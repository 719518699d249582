"""`placed explain`: one unit's decision, target by target, as the plan saw it.

The plan is replayed up to the unit; the state just before it was judged (the units
placed before it, the capacity they took, what `distinct` counts) is kept, and every
target is judged in it with every failing filter listed, not only the first. That is
where "rack r2 already holds web/0" shows: a per-target reason that depends on what the
plan had done by then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placed.engine import loop
from placed.engine.explain import Verdict, verdicts
from placed.engine.outcomes import Outcome, Placement, PlanResult
from placed.engine.planner import Planner
from placed.engine.report import Explainer
from placed.policy.lint import lint


class UnknownUnitError(ValueError):
    """A unit the plan does not have."""


@dataclass(frozen=True, slots=True)
class UnitTrace:
    outcome: Outcome
    result: PlanResult
    verdicts: list[Verdict]


def trace(planner: Planner, unit: str, brief: bool = False) -> UnitTrace:
    """`brief`: the plan stops once the unit is judged, and lint is not run: the result
    holds no later outcome and no warning, which `trace_document` does not read."""
    warnings = [] if brief else lint(planner.spec, planner.families)
    result = PlanResult(planner.spec, planner.families, warnings=warnings)
    context = loop.Context(
        planner.judge, planner.initial_state(), result, watch=unit, until_watched=brief
    )
    result.outcomes = loop.run(context, planner.spec.workloads)
    result.new_targets = list(context.state.created)
    outcome = result.by_unit().get(unit)
    if outcome is None or context.seen is None:
        raise UnknownUnitError(unit)
    workload = planner.workloads[outcome.workload]
    found = verdicts(planner.pipeline, planner.request(workload), context.seen)
    return UnitTrace(outcome, result, found)


def trace_document(found: UnitTrace) -> dict[str, Any]:
    """`placed explain`: the unit's outcome and every target's verdict when it was judged."""
    outcome = found.outcome
    data: dict[str, Any] = {"unit": outcome.unit, "workload": outcome.workload}
    if isinstance(outcome, Placement):
        explainer = Explainer(
            found.result.spec, found.result.families, [m.target for m in found.result.new_targets]
        )
        data.update(
            placed=True,
            target=outcome.target,
            reason=explainer.reason(outcome),
            summary=None,
            filtered=None,
        )
    else:
        data.update(
            placed=False,
            target=None,
            reason=None,
            summary=outcome.summary,
            filtered=outcome.filtered,
        )
    data["targets"] = [
        {
            "target": verdict.target,
            "compatible": verdict.compatible,
            # A score ranks only the targets a unit may use.
            "score": verdict.score if verdict.compatible else None,
            "reasons": [{"filter": r.filter, "message": r.text} for r in verdict.reasons],
        }
        for verdict in found.verdicts
    ]
    return data
