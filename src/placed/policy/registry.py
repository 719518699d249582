"""The policy families, in pipeline order. The pipeline, the reference oracle, `placed
check` and the README's table of filters all read this list; adding a family is its
module, its spec section, its tests and one line here (DEVELOPERS.md has the recipe).

Order matters for explanations: a target is charged to the first filter that rejects
it, so policy that never changes during a plan (tags, constraints) comes before what
changes as units land (distinct, capacity).
"""

from __future__ import annotations

from placed.policy.base import Family
from placed.policy.capacity import Capacity
from placed.policy.constraints import Constraints
from placed.policy.distinct import DistinctFamily
from placed.policy.namespaces import Namespaces
from placed.policy.status import Status
from placed.policy.tags import Tags

FAMILIES: tuple[Family, ...] = (
    Status(),
    Namespaces(),
    Tags(),
    Constraints(),
    DistinctFamily(),
    Capacity(),
)
