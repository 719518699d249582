"""The inventory: a tree of locations whose leaves are targets."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from placed.model.dedications import Dedication
from placed.model.properties import Property

Status = Literal["up", "down"]
# How an Open Horizon agent runs: on a device, cluster-wide, or inside one namespace.
Scope = Literal["device", "cluster", "namespace"]
DEFAULT_AGENT_NAMESPACE = "openhorizon-agent"
# The architecture synonyms Open Horizon ships in its agent's and agbot's configuration
# (anax pkg/deb/horizon/etc/horizon/anax.json and anax-in-container/config/agbot.json.tmpl,
# `ArchSynonyms`). The agbot compares a node's and a service's architectures after mapping
# each through them (config/archsynonyms.go GetCanonicalArch, in
# agreementbot/agreementworker.go and consumer_protocol_handler.go), so x86_64 is amd64.
ARCH_SYNONYMS = {"x86_64": "amd64", "armhf": "arm", "aarch64": "arm64"}


def canonical_arch(arch: str) -> str:
    """The architecture as Go names it (GOARCH), which agents report: amd64 for x86_64."""
    return ARCH_SYNONYMS.get(arch, arch)


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

    def __bool__(self) -> bool:
        return bool(
            self.hard_affinity
            or self.hard_anti_affinity
            or self.soft_affinity
            or self.soft_anti_affinity
        )

    def merged(self, child: TagRules) -> TagRules:
        # Most locations add no rule: share the ancestors' rules rather than copy them.
        if not child:
            return self
        if not self:
            return child
        return TagRules(
            self.hard_affinity | child.hard_affinity,
            self.hard_anti_affinity | child.hard_anti_affinity,
            self.soft_affinity | child.soft_affinity,
            self.soft_anti_affinity | child.soft_anti_affinity,
        )


# Each rule shares what it can (an empty side adds nothing): a target of an inventory of
# a hundred thousand holds its ancestors' values, not copies of them. Nothing changes a
# resolved value afterwards (Target is frozen; its mappings are only read).
def _union(above: frozenset[str], own: frozenset[str]) -> frozenset[str]:
    return (above | own) if above and own else (own or above)


def _nearest_wins(
    above: Mapping[str, Property], own: Mapping[str, Property]
) -> Mapping[str, Property]:
    return {**above, **own} if above and own else (own or above)


def _all_hold(above: tuple[str, ...], own: tuple[str, ...]) -> tuple[str, ...]:
    return (*above, *own) if above and own else (own or above)


def _rules(above: TagRules, own: TagRules) -> TagRules:
    # Rules accumulate down the tree: a rack that refuses network3 refuses it for every
    # conductor inside it, and a child cannot take an ancestor's rule back.
    return above.merged(own)


def _nearest(above: Dedication | None, own: Dedication | None) -> Dedication | None:
    # A dedication below a dedicated ancestor carves its subtree out (seed 004's c11).
    return own if own is not None else above


def _all_up(above: Status, own: Status) -> Status:
    return "up" if above == "up" and own == "up" else "down"


def inherit(rule: Callable[[Any, Any], Any], start: Any) -> Any:
    """Declares how a location attribute passes down the tree: `rule(what the ancestors
    give, the location's own)`, starting from `start` above the roots."""
    return {"inherit": rule, "start": start}


@dataclass(frozen=True, slots=True)
class Location:
    """A node of the inventory tree as the spec declares it (nothing inherited yet).

    Each attribute that passes down the tree says how in its field's metadata (union for
    tags, nearest-wins per property name, every ancestor's constraints ANDed...); the
    rest (capacity, the agent) belong to the location alone. The owner a dedication
    gives (seed 004) will be one more: nearest wins.
    """

    id: str
    kind: str
    tags: frozenset[str] = field(default=frozenset(), metadata=inherit(_union, frozenset()))
    properties: Mapping[str, Property] = field(
        default_factory=dict, metadata=inherit(_nearest_wins, {})
    )
    constraints: tuple[str, ...] = field(default=(), metadata=inherit(_all_hold, ()))
    agent: Agent = Agent()
    rules: TagRules = field(default=TagRules(), metadata=inherit(_rules, TagRules()))
    capacity: Mapping[str, float] | None = None
    status: Status = field(default="up", metadata=inherit(_all_up, "up"))
    # Seed 004: the dedication in force here (its own, else the nearest ancestor's).
    dedication: Dedication | None = field(default=None, metadata=inherit(_nearest, None))
    children: tuple[Location, ...] = ()

    def walk(self) -> Iterator[Location]:
        # Depth first, without recursion: a tree may be deeper than Python's stack.
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


# The attributes that pass down the tree, with their rule and their value above a root.
INHERITED: tuple[tuple[str, Callable[[Any, Any], Any], Any], ...] = tuple(
    (f.name, f.metadata["inherit"], f.metadata["start"])
    for f in fields(Location)
    if "inherit" in f.metadata
)


# Kinds of target that are containers on a machine (Juju's lxc:, lxd: and kvm:).
CONTAINER_KINDS = frozenset({"lxc", "lxd", "kvm"})


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
    # The dedication in force on the target (seed 004): its own or an ancestor's.
    dedication: Dedication | None = None

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
        start = {name: first for name, _, first in INHERITED}
        # Depth first with an explicit stack (no recursion), leaves in document order.
        stack: list[tuple[Location, dict[str, Any], tuple[tuple[str, str], ...]]] = [
            (root, start, ()) for root in reversed(roots)
        ]
        while stack:
            location, above, ancestors = stack.pop()
            here = {name: rule(above[name], getattr(location, name)) for name, rule, _ in INHERITED}
            if location.children:
                inside = (*ancestors, (location.kind, location.id))
                stack.extend((child, here, inside) for child in reversed(location.children))
                continue
            targets.append(
                Target(
                    id=location.id,
                    kind=location.kind,
                    tags=here["tags"],
                    properties=here["properties"],
                    rules=here["rules"],
                    # Shared with the location (and its twins): nothing writes to it.
                    capacity=location.capacity if location.capacity is not None else {},
                    up=here["status"] == "up",
                    ancestors=ancestors,
                    constraints=here["constraints"],
                    agent=location.agent,
                    dedication=here["dedication"],
                )
            )
        return cls(roots=roots, targets=tuple(targets))

    def rededicated(self, path: Sequence[str], own: Mapping[str, Dedication | None]) -> Inventory:
        """The inventory with the dedications of some locations changed while the world
        runs (seed 004's dedicate, release, update): `own`, each location's own
        dedication now, all at or below the last location of `path` (its ids from a
        root down). Only that location's subtree and its ancestors are made again; the
        targets below it inherit their dedication in force again, the others are kept."""
        trail: list[Location] = []
        level: Sequence[Location] = self.roots
        for node in path:
            found = next((location for location in level if location.id == node), None)
            if found is None:
                raise KeyError(node)
            trail.append(found)
            level = found.children
        top = trail[-1]
        above = None
        for location in trail[:-1]:
            above = _nearest(above, location.dedication)
        built: dict[int, Location] = {}
        in_force: dict[str, Dedication | None] = {}
        # Post-order without recursion, each location's dedication in force passed down.
        stack: list[tuple[Location, Dedication | None, bool]] = [(top, above, False)]
        while stack:
            location, given, ready = stack.pop()
            mine = own.get(location.id, location.dedication)
            here = _nearest(given, mine)
            if not ready:
                stack.append((location, given, True))
                stack.extend((child, here, False) for child in location.children)
                continue
            if not location.children:
                in_force[location.id] = here
            children = tuple(built[id(child)] for child in location.children)
            built[id(location)] = replace(location, children=children, dedication=mine)
        made = built[id(top)]
        for parent, replaced in reversed(list(itertools.pairwise(trail))):
            made = replace(
                parent,
                children=tuple(made if child is replaced else child for child in parent.children),
            )
        roots = tuple(made if root is trail[0] else root for root in self.roots)
        targets = tuple(
            replace(target, dedication=in_force[target.id])
            if target.id in in_force and target.dedication != in_force[target.id]
            else target
            for target in self.targets
        )
        return Inventory(roots=roots, targets=targets)

    def locations(self) -> Iterator[Location]:
        for root in self.roots:
            yield from root.walk()

    def leaf_ids_under(self, location_id: str) -> list[str]:
        """Ids of the targets at or below a location; empty if the id is unknown."""
        for location in self.locations():
            if location.id == location_id:
                return [node.id for node in location.walk() if not node.children]
        return []
