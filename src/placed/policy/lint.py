"""Findings about a spec that is valid but probably not what its author meant: the
generic ones here, and each family's own (`Family.lint`), in registry order."""

from __future__ import annotations

from collections.abc import Sequence

from placed.model import Notice, Spec
from placed.policy.base import Family
from placed.policy.directives import creates_targets


def lint(spec: Spec, families: Sequence[Family] | None = None) -> list[Notice]:
    if families is None:
        from placed.policy.registry import FAMILIES  # the registry imports every family

        families = FAMILIES
    notices: list[Notice] = list(spec.notices)
    # A Juju file's units get machines made for them: no targets yet is what it means.
    if not spec.inventory.targets and not any(creates_targets(w) for w in spec.workloads):
        notices.append(Notice("no-targets", "the inventory has no targets; nothing can be placed"))
    for family in families:
        notices.extend(family.lint(spec))
    return notices
