"""The policy families, in pipeline order. The pipeline, the reference oracle, `placed
check` and the README's table of filters all read this list; adding a family is its
module, its spec section, its tests and one line here (DEVELOPERS.md has the recipe).

Order matters for explanations: a target is charged to the first filter that rejects
it, so policy that never changes during a plan (tags, constraints) comes before what
changes as units land (distinct, spread, near and avoid, capacity).
"""

from __future__ import annotations

from placed.policy.affinity import AffinityFamily
from placed.policy.base import Family
from placed.policy.capacity import Capacity
from placed.policy.constraints import Constraints
from placed.policy.dedication import Dedication
from placed.policy.directives import Directives
from placed.policy.distinct import DistinctFamily
from placed.policy.namespaces import Namespaces
from placed.policy.services import Services
from placed.policy.spread import SpreadFamily
from placed.policy.status import Status
from placed.policy.tags import Tags

FAMILIES: tuple[Family, ...] = (
    Status(),
    Namespaces(),
    Tags(),
    Constraints(),
    Services(),
    Dedication(),
    Directives(),
    DistinctFamily(),
    SpreadFamily(),
    AffinityFamily(),
    Capacity(),
)


def markdown_table(families: tuple[Family, ...] = FAMILIES) -> str:
    """The README's table of filters and scorers, in pipeline order (a test holds the
    README to it; print it with `python -m placed.policy.registry`)."""
    # Named for what a reader knows (the tool whose behaviour the family follows), not by
    # the number of a design document the reader cannot open.
    origins = {
        "core": "every spec",
        "000": "Juju placement",
        "001": "Ironic conductor affinity",
        "002": "Open Horizon",
        "004": "CloudStack dedication",
    }
    rows = [
        "| step | name | family | from | rejects a target when (filter), or scores (scorer) |",
        "|---|---|---|---|---|",
    ]
    for family in families:
        for f in family.filter_types:
            rows.append(
                f"| filter | `{f.name}` | {family.name} | {origins.get(family.seed, family.seed)} "
                f"| {f.summary} |"
            )
    for family in families:
        for s in family.scorer_types:
            rows.append(
                f"| scorer | `{s.name}` | {family.name} | {origins.get(family.seed, family.seed)} "
                f"| {s.summary} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
