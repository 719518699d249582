"""`placed expr`, the Python API (placed.evaluate) and expressions inside spec files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import placed
from placed.cli.main import app
from placed.spec import SpecError, load_spec_text


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_true_exits_0_and_prints_true() -> None:
    code, out, _ = run("expr", 'purpose == "lab" && cpu >= 2', "--props", "{purpose: lab, cpu: 4}")
    assert (code, out.strip()) == (0, "true")


def test_false_exits_1_and_names_the_failing_terms() -> None:
    code, out, err = run(
        "expr", "purpose == lab AND cpu > 8", "--props", '{"purpose": "lab", "cpu": 4}'
    )
    assert (code, out.strip()) == (1, "false")
    assert "cpu > 8" in err and "purpose == lab" not in err


def test_several_arguments_are_anded_and_json_lists_terms() -> None:
    code, out, _ = run("expr", "a == 1", "b == x", "-p", "{a: 1, b: y}", "-f", "json")
    assert code == 1
    assert json.loads(out) == {
        "expression": "a == 1 AND b == x",
        "result": False,
        "terms": [{"term": "a == 1", "result": True}, {"term": "b == x", "result": False}],
    }


def test_props_from_a_file_in_open_horizon_list_form(tmp_path: Path) -> None:
    props = tmp_path / "node.json"
    props.write_text(json.dumps([{"name": "version", "value": "1.5.0", "type": "version"}]))
    code, out, _ = run("expr", "version in [1.0.0,2.0.0)", "--props", f"@{props}")
    assert (code, out.strip()) == (0, "true")


@pytest.mark.parametrize(
    ("expression", "column"),
    [("cpu < abc", 7), ("(a == 1", 1), ("a == 1 and b == 2", 8), ('x in ""', 6)],
)
def test_invalid_expression_exits_2_with_a_caret(expression: str, column: int) -> None:
    code, out, err = run("expr", expression)
    assert code == 2 and out == ""
    assert f"(column {column})" in err
    assert err.splitlines()[-1].strip() == "^"
    assert "Traceback" not in err


def test_invalid_properties_exit_2() -> None:
    code, _, err = run("expr", "a == 1", "-p", '[{name: v, value: "1.2.3.4", type: version}]')
    assert code == 2 and "'1.2.3.4' is not a version" in err
    code, _, err = run("expr", "a == 1", "-p", "{a: [1, 2")
    assert code == 2 and "not valid JSON or YAML" in err
    code, _, err = run("expr", "a == 1", "-p", "@/nonexistent/props.json")
    assert code == 2 and "cannot read" in err


def test_python_api() -> None:
    assert placed.evaluate('purpose == "lab"', {"purpose": "lab"}) is True
    assert placed.evaluate(["cpu > 2", "gpu == true"], [{"name": "cpu", "value": 4}]) is False
    assert placed.evaluate([], {}) is True
    with pytest.raises(placed.ExpressionError) as caught:
        placed.evaluate("cpu < abc", {})
    assert (caught.value.column, caught.value.kind) == (7, "operator")
    with pytest.raises(placed.PropertyError):
        placed.validate_properties([{"name": "n", "value": "4", "type": "int"}])


# -- expressions and properties inside a spec ------------------------------------------


def problems(text: str) -> list[tuple[str, str, int, int]]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, "spec.yaml")
    return [
        (p.key, p.message, p.position.line, p.position.column)  # type: ignore[union-attr]
        for p in caught.value.problems
    ]


def test_an_invalid_constraint_in_a_spec_names_its_place_and_column() -> None:
    ((key, message, line, column),) = problems(
        """
inventory:
  - id: n1
    constraints: ['purpose == lab', 'cpu < "four"']
"""
    )
    # At "four", inside the quotes: where the mistake is, not where the value begins.
    assert (key, line, column) == ("inventory[0].constraints[1]", 4, 44)
    assert message.startswith("invalid constraint: < compares numbers")
    assert "(column 7)" in message


def test_a_spec_may_not_set_a_read_only_built_in() -> None:
    found = problems(
        """
inventory:
  - id: n1
    properties: {openhorizon.cpu: 4, openhorizon.allowPrivileged: true, placed.zone: z}
workloads:
  - name: w
    service: {url: web, properties: {openhorizon.service.version: 2.0.0}}
"""
    )
    assert [(key, line) for key, _, line, _ in found] == [
        ("inventory[0].properties.openhorizon.cpu", 4),
        ("inventory[0].properties.placed.zone", 4),
        ("workloads[0].service.properties.openhorizon.service.version", 7),
    ]
    assert "read-only built-in" in found[0][1]


def test_a_typed_property_that_does_not_fit_is_an_error_at_its_value() -> None:
    ((key, message, line, column),) = problems(
        """
inventory:
  - id: n1
    properties:
      - {name: cores, value: "4", type: int}
"""
    )
    assert (key, line, column) == ("inventory[0].properties[0].value", 5, 30)
    assert message == "value '4' is text, not an int"


def test_built_ins_are_visible_to_constraints() -> None:
    spec = load_spec_text(
        """
inventory:
  - id: rack1
    kind: rack
    children:
      - {id: n1, arch: arm64, capacity: {cpu: 4}}
      - {id: n2, arch: amd64, capacity: {cpu: 8}}
workloads:
  - name: w
    constraints: [openhorizon.arch == amd64, openhorizon.cpu >= 8, placed.rack == rack1]
    resources: {cpu: 1}
"""
    )
    from placed.engine.planner import Planner

    (placement,) = Planner(spec).plan().placements
    assert placement.target == "n2"
