"""Issue 8, items 7 and 8 (part): identifiers in one Unicode form, invisible characters
refused, empty names refused, and one error per mistake in the user's words."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

import jsonschema_rs
import pytest

from placed.spec import SpecError, load_spec_text
from placed.spec.schema import HIDDEN_RANGES, spec_json_schema, visible


def problems(text: str) -> list[tuple[str, str, tuple[int, int] | None]]:
    with pytest.raises(SpecError) as caught:
        load_spec_text(text, "spec.yaml")
    return [
        (p.key, p.message, (p.position.line, p.position.column) if p.position else None)
        for p in caught.value.problems
    ]


def test_two_spellings_of_one_name_are_one_id() -> None:
    found = problems('inventory: [{id: "caf\\u00e9"}, {id: "cafe\\u0301"}]\n')
    assert found == [
        (
            "inventory[1].id",
            "duplicate target id 'café' (first at line 1); ids must be unique across the inventory",
            (1, 37),
        )
    ]


def test_tags_are_normalised_too() -> None:
    spec = load_spec_text(
        'inventory: [{id: a, tags: ["cafe\\u0301"]}]\nworkloads: [{name: w, tags: ["caf\\u00e9"]}]'
    )
    (target,) = spec.inventory.targets
    assert target.tags == frozenset({"café"})


@pytest.mark.parametrize("hidden", ["\\u200b", "\\u202e", "\\u2066", "\\u00ad"])
def test_invisible_and_direction_changing_characters_are_refused(hidden: str) -> None:
    ((key, message, _),) = problems(f'inventory: [{{id: "a{hidden}b"}}]\n')
    assert key == "inventory[0].id"
    assert message.startswith("contains a character that does not show (U+")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('inventory: [{id: a, kind: ""}]', "inventory[0].kind"),
        ('inventory: [{id: a, scope: cluster, namespace: ""}]', "inventory[0].namespace"),
        (
            'inventory: [{id: a}]\nworkloads: [{name: w, cluster_namespace: ""}]',
            "workloads[0].cluster_namespace",
        ),
    ],
)
def test_empty_names_are_refused(text: str, key: str) -> None:
    ((found_key, message, _),) = problems(text + "\n")
    assert (found_key, message) == (key, "may not be empty")


def test_an_empty_resource_name_names_its_mapping() -> None:
    ((key, message, _),) = problems('inventory: [{id: a, capacity: {"": 2}}]\n')
    assert (key, message) == ("inventory[0].capacity", "a name in this mapping may not be empty")


def test_a_value_that_fits_no_branch_is_one_mistake() -> None:
    found = problems("inventory: [{id: a}]\nworkloads: [{name: w, constraints: 5}]\n")
    assert found == [
        (
            "workloads[0].constraints",
            "expected a string or a list of strings, got an integer 5",
            (2, 36),
        )
    ]


def test_version_in_quotes_says_to_drop_them() -> None:
    assert problems('version: "1"\ninventory: [{id: a}]\n') == [
        ("version", "write 1 without quotes: it is a number", (1, 10))
    ]


@pytest.mark.parametrize(
    ("written", "reads"),
    [("2024-01-01", "a date (2024-01-01)"), ("0x1F", "an integer 31"), ("yes", "a boolean True")],
)
def test_an_id_yaml_reads_as_something_else_says_to_quote_it(written: str, reads: str) -> None:
    ((key, message, _),) = problems(f"inventory: [{{id: {written}}}]\n")
    assert key == "inventory[0].id"
    assert message == (
        f'expected a string, but YAML reads {written} as {reads}; write it in quotes ("{written}")'
    )


def test_units_under_every_mode_is_an_error() -> None:
    ((key, message, at),) = problems(
        "settings: {default_mode: every}\ninventory: [{id: a}]\nworkloads: [{name: w, units: 3}]\n"
    )
    assert key == "workloads[0].units"
    assert message.startswith("an every-mode workload runs one unit on every compatible target")
    assert at == (3, 30)


@pytest.mark.parametrize(("expression", "column"), [("1e3 > 2", 1), ("cpu > 1.5E+3", 7)])
def test_an_exponent_number_is_explained(expression: str, column: int) -> None:
    from placed.policy.expressions import ExpressionError, parse_constraint

    with pytest.raises(ExpressionError) as caught:
        parse_constraint(expression)
    assert caught.value.column == column
    assert "a number with an exponent" in caught.value.message


def test_the_schema_refuses_exactly_the_characters_the_reader_refuses() -> None:
    """HIDDEN_RANGES is this Python's Unicode data, and the JSON Schema's name patterns
    take a character exactly when `visible` does (a surrogate cannot travel in UTF-8)."""
    hidden = [
        code for code in range(0x110000) if unicodedata.category(chr(code)) in ("Cc", "Cf", "Co")
    ]
    listed = [code for low, high in HIDDEN_RANGES for code in range(low, high + 1)]
    assert listed == hidden
    document = spec_json_schema()
    name = document["$defs"]["WorkloadSpec"]["properties"]["name"]
    matches = re.compile(name["pattern"]).fullmatch
    for code in (*hidden[::7], 0x41, 0xE9, 0x4E2D, 0x1F600, 0x10FFFF):
        try:
            visible(chr(code))
            shown = True
        except ValueError:
            shown = False
        assert bool(matches(chr(code))) == shown, hex(code)
    # A mapping's keys: the pattern bounds every key (not only the keys it matches).
    capacity = document["$defs"]["LocationSpec"]["properties"]["capacity"]["anyOf"][0]
    assert "patternProperties" not in capacity
    assert capacity["propertyNames"]["pattern"] == name["pattern"].replace("\\s/", "")
    assert capacity["additionalProperties"] == {"type": "number"}


def test_a_count_written_with_a_point_is_a_count() -> None:
    # JSON has one kind of number: the schema's "integer" takes 2.0, so the reader does.
    spec = load_spec_text(
        '{"inventory": [{"id": "a"}], "workloads": [{"name": "w", "units": 2.0}]}'
    )
    assert spec.workloads[0].units == 2
    assert problems('{"inventory": [{"id": "a"}], "workloads": [{"name": "w", "units": 2.5}]}')
    assert problems('{"inventory": [{"id": "a"}], "workloads": [{"name": "w", "units": "2"}]}')


SPEC_SCHEMA_VALIDATOR = jsonschema_rs.validator_for(spec_json_schema())
A_SPEC: dict[str, Any] = {
    "inventory": [{"id": "a"}, {"id": "b"}],
    "workloads": [{"name": "w", "units": 2}],
    "running": [{"unit": "w/0", "target": "a"}],
    "tenancy": {"accounts": ["x", "y"], "domains": {"d": {"accounts": ["z"]}}},
}


def test_a_spec_with_running_units_and_accounts_is_valid_to_the_schema_and_the_reader() -> None:
    assert SPEC_SCHEMA_VALIDATOR.is_valid(A_SPEC)
    assert load_spec_text(json.dumps(A_SPEC)).workloads[0].name == "w"


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"running": [{"unit": "0", "target": "a"}]}, "running[0].unit"),
        ({"running": [{"unit": "w/\u0663", "target": "a"}]}, "running[0].unit"),
        ({"running": [{"unit": "w/", "target": "a"}]}, "running[0].unit"),
        ({"running": [{"unit": "w/0", "target": "a"}] * 2}, "running[1].unit"),
        ({"tenancy": {"accounts": ["x", "x"]}}, "tenancy.accounts[1]"),
        (
            {"tenancy": {"domains": {"d": {"accounts": ["z", "z"]}}}},
            "tenancy.domains.d.accounts[1]",
        ),
        ({"inventory": [{"id": "a"}, {"id": "a"}]}, "inventory[1].id"),
        ({"workloads": [{"name": "w"}, {"name": "w"}]}, "workloads[1].name"),
    ],
)
def test_the_schema_refuses_the_unit_names_and_repeats_the_reader_refuses(
    change: dict[str, Any], key: str
) -> None:
    # What JSON Schema can state of the reader's rules (a unit's WORKLOAD/N form, a list
    # naming one thing twice), it states: a client or a fuzzer learns it from the schema.
    document = {**A_SPEC, **change}
    assert not SPEC_SCHEMA_VALIDATOR.is_valid(document)
    assert key in [found_key for found_key, _, _ in problems(json.dumps(document))]
