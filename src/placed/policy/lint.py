"""Findings about a spec that is valid but probably not what its author meant."""

from __future__ import annotations

import difflib

from placed.model import Notice, Spec
from placed.policy.namespaces import namespace_findings


def lint(spec: Spec) -> list[Notice]:
    notices: list[Notice] = []
    targets = spec.inventory.targets
    if not targets:
        notices.append(Notice("no-targets", "the inventory has no targets; nothing can be placed"))
    known: set[str] = set()
    for target in targets:
        rules = target.rules
        known |= target.tags | rules.hard_affinity | rules.hard_anti_affinity
        known |= rules.soft_affinity | rules.soft_anti_affinity
        both = sorted(rules.soft_affinity & rules.soft_anti_affinity)
        if both:
            notices.append(
                Notice(
                    "tag-in-both-soft-lists",
                    f"{', '.join(both)} is in both soft_affinity and soft_anti_affinity; "
                    "it scores -1 (anti-affinity is checked first)",
                    target=target.id,
                )
            )
    for workload in spec.workloads:
        notices.extend(
            Notice(finding.code, finding.message, workload=finding.workload)
            for finding in namespace_findings(workload)
        )
    vocabulary = sorted(known)
    for workload in spec.workloads:
        for tag in sorted(workload.tags - known):
            # A tag no target mentions is normal (it simply scores nothing); one that is a
            # near miss of a tag that does exist is probably a typo.
            close = [
                other
                for other in difflib.get_close_matches(tag, vocabulary, n=3, cutoff=0.8)
                if _letters(other) != _letters(tag)  # network1 is no typo of network3
            ][:1]
            if close:
                notices.append(
                    Notice(
                        "tag-matches-nothing",
                        f"tag {tag!r} appears on no target; did you mean {close[0]!r}?",
                        workload=workload.name,
                    )
                )
    return notices


def _letters(tag: str) -> str:
    return "".join(c for c in tag if not c.isdigit())
