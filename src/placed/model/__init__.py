"""Plain typed domain objects: no I/O, no numpy, no framework."""

from placed.model.inventory import CONTAINER_KINDS, Agent, Inventory, Location, TagRules, Target
from placed.model.notice import Notice
from placed.model.properties import Property, PropertyError, validate_properties
from placed.model.spec import Running, Settings, Spec
from placed.model.workload import (
    AffinityTerm,
    Avoid,
    Mode,
    Near,
    Service,
    Spread,
    SpreadTerm,
    TermMode,
    Workload,
)

__all__ = [
    "CONTAINER_KINDS",
    "AffinityTerm",
    "Agent",
    "Avoid",
    "Inventory",
    "Location",
    "Mode",
    "Near",
    "Notice",
    "Property",
    "PropertyError",
    "Running",
    "Service",
    "Settings",
    "Spec",
    "Spread",
    "SpreadTerm",
    "TagRules",
    "Target",
    "TermMode",
    "Workload",
    "validate_properties",
]
