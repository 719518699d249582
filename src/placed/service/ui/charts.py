"""The console's pictures, as numbers a template draws: a zone's capacity against its use
per resource (its targets down counted apart), and a workload's units per place of one
level. Bars are HTML widths in whole percent (CSS classes, as the CSP allows no inline
style), each beside its numbers, so nothing rests on a bar's length or colour alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def percent(part: float, whole: float) -> int:
    """0 to 100: the share, rounded; a part of nothing is 0."""
    if whole <= 0:
        return 0
    return round(min(100.0, max(0.0, 100.0 * part / whole)))


def zones(usage: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per place: its up and down counts, and per resource used / capacity over its up
    targets, with the down targets' capacity beside it."""
    found = []
    for row in usage:
        resources = row.get("resources", {})
        down = row.get("down_resources", {})
        bars = []
        for name in sorted(set(resources) | set(down)):
            up = resources.get(name, {"capacity": 0.0, "used": 0.0})
            off = down.get(name, {"capacity": 0.0, "used": 0.0})
            capacity, used = float(up["capacity"]), float(up["used"])
            bars.append(
                {
                    "name": name,
                    "capacity": capacity,
                    "used": used,
                    "free": max(0.0, capacity - used),
                    "percent": percent(used, capacity),
                    "down_capacity": float(off["capacity"]),
                }
            )
        found.append(
            {
                "name": row.get("name"),
                "up": int(row.get("up", 0)),
                "down": int(row.get("down", 0)),
                "bars": bars,
            }
        )
    return found


def spread(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A bar per place, the longest for the place with most units (the widths compare
    places with one another; the numbers say how many)."""
    most = max((int(i["units"]) for i in items), default=0)
    return [
        {"name": i.get("name"), "units": int(i["units"]), "percent": percent(i["units"], most)}
        for i in items
    ]
