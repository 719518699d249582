"""Every case of tests/data/openhorizon_cases.yaml, through placed.

Each case runs through validate_properties + parse_constraint + satisfied (the reference)
AND through PropertyColumns (the vectorized path), and must give the corpus's answer,
except:

- DEPARTURES: deliberate, documented differences from Open Horizon (OH) quirks. For each,
  PLACED says what placed does instead, and that is asserted.
- BUGS: cases where OH's answer is sane and placed's differs; they are xfail(strict).

At the end, cases beyond the corpus (derived from docs/openhorizon-semantics.md and the
anax sources it cites) where placed is wrong today, also xfail(strict).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import placed
from placed.model.properties import PropertyError, validate_properties
from placed.policy.expressions import ExpressionError, parse_constraint
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import satisfied

CORPUS = yaml.safe_load(
    (Path(__file__).parent / "data" / "openhorizon_cases.yaml").read_text(encoding="utf-8")
)
KINDS = {"syntax", "parentheses", "keyword", "operator", "literal", "empty"}


def key(case: dict[str, Any]) -> str:
    """Expressions are keyed by their text (a list as JSON), property cases by their JSON."""
    if "expr" in case:
        expr = case["expr"]
        return expr if isinstance(expr, str) else json.dumps(expr)
    return json.dumps(case["props"])


# ---------------------------------------------------------------- departures


@dataclass(frozen=True)
class Rejects:
    """placed rejects the text: ExpressionError of this kind at this column."""

    kind: str
    column: int


@dataclass(frozen=True)
class Answers:
    """placed accepts the case and answers this (where OH answers the opposite)."""

    result: bool


@dataclass(frozen=True)
class Accepts:
    """placed accepts text that OH rejects; it prints as `printed` and, on `props`,
    evaluates to `result`."""

    printed: str
    props: Any
    result: bool


@dataclass(frozen=True)
class AcceptsProperties:
    """placed accepts a property list that OH rejects; `name` gets this value."""

    name: str
    value: Any
    declared: str | None


DEPARTURES: dict[str, str] = {
    # evaluate cases
    "cpu < inf": "ordering operators take a plain decimal literal; Go ParseFloat's inf, nan, "
    "+5, .5 are not numbers to placed, so the text is rejected (corpus: uncertain)",
    " purpose == lab": "a leading blank before the first name is ignored; OH makes it part of "
    "the name so nothing ever matches (corpus: uncertain)",
    "purpose == lab && ": "a dangling && is rejected even with a trailing blank, which OH "
    "ignores (corpus: uncertain)",
    "purpose == lab || ": "a dangling || is rejected even with a trailing blank, where OH adds "
    "an always-true branch (corpus: uncertain)",
    ")(a == 1": "parentheses must balance in order; OH only counts them and stops at the "
    "first ')', so the text is always true there (corpus: uncertain)",
    # invalid_expressions that placed accepts: meaning given only to text OH rejects
    "a == 1&&b == 2": "&& and || need no blanks around them (an extension: OH rejects this)",
    "a == 1 &&(b == 2)": "&& may touch a following '(' (extension)",
    "a == 1 &&b == 2": "&& may touch the following name (extension)",
    "ver in [1.0.0, 2.0.0)": "blanks inside a version range are allowed",
    "ver in [1.0,2.0)": "range bounds may be 1- or 2-part versions, as property versions may",
    'a == "https://x"': 'a quoted value may hold any character but "',
    "in == 1": "'in' is an ordinary property name where a name is expected",
    "a == in": "'in' is an ordinary value where a value is expected",
    "initialized == true": "no InStr mis-lex: names starting with 'ini' are ordinary names "
    "(corpus: uncertain)",
    "status == initializing": "no InStr mis-lex: values starting with 'ini' are ordinary values "
    "(corpus: uncertain)",
    # invalid_expressions rejected at another column than the corpus gives
    "ver in [1.0.0,infinity)": "the error points at the malformed bound, not at the '['",
    "ver in [INFINITY,2.0.0)": "the error points at the malformed bound, not at the '['",
    # invalid_properties that placed accepts
    '[{"name": "l", "value": ["a", "b"]}]': "a YAML/JSON list value is a list of strings",
    '[{"name": "l", "value": ["a", "b"], "type": "list of strings"}]': "a YAML/JSON list is "
    "accepted for a declared list of strings too",
}

PLACED: dict[str, Rejects | Answers | Accepts | AcceptsProperties] = {
    "cpu < inf": Rejects("operator", 7),
    " purpose == lab": Answers(True),
    "purpose == lab && ": Rejects("syntax", 16),
    "purpose == lab || ": Rejects("syntax", 16),
    ")(a == 1": Rejects("parentheses", 1),
    "a == 1&&b == 2": Accepts("a == 1 AND b == 2", {"a": 1, "b": 2}, True),
    "a == 1 &&(b == 2)": Accepts("a == 1 AND b == 2", {"a": 1, "b": 3}, False),
    "a == 1 &&b == 2": Accepts("a == 1 AND b == 2", {"a": 1, "b": 2}, True),
    "ver in [1.0.0, 2.0.0)": Accepts(
        "ver in [1.0.0,2.0.0)", [{"name": "ver", "value": "1.5.0", "type": "version"}], True
    ),
    "ver in [1.0,2.0)": Accepts(
        "ver in [1.0,2.0)", [{"name": "ver", "value": "1.9.9", "type": "version"}], True
    ),
    'a == "https://x"': Accepts('a == "https://x"', {"a": "https://x"}, True),
    "in == 1": Accepts("in == 1", {"in": 1}, True),
    "a == in": Accepts("a == in", {"a": "in"}, True),
    "initialized == true": Accepts("initialized == true", {"initialized": True}, True),
    "status == initializing": Accepts("status == initializing", {"status": "initializing"}, True),
    "ver in [1.0.0,infinity)": Rejects("literal", 15),
    "ver in [INFINITY,2.0.0)": Rejects("literal", 9),
    '[{"name": "l", "value": ["a", "b"]}]': AcceptsProperties("l", ("a", "b"), "list of strings"),
    '[{"name": "l", "value": ["a", "b"], "type": "list of strings"}]': AcceptsProperties(
        "l", ("a", "b"), "list of strings"
    ),
}

# Cases where placed was found to differ from a sane OH answer; all fixed, kept empty so
# that a new one can be recorded here as a strict xfail.
BUGS: dict[str, str] = {}


def _params(section: str) -> list[Any]:
    params = []
    for index, case in enumerate(CORPUS[section]):
        marks = []
        if key(case) in BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason=BUGS[key(case)]))
        params.append(pytest.param(case, id=f"{index}:{key(case)[:40]}", marks=marks))
    return params


def both(expr: str | list[str], props: Any) -> tuple[bool, bool]:
    """(reference, vectorized) answers for one property set."""
    constraint = parse_constraint(expr)
    properties = validate_properties(props)
    fast = PropertyColumns([properties]).satisfied(constraint)
    return satisfied(constraint, properties), bool(fast[0])


def expect_rejection(expr: str | list[str], rejects: Rejects) -> ExpressionError:
    with pytest.raises(ExpressionError) as caught:
        parse_constraint(expr)
    assert (caught.value.kind, caught.value.column) == (rejects.kind, rejects.column), (
        caught.value.message
    )
    return caught.value


# ---------------------------------------------------------------- the corpus


def test_corpus_has_all_sections() -> None:
    # hzn_files: sets of hzn documents, run through the CLI by test_openhorizon_files.py.
    assert set(CORPUS) == {"evaluate", "invalid_expressions", "invalid_properties", "hzn_files"}
    assert all(CORPUS[section] for section in CORPUS)


def test_every_departure_and_bug_names_a_corpus_case() -> None:
    keys = {
        key(case) for name, section in CORPUS.items() if name != "hzn_files" for case in section
    }
    assert set(PLACED) == set(DEPARTURES)
    assert set(DEPARTURES) <= keys, set(DEPARTURES) - keys
    assert set(BUGS) <= keys, set(BUGS) - keys
    assert not set(BUGS) & set(DEPARTURES)


@pytest.mark.parametrize("case", _params("evaluate"))
def test_evaluate(case: dict[str, Any]) -> None:
    expr, props, expect = case["expr"], case["props"], case["expect"]
    departure = PLACED.get(key(case))
    if isinstance(departure, Rejects):
        expect_rejection(expr, departure)
        with pytest.raises(ExpressionError):
            placed.evaluate(expr, props)
        return
    if isinstance(departure, Answers):
        assert departure.result != expect  # a departure, not an agreement
        assert both(expr, props) == (departure.result, departure.result)
        return
    assert departure is None, departure
    assert both(expr, props) == (expect, expect), case["why"]
    assert placed.evaluate(expr, props) is expect


@pytest.mark.parametrize("case", _params("invalid_expressions"))
def test_invalid_expression(case: dict[str, Any]) -> None:
    expr = case["expr"]
    departure = PLACED.get(key(case))
    if isinstance(departure, Accepts):
        constraint = parse_constraint(expr)
        assert str(constraint.tree) == departure.printed
        assert both(expr, departure.props) == (departure.result, departure.result)
        return
    if isinstance(departure, Rejects):
        assert case.get("column") not in (None, departure.column)  # a different column
        expect_rejection(expr, departure)
        return
    assert departure is None, departure
    with pytest.raises(ExpressionError) as caught:
        parse_constraint(expr)
    error = caught.value
    assert error.kind in KINDS
    if "column" in case:
        assert error.column == case["column"], (error.message, case["why"])
    assert error.message
    with pytest.raises(ExpressionError):
        placed.evaluate(expr, {})


@pytest.mark.parametrize("case", _params("invalid_properties"))
def test_invalid_properties(case: dict[str, Any]) -> None:
    departure = PLACED.get(key(case))
    if isinstance(departure, AcceptsProperties):
        prop = validate_properties(case["props"])[departure.name]
        assert (prop.value, prop.declared) == (departure.value, departure.declared)
        return
    assert departure is None, departure
    with pytest.raises(PropertyError):
        validate_properties(case["props"])
    with pytest.raises(PropertyError):
        placed.evaluate("x == 1", case["props"])


def test_all_evaluate_cases_at_once_in_columns() -> None:
    # The vectorized path over every (valid) evaluate case in one batch, per expression.
    valid = [case for case in CORPUS["evaluate"] if not isinstance(PLACED.get(key(case)), Rejects)]
    sets = [validate_properties(case["props"]) for case in valid]
    for case in valid:
        constraint = parse_constraint(case["expr"])
        fast = PropertyColumns(sets).satisfied(constraint).tolist()
        assert fast == [satisfied(constraint, properties) for properties in sets], key(case)


# ---------------------------------------------------------------- beyond the corpus

# (expression, properties, OH's answer, why): cases the corpus lacks, each once a bug.
BEYOND = [
    (
        "mem => 5",
        {"mem": "5"},
        False,
        "'=>' on a string property: OH's string branch only knows ==, =, != and in "
        "(CPP stringOperators), so '=>' is false",
    ),
    (
        "gpu => 1",
        {"gpu": True},
        False,
        "'=>' on a boolean property is false in OH (not in stringOperators)",
    ),
    (
        "v in [1.0.0,2.0.0)",
        {"v": '"1.5.0"'},
        True,
        "OH strips the quotes before reading the value as a version (CPP removeQuotes)",
    ),
    (
        "v in [1.0.0,2.0.0)",
        {"v": "[1.0.0,2.0.0)"},
        False,
        "a range literal is a range, never a value to look up among listed ones",
    ),
    (
        "a != x",
        {"a": ""},
        False,
        "an empty string property makes OH panic (docs U7); placed treats it as absent",
    ),
    (
        "cpu == +5",
        {"cpu": 5},
        True,
        "OH parses the literal with Go ParseFloat, so +5 is 5",
    ),
]


@pytest.mark.parametrize(
    ("expr", "props", "oh"),
    [pytest.param(expr, props, oh, id=f"{expr} on {props}") for expr, props, oh, _ in BEYOND],
)
def test_beyond_the_corpus(expr: str, props: Any, oh: bool) -> None:
    assert both(expr, props) == (oh, oh)


def test_glued_in_before_a_range() -> None:
    # OH splits a name glued to 'in' before any value token, a range included.
    props = [{"name": "version", "value": "1.5.0", "type": "version"}]
    assert both("versionin[1.0.0,2.0.0)", props) == (True, True)
    assert both("versionin(1.5.0,2.0.0]", props) == (False, False)
