"""What moved where, as a picture: the targets a change touches, grouped by zone in
columns, and an arrow from where units were to where they go, labelled with how many.
Pure functions of the moves the API answered; the template draws the SVG. The picture
repeats the diff table beside it (its text equivalent): nothing in it is said by colour
alone, each arrow carries its count and each target box what happens to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A target box per involved target up to this many, an arrow per target pair up to
# MAX_PAIRS: past either, one box per zone and an arrow per zone pair (and it says so).
MAX_TARGETS = 120
MAX_PAIRS = 300
NOWHERE = "(nowhere)"  # the end of a unit placed from nothing, or removed, or unplaced
OUTSIDE = "not on a target"
NO_ZONE = "(no zone)"

COLUMN_W = 200
GAP_W = 140
BOX_H = 40
BOX_GAP = 8
TOP = 48
LABEL_CHARS = 22


@dataclass
class Box:
    name: str
    label: str
    note: str
    x: int
    y: int
    w: int = COLUMN_W
    h: int = BOX_H


@dataclass
class Arrow:
    source: str
    destination: str
    count: int
    path: str
    label_x: int
    label_y: int
    title: str
    dashed: bool


@dataclass
class Column:
    zone: str
    label: str
    x: int
    boxes: list[Box] = field(default_factory=list)


@dataclass
class Picture:
    columns: list[Column]
    arrows: list[Arrow]
    width: int
    height: int
    by_zone: bool
    moves: int
    summary: str


def short(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def zone_of(
    target: str | None,
    parents: Mapping[str, Any],
    kinds: Mapping[str, str],
    target_parents: Mapping[str, str | None],
) -> str:
    """The zone a target is in: its nearest ancestor of kind zone, else the root of its
    location chain (bounded: a cycle cannot hang a page)."""
    if target is None:
        return OUTSIDE
    place = target_parents.get(target)
    top: str | None = None
    seen = 0
    while place is not None and seen < 64:
        if kinds.get(place) == "zone":
            return place
        top = place
        place = parents.get(place)
        seen += 1
    return top or NO_ZONE


def draw(
    moves: Sequence[Mapping[str, Any]],
    zones: Mapping[str, str],
    changing: Mapping[str, str],
) -> Picture | None:
    """The picture of `moves` (the API's: unit, from, to), each target in the zone
    `zones` gives it; `changing`: the targets whose state the change sets (shown in
    words on their boxes). None: nothing moves."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for move in moves:
        pair = (move.get("from") or NOWHERE, move.get("to") or NOWHERE)
        if pair != (NOWHERE, NOWHERE):  # a pending unit removed: in the table alone
            pairs.setdefault(pair, []).append(str(move.get("unit", "")))
    if not pairs:
        return None
    involved = ({name for pair in pairs for name in pair} | set(changing)) - {NOWHERE}
    by_zone = len(involved) > MAX_TARGETS or len(pairs) > MAX_PAIRS

    def zone(name: str) -> str:
        return OUTSIDE if name == NOWHERE else zones.get(name, NO_ZONE)

    if by_zone:
        grouped: dict[tuple[str, str], list[str]] = {}
        for (source, destination), units in pairs.items():
            grouped.setdefault((zone(source), zone(destination)), []).extend(units)
        pairs = grouped
        members: dict[str, list[str]] = {z: [z] for pair in pairs for z in pair}
    else:
        members = {}
        ends = {name for pair in pairs for name in pair}
        for name in sorted(involved) + ([NOWHERE] if NOWHERE in ends else []):
            members.setdefault(zone(name), []).append(name)
    order = sorted(members, key=lambda z: (z == OUTSIDE, z))
    columns: list[Column] = []
    where: dict[str, tuple[Box, int]] = {}
    leaving: dict[str, int] = {}
    arriving: dict[str, int] = {}
    for (source, destination), units in pairs.items():
        leaving[source] = leaving.get(source, 0) + len(units)
        arriving[destination] = arriving.get(destination, 0) + len(units)
    for index, name in enumerate(order):
        x = 10 + index * (COLUMN_W + GAP_W)
        column = Column(name, short(name), x)
        for row, member in enumerate(members[name]):
            notes = []
            if member in changing:
                state = changing[member]
                notes.append("goes into maintenance" if state == "maintenance" else f"goes {state}")
            if leaving.get(member):
                notes.append(f"{leaving[member]} out")
            if arriving.get(member):
                notes.append(f"{arriving[member]} in")
            box = Box(member, short(member), ", ".join(notes), x, TOP + row * (BOX_H + BOX_GAP))
            column.boxes.append(box)
            where[member] = (box, index)
        columns.append(column)
    arrows = []
    for (source, destination), units in sorted(pairs.items()):
        arrows.append(_arrow(source, destination, units, where))
    tallest = max(len(c.boxes) for c in columns)
    height = TOP + tallest * (BOX_H + BOX_GAP) + 20
    width = 20 + len(columns) * COLUMN_W + (len(columns) - 1) * GAP_W + 80
    count = sum(len(units) for units in pairs.values())
    unseen = len(moves) - count
    summary = (
        f"{count} unit move{'s' if count != 1 else ''} between "
        + (
            f"{len(columns)} zone{'s' if len(columns) != 1 else ''}, one arrow per pair of "
            f"zones: more than {MAX_TARGETS} targets or {MAX_PAIRS} target pairs are "
            "drawn by zone"
            if by_zone
            else f"{len(involved)} target{'s' if len(involved) != 1 else ''} in "
            f"{len(columns)} column{'s' if len(columns) != 1 else ''} by zone, one arrow per "
            "pair of targets "
            "labelled with how many units take it"
        )
        + (
            f"; {unseen} pending unit{'s' if unseen != 1 else ''} removed, on no target "
            "before or after, only in the table"
            if unseen
            else ""
        )
    )
    return Picture(columns, arrows, width, height, by_zone, count, summary)


def _arrow(
    source: str, destination: str, units: list[str], where: Mapping[str, tuple[Box, int]]
) -> Arrow:
    start, start_column = where[source]
    end, end_column = where[destination]
    sy = start.y + start.h // 2
    ey = end.y + end.h // 2
    if end_column > start_column:
        sx, ex = start.x + start.w, end.x - 6
        path = f"M{sx},{sy} C{sx + 60},{sy} {ex - 60},{ey} {ex},{ey}"
        lx, ly = (sx + ex) // 2, (sy + ey) // 2 - 4
    elif end_column < start_column:
        sx, ex = start.x, end.x + end.w + 6
        path = f"M{sx},{sy} C{sx - 60},{sy} {ex + 60},{ey} {ex},{ey}"
        lx, ly = (sx + ex) // 2, (sy + ey) // 2 - 4
    else:  # the same column: a bow out to its right
        sx = ex = start.x + start.w
        bow = sx + 40 + min(abs(ey - sy) // 3, 60)
        ex += 6
        path = f"M{sx},{sy} C{bow},{sy} {bow},{ey} {ex},{ey}"
        lx, ly = bow - 8, (sy + ey) // 2
    shown = ", ".join(units[:10]) + (f" and {len(units) - 10} more" if len(units) > 10 else "")
    title = f"{len(units)} from {source} to {destination}: {shown}"
    return Arrow(
        source,
        destination,
        len(units),
        path,
        lx,
        ly,
        title,
        NOWHERE in (source, destination) or OUTSIDE in (source, destination),
    )
