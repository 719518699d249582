"""The inventory: a tree of locations whose leaves are targets."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from placed.model.properties import Property

Status = Literal["up", "down"]
# How an Open Horizon agent runs: on a device, cluster-wide, or inside one namespace.
Scope = Literal["device", "cluster", "namespace"]
DEFAULT_AGENT_NAMESPACE = "openhorizon-agent"


@dataclass(frozen=True, slots=True)
class Agent:
    """What an edge node's agent reports about itself (seed 002's node built-ins)."""

    scope: Scope = "device"
    namespace: str | None = None  # where a cluster agent runs; openhorizon-agent if unset
    arch: str | None = None
    hardware_id: str | None = None
    kubernetes_version: str | None = None

    @property
    def agent_namespace(self) -> str | None:
        if self.scope == "device":
            return None
        return self.namespace or DEFAULT_AGENT_NAMESPACE


@dataclass(frozen=True, slots=True)
class TagRules:
    """Seed 001's four rule lists, as a target holds them."""

    hard_affinity: frozenset[str] = frozenset()
    hard_anti_affinity: frozenset[str] = frozenset()
    soft_affinity: frozenset[str] = frozenset()
    soft_anti_affinity: frozenset[str] = frozenset()

    def merged(self, child: TagRules) -> TagRules:
        # Rules accumulate down the tree: a rack that refuses network3 refuses it for every
        # conductor inside it, and a child cannot take an ancestor's rule back.
        return TagRules(
            self.hard_affinity | child.hard_affinity,
            self.hard_anti_affinity | child.hard_anti_affinity,
            self.soft_affinity | child.soft_affinity,
            self.soft_anti_affinity | child.soft_anti_affinity,
        )


@dataclass(frozen=True, slots=True)
class Location:
    """A node of the inventory tree as the spec declares it (nothing inherited yet)."""

    id: str
    kind: str
    tags: frozenset[str] = frozenset()
    properties: Mapping[str, Property] = field(default_factory=dict)
    constraints: tuple[str, ...] = ()
    agent: Agent = Agent()
    rules: TagRules = TagRules()
    capacity: Mapping[str, float] | None = None
    status: Status = "up"
    children: tuple[Location, ...] = ()

    def walk(self) -> Iterator[Location]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True, slots=True)
class Target:
    """A leaf of the inventory with everything it inherits resolved."""

    id: str
    kind: str
    tags: frozenset[str]
    properties: Mapping[str, Property]
    rules: TagRules
    capacity: Mapping[str, float]
    up: bool
    # (kind, id) of each ancestor, outermost first: where the target sits.
    ancestors: tuple[tuple[str, str], ...] = ()
    # Its own constraint expressions and those of its ancestors, all of which must hold.
    constraints: tuple[str, ...] = ()
    agent: Agent = Agent()

    @property
    def scored_tags(self) -> frozenset[str]:
        """Tags that add +1 when a workload carries them.

        The target's own tags count (seed 001's first form: conductors scored by how many
        node tags they share), and so do its soft-affinity tags (the Edit2 form). A tag that
        is also soft-anti-affine counts -1 instead, as the seed's pseudo-code checks
        anti-affinity first.
        """
        return (self.tags | self.rules.soft_affinity) - self.rules.soft_anti_affinity


@dataclass(frozen=True)
class Inventory:
    roots: tuple[Location, ...]
    targets: tuple[Target, ...]

    @classmethod
    def from_roots(cls, roots: tuple[Location, ...]) -> Inventory:
        targets: list[Target] = []
        for root in roots:
            _resolve(root, (), frozenset(), {}, (), TagRules(), True, targets)
        return cls(roots=roots, targets=tuple(targets))

    def locations(self) -> Iterator[Location]:
        for root in self.roots:
            yield from root.walk()

    def leaf_ids_under(self, location_id: str) -> list[str]:
        """Ids of the targets at or below a location; empty if the id is unknown."""
        for location in self.locations():
            if location.id == location_id:
                return [node.id for node in location.walk() if not node.children]
        return []


def _resolve(
    location: Location,
    ancestors: tuple[tuple[str, str], ...],
    tags: frozenset[str],
    properties: dict[str, Property],
    constraints: tuple[str, ...],
    rules: TagRules,
    up: bool,
    out: list[Target],
) -> None:
    tags = tags | location.tags
    properties = {**properties, **location.properties}
    constraints = (*constraints, *location.constraints)
    rules = rules.merged(location.rules)
    up = up and location.status == "up"
    if not location.children:
        out.append(
            Target(
                id=location.id,
                kind=location.kind,
                tags=tags,
                properties=properties,
                rules=rules,
                capacity=dict(location.capacity or {}),
                up=up,
                ancestors=ancestors,
                constraints=constraints,
                agent=location.agent,
            )
        )
        return
    for child in location.children:
        _resolve(
            child,
            (*ancestors, (location.kind, location.id)),
            tags,
            properties,
            constraints,
            rules,
            up,
            out,
        )
