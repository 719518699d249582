"""Plain typed domain objects: no I/O, no numpy, no framework."""

from placed.model.inventory import Inventory, Location, TagRules, Target
from placed.model.notice import Notice
from placed.model.spec import Settings, Spec
from placed.model.workload import Mode, Workload

__all__ = [
    "Inventory",
    "Location",
    "Mode",
    "Notice",
    "Settings",
    "Spec",
    "TagRules",
    "Target",
    "Workload",
]
