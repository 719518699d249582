"""Malformed constraint expressions: each is an ExpressionError of the right kind, at the
right column (1-based), with a message that says what is wrong, rendered with a caret
under that column."""

from __future__ import annotations

import pytest

import placed
from placed.model.properties import PropertyError, validate_properties
from placed.policy.expressions import ExpressionError, parse_constraint


def error(text: str | list[str]) -> ExpressionError:
    with pytest.raises(ExpressionError) as caught:
        parse_constraint(text)
    return caught.value


def check(text: str, kind: str, column: int, *fragments: str) -> ExpressionError:
    found = error(text)
    assert (found.kind, found.column) == (kind, column), found.message
    for fragment in fragments:
        assert fragment in found.message, (fragment, found.message)
    assert found.text == text
    # placed.evaluate raises the same error.
    with pytest.raises(ExpressionError) as again:
        placed.evaluate(text, {"x": "a", "cpu": 4})
    assert (again.value.kind, again.value.column) == (kind, column)
    return found


# ---------------------------------------------------------------- parentheses


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("(a == 1", 1),
        ("((a == 1) OR b == 2", 1),
        ("a == 1 AND (b == 2 OR (c == 3)", 12),
        ("x in (1.0.0,2.0.0", 6),
    ],
)
def test_an_opening_parenthesis_never_closed(text: str, column: int) -> None:
    check(text, "parentheses", column, "unbalanced parentheses", "never closed")
    assert text[column - 1] == "("


@pytest.mark.parametrize(
    ("text", "column"),
    [("a == 1)", 7), ("(a == 1)) AND b == 2", 9), (")a == 1(", 1), ("a == 1 && b == 2)", 17)],
)
def test_a_closing_parenthesis_that_closes_nothing(text: str, column: int) -> None:
    check(text, "parentheses", column, "unbalanced parentheses", "closes nothing")
    assert text[column - 1] == ")"


def test_empty_parentheses() -> None:
    check("a == 1 AND ()", "syntax", 13, "unexpected ')'", "property name")


# ---------------------------------------------------------------- operator / literal pairs


@pytest.mark.parametrize(
    ("text", "column", "op"),
    [('x == "a,b"', 6, "=="), ('x != "a,b"', 6, "!="), ('x = " a , b "', 5, "==")],
)
def test_a_list_after_an_equality(text: str, column: int, op: str) -> None:
    check(text, "operator", column, "is a list", f"{op} compares with one value", "use 'in'")


@pytest.mark.parametrize(
    ("text", "column", "literal"),
    [
        ('cpu < "4"', 7, '"4"'),
        ("cpu < abc", 7, "abc"),
        ("cpu >= true", 8, "true"),
        ("cpu > 1.2.3", 7, "1.2.3"),
        ('cpu <= "x,y"', 8, '"x,y"'),
        ("cpu => abc", 8, "abc"),
        ("cpu < inf", 7, "inf"),
    ],
)
def test_an_ordering_operator_with_something_else_than_a_number(
    text: str, column: int, literal: str
) -> None:
    found = check(text, "operator", column, "compares numbers", f"{literal} is not a number")
    assert text[column - 1 :].startswith(literal)
    assert found.message.split()[0] in ("<", ">", "<=", ">=", "=>")


@pytest.mark.parametrize(
    ("text", "column", "op"),
    [
        ("x == [1.0.0,2.0.0)", 6, "'=='"),
        ("x != (1.0.0,INFINITY)", 6, "'!='"),
        ("x = [1.0.0,2.0.0]", 5, "'='"),
        ("x < [1.0.0,2.0.0)", 5, "'<'"),
    ],
)
def test_a_version_range_after_another_operator_than_in(text: str, column: int, op: str) -> None:
    check(text, "operator", column, "version range goes with 'in'", op)


@pytest.mark.parametrize(
    ("text", "column", "bound"),
    [
        ("x in [1.0.0,2.0.0.0)", 13, "'2.0.0.0' is not a version or INFINITY"),
        ("x in [1.2.3,4.5.6.7]", 13, "'4.5.6.7' is not a version or INFINITY"),
        ("x in [1.0.0,1.x)", 13, "'1.x' is not a version or INFINITY"),
        ("x in [1.0.0,infinity)", 13, "'infinity' is not a version or INFINITY"),
        ("x in [01.0.0,2.0.0)", 7, "'01.0.0' is not a version"),
        ("x in [a,2.0.0)", 7, "'a' is not a version"),
        ("x in [INFINITY,2.0.0)", 7, "'INFINITY' is not a version"),
        ("x in ( 1.0.0 , 2.0.0.1 )", 16, "'2.0.0.1' is not a version"),
    ],
)
def test_a_malformed_range_bound(text: str, column: int, bound: str) -> None:
    check(text, "literal", column, bound)


