"""Constraint columns over a whole inventory, built from each target's properties and
its built-ins' plain values (node_columns), answer as the plain-Python reference does on
each target's node_properties."""

from __future__ import annotations

from placed.model.properties import validate_properties
from placed.policy.builtins import node_columns, node_properties
from placed.policy.expressions import parse_constraint
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import satisfied
from placed.spec import load_spec_text

SPEC = """
inventory:
  - id: z1
    kind: zone
    children:
      - id: r1
        kind: rack
        children:
          - {id: h1, capacity: {cpu: 4, memory: 16}, properties: {purpose: lab, n: 1}}
          - {id: h2, capacity: {cpu: 8}, properties: {purpose: "lab,edge", n: true}}
          - {id: h3, properties: {purpose: [edge], n: 1.0}}
          - id: h4
            scope: cluster
            arch: arm64
            kubernetes_version: 1.29.1
            properties: {purpose: "x,x", version: 2.3.1}
  - {id: h5, capacity: {cpu: 4.5}}
"""

CONSTRAINTS = [
    'placed.id == "h2"',
    'placed.id in "h1,h3,z1"',
    "placed.zone == z1",
    "placed.rack != r1",
    "openhorizon.cpu >= 4",
    "openhorizon.cpu == 4.5",
    "openhorizon.memory < 32",
    "openhorizon.arch == arm64",
    "openhorizon.kubernetesVersion in [1.29.0,2.0.0)",
    "openhorizon.kubernetesNamespaceScoped == false",
    "openhorizon.allowPrivileged == true",
    "purpose == lab",
    "purpose == edge",
    "purpose == x",
    "purpose != lab",
    'purpose in "lab,edge"',
    "n == true",
    "n == 1",
    "n != 1",
    "version in [2.3.0,INFINITY)",
]


def test_node_columns_agree_with_each_targets_node_properties() -> None:
    spec = load_spec_text(SPEC)
    targets = spec.inventory.targets
    columns = node_columns(targets)
    for text in CONSTRAINTS:
        constraint = parse_constraint(text)
        expected = [satisfied(constraint, node_properties(target)) for target in targets]
        assert columns.satisfied(constraint).tolist() == expected, text
    # The cases above tell the targets apart: none is true or false everywhere.
    verdicts = {tuple(columns.satisfied(parse_constraint(t)).tolist()) for t in CONSTRAINTS}
    assert len(verdicts) > len(CONSTRAINTS) // 2


def test_a_boolean_and_the_number_one_stay_apart() -> None:
    # True == 1.0 in Python, so a table of distinct values keyed by value alone would
    # give the second target the first one's boolean.
    sets = [validate_properties({"n": True}), validate_properties({"n": 1})]
    columns = PropertyColumns(sets)
    for text in ("n == true", "n == 1", "n >= 1", "n != true"):
        constraint = parse_constraint(text)
        expected = [satisfied(constraint, properties) for properties in sets]
        assert columns.satisfied(constraint).tolist() == expected, text
    assert columns.satisfied(parse_constraint("n == true")).tolist() == [True, False]
