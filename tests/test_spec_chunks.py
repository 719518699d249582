"""A large inventory is validated and built a chunk of roots at a time, each chunk's
plain data dropped once built (spec/load.py). Read in chunks of one location, every
spec must load as it does whole, and every bad spec give the same problems, word for
word and place for place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from placed.spec import SpecError, load_specs_text
from placed.spec import load as spec_load
from placed.spec.source import SourceMap

CASES_FILE = Path(__file__).parent / "data" / "spec_errors.yaml"


def outcome(spec: str) -> Any:
    try:
        specs = load_specs_text(spec, "spec.yaml")
    except SpecError as error:
        return [(p.message, p.key, p.position) for p in error.problems]
    return [(s.name, s.inventory.roots, s.inventory.targets, s.workloads) for s in specs]


def chunked(spec: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(spec_load, "_CHUNK_LOCATIONS", 1)
        return outcome(spec)


# Errors in the second chunk or later, beside errors elsewhere in the document and
# problems the model finds in an earlier chunk (a duplicate id across chunks).
SPECS = {
    "valid": """
        name: fleet
        inventory:
          - {id: z1, kind: zone, tags: [east], children: [{id: h1, capacity: {cpu: 4}}]}
          - {id: z2, kind: zone, children: [{id: h2, tags: [gpu], properties: {a: 1}}]}
          - {id: h3, capacity: {cpu: 2}}
        workloads:
          - {name: web, units: 2, resources: {cpu: 1}}
        """,
    "schema_error_in_a_later_chunk": """
        inventory:
          - {id: z1, children: [{id: h1}]}
          - {id: z2, children: [{id: h2, capacity: {cpu: lots}}]}
          - {id: h3, tagz: [x]}
        workloads:
          - {name: web, units: 2}
        """,
    "schema_errors_in_and_outside_the_inventory": """
        inventory:
          - {id: z1, children: [{id: h1}]}
          - {id: z2, children: [{id: h2, capacity: {cpu: lots}}]}
        workloads:
          - {name: web, unitz: 2}
        bogus: 1
        """,
    "schema_error_in_the_first_chunk_only": """
        inventory:
          - {id: h1, status: sideways}
          - {id: h2}
        """,
    "model_problems_across_chunks": """
        inventory:
          - {id: z1, children: [{id: h1}]}
          - {id: h1, capacity: {cpu: -1}}
          - {id: z3, capacity: {cpu: 1}, children: [{id: h3}]}
        workloads:
          - {name: web, units: 1}
          - {name: web, units: 1}
        """,
    # A fleet under one root (or a chain of them) is chunked below it.
    "one_root": """
        inventory:
          - id: world
            kind: world
            tags: [all]
            properties: {owner: ops}
            children:
              - id: region
                status: down
                children:
                  - {id: z1, kind: zone, children: [{id: h1, capacity: {cpu: 4}}]}
                  - {id: z2, kind: zone, children: [{id: h2, tags: [gpu]}]}
                  - {id: h3, capacity: {cpu: 2}}
        workloads:
          - {name: web, units: 2, resources: {cpu: 1}}
        """,
    "one_root_schema_error_in_a_later_chunk": """
        inventory:
          - id: world
            children:
              - {id: z1, children: [{id: h1}]}
              - {id: z2, children: [{id: h2, capacity: {cpu: lots}}]}
        """,
    "one_root_schema_error_in_the_root": """
        inventory:
          - id: world
            status: sideways
            children:
              - {id: h1}
              - {id: h2, tagz: [x]}
        """,
    "one_root_model_problems": """
        inventory:
          - id: world
            capacity: {cpu: 1}
            children:
              - id: region
                capacity: {cpu: -1}
                children:
                  - {id: world}
                  - {id: region, capacity: {cpu: 1}}
        """,
    "error_outside_the_inventory_only": """
        inventory:
          - {id: h1}
          - {id: h2}
        workloads:
          - {name: web, units: -3}
        """,
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_chunked_read_gives_what_a_whole_read_gives(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = SPECS[name].replace("\n        ", "\n").lstrip("\n")
    whole = outcome(spec)
    assert whole, name
    assert chunked(spec, monkeypatch) == whole


def test_every_error_case_is_reported_alike_read_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    for case in cases:
        assert chunked(case["spec"], monkeypatch) == outcome(case["spec"]), case["name"]


def test_a_chunk_is_dropped_once_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain data of each chunk is gone from the document by the time the next is
    validated: that is what lets its memory be reused."""
    data = {"inventory": [{"id": f"h{i}"} for i in range(3)]}
    seen: list[list[Any]] = []
    validate = spec_load._LOCATIONS.validate_python

    def watching(chunk: list[Any]) -> Any:
        seen.append([root["id"] for root in data["inventory"]])
        return validate(chunk)

    monkeypatch.setattr(spec_load, "_CHUNK_LOCATIONS", 1)
    monkeypatch.setattr(spec_load._LOCATIONS, "validate_python", watching)
    read = [root["id"] for root in data["inventory"]]
    spec = spec_load._document(data, SourceMap(), "spec.yaml", owned=True)
    assert [t.id for t in spec.inventory.targets] == ["h0", "h1", "h2"]
    # The ids kept are copies made before the read was let go, not the strings read.
    assert not any(t.id is r for t, r in zip(spec.inventory.targets, read, strict=True))
    assert seen == [["h0", "h1", "h2"], ["placeholder", "h1", "h2"], ["placeholder"] * 2 + ["h2"]]


def test_a_fleet_under_one_root_is_chunked_below_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """One root (and its only child) validated on their own, their children in chunks,
    each dropped once built, as a fleet of several roots is."""
    hosts = [{"id": f"h{i}"} for i in range(3)]
    data = {"inventory": [{"id": "w", "children": [{"id": "r", "children": hosts}]}]}
    seen: list[list[Any]] = []
    validate = spec_load._LOCATIONS.validate_python

    def watching(chunk: list[Any]) -> Any:
        seen.append([host["id"] for host in hosts])
        return validate(chunk)

    monkeypatch.setattr(spec_load, "_CHUNK_LOCATIONS", 1)
    monkeypatch.setattr(spec_load._LOCATIONS, "validate_python", watching)
    spec = spec_load._document(data, SourceMap(), "spec.yaml", owned=True)
    assert [t.id for t in spec.inventory.targets] == ["h0", "h1", "h2"]
    assert all([name for _, name in t.ancestors] == ["w", "r"] for t in spec.inventory.targets)
    assert seen == [["h0", "h1", "h2"], ["placeholder", "h1", "h2"], ["placeholder"] * 2 + ["h2"]]