# ---------------------------------------------------------------- in


@pytest.mark.parametrize("text", ['x in ""', 'x in " "', 'x in " , "'])
def test_an_empty_in(text: str) -> None:
    check(text, "empty", 6, "'in' needs at least one value")


def test_an_empty_quoted_value() -> None:
    check('x == ""', "empty", 6, "empty quoted value")


@pytest.mark.parametrize(
    ("text", "got"),
    [("x in abc", "abc"), ("x in 5", "5"), ("x in -1.5", "-1.5"), ("x in true", "true")],
)
def test_in_with_a_bare_word_or_number(text: str, got: str) -> None:
    check(text, "operator", 6, "'in' takes a quoted list", "version range", f"got {got}")


# ---------------------------------------------------------------- AND / OR / NOT


@pytest.mark.parametrize(
    ("text", "column", "word"),
    [
        ("a == 1 AND", 8, "AND"),
        ("a == 1 &&", 8, "&&"),
        ("a == 1 OR", 8, "OR"),
        ("a == 1 ||", 8, "||"),
        ("a == 1 AND   ", 8, "AND"),
        ("a == 1 && ", 8, "&&"),
        ("(a == 1) OR", 10, "OR"),
        ("a == x&&", 7, "&&"),
    ],
)
def test_a_dangling_logical_operator(text: str, column: int, word: str) -> None:
    check(text, "syntax", column, f"nothing follows {word}")


@pytest.mark.parametrize(
    ("text", "column", "hint"),
    [
        ("a == 1 and b == 2", 8, "write AND or &&"),
        ("a == 1 or b == 2", 8, "write OR or ||"),
        ("a == 1 And b == 2", 8, "write AND or &&"),
        ("a == 1 Or b == 2", 8, "write OR or ||"),
        ("(a == 1) and (b == 2)", 10, "write AND or &&"),
    ],
)
def test_lower_case_keywords(text: str, column: int, hint: str) -> None:
    found = check(text, "keyword", column, "is not a keyword", "upper-case", hint)
    assert repr(text[column - 1 : column + 2].strip()) in found.message


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("NOT a == 1", 1),
        ("a == 1 AND NOT b == 2", 12),
        ("not (a == 1)", 1),
        ("a == 1 NOT b == 2", 8),
    ],
)
def test_not(text: str, column: int) -> None:
    check(text, "keyword", column, "no NOT", "!=")


def test_leading_and_doubled_logical_operators() -> None:
    check("&& a == 1", "syntax", 1, "unexpected '&&'", "property name")
    check("a == 1 && && b == 2", "syntax", 11, "unexpected '&&'", "property name")
    check("a == 1 OR AND b == 2", "syntax", 15, "unexpected 'b'")


# ---------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("text", "column", "op"),
    [
        ("a =~ b", 3, "=~"),
        ("a <> b", 3, "<>"),
        ("a === 1", 3, "==="),
        ("a !== 1", 3, "!=="),
        ("a ~= b", 3, "~="),
        ("a ! b", 3, "!"),
        ("cpu >> 5", 5, ">>"),
        ("a == 1 AND b =! 2", 14, "=!"),
    ],
)
def test_an_unknown_operator(text: str, column: int, op: str) -> None:
    check(text, "operator", column, f"unknown operator {op!r}", "use ==")


def test_operator_characters_inside_quotes_are_not_operators() -> None:
    assert str(parse_constraint('a == "x <> y"').tree) == 'a == "x <> y"'


# ---------------------------------------------------------------- missing parts


@pytest.mark.parametrize(
    ("text", "column"),
    [("x ==", 5), ("x == ", 6), ("x in", 5), ("x !=  ", 7), ("a == 1 AND b <=", 16)],
)
def test_a_missing_value(text: str, column: int) -> None:
    found = check(text, "syntax", column, "ends too early", "a value")
    assert column == len(text) + 1
    assert "quoted" in found.message


