"""The fast YAML read (libyaml's events straight to plain data, no node tree) against the
careful one (a node tree with positions): the same data, and for every error the same
message at the same line and column, whichever path read the file first.

A valid spec read by the fast path composes its node tree only when a problem asks for a
position; each case here checks that the fast path did read it (else the comparison
would test the careful path against itself).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placed.spec import SpecError, load_specs_text
from placed.spec import source as spec_source

CASES_FILE = Path(__file__).parent / "data" / "spec_errors.yaml"


def text(spec: str) -> str:
    return textwrap.dedent(spec).lstrip("\n")


def problems(spec: str) -> list[tuple[str, str, Any]]:
    with pytest.raises(SpecError) as caught:
        load_specs_text(spec, "spec.yaml")
    return [(p.message, p.key, p.position) for p in caught.value.problems]


def careful_problems(spec: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    with monkeypatch.context() as patched:
        patched.setattr(spec_source, "_fast_yaml", lambda text: None)
        return problems(spec)


# Errors found after the read (the schema's, the model's, an expression's), so the fast
# path reads each file and the position comes from the tree composed afterwards.
AFTER_THE_READ = {
    "unknown_key": """
        inventory:
          - id: a
            tagz: [x]
        """,
    "wrong_type_deep": """
        inventory:
          - id: z
            children:
              - id: r
                children:
                  - id: h
                    capacity: {cpu: lots}
        """,
    "duplicate_target_id": """
        inventory:
          - id: a
          - id: b
          - id: a
        """,
    "tag_with_a_space": """
        inventory:
          - id: a
            tags: ["rack 10"]
        """,
    "yaml_reads_a_date": """
        inventory:
          - id: 2024-01-01
        """,
    "expression_column_in_a_folded_value": """
        inventory:
          - id: a
        workloads:
          - name: w
            constraints: >-
              purpose == "lab" &&
              gpu === true
        """,
    "second_document_after_empty_ones": """
        ---
        ---
        name: one
        inventory: [{id: a}]
        ---
        name: two
        inventory:
          - id: b
            capacity: {cpu: -1}
        ---
        """,
    "missing_inventory": """
        name: x
        workloads: []
        """,
    "quoted_number_for_a_literal": """
        inventory: [{id: a}]
        settings: {default_mode: "3"}
        """,
}


@pytest.mark.parametrize("name", sorted(AFTER_THE_READ))
def test_positions_after_the_fast_read_match_the_careful_read(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = text(AFTER_THE_READ[name])
    assert spec_source._fast_yaml(spec) is not None, "the fast path should read this file"
    fast = problems(spec)
    assert fast == careful_problems(spec, monkeypatch)
    assert all(position is not None for _, _, position in fast)


# Errors of the read itself: the fast path gives these files up, and the careful path
# finds each where it stands.
REFUSED_BY_THE_READ = {
    "duplicate_key": (
        """
        inventory:
          - id: a
            kind: host
            kind: rack
        """,
        "duplicate key 'kind' (first at line 3)",
        (4, 5),
    ),
    "duplicate_key_deep_in_a_large_file": (
        "inventory:\n"
        + "".join(f"  - {{id: h{i}, capacity: {{cpu: 1}}}}\n" for i in range(2000))
        + "  - {id: last, capacity: {cpu: 1, cpu: 2}}\n",
        "duplicate key 'cpu' (first at line 2002)",
        (2002, 35),
    ),
    "number_key": (
        """
        inventory:
          - id: a
            capacity: {1: 2}
        """,
        "a key must be text, but '1' reads as 1; quote it",
        (3, 16),
    ),
    "merge_key": (
        """
        base: &b {kind: host}
        inventory:
          - <<: *b
            id: a
        """,
        "YAML merge keys (<<) are not supported; write the keys out",
        (3, 5),
    ),
    "long_integer": (
        """
        inventory:
          - id: a
            capacity: {cpu: 1234567890123456789}
        """,
        "a number of 19 digits; placed takes integers of at most 18 digits",
        (3, 21),
    ),
    "tag": (
        """
        inventory:
          - id: !!binary aGVsbG8=
        """,
        "the YAML tag '!!binary' is not supported; placed reads plain YAML (text, numbers, "
        "booleans, lists and mappings): drop the tag",
        (2, 9),
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_THE_READ))
def test_what_the_fast_read_refuses_is_reported_where_it_stands(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, message, (line, column) = REFUSED_BY_THE_READ[name]
    spec = text(spec)
    assert spec_source._fast_yaml(spec) is None
    found = problems(spec)
    assert [(m, (p.line, p.column)) for m, _, p in found] == [(message, (line, column))]
    assert found == careful_problems(spec, monkeypatch)


def test_a_duplicate_key_is_an_error_although_libyaml_keeps_the_last() -> None:
    spec = text(
        """
        inventory:
          - id: a
            tags: [x]
            tags: [y]
        """
    )
    assert yaml.load(spec, Loader=spec_source._BASE_LOADER)["inventory"][0]["tags"] == ["y"]
    with pytest.raises(SpecError, match=r"spec.yaml:4:5: inventory\[0\].tags: duplicate key"):
        load_specs_text(spec, "spec.yaml")


def test_every_error_case_is_reported_alike_by_both_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tests/data/spec_errors.yaml, each case read first by the fast path and then by the
    careful one alone: the same problems, word for word and place for place."""
    cases = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))
    fast_read = 0
    for case in cases:
        spec = case["spec"]
        fast_read += spec_source._fast_yaml(spec) is not None
        try:
            load_specs_text(spec, "spec.yaml")
        except SpecError as error:
            fast = [(p.message, p.key, p.position) for p in error.problems]
        else:
            fast = []
        with monkeypatch.context() as patched:
            patched.setattr(spec_source, "_fast_yaml", lambda text: None)
            try:
                load_specs_text(spec, "spec.yaml")
            except SpecError as error:
                careful = [(p.message, p.key, p.position) for p in error.problems]
            else:
                careful = []
        assert fast == careful, case["name"]
    assert fast_read >= len(cases) // 3, "too few cases went through the fast path"


