"""Findings about a spec that is valid but probably not what its author meant: the
generic ones here, and each family's own (`Family.lint`), in registry order."""

from __future__ import annotations

from collections.abc import Sequence

from placed.model import Notice, Spec
from placed.policy.base import Family


def lint(spec: Spec, families: Sequence[Family] | None = None) -> list[Notice]:
    if families is None:
        from placed.policy.registry import FAMILIES  # the registry imports every family

        families = FAMILIES
    notices: list[Notice] = []
    if not spec.inventory.targets:
        notices.append(Notice("no-targets", "the inventory has no targets; nothing can be placed"))
    for family in families:
        notices.extend(family.lint(spec))
    return notices
