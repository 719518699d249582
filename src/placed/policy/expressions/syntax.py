"""Parsing constraint text into a small tree, with errors that point at a column.

The grammar is in grammar.lark (lark, LALR). What the grammar cannot say, such as "an
ordering operator needs a number", is checked on the tree, with the column of the
offending token.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

import lark
from lark import Lark, Token, Transformer

from placed.model.properties import parse_version, split_list, trim


class ExpressionError(ValueError):
    """Invalid constraint text. `column` is 1-based; `kind` names the class of mistake:
    syntax, parentheses, keyword, operator, literal, empty."""

    def __init__(self, message: str, column: int, kind: str, text: str) -> None:
        self.message = message
        self.column = column
        self.kind = kind
        self.text = text
        super().__init__(self.render())

    def render(self) -> str:
        # The column counts characters; the caret moves by their width on a terminal,
        # where a CJK or full-width character takes two cells. A long expression is shown
        # as a window around the column, so an error is a few lines, whatever its size.
        start = max(0, self.column - 1 - EXCERPT_BEFORE)
        end = min(len(self.text), self.column - 1 + EXCERPT_AFTER)
        lead = "..." if start else ""
        shown = lead + self.text[start:end] + ("..." if end < len(self.text) else "")
        caret = " " * display_width(lead + self.text[start : self.column - 1]) + "^"
        return f"{self.message} (column {self.column})\n  {shown}\n  {caret}"


EXCERPT_BEFORE = 60  # characters shown before the column of an error
EXCERPT_AFTER = 20


def display_width(text: str) -> int:
    return sum(
        0
        if unicodedata.combining(char)
        else 2
        if unicodedata.east_asian_width(char) in ("W", "F")
        else 1
        for char in text
    )


@dataclass(frozen=True, slots=True)
class Range:
    low: tuple[int, int, int]
    low_inclusive: bool
    high: tuple[int, int, int] | None  # None: INFINITY
    high_inclusive: bool

    def contains(self, version: tuple[int, int, int]) -> bool:
        above = version >= self.low if self.low_inclusive else version > self.low
        if self.high is None:
            return above
        below = version <= self.high if self.high_inclusive else version < self.high
        return above and below


@dataclass(frozen=True, slots=True)
class Literal:
    """The right-hand side of a comparison, as written."""

    kind: str  # number, version, word, string, range
    text: str  # without surrounding quotes, trimmed
    quoted: bool = False
    range: Range | None = None

    @property
    def number(self) -> float | None:
        # Numbers compare only with unquoted numeric literals (Open Horizon: "4" is text).
        if self.kind != "number":
            return None
        return float(self.text)

    @property
    def boolean(self) -> bool | None:
        # Go's strconv.ParseBool, which Open Horizon uses: unquoted only.
        if self.quoted:
            return None
        if self.text in ("1", "t", "T", "TRUE", "true", "True"):
            return True
        if self.text in ("0", "f", "F", "FALSE", "false", "False"):
            return False
        return None

    @property
    def elements(self) -> tuple[str, ...]:
        return split_list(self.text) if self.kind == "string" else (self.text,)

    def __str__(self) -> str:
        if self.kind == "range":
            return self.text
        return f'"{self.text}"' if self.quoted else self.text


@dataclass(frozen=True, slots=True)
class Comparison:
    name: str
    op: str  # ==, !=, <, >, <=, >=, =>, =<, in  ("=" is read as "==")
    literal: Literal
    column: int

    def __str__(self) -> str:
        return f"{self.name} {self.op} {self.literal}"


@dataclass(frozen=True, slots=True)
class All:
    terms: tuple[Node, ...]

    def __str__(self) -> str:
        return " AND ".join(_wrap(term, All) for term in self.terms)


@dataclass(frozen=True, slots=True)
class Any_:
    terms: tuple[Node, ...]

    def __str__(self) -> str:
        return " OR ".join(_wrap(term, Any_) for term in self.terms)


Node = Comparison | All | Any_


def _wrap(term: Node, parent: type) -> str:
    return (
        f"({term})" if isinstance(term, All | Any_) and not isinstance(term, parent) else str(term)
    )


@dataclass(frozen=True)
class Constraint:
    """A list of expressions, ANDed; empty means true."""

    texts: tuple[str, ...] = ()
    tree: Node | None = None
    comparisons: tuple[Comparison, ...] = field(default=())

    def __str__(self) -> str:
        return str(self.tree) if self.tree is not None else ""


@cache
def _parser() -> Lark:
    grammar = files("placed.policy.expressions").joinpath("grammar.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True)


_KEYWORD = re.compile(r"(and|or|And|Or)\b")


# A fleet's policies repeat a few constraints thousands of times, and the spec reader
# checks each before the planner parses it again; the tree is immutable and an error is
# raised, not cached, so one parse per distinct text serves both.
@lru_cache(maxsize=16384)
def parse(text: str) -> Node | None:
    """One expression; None when it is empty (which is true)."""
    if not text.strip():
        return None
    _prescan(text)
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as error:
        glued = _glued_in(text, error)
        if glued is None:
            raise _syntax_error(text, error) from None
        # Open Horizon reads `countryin"a,b"` as `country in "a,b"`; so do we. If that
        # reading fails further on, the error points into the text as written.
        rewritten, cut = glued
        try:
            return parse(rewritten)
        except ExpressionError as inner:
            # The rewrite put a blank before and after `in`: two characters past the cut.
            column = inner.column - 2 if inner.column > cut + 3 else min(inner.column, cut + 1)
            raise ExpressionError(inner.message, column, inner.kind, text) from None
    if tree is None or (isinstance(tree, lark.Tree) and tree.data == "start" and not tree.children):
        return None
    try:
        return _Build(text).transform(tree)
    except lark.exceptions.VisitError as error:
        if isinstance(error.orig_exc, ExpressionError):
            raise error.orig_exc from None
        raise


def parse_constraint(expressions: str | list[str] | tuple[str, ...]) -> Constraint:
    """A constraint as Open Horizon stores it: a string or a list of strings, ANDed."""
    texts = (expressions,) if isinstance(expressions, str) else tuple(expressions)
    return _parse_texts(texts)


# Explanations and checks ask for the same few constraints once per target; the parsed
# tree is immutable, so one parse serves them all.
@lru_cache(maxsize=4096)
def _parse_texts(texts: tuple[str, ...]) -> Constraint:
    trees = [tree for tree in (parse(text) for text in texts) if tree is not None]
    kept = tuple(text for text in texts if text.strip())
    if not trees:
        return Constraint(kept, None, ())
    tree = trees[0] if len(trees) == 1 else All(tuple(trees))
    return Constraint(kept, tree, tuple(comparisons(tree)))


def comparisons(node: Node) -> list[Comparison]:
    if isinstance(node, Comparison):
        return [node]
    return [c for term in node.terms for c in comparisons(term)]


_OPERATOR_RUN = re.compile(r"~?[=!<>]+~?")
_VALID_OPERATORS = {"==", "!=", "<=", ">=", "=>", "=<", "=", "<", ">"}
_DANGLING = re.compile(r"(?:(?<=[\s)])|^)(AND|OR)\s*$|(&&|\|\|)\s*$")
_EXPONENT = re.compile(r"(?<![\w.])[-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+(?![\w.])")
_NOT = re.compile(r"(?:^|(?<=[\s(]))(NOT|not|Not)(?:\s+(?=[^\W\d]|\()|(?=\())")


def _unquoted(text: str) -> str:
    """The text with quoted parts blanked out, so that scans skip them (same columns)."""
    return re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), text)


def _prescan(text: str) -> None:
    """Mistakes that a parser would report a token too late, or confusingly."""
    quotes = [index for index, char in enumerate(text) if char == '"']
    if len(quotes) % 2:
        raise ExpressionError("this quote is never closed", quotes[-1] + 1, "syntax", text)
    plain = _unquoted(text)
    for match in _OPERATOR_RUN.finditer(plain):
        if match.group(0) not in _VALID_OPERATORS:
            raise ExpressionError(
                f"unknown operator {match.group(0)!r}; use ==, !=, <, >, <=, >= or in",
                match.start() + 1,
                "operator",
                text,
            )
    negation = _NOT.search(plain)
    if negation:
        raise ExpressionError(
            f"{negation.group(1)!r}: Open Horizon's language has no NOT; "
            "use != or rewrite the term",
            negation.start(1) + 1,
            "keyword",
            text,
        )
    dangling = _DANGLING.search(plain)
    if dangling:
        group = 1 if dangling.group(1) else 2
        raise ExpressionError(
            f"nothing follows {dangling.group(group)}", dangling.start(group) + 1, "syntax", text
        )
    exponent = _EXPONENT.search(plain)
    if exponent:
        raise ExpressionError(
            f"{exponent.group(0)} is a number with an exponent, which the constraint language "
            "(like Open Horizon's) does not have; write the digits out, e.g. 1000 for 1e3",
            exponent.start() + 1,
            "literal",
            text,
        )
    _check_parentheses(text)


def _check_parentheses(text: str) -> None:
    depth_at: list[int] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            end = text.find('"', index + 1)
            index = len(text) if end < 0 else end + 1
            continue
        span = _RANGE.match(text, index) if char in "[(" else None
        if span is not None:
            # A version range such as (1.0.0,2.0.0] is one token, not a parenthesis.
            index = span.end()
            continue
        if char == "(":
            depth_at.append(index)
        elif char == ")":
            if not depth_at:
                raise ExpressionError(
                    "unbalanced parentheses: this ')' closes nothing",
                    index + 1,
                    "parentheses",
                    text,
                )
            depth_at.pop()
        index += 1
    if depth_at:
        raise ExpressionError(
            "unbalanced parentheses: this '(' is never closed",
            depth_at[-1] + 1,
            "parentheses",
            text,
        )


# The grammar's RANGE token: commas never appear outside quotes otherwise.
_RANGE = re.compile(r"[\[(]\s*[^\s,\[\]()]+\s*,\s*[^\s,\[\]()]+\s*[\])]")


def _glued_in(text: str, error: lark.exceptions.UnexpectedInput) -> tuple[str, int] | None:
    if not isinstance(error, lark.exceptions.UnexpectedToken):
        return None
    if error.token.type not in ("STRING", "RANGE", "VERSION"):
        return None
    before = text[: error.token.start_pos].rstrip()
    name = re.search(r"[^\W\d][\w.\-/]*$", before)
    if name is None or not name.group(0).endswith("in") or len(name.group(0)) <= 3:
        return None
    cut = name.end() - 2
    return f"{text[:cut]} in {text[cut + 2 :]}", cut


_EXPECTED = {
    "NAME": "a property name",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMPARE": "an operator (== != < > <= >=)",
    "IN": "'in'",
    "AND": "AND",
    "OR": "OR",
    "NUMBER": "a number",
    "VERSION": "a version",
    "WORD": "a value",
    "STRING": 'a "quoted" value',
    "RANGE": "a version range",
    "$END": "the end",
}


def _describe(expected: set[str]) -> str:
    names = sorted({_EXPECTED.get(name, name) for name in expected})
    return " or ".join(names) if len(names) <= 3 else ", ".join(names[:-1]) + " or " + names[-1]


def _syntax_error(text: str, error: lark.exceptions.UnexpectedInput) -> ExpressionError:
    # Columns count over the whole text, so that an expression written over several
    # lines still points at the right character.
    position = getattr(error, "pos_in_stream", None)
    column = position + 1 if isinstance(position, int) and position >= 0 else None
    if isinstance(error, lark.exceptions.UnexpectedToken) and error.token.type == "$END":
        column = len(text) + 1
        return ExpressionError(
            f"the expression ends too early; expected {_describe(error.expected)}",
            column,
            "syntax",
            text,
        )
    if not isinstance(column, int) or column < 1:
        column = (position or 0) + 1
    rest = text[column - 1 :]
    keyword = _KEYWORD.match(rest)
    if keyword:
        word = keyword.group(1)
        symbol = "&&" if word.lower() == "and" else "||"
        hint = f"keywords are upper-case: write {word.upper()} or {symbol}"
        return ExpressionError(f"{word!r} is not a keyword; {hint}", column, "keyword", text)
    if isinstance(error, lark.exceptions.UnexpectedToken):
        found = error.token
        what = f"{found.value!r}" if found.value else found.type
        return ExpressionError(
            f"unexpected {what}; expected {_describe(error.expected)}", column, "syntax", text
        )
    allowed = getattr(error, "allowed", None) or set()
    snippet = rest.split()[0] if rest.split() else rest[:1]
    return ExpressionError(
        f"unexpected {snippet!r}; expected {_describe(set(allowed))}", column, "syntax", text
    )


def _range(token: Token, text: str) -> Range:
    body = token.value.strip()
    start = token.start_pos
    assert start is not None, "the lexer places every token it makes"
    low_inclusive, high_inclusive = body[0] == "[", body[-1] == "]"
    low_text, high_text = (part.strip() for part in body[1:-1].split(","))
    low = parse_version(low_text)
    high = None if high_text == "INFINITY" else parse_version(high_text)
    if low is None:
        raise ExpressionError(
            f"{low_text!r} is not a version (1 to 3 numbers, e.g. 1.0.0)",
            start + 1 + body.index(low_text),
            "literal",
            text,
        )
    if high is None and high_text != "INFINITY":
        raise ExpressionError(
            f"{high_text!r} is not a version or INFINITY",
            start + 1 + body.rindex(high_text),
            "literal",
            text,
        )
    return Range(low, low_inclusive, high, high_inclusive)


class _Build(Transformer[Token, Node]):
    """Tree -> Node, checking what the grammar cannot: which literal each operator takes."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def _fail(self, message: str, column: int, kind: str = "operator") -> ExpressionError:
        return ExpressionError(message, column, kind, self.text)

    def number(self, items: list[Token]) -> tuple[Literal, Token]:
        return Literal("number", items[0].value), items[0]

    def version(self, items: list[Token]) -> tuple[Literal, Token]:
        return Literal("version", items[0].value), items[0]

    def word(self, items: list[Token]) -> tuple[Literal, Token]:
        return Literal("word", items[0].value), items[0]

    def string(self, items: list[Token]) -> tuple[Literal, Token]:
        return Literal("string", trim(items[0].value), quoted=True), items[0]

    def range(self, items: list[Token]) -> tuple[Literal, Token]:
        token = items[0]
        text = re.sub(r"\s+", "", token.value)
        return Literal("range", text, range=_range(token, self.text)), token

    def compare(self, items: list[Any]) -> Comparison:
        name, op_token, (literal, token) = items
        # `=>` and `=<` are what Open Horizon accepts and evaluates as == on numbers (not as
        # >= and <=) and as false on anything else; they keep that meaning here so pasted
        # policies answer the same.
        op = "==" if op_token.value == "=" else op_token.value
        numeric_only = op in ("<", ">", "<=", ">=", "=>", "=<")
        column = token.start_pos + 1
        if literal.kind == "range":
            raise self._fail(f"a version range goes with 'in', not {op_token.value!r}", column)
        if numeric_only:
            if literal.number is None:
                raise self._fail(
                    f"{op_token.value} compares numbers; {literal} is not a number "
                    "(unquoted, such as 4 or 2.5)",
                    column,
                )
        elif literal.kind == "string" and "," in literal.text:
            raise self._fail(
                f"{literal} is a list; {op} compares with one value (use 'in' for a list)", column
            )
        if literal.kind == "string" and not literal.text:
            raise self._fail("an empty quoted value compares with nothing", column, "empty")
        return Comparison(name.value, op, literal, name.start_pos + 1)

    def member(self, items: list[Any]) -> Comparison:
        name, _, (literal, token) = items
        if literal.kind in ("number", "word"):
            raise self._fail(
                f"'in' takes a quoted list (\"a,b\"), a version or a version range; got {literal}",
                token.start_pos + 1,
            )
        if literal.kind == "string" and not any(literal.elements):
            raise self._fail("'in' needs at least one value", token.start_pos + 1, "empty")
        return Comparison(name.value, "in", literal, name.start_pos + 1)

    def and_expr(self, items: list[Any]) -> All:
        return All(_flatten(items, All))

    def or_expr(self, items: list[Any]) -> Any_:
        return Any_(_flatten(items, Any_))

    def start(self, items: list[Any]) -> Node | None:
        return items[0] if items else None


def _flatten(items: list[Any], kind: type[All] | type[Any_]) -> tuple[Node, ...]:
    """The terms of a chain of one operator, nested chains of the same operator merged:
    (a AND (b AND c)) is a AND b AND c."""
    flat: list[Node] = []
    for item in items:
        if isinstance(item, Token):
            continue  # the AND/OR keyword itself
        flat.extend(item.terms if isinstance(item, kind) else [item])
    return tuple(flat)