def test_the_fast_read_gives_the_careful_reads_data() -> None:
    spec = text(
        """
        name: every kind of value
        inventory:
          - id: a
            kind: host
            tags: [x, "y", 'z']
            properties: {n: 17, hex: 0x1F, f: 1.5, inf: .inf, b: yes, o: Off, none: ~,
                         day: 2024-01-02, when: 2024-01-02T03:04:05Z, version: 2.3.1}
            note: |
              two
              lines
            folded: >
              one
              line
        ---
        """
    )
    fast = spec_source._fast_yaml(spec)
    careful = [spec_source._convert(root, "spec.yaml") for root in spec_source._compose(spec, "")]
    assert fast is not None and len(fast) == 1
    assert repr(fast) == repr(careful)


def test_values_past_the_bound_go_to_the_careful_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_source, "MAX_EXPANDED", 50)
    spec = "inventory:\n" + "".join(f"  - {{id: h{i}}}\n" for i in range(20))
    assert spec_source._fast_yaml(spec) is None
    with pytest.raises(SpecError, match="expands to more than 50 values"):
        load_specs_text(spec, "spec.yaml")


def test_nesting_past_the_bound_goes_to_the_careful_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_source, "MAX_DEPTH", 5)
    spec = "inventory:\n  - id: a\n    properties: {p: [[[[1]]]]}\n"
    assert spec_source._fast_yaml(spec) is None
    with pytest.raises(SpecError, match="nests more than 5 levels deep"):
        load_specs_text(spec, "spec.yaml")


# -- random documents: the fast read gives the careful read's data, or gives up ------------

_WORDS = ["a", "b", "yes", "No", "1", "0x1F", "017", "1_000", "~", "null", "", "1.5", ".inf"]
_WORDS += ["2024-01-01", "2024-01-01T03:04:05Z", "<<", "=", "1:30", "-7", "+3", "9" * 19]
_scalars = st.one_of(
    st.sampled_from(_WORDS),
    st.integers(-(10**20), 10**20),
    st.sampled_from([10**17, 10**18, -(10**18), 10**19]),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.text(alphabet="ab :-#&*!'\"", max_size=5),
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(_WORDS), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=25,
)


def _careful(spec: str) -> list[Any] | None:
    try:
        return [spec_source._convert(root, "spec.yaml") for root in spec_source._compose(spec, "")]
    except SpecError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _documents,
    st.booleans(),
    st.integers(0, 40),
    st.sampled_from(["", "---\n", "x: &a [1]\ny: *a\n", "a: 1\na: 2\n", "!!str a: b\n"]),
)
def test_random_documents_read_alike(data: Any, flow: bool, line: int, extra: str) -> None:
    spec = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    lines = spec.splitlines(keepends=True)
    if lines and line < len(lines):
        lines.insert(line, lines[line])  # a line twice: often a duplicate key
    for text in ("".join(lines), spec + "---\n" + extra, extra + spec):
        fast = spec_source._fast_yaml(text)
        if fast is not None:
            careful = _careful(text)
            assert careful is not None, text
            assert repr(fast) == repr(careful), text
