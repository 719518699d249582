"""Juju placement directives (juju-deployer and bundle `to:` entries) and Juju
constraint strings, parsed into typed values."""

from __future__ import annotations

from placed.model.juju_constraints import ConstraintError, JujuConstraints, parse_constraints
from placed.spec.juju.directives import (
    Container,
    Directive,
    DirectiveError,
    DirectivesError,
    NewMachine,
    OnMachine,
    ProviderPlacement,
    Style,
    UnitConstraints,
    WithUnit,
    parse_bundle,
    parse_deployer,
    parse_entry,
    parse_to,
)

__all__ = [
    "ConstraintError",
    "Container",
    "Directive",
    "DirectiveError",
    "DirectivesError",
    "JujuConstraints",
    "NewMachine",
    "OnMachine",
    "ProviderPlacement",
    "Style",
    "UnitConstraints",
    "WithUnit",
    "parse_bundle",
    "parse_constraints",
    "parse_deployer",
    "parse_entry",
    "parse_to",
]
