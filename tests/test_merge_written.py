"""store/merge.py's record of what the documents wrote: the apply delta
(operations/live_apply.py) compares the world's large maps only at those keys, so a key the
merge changes but does not record would let a change of the inventory pass as workloads
alone."""

from __future__ import annotations

from typing import Any

import pytest

from placed.operations.live_apply import difference
from placed.spec.schema import SpecDocument
from placed.store import merge
from placed.store.world import Snapshot

FIRST: dict[str, Any] = {
    "name": "fleet",
    "inventory": [
        {
            "id": "z1",
            "children": [
                {"id": "r1", "children": [{"id": "h1", "capacity": {"cpu": 4}}]},
                {"id": "h2", "capacity": {"cpu": 4}},
            ],
        },
        {"id": "h3", "capacity": {"cpu": 2}},
    ],
    "workloads": [
        {"name": "web", "units": 2, "resources": {"cpu": 1}},
        {"name": "db", "units": 1, "resources": {"cpu": 1}},
    ],
    "running": [{"unit": "web/0", "target": "h1"}, {"unit": "web/1", "target": "h3"}],
}


def document(data: dict[str, Any]) -> SpecDocument:
    return SpecDocument.model_validate(data)


def stored() -> Snapshot:
    return merge.apply(Snapshot(revision=1), [document(FIRST)]).after


def changed_keys(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


CHANGES: dict[str, dict[str, Any]] = {
    "the same again": FIRST,
    "a count": {**FIRST, "workloads": [{**FIRST["workloads"][0], "units": 3}]},
    "a rack gone, its host moved up": {
        **FIRST,
        "inventory": [
            {"id": "z1", "children": [{"id": "h1", "capacity": {"cpu": 4}}]},
            {"id": "h3", "capacity": {"cpu": 2}},
        ],
        "running": [],
    },
    "a target gone with what runs on it": {
        **FIRST,
        "inventory": [FIRST["inventory"][0]],
        "running": [{"unit": "web/0", "target": "h1"}],
    },
    "a capacity": {
        **FIRST,
        "inventory": [FIRST["inventory"][0], {"id": "h3", "capacity": {"cpu": 8}}],
    },
    "a unit said to run elsewhere": {**FIRST, "running": [{"unit": "web/0", "target": "h2"}]},
    "a unit said to run on no target": {**FIRST, "running": [{"unit": "db/0", "target": "h9"}]},
    "a document's default mode": {**FIRST, "settings": {"default_mode": "mapping"}},
}


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_every_changed_key_is_written(change: str, prune: bool) -> None:
    before = stored()
    applied = merge.apply(before, [document(CHANGES[change])], prune)
    after, written = applied.after, applied.written
    for key in ("nodes", "parents", "node_documents", "targets"):
        assert changed_keys(getattr(before, key), getattr(after, key)) <= written.nodes, key
    for key in ("units", "placements"):
        assert changed_keys(getattr(before, key), getattr(after, key)) <= written.units, key
    for key in ("workloads", "workload_specs"):
        assert changed_keys(getattr(before, key), getattr(after, key)) <= written.workloads, key


@pytest.mark.parametrize(
    ("change", "workloads_alone"),
    [
        ("the same again", True),
        ("a count", True),
        ("a rack gone, its host moved up", False),
        ("a target gone with what runs on it", False),
        ("a capacity", False),
        ("a unit said to run elsewhere", False),
        ("a unit said to run on no target", False),
        ("a document's default mode", False),
    ],
)
def test_the_delta_takes_workloads_alone(change: str, workloads_alone: bool) -> None:
    found = difference(stored(), [document(CHANGES[change])], prune=True)
    assert (found is not None) == workloads_alone
    if change == "a count":
        assert found is not None
        assert [spec.name for spec, _ in found.counted] == ["web"]
        assert found.deleted == ["db"]  # pruned: the document names it no more