def test_a_missing_value_before_a_parenthesis() -> None:
    check("(x == ) AND b == 1", "syntax", 7, "unexpected ')'", "a value")


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("x", 2, "ends too early"),
        ("a == 1 AND b", 13, "ends too early"),
        ("x 5", 3, "unexpected '5'"),
        ('x "a"', 3, "unexpected '\"a\"'"),
        ("(x)", 3, "unexpected ')'"),
    ],
)
def test_a_missing_operator(text: str, column: int, message: str) -> None:
    check(text, "syntax", column, message, "an operator (== != < > <= >=)", "'in'")


@pytest.mark.parametrize(
    ("text", "column"),
    [("a == 1 b == 2", 8), ("eggs == truck load", 15), ('a == "x" "y"', 10)],
)
def test_a_missing_logical_operator(text: str, column: int) -> None:
    check(text, "syntax", column, "unexpected", "AND or OR")


@pytest.mark.parametrize("text", ["== lab", "5g == true", "a:b == 1"])
def test_no_property_name(text: str) -> None:
    found = error(text)
    assert found.kind == "syntax"
    assert found.column in (1, 2)


@pytest.mark.parametrize(
    ("text", "column"),
    [('x == "abc', 6), ('x == "a" AND y == "b', 19), ('"x == 1', 1), ('x in "a,b', 6)],
)
def test_an_unterminated_quote(text: str, column: int) -> None:
    check(text, "syntax", column, "quote is never closed")
    assert text[column - 1] == '"'


def test_an_error_in_one_element_of_a_list_names_that_element() -> None:
    found = error(["a == 1", "b =="])
    assert (found.kind, found.column, found.text) == ("syntax", 5, "b ==")


# ---------------------------------------------------------------- rendering


@pytest.mark.parametrize(
    "text",
    ["(a == 1", "cpu < abc", "a == 1 and b == 2", 'x in ""', "x ==", "a =~ b", "x in [1.0.0,1.x)"],
)
def test_the_rendered_message_has_a_caret_under_the_column(text: str) -> None:
    found = error(text)
    lines = str(found).splitlines()
    assert lines[0] == f"{found.message} (column {found.column})"
    assert lines[1] == f"  {text}"
    assert lines[2] == "  " + " " * (found.column - 1) + "^"
    assert lines[2].index("^") - 2 == found.column - 1
    assert found.render() == str(found)


def test_blank_and_empty_texts_are_not_errors() -> None:
    assert parse_constraint("").tree is None
    assert parse_constraint("   ").tree is None
    assert parse_constraint([]).tree is None
    assert placed.evaluate("  ", {}) is True


# ---------------------------------------------------------------- bugs


def test_glued_in_error_points_into_the_users_text() -> None:
    found = error('abin"a" b')
    assert found.text == 'abin"a" b'
    assert found.column == 9  # the 'b'


def test_columns_count_from_the_start_of_a_multi_line_text() -> None:
    text = "a == 1\n  b == 2"
    found = error(text)
    assert text[found.column - 1] == "b"


def test_a_keyword_glued_to_a_name_is_not_split() -> None:
    for text in ["a == 1 ORIGIN == 2", "a == 1 ANDROID == 2", "a == x ORx == 1"]:
        found = error(text)
        assert (found.kind, found.column) == ("syntax", 8), text


def test_a_value_ending_in_a_keyword_is_a_value() -> None:
    assert placed.evaluate("state == US-OR", {"state": "US-OR"}) is True


def test_a_tilde_inside_a_value() -> None:
    assert placed.evaluate("a == x~y", {"a": "x~y"}) is True


def test_not_touching_a_parenthesis() -> None:
    found = error("NOT(a == 1)")
    assert (found.kind, found.column) == ("keyword", 1)


def test_a_huge_version_bound_is_an_expression_error() -> None:
    text = "x in [1.0.0," + "9" * 4301 + ".0.0)"
    found = error(text)
    assert found.kind == "literal"


def test_a_huge_version_property_is_a_property_error() -> None:
    with pytest.raises(PropertyError):
        validate_properties([{"name": "v", "value": "9" * 4301, "type": "version"}])


def test_a_huge_integer_property_is_a_property_error() -> None:
    with pytest.raises(PropertyError):
        validate_properties({"n": 10**400})
