"""The output contract: a plan, a simulation and a deploy check as JSON-ready data, and
the reason text of each placement. The CLI prints these; the service will serve them.
Everything here reads plain records (engine/outcomes.py) and the spec, never a planner.
"""

from __future__ import annotations

import copy
from collections import ChainMap
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from placed.engine.outcomes import Placement, PlanResult
from placed.model import Spec, Target, Workload
from placed.policy.base import Family


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Explainer:
    """Placements in words, from the spec and the families that planned them."""

    def __init__(
        self, spec: Spec, families: Sequence[Family], created: Sequence[Target] = ()
    ) -> None:
        self.spec = spec
        self.families = tuple(families)
        self.workloads: MutableMapping[str, Workload] = {w.name: w for w in spec.workloads}
        self._created = {target.id: target for target in created}
        self._targets: dict[str, Target] | None = None

    def rededicated(self, spec: Spec) -> None:
        """The world's spec after a dedication change (its targets carry other
        dedications): read its targets again when next asked."""
        self.spec = spec
        self._targets = None

    def seeing(self, workloads: Mapping[str, Workload]) -> Explainer:
        """This explainer, as if `workloads` were in the world too: the words of a
        decision that is not committed yet, which must leave no trace in the world's
        own workloads if the commit fails."""
        self.target_index()  # built once, here, for the view and this explainer both
        view = copy.copy(self)
        view.workloads = ChainMap(dict(workloads), self.workloads)
        return view

    def target_index(self) -> dict[str, Target]:
        if self._targets is None:
            self._targets = {t.id: t for t in self.spec.inventory.targets}
        return self._targets

    def target(self, target_id: str) -> Target:
        found = self._created.get(target_id)
        if found is not None:
            return found
        return self.target_index()[target_id]

    def describe(self, placement: Placement) -> dict[str, Any]:
        """A placement as the output contract shows it."""
        data: dict[str, Any] = {
            "workload": placement.workload,
            "unit": placement.unit,
            "target": placement.target,
            "score": placement.score,
            "via": placement.via,
            "reason": self.reason(placement),
        }
        if placement.container is not None:
            data["container"] = placement.container
        data.update(placement.details)
        if placement.cap is not None:
            data["balance"] = {
                "cap": placement.cap,
                "choice": placement.choice,
                "ranked_higher": list(placement.ahead),
            }
        workload = self.workloads[placement.workload]
        target = self.target(placement.target)
        for family in self.families:
            data.update(family.describe(workload, target))
        return data

    def reason(self, placement: Placement) -> str:
        workload = self.workloads[placement.workload]
        target = self.target(placement.target)
        terms = " ".join(
            text for text in (f.explain(workload, target) for f in self.families) if text
        )
        parts = [placement.note] if placement.note else []
        parts.append(f"score {placement.score:g}" + (f" ({terms})" if terms else ""))
        if placement.via == "every":
            parts.append(f"one of {placement.feasible}/{placement.total} compatible targets")
        elif placement.feasible == 1:
            parts.append(f"the only feasible target of {placement.total}")
        else:
            parts.append(f"best of {placement.feasible}/{placement.total} feasible targets")
        if placement.tied:
            named = ", ".join(placement.tied[:5]) + (", ..." if len(placement.tied) > 5 else "")
            parts.append(f"tie among {named} broken by rendezvous hash")
        if placement.cap is not None:
            limit = f"at most {placement.cap} units per target (max_load)"
            if placement.choice > 1:
                more = ", ..." if placement.choice - 1 > len(placement.ahead) else ""
                verb = "was" if placement.choice == 2 else "were"
                limit += (
                    f"; its {ordinal(placement.choice)} choice ({', '.join(placement.ahead)}"
                    f"{more} ranked higher but {verb} full when it was placed)"
                )
            parts.append(limit)
        # A policy's note says already whether the target was made for the unit.
        if not placement.note and placement.via not in ("policy", "every"):
            parts.append(f"created for it ({placement.via})")
        return "; ".join(parts)


def plan_document(result: PlanResult, explainer: Explainer | None = None) -> dict[str, Any]:
    """`explainer`: one already built over the result's spec (building one indexes every
    workload and target again)."""
    if explainer is None:
        explainer = Explainer(
            result.spec, result.families, [made.target for made in result.new_targets]
        )
    return {
        "placements": [explainer.describe(p) for p in result.placements],
        "unplaced": [
            {
                "workload": u.workload,
                "unit": u.unit,
                "summary": u.summary,
                "filtered": u.filtered,
            }
            for u in result.unplaced
        ],
        "new_targets": [
            {
                "id": made.target.id,
                "kind": made.target.kind,
                "for": made.unit,
                "constraints": made.constraints,
                "parent": made.parent or None,
            }
            for made in result.new_targets
        ],
        "warnings": [w.to_dict() for w in result.warnings],
        "dedications_created": [
            {
                "resource": d.resource,
                "domain": d.domain,
                "account": d.account,
                "implicit": d.implicit,
            }
            for d in result.dedications_created
        ],
        # What the spec's own dedications made (applied as the root admin), then what
        # the plan did.
        "events": [e.to_dict() for e in (*result.spec.events, *result.events)],
    }
