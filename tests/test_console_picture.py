"""The what-if page's picture of what moved where (service/ui/picture.py): one arrow per
pair of targets with its count, grouped by zone, and drawn by zone past its bounds."""

from __future__ import annotations

from placed.service.ui import picture


def moves(count: int, targets: int) -> list[dict[str, str | None]]:
    return [
        {"unit": f"w/{i}", "from": f"h{i % targets}", "to": f"h{(i + 1) % targets}"}
        for i in range(count)
    ]


def zones(targets: int) -> dict[str, str]:
    return {f"h{i}": f"z{i % 3}" for i in range(targets)}


def test_each_pair_of_targets_is_one_arrow_with_its_count() -> None:
    found = [*moves(200, 20), {"unit": "new/0", "from": None, "to": "h1"}]
    drawn = picture.draw(found, zones(20), {"h0": "down"})
    assert drawn is not None and not drawn.by_zone
    assert len(drawn.arrows) == 21  # h_i -> h_i+1 for 20 targets, and nowhere -> h1
    assert sum(a.count for a in drawn.arrows) == 201 == drawn.moves
    assert [c.zone for c in drawn.columns] == ["z0", "z1", "z2", picture.OUTSIDE]
    box = next(b for c in drawn.columns for b in c.boxes if b.name == "h0")
    assert box.note == "goes down, 10 out, 10 in"
    assert "21 targets" not in drawn.summary and "20 targets" in drawn.summary
    new = next(a for a in drawn.arrows if a.source == picture.NOWHERE)
    assert new.dashed and new.title.startswith("1 from (nowhere) to h1: new/0")


def test_past_its_bounds_the_picture_is_drawn_by_zone_and_says_so() -> None:
    many = picture.MAX_TARGETS + 30
    drawn = picture.draw(moves(400, many), zones(many), {})
    assert drawn is not None and drawn.by_zone
    assert {a.source for a in drawn.arrows} <= {"z0", "z1", "z2"}
    assert sum(a.count for a in drawn.arrows) == 400
    assert len(drawn.arrows) <= 9
    assert "drawn by zone" in drawn.summary
    long = next(a for a in drawn.arrows if a.count > 10)
    assert "and " in long.title and " more" in long.title  # ten units named, then a count


def test_nothing_to_draw_and_zones_from_the_tree() -> None:
    assert picture.draw([], {}, {}) is None
    assert picture.draw([{"unit": "p/0", "from": None, "to": None}], {}, {}) is None
    parents = {"c1": "p1", "p1": "z1", "z1": None, "r": None}
    kinds = {"c1": "cluster", "p1": "pod", "z1": "zone", "r": "region"}
    assert picture.zone_of("h", parents, kinds, {"h": "c1"}) == "z1"
    assert picture.zone_of("g", parents, kinds, {"g": "r"}) == "r"  # no zone: the root
    assert picture.zone_of("f", parents, kinds, {}) == picture.NO_ZONE
    looped = {"a": "b", "b": "a"}
    assert picture.zone_of("h", looped, {}, {"h": "a"}) in ("a", "b")
