"""Plain typed domain objects: no I/O, no numpy, no framework."""

from placed.model.inventory import CONTAINER_KINDS, Agent, Inventory, Location, TagRules, Target
from placed.model.notice import Notice
from placed.model.properties import Property, PropertyError, validate_properties
from placed.model.spec import Running, Settings, Spec
from placed.model.workload import Mode, Service, Workload

__all__ = [
    "CONTAINER_KINDS",
    "Agent",
    "Inventory",
    "Location",
    "Mode",
    "Notice",
    "Property",
    "PropertyError",
    "Running",
    "Service",
    "Settings",
    "Spec",
    "TagRules",
    "Target",
    "Workload",
    "validate_properties",
]
