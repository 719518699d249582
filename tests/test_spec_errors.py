"""Bad specs: every problem is a SpecError naming the key at fault and its line:column.

Most cases are data in tests/data/spec_errors.yaml (its header says how a case reads),
each run by `test_spec_error`. The tests that read files, load a good spec or check the
rendered text stay functions below; their spec texts are written flush left with `text()`,
so line 1 of the spec is the first line inside the triple quotes.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from placed.spec import SpecError, load_spec, load_spec_text, load_specs_text
from placed.spec.errors import Problem

CASES_FILE = Path(__file__).parent / "data" / "spec_errors.yaml"


def text(spec: str) -> str:
    return textwrap.dedent(spec).lstrip("\n")


# -- the cases in tests/data/spec_errors.yaml ---------------------------------------------


class CaseError(ValueError):
    """A case the runner cannot trust to check what its author meant."""


@dataclass(frozen=True)
class Expected:
    """One problem a case expects. A check left as None (or empty) is not made."""

    at: tuple[int, int]
    key: str | None = None
    message: str | None = None
    message_starts: str | None = None
    message_ends: str | None = None
    message_contains: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    name: str
    spec: str
    problems: tuple[Expected, ...]


CASE_KEYS = frozenset({"name", "spec", "problems"})
PROBLEM_KEYS = frozenset(
    {"at", "key", "message", "message_starts", "message_ends", "message_contains"}
)
NAME = re.compile(r"[a-z0-9_]+(-[a-z0-9_]+)?")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader keeps the last of two equal keys, which would drop an expectation unseen."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            line = key_node.start_mark.line + 1
            raise CaseError(f"line {line}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _keys(raw: object, allowed: frozenset[str], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: expected a mapping, got {raw!r}")
    unknown = sorted(set(raw) - allowed, key=str)
    if unknown:
        raise CaseError(
            f"{where}: unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(allowed))}"
        )
    return raw


def _text(raw: dict[str, Any], key: str, where: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise CaseError(f"{where}: {key} must be a string, got {value!r}")
    return value


def _expected(raw: object, where: str) -> Expected:
    fields = _keys(raw, PROBLEM_KEYS, where)
    if "at" not in fields:
        raise CaseError(f"{where}: missing 'at'")
    at = fields["at"]
    # bool is an int to isinstance, and `at: [yes, 1]` is no position.
    if not (isinstance(at, list) and len(at) == 2 and all(type(n) is int and n >= 1 for n in at)):
        raise CaseError(f"{where}: at must be [line, column], both at least 1, got {at!r}")
    if fields.keys() == {"at"}:
        raise CaseError(f"{where}: checks nothing but the position; add a key or a message")
    contains = fields.get("message_contains", [])
    if "message_contains" in fields and not (
        isinstance(contains, list) and contains and all(isinstance(p, str) for p in contains)
    ):
        raise CaseError(f"{where}: message_contains must be a non-empty list of strings")
    return Expected(
        at=(at[0], at[1]),
        key=_text(fields, "key", where),
        message=_text(fields, "message", where),
        message_starts=_text(fields, "message_starts", where),
        message_ends=_text(fields, "message_ends", where),
        message_contains=tuple(contains),
    )


def _case(raw: object, index: int) -> Case:
    where = f"case {index + 1}"
    fields = _keys(raw, CASE_KEYS, where)
    name = fields.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise CaseError(f"{where}: name must match {NAME.pattern}, got {name!r}")
    where = f"case {name!r}"
    missing = sorted(CASE_KEYS - fields.keys())
    if missing:
        raise CaseError(f"{where}: missing {', '.join(map(repr, missing))}")
    spec = _text(fields, "spec", where)
    expected = fields["problems"]
    if spec is None or not isinstance(expected, list) or not expected:
        raise CaseError(f"{where}: needs a spec string and a non-empty list of problems")
    return Case(
        name=name,
        spec=spec,
        problems=tuple(
            _expected(item, f"{where}, problem {i + 1}") for i, item in enumerate(expected)
        ),
    )


def load_cases(source: str) -> list[Case]:
    raw = yaml.load(source, Loader=_StrictLoader)
    if not isinstance(raw, list) or not raw:
        raise CaseError("the cases file must be a non-empty list of cases")
    cases = [_case(item, i) for i, item in enumerate(raw)]
    names = [case.name for case in cases]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise CaseError(f"case names must be unique; repeated: {', '.join(twice)}")
    return cases


# A bad case file fails collection of this whole module, loudly, rather than one case.
CASES = load_cases(CASES_FILE.read_text(encoding="utf-8"))


def check(problem: Problem, expected: Expected) -> None:
    assert problem.position is not None, problem
    assert (problem.position.line, problem.position.column) == expected.at, problem
    if expected.key is not None:
        assert problem.key == expected.key, problem
    if expected.message is not None:
        assert problem.message == expected.message
    if expected.message_starts is not None:
        assert problem.message.startswith(expected.message_starts), problem.message
    if expected.message_ends is not None:
        assert problem.message.endswith(expected.message_ends), problem.message
    for part in expected.message_contains:
        assert part in problem.message


@pytest.mark.parametrize("case", [pytest.param(case, id=case.name) for case in CASES])
def test_spec_error(case: Case) -> None:
    with pytest.raises(SpecError) as caught:
        load_specs_text(case.spec, source="spec.yaml")
    assert caught.value.source == "spec.yaml"
    found = caught.value.problems
    assert len(found) == len(case.problems), found
    for problem, expected in zip(found, case.problems, strict=True):
        check(problem, expected)


CASE_HEAD = "- name: a\n  spec: x\n  problems:\n"


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1], key: k}\n  expect: []\n",
            "unknown key 'expect'",
            id="unknown_case_key",
        ),
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1], mesage: m}\n",
            "unknown key 'mesage'",
            id="unknown_problem_key",
        ),
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1], key: k, key: j}\n",
            "duplicate key 'key'",
            id="duplicate_key",
        ),
        pytest.param(CASE_HEAD + "    - {key: k}\n", "missing 'at'", id="no_position"),
        pytest.param(
            CASE_HEAD + "    - {at: [1], key: k}\n",
            "at must be [line, column]",
            id="short_position",
        ),
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1]}\n",
            "checks nothing but the position",
            id="position_only",
        ),
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1], message_contains: m}\n",
            "message_contains must be a non-empty list",
            id="contains_not_a_list",
        ),
        pytest.param("- name: a\n  spec: x\n", "missing 'problems'", id="no_problems"),
        pytest.param(
            CASE_HEAD + "    - {at: [1, 1], key: k}\n" + CASE_HEAD + "    - {at: [1, 1], key: k}\n",
            "repeated: a",
            id="repeated_name",
        ),
    ],
)
def test_case_schema_refuses(source: str, complaint: str) -> None:
    with pytest.raises(CaseError, match=re.escape(complaint)):
        load_cases(source)


# -- YAML and JSON syntax -------------------------------------------------------------


def test_json_indented_with_tabs_is_a_valid_spec() -> None:
    spec = load_spec_text('{\n\t"inventory": [\n\t\t{"id": "a"}\n\t]\n}\n', source="spec.json")
    assert [t.id for t in spec.inventory.targets] == ["a"]


# -- the shape of a document ----------------------------------------------------------


def test_trailing_document_separator_is_not_a_document() -> None:
    specs = load_specs_text("name: a\ninventory:\n  - id: x\n---\n", source="spec.yaml")
    assert [s.name for s in specs] == ["a"]


# -- files -------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nosuch.yaml"
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    [problem] = caught.value.problems
    assert problem.message == "no such file"
    assert problem.position is None
    assert str(caught.value) == f"{path}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path)
    [problem] = caught.value.problems
    assert problem.message == "is a directory, not a spec file"


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"inventory:\n  - id: \xff\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    [problem] = caught.value.problems
    # Issue 8: the bad byte's place, not only that the file cannot be read.
    assert problem.message.startswith("byte 0xff is not UTF-8")
    assert problem.position is not None
    assert (problem.position.line, problem.position.column) == (2, 9)


def test_errors_from_a_file_name_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("inventory:\n  - id: a\n    status: sideways\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == (
        f"{path}:3:13: inventory[0].status: got 'sideways'; expected one of 'up' or 'down'"
    )


def test_load_spec_refuses_several_documents(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("name: a\ninventory: [{id: x}]\n---\nname: b\ninventory: [{id: x}]\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.problems[0].message == "holds 2 documents; expected one"


# -- duplicates ---------------------------------------------------------------------------


def test_same_key_in_different_mappings_is_fine() -> None:
    spec = load_spec_text("inventory:\n  - {id: a, kind: rack}\n  - {id: b, kind: rack}\n")
    assert {t.id for t in spec.inventory.targets} == {"a", "b"}


# -- several documents ----------------------------------------------------------------------


def test_documents_with_distinct_names_load() -> None:
    specs = load_specs_text(
        text(
            """
            name: a
            inventory: [{id: x}]
            ---
            name: b
            inventory: [{id: x}]
            """
        ),
        source="spec.yaml",
    )
    assert [s.name for s in specs] == ["a", "b"]


# -- how problems read ------------------------------------------------------------------------


def test_rendered_as_file_line_column_key_message() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text("inventory: [{id: a}]\nworkloads:\n  - {name: w, units: '3'}\n", "s.yaml")
    assert str(caught.value) == (
        "s.yaml:3:22: workloads[0].units: expected an integer, got a string '3'"
    )


def test_render_shows_at_most_ten_problems() -> None:
    spec = "inventory:\n" + "".join(f"  - {{id: h{i}, status: off}}\n" for i in range(12))
    with pytest.raises(SpecError) as caught:
        load_spec_text(spec, "s.yaml")
    assert len(caught.value.problems) == 12
    lines = str(caught.value).splitlines()
    assert len(lines) == 11
    assert lines[0] == "s.yaml:2:22: inventory[0].status: got False; expected one of 'up' or 'down'"
    assert lines[-1] == "... and 2 more problems"
