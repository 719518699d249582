"""Targets of a large fleet share the values they repeat instead of each holding a copy
(100,000 targets in under 2 KiB each): equal property sets, capacities and agents are
one object, and reading a second spec gives it values equal to, never changed by, the
first's."""

from __future__ import annotations

from placed.spec import load_spec_text

SPEC = """
inventory:
  - id: r1
    kind: rack
    tags: [rack1]
    children:
      - {id: h1, tags: [fast], arch: arm64, capacity: {cpu: 8, memory: 32},
         properties: {purpose: lab, gpu: true, version: 2.3.1}}
      - {id: h2, tags: [fast], arch: arm64, capacity: {cpu: 8, memory: 32},
         properties: {purpose: lab, gpu: true, version: 2.3.1}}
      - {id: h3, tags: [slow], arch: amd64, capacity: {cpu: 4, memory: 32},
         properties: {purpose: lab, gpu: false, version: 2.3.1}}
"""


def test_equal_values_are_one_object() -> None:
    h1, h2, h3 = load_spec_text(SPEC).inventory.targets
    assert h1.properties is h2.properties
    assert h1.capacity is h2.capacity
    assert h1.agent is h2.agent
    # Values that differ stay apart; a value the sets share is still one Property.
    assert h3.properties is not h1.properties and h3.capacity is not h1.capacity
    assert h3.agent is not h1.agent
    assert h3.properties["purpose"] is h1.properties["purpose"]
    assert dict(h3.capacity) == {"cpu": 4, "memory": 32}


def test_a_second_spec_reads_its_own_values() -> None:
    first = load_spec_text(SPEC).inventory.targets
    other = SPEC.replace("cpu: 8", "cpu: 16").replace("purpose: lab, gpu: true", "purpose: x")
    second = load_spec_text(other).inventory.targets
    assert dict(first[0].capacity) == {"cpu": 8, "memory": 32}
    assert dict(second[0].capacity) == {"cpu": 16, "memory": 32}
    assert second[0].properties["purpose"].value == "x"
    assert first[0].properties["purpose"].value == "lab"


def test_values_equal_in_python_but_written_apart_stay_apart() -> None:
    spec = (
        "inventory:\n  - {id: a, properties: {n: -0.0, b: true}}\n"
        "  - {id: b, properties: {n: 0.0, b: 1}}\n"
    )
    a, b = load_spec_text(spec).inventory.targets
    assert str(a.properties["n"].value) == "-0.0" and str(b.properties["n"].value) == "0.0"
    assert a.properties["b"].value is True and b.properties["b"].value == 1.0
    assert b.properties["b"].kind == "number"
