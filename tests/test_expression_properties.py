"""Property-based tests of constraint expressions.

- random valid expressions over random property sets: the vectorized path
  (PropertyColumns) gives the same answers as the plain-Python reference (satisfied);
- str() of a parsed tree parses again to a tree that evaluates the same;
- random text never makes the parser (or placed.evaluate) fail with anything but an
  ExpressionError whose column lies inside the text (or just after it).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import placed
from placed.model.properties import Property, validate_properties
from placed.policy.expressions import ExpressionError, parse, parse_constraint
from placed.policy.expressions.columns import PropertyColumns
from placed.policy.expressions.evaluate import holds, satisfied

# ------------------------------------------------------------------ property sets

NAMES = ["a", "b", "c", "openhorizon.arch"]
# "d" is never given a value: comparisons on it are false everywhere.
EXPRESSION_NAMES = [*NAMES, "d"]

STRING_VALUES = [
    "x",
    "y",
    "z",
    "x,y",
    "y, z",
    " x ",
    '"x"',
    "x y",
    "lab",
    "4",
    "2.5",
    "true",
    "True",
    "1",
    "1.2.3",
    "1.5.0",
    "2.0.0",
    "1.10.0",
    "amd64",
    "",
    # Not '"1.5.0"' (a quoted version-like text) nor "[1.0.0,2.0.0)": each makes the two
    # paths disagree today; see test_openhorizon_corpus.py (bugs beyond the corpus).
]
VERSION_VALUES = ["1.0.0", "1.5", "2", "1.2.3", "1.10.0", "2.0.0", "0.9.9", "1.2.0"]
LIST_VALUES = ["x,y", "y", "x, z", "lab,dev", '"x", y', "1.2.3,x"]


def _entries() -> list[tuple[Any, str | None]]:
    """Every (value, declared type) a generated property may have."""
    entries: list[tuple[Any, str | None]] = []
    for number in [-3, -1, 0, 1, 2, 4, 5, 6]:
        entries += [(number, None), (number, "int"), (number, "float")]
    for fraction in [0.5, 2.5, -1.5, 4.0, 1.25]:
        entries += [(fraction, None), (fraction, "float")]
    for flag in (True, False):
        entries += [(flag, None), (flag, "boolean")]
    for text in STRING_VALUES:
        entries += [(text, None), (text, "string")]
    entries += [(text, "version") for text in VERSION_VALUES]
    entries += [(text, "list of strings") for text in LIST_VALUES]
    entries += [(["x", " y "], None), (["lab"], "list of strings")]  # YAML lists
    # One element holding a comma is not the two elements it reads as; a repeated
    # element is one element, in a value that is not that element's text.
    entries += [(["x,y"], None), (["x", "x"], None), ("x,x", None)]
    return entries


ENTRIES = _entries()


@st.composite
def property_entries(draw: st.DrawFn, name: str) -> dict[str, Any]:
    value, declared = draw(st.sampled_from(ENTRIES))
    entry: dict[str, Any] = {"name": name, "value": value}
    if declared is not None:
        entry["type"] = declared
    return entry


@st.composite
def property_sets(draw: st.DrawFn) -> dict[str, Property]:
    present = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    return validate_properties([draw(property_entries(name)) for name in present])


batches = st.lists(property_sets(), min_size=1, max_size=10)

# ------------------------------------------------------------------ expressions

NUMBERS = ["0", "1", "2", "4", "-1", "-1.5", "2.5", "4.0", "5.", "0.5", "1.25", "6"]
WORDS = ["x", "y", "z", "lab", "amd64", "true", "false", "TRUE", "True", "t", "F", "yes"]
WORDS += ["'x'", "x-y", "a/b", "1.2", "openhorizon"]
VERSIONS = ["1.2.3", "1.0.0", "2.0.0", "1.5.0", "1.10.0", "0.9.9"]
QUOTED = ["x", " x ", "x y", "lab", "4", "true", "1.2.3", "1.5.0", "amd64", "'x'"]
QUOTED_LISTS = ["x,y", "y, z", "lab,dev", "x", "4,true", "1.0.0", "1.2.3,x", "a, b ,c"]
ORDERING = ["<", ">", "<=", ">=", "=>", "=<"]
RANGES = [
    "[1.0.0,2.0.0)",
    "(1.0.0,INFINITY)",
    "[1.0.0,2.0.0]",
    "(0.9.9,1.5.0]",
    "[1.2.3,INFINITY)",
    "[2.0.0,1.0.0)",
    "(1.0.0,1.10.0)",
]


@st.composite
def comparisons(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(EXPRESSION_NAMES))
    op = draw(st.sampled_from(["==", "=", "!=", *ORDERING, "in"]))
    if op in ORDERING:
        literal = draw(st.sampled_from(NUMBERS))
    elif op == "in":
        literal = draw(
            st.one_of(
                st.sampled_from(QUOTED_LISTS).map(lambda text: f'"{text}"'),
                st.sampled_from(VERSIONS),
                st.sampled_from(VERSIONS).map(lambda text: f'"{text}"'),
                st.sampled_from(RANGES),
            )
        )
    else:
        literal = draw(
            st.one_of(
                st.sampled_from(NUMBERS),
                st.sampled_from(WORDS),
                st.sampled_from(VERSIONS),
                st.sampled_from(QUOTED).map(lambda text: f'"{text}"'),
            )
        )
    if op == "in":
        # A blank before 'in' (else the name swallows it); after it only where the
        # literal is quoted or bracketed.
        after = draw(st.sampled_from([" ", "  "] + ([""] if literal[0] in '"[(' else [])))
        return f"{name} in{after}{literal}"
    before = draw(st.sampled_from(["", " ", "  "]))
    after = draw(st.sampled_from(["", " ", "  "]))
    return f"{name}{before}{op}{after}{literal}"


def _join(draw: st.DrawFn, terms: list[str], words: list[str]) -> str:
    text = terms[0]
    for term in terms[1:]:
        word = draw(st.sampled_from(words))
        if word in ("&&", "||"):
            # placed also reads && and || without blanks around them (OH does not).
            left, right = draw(st.sampled_from([(" ", " "), ("", ""), (" ", ""), ("", " ")]))
        else:
            left, right = " ", draw(st.sampled_from([" ", "  "]))
        text = f"{text}{left}{word}{right}{term}"
    return text


def _group(text: str, draw: st.DrawFn) -> str:
    inner = draw(st.sampled_from(["{}", " {} ", "{} "]))
    return "(" + inner.format(text) + ")"


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        text = draw(comparisons())
    else:
        terms = draw(st.lists(expressions(depth=depth - 1), min_size=1, max_size=3))
        text = _join(draw, terms, ["AND", "&&", "OR", "||"])
    if draw(st.integers(0, 3)) == 0:
        text = _group(text, draw)
    return text


@st.composite
def constraint_texts(draw: st.DrawFn) -> str | list[str]:
    text = draw(expressions())
    pad = draw(st.sampled_from(["", " ", "  "]))  # leading blanks are ignored by placed
    tail = draw(st.sampled_from(["", " ", "\t"]))
    text = f"{pad}{text}{tail}"
    if draw(st.integers(0, 5)) == 0:
        return [text, draw(expressions())]
    return text


# ------------------------------------------------------------------ a. fast == reference


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(constraint_texts(), batches)
def test_columns_agree_with_reference(
    text: str | list[str], sets: list[dict[str, Property]]
) -> None:
    constraint = parse_constraint(text)  # generated text is valid: this must not raise
    assert constraint.tree is not None
    fast = PropertyColumns(sets).satisfied(constraint)
    assert fast.shape == (len(sets),)
    assert fast.tolist() == [satisfied(constraint, properties) for properties in sets]


@settings(max_examples=200, deadline=None)
@given(comparisons(), batches)
def test_single_comparisons_agree(text: str, sets: list[dict[str, Property]]) -> None:
    constraint = parse_constraint(text)
    fast = PropertyColumns(sets).satisfied(constraint).tolist()
    assert fast == [satisfied(constraint, properties) for properties in sets]


@settings(max_examples=100, deadline=None)
@given(constraint_texts(), batches)
def test_operator_spellings_agree(text: str | list[str], sets: list[dict[str, Property]]) -> None:
    # = is ==, && is AND, || is OR: respelling gives the same answers. (No generated
    # quoted value holds =, & or |.)
    def respell(one: str) -> str:
        one = re.sub(r"(?<![=!<>])=(?![=<>])", "==", one)
        return one.replace("&&", " AND ").replace("||", " OR ")

    texts = [text] if isinstance(text, str) else text
    respelled = parse_constraint([respell(one) for one in texts])
    constraint = parse_constraint(texts)
    assert [satisfied(respelled, s) for s in sets] == [satisfied(constraint, s) for s in sets]


def _every_comparison(name: str) -> list[str]:
    texts = [f"{name} {op} {number}" for op in ORDERING for number in NUMBERS]
    plain = NUMBERS + WORDS + VERSIONS + [f'"{text}"' for text in QUOTED]
    texts += [f"{name} {op} {literal}" for op in ("==", "=", "!=") for literal in plain]
    members = [f'"{text}"' for text in QUOTED_LISTS + VERSIONS] + VERSIONS + RANGES
    texts += [f"{name} in {literal}" for literal in members]
    return texts


def test_every_comparison_against_every_value() -> None:
    # Exhaustive over the pools above: each comparison on `a` against one target per
    # (value, type) of `a`, plus a target without `a`.
    sets = [
        validate_properties([{"name": "a", "value": value, "type": declared}])
        for value, declared in ENTRIES
    ]
    sets.append({})
    columns = PropertyColumns(sets)
    mismatches = []
    for text in _every_comparison("a"):
        constraint = parse_constraint(text)
        fast = columns.satisfied(constraint).tolist()
        targets = [*ENTRIES, ("<absent>", None)]
        for (value, declared), properties, got in zip(targets, sets, fast, strict=True):
            expected = satisfied(constraint, properties)
            if got != expected:
                mismatches.append(f"{text!r} on {value!r} ({declared}): fast {got}, ref {expected}")
    assert not mismatches, "\n".join(mismatches[:20])


# ------------------------------------------------------------------ b. round trip


@settings(max_examples=200, deadline=None)
@given(constraint_texts(), batches)
def test_printed_tree_parses_to_an_equal_evaluating_tree(
    text: str | list[str], sets: list[dict[str, Property]]
) -> None:
    tree = parse_constraint(text).tree
    assert tree is not None
    printed = str(tree)
    again = parse(printed)
    assert again is not None
    assert str(again) == printed  # printing is a fixed point after one round
    assert [holds(again, s) for s in sets] == [holds(tree, s) for s in sets]
    reparsed = parse_constraint(printed)
    assert PropertyColumns(sets).satisfied(reparsed).tolist() == [holds(tree, s) for s in sets]


# ------------------------------------------------------------------ c. fuzz

KINDS = {"syntax", "parentheses", "keyword", "operator", "literal", "empty"}
FUZZ_ALPHABET = 'abcxyzAONDT019 "()[],=!<>&|~.-_\n\t'
TOKENS = [
    "a",
    "b",
    "cpu",
    "ver",
    "in",
    "AND",
    "OR",
    "&&",
    "||",
    "NOT",
    "and",
    "or",
    "==",
    "=",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "=>",
    "=<",
    "=~",
    "<>",
    '"x"',
    '"x,y"',
    '""',
    '"',
    "1",
    "2.5",
    "-1",
    "1.2.3",
    "true",
    "INFINITY",
    "[1.0.0,2.0.0)",
    "(1.0.0,INFINITY)",
    "[1.0,2)",
    "[x,y]",
    "(",
    ")",
    "[",
    "]",
    ",",
    " ",
    "\t",
]

fuzz_texts = st.one_of(
    st.text(alphabet=FUZZ_ALPHABET, max_size=24),
    st.lists(st.sampled_from(TOKENS), max_size=10).map("".join),
    st.lists(st.sampled_from(TOKENS), max_size=10).map(" ".join),
    st.builds(lambda e, junk: e + junk, expressions(depth=1), st.text(FUZZ_ALPHABET, max_size=4)),
)

FIXED = {"a": "x", "b": 2, "cpu": 4, "ver": "1.5.0", "in": "q", "c": True}


def _check_error(text: str, error: ExpressionError) -> None:
    assert error.text == text
    assert isinstance(error.column, int)
    assert 1 <= error.column <= len(text) + 1, (text, error.column, error.message)
    assert error.kind in KINDS, error.kind
    assert error.message
    assert "^" in str(error)


@settings(max_examples=1000, deadline=None)
@given(fuzz_texts)
def test_fuzz_parse_gives_a_constraint_or_an_expression_error(text: str) -> None:
    try:
        constraint = parse_constraint(text)
    except ExpressionError as error:
        _check_error(text, error)
    else:
        assert constraint.tree is not None or not text.strip()
        # Whatever parses, both evaluators agree on it.
        sets = [validate_properties(FIXED), {}]
        reference = [satisfied(constraint, s) for s in sets]
        assert PropertyColumns(sets).satisfied(constraint).tolist() == reference


@settings(max_examples=300, deadline=None)
@given(fuzz_texts)
def test_fuzz_evaluate_gives_a_bool_or_an_expression_error(text: str) -> None:
    try:
        result = placed.evaluate(text, FIXED)
    except ExpressionError as error:
        _check_error(text, error)
    else:
        assert isinstance(result, bool)


@settings(max_examples=200, deadline=None)
@given(st.lists(fuzz_texts, min_size=1, max_size=3))
def test_fuzz_constraint_lists(texts: list[str]) -> None:
    try:
        constraint = parse_constraint(texts)
    except ExpressionError as error:
        # The error is about one element of the list, and its column is within that element.
        if error.text in texts:
            _check_error(error.text, error)
    else:
        assert isinstance(satisfied(constraint, validate_properties(FIXED)), bool)
