"""The fleet as the console draws it: the location tree, each target's place in it and
the owner a dedication gives it, own or inherited from the nearest dedicated ancestor.
Everything here is a pure function of what the API answered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    name: str
    kind: str
    owner: Mapping[str, Any] | None
    children: list[Node] = field(default_factory=list)


def tree(locations: Sequence[Mapping[str, Any]], owned: Mapping[str, Any]) -> list[Node]:
    """The roots of the location tree, children by name."""
    nodes = {
        str(row["name"]): Node(str(row["name"]), str(row["kind"]), owned.get(str(row["name"])))
        for row in locations
    }
    roots: list[Node] = []
    for row in locations:
        parent = row.get("parent")
        node = nodes[str(row["name"])]
        if parent is not None and str(parent) in nodes:
            nodes[str(parent)].children.append(node)
        else:
            roots.append(node)
    return roots


def flat(roots: Iterable[Node], depth: int = 0) -> list[tuple[int, Node]]:
    """Each node with its depth, parents first: the options of a select."""
    found: list[tuple[int, Node]] = []
    for node in roots:
        found.append((depth, node))
        found.extend(flat(node.children, depth + 1))
    return found


def chain(name: str | None, parents: Mapping[str, str | None], limit: int = 64) -> list[str]:
    """`name` and its ancestors, nearest first (bounded: a cycle cannot hang a page)."""
    found: list[str] = []
    while name is not None and len(found) < limit and name not in found:
        found.append(name)
        name = parents.get(name)
    return found


@dataclass(frozen=True)
class Owner:
    domain: str
    account: str | None
    implicit: bool
    inherited_from: str | None
    kind: str

    @property
    def label(self) -> str:
        return f"{self.domain} / {self.account}" if self.account else self.domain


def owner_of(
    target: str,
    parent: str | None,
    parents: Mapping[str, str | None],
    owned: Mapping[str, Mapping[str, Any]],
) -> Owner | None:
    """The dedication that applies to the target: its own, else its nearest ancestor's."""
    for place in [target, *chain(parent, parents)]:
        found = owned.get(place)
        if found is not None:
            return Owner(
                str(found["domain"]),
                found.get("account"),
                bool(found.get("implicit")),
                None if place == target else place,
                str(found.get("kind", "")),
            )
    return None


def owner_row(row: Mapping[str, Any]) -> Owner:
    """A target's owner as GET /v1/owners answers it."""
    return Owner(
        str(row["domain"]),
        row.get("account"),
        bool(row.get("implicit")),
        row.get("inherited_from"),
        str(row.get("kind", "")),
    )


def owner_key(row: Mapping[str, Any]) -> str:
    """A dedication's owner as the filter names it: DOMAIN, or DOMAIN/ACCOUNT."""
    return f"{row['domain']}/{row['account']}" if row.get("account") else str(row["domain"])


def bars(target: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per resource: used, capacity and the share used, in percent (0 to 100)."""
    found = []
    capacity: Mapping[str, float] = target.get("capacity", {})
    used: Mapping[str, float] = target.get("used", {})
    for name in sorted(capacity):
        total = float(capacity[name])
        taken = float(used.get(name, 0.0))
        share = 0.0 if total <= 0 else min(100.0, max(0.0, 100.0 * taken / total))
        found.append({"name": name, "used": taken, "capacity": total, "percent": round(share)})
    return found
