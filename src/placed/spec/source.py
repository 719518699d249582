"""YAML (and JSON, its subset) read into plain data, bounded, with every place in the file
found again when an error needs it.

Speed: JSON goes through the C JSON parser; YAML in plain block style (as inventory
scripts write it) through a reader of its lines, and other YAML through libyaml's events
(PyYAML's C loader); each straight to plain data with no node tree and no position. Each
fast path gives up on anything unusual (a duplicate key, an alias, a tag...), and the careful path
reads the text again as a node tree, with positions, and reports it. A `SourceMap`
composes the tree from the text only when a problem first asks, and walks it to a path,
so a valid spec pays nothing for positions.

Bounds (each reported with its place): the input's size (MAX_BYTES), how deeply it nests
(MAX_DEPTH), how many values YAML aliases may expand to (MAX_EXPANDED: a "billion laughs"
stops here), and integers (at most 18 digits: larger ones are no real amount).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import yaml

from placed.spec.errors import Problem, SourcePosition, SpecError, quoted

Path = tuple[str | int, ...]

MAX_BYTES = 128 * 1024 * 1024  # about half a million targets
MAX_DEPTH = 1000  # levels of nesting (a location's children take two: a list and a map)
MAX_EXPANDED = 10_000_000  # values, counting each use of an alias in full
MAX_DIGITS = 18

_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when installed
# What a plain scalar's text resolves to (str, int, bool...): the resolver tries a list of
# regular expressions per scalar, the slowest step of reading a large YAML file, and an
# inventory repeats its keys and values endlessly.
_RESOLVED: dict[str, str] = {}
_RESOLVED_KEPT = 100_000


class _Loader(_BASE_LOADER):  # type: ignore[misc]
    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            tag = _RESOLVED.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_RESOLVED) < _RESOLVED_KEPT:
                    _RESOLVED[value] = tag
            return tag
        return super().resolve(kind, value, implicit)


_LOADER: Any = _Loader
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_INT = "tag:yaml.org,2002:int"
_STR = "tag:yaml.org,2002:str"
_SCALARS = yaml.SafeLoader("")


def _position(node: yaml.Node) -> SourcePosition:
    return SourcePosition(node.start_mark.line + 1, node.start_mark.column + 1)


def _event_position(event: yaml.Event) -> SourcePosition | None:
    mark = event.start_mark
    return SourcePosition(mark.line + 1, mark.column + 1) if mark is not None else None


# The largest text whose problems are given their line and column: finding them reads the
# text again as a node tree, some seconds a megabyte. The CLI places every file's; the
# service (a request's body, read on a shared server) only a small body's.
_PLACED_UP_TO: ContextVar[int] = ContextVar("placed_up_to", default=MAX_BYTES)


@contextmanager
def placed_up_to(size: int) -> Iterator[None]:
    """Within it, the problems of a text longer than `size` characters have no line and
    column (their key still says where they are)."""
    token = _PLACED_UP_TO.set(size)
    try:
        yield
    finally:
        _PLACED_UP_TO.reset(token)


class _Composed:
    """The node trees of a text's documents, composed on the first question: read by the
    fast path, a valid spec never asks. Shared by the documents of one file."""

    def __init__(self, text: str) -> None:
        self._text: str | None = text
        self._roots: list[yaml.Node] = []

    def root(self, index: int) -> yaml.Node | None:
        if self._text is not None:
            text, self._text = self._text, None
            try:
                if len(text) <= _PLACED_UP_TO.get():
                    self._roots = _compose(text, "<positions>")
            except (SpecError, RecursionError):
                self._roots = []
        return self._roots[index] if index < len(self._roots) else None


class SourceMap:
    """Where each part of one document stands in the file, found when asked."""

    def __init__(
        self,
        root: yaml.Node | None = None,
        text: str | None = None,
        file_text: str = "",
        *,
        composed: _Composed | None = None,
        index: int = 0,
    ) -> None:
        self._root = root
        # Read by a fast path: the tree is composed from the text on the first question.
        if composed is None and text is not None:
            composed = _Composed(text)
        self._composed = composed
        self._index = index  # which of the text's (non-empty) documents this one is
        self._file_text = file_text or text or ""  # the whole file, to look inside values

    def _tree(self) -> yaml.Node | None:
        if self._root is None and self._composed is not None:
            composed, self._composed = self._composed, None
            self._root = composed.root(self._index)
        return self._root

    def _walk(self, path: Path) -> tuple[yaml.Node | None, yaml.Node | None, int]:
        """(the deepest node on the path, the key node that led to it, its depth)."""
        node, key_node, depth = self._tree(), None, 0
        for part in path:
            if node is None:
                break
            found: tuple[yaml.Node | None, yaml.Node | None] = (None, None)
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == part:
                        found = (v, k)
            elif (
                isinstance(node, yaml.SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(node.value)
            ):
                found = (node.value[part], None)
            if found[0] is None:
                break
            node, key_node = found
            depth += 1
        return node, key_node, depth

    def value(self, path: Path) -> SourcePosition | None:
        """Where the value at `path` stands, or the nearest enclosing value that does."""
        node, _, _ = self._walk(path)
        return _position(node) if node is not None else None

    def scalar_text(self, path: Path) -> str | None:
        """The text of the plain value at `path` as written (0x1F, 2024-01-01), if any."""
        node, _, depth = self._walk(path)
        if isinstance(node, yaml.ScalarNode) and depth == len(path):
            return str(node.value)
        return None

    def inside(self, path: Path, offset: int) -> SourcePosition | None:
        """Where character `offset` (0-based) of the text value at `path` stands in the
        file: an expression's error column, in a quoted, folded or multi-line value."""
        node, _, depth = self._walk(path)
        if not isinstance(node, yaml.ScalarNode) or depth != len(path) or not self._file_text:
            return None
        text = self._file_text
        start = _line_offset(text, node.start_mark.line) + node.start_mark.column
        raw = text[start : _line_offset(text, node.end_mark.line) + node.end_mark.column]
        # The value is, nearly, a subsequence of what is written: quotes, indentation and
        # line breaks that folding made spaces are what lies between. Match greedily,
        # each character near the last; one not found (an escape such as \n) is skipped.
        at = 0
        for char in node.value[:offset]:
            found = raw.find(char, at, at + _NEAR)
            at = found + 1 if found >= 0 else at + 1
        if offset < len(node.value):
            found = raw.find(node.value[offset], at, at + _NEAR)
            at = found if found >= 0 else at
        return offset_position(text, start + min(at, len(raw)))

    def extent(self, path: Path, key: bool = False) -> tuple[SourcePosition, SourcePosition] | None:
        """Where the value (or the key) at `path` begins and ends, when the path leads to
        it: what a problem's value was made from (hzn's substituted variables)."""
        node, key_node, depth = self._walk(path)
        found = key_node if key else node
        if found is None or depth != len(path):
            return None
        end = found.end_mark
        return _position(found), SourcePosition(end.line + 1, end.column + 1)

    def key(self, path: Path) -> SourcePosition | None:
        """Where the key of the last part of `path` stands (else where its value does)."""
        node, key_node, depth = self._walk(path)
        if key_node is not None and depth == len(path):
            return _position(key_node)
        return _position(node) if node is not None else None


_NEAR = 256  # how far past the last match a value's next character is looked for


def _line_offset(text: str, line: int) -> int:
    """The offset where 0-based `line` starts."""
    offset = 0
    for _ in range(line):
        offset = text.find("\n", offset) + 1
        if offset == 0:
            return len(text)
    return offset


def read_bounded(path: str, source: str) -> str:
    """A file's text, refusing more than MAX_BYTES and pointing at a byte that is not
    UTF-8 (a device such as /dev/zero stops at the limit)."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise SpecError(
            source,
            [Problem(f"is larger than {MAX_BYTES // (1024 * 1024)} MiB, the most placed reads")],
        )
    return decode(data, source)


def decode(data: bytes, source: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(
            source,
            [Problem("is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8")],
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        start = data.rfind(b"\n", 0, error.start) + 1
        column = len(data[start : error.start].decode("utf-8", errors="replace")) + 1
        byte = data[error.start : error.start + 1].hex()
        raise SpecError(
            source,
            [
                Problem(
                    f"byte 0x{byte} is not UTF-8 (is this a binary file?); a spec is UTF-8 text",
                    position=SourcePosition(line, column),
                )
            ],
        ) from None


def offset_position(text: str, offset: int) -> SourcePosition:
    """The line and column of a character offset into `text`."""
    line_start = text.rfind("\n", 0, offset) + 1
    return SourcePosition(text.count("\n", 0, offset) + 1, offset - line_start + 1)


def too_long_number(text: str, number: str, source: str) -> SpecError:
    """An integer past MAX_DIGITS, at its first place in `text` (a JSON parser read it
    without positions)."""
    offset = text.find(number)
    return SpecError(
        source,
        [
            Problem(
                f"a number of {len(number.lstrip('-'))} digits; placed takes integers of at "
                f"most {MAX_DIGITS} digits",
                position=offset_position(text, offset) if offset >= 0 else None,
            )
        ],
    )


def parse(text: str, source: str, any_keys: bool = False) -> list[tuple[Any, SourceMap]]:
    """Each document in `text` as (data, where each part of it stands). With `any_keys`,
    a key YAML reads as a number (a Juju bundle's machine 0) is kept as its text."""
    if len(text) > MAX_BYTES:
        raise SpecError(source, [Problem(f"is larger than {MAX_BYTES // (1024 * 1024)} MiB")])
    fast = _json(text)
    if fast is not None:
        return [(fast, SourceMap(text=text))]
    if "\t" in text and _is_json(text):
        # YAML forbids tabs where JSON allows them; outside strings (where JSON has none)
        # a space means the same and keeps every column.
        text = text.replace("\t", " ")
    read = _fast_yaml(text)
    if read is not None:
        composed = _Composed(text)
        return [
            (data, SourceMap(file_text=text, composed=composed, index=i))
            for i, data in enumerate(read)
        ]
    roots = _compose(text, source)
    if not roots:
        raise SpecError(
            source,
            [
                Problem(
                    "the spec is empty; it needs at least an inventory",
                    position=SourcePosition(1, 1),
                )
            ],
        )
    documents = []
    for root in roots:
        documents.append((_convert(root, source, any_keys), SourceMap(root, file_text=text)))
    return documents


class _NotFast(Exception):
    """The JSON fast path cannot read this text as it is: YAML reads it, with places."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _NotFast  # a duplicate key: the YAML path reports it where it stands
    return found


def _constant(name: str) -> Any:
    raise _NotFast  # NaN or Infinity


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _NotFast
    return int(text)


def _json(text: str) -> Any | None:
    """The data of a JSON document, or None when JSON's parser should not decide."""
    start = text.lstrip()[:1]
    if start not in ("{", "["):
        return None
    try:
        return json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_integer
        )
    except (_NotFast, ValueError, RecursionError):
        return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


# The plain values read so far and what each reads as: an inventory repeats its keys and
# values endlessly, and each repeat then shares one object. Past this many distinct ones
# the table starts again, so a file of unique values keeps it bounded.
_PLAIN_KEPT = 100_000
_UNSEEN = object()
_TEXT_ONLY = frozenset({str})


def _fast_yaml(text: str) -> list[Any] | None:
    """Every non-empty document of `text` as plain data, built from libyaml's events
    without a node tree or a position; None when the careful path must read it: for
    anything that path refuses or treats apart (a YAML error, an anchor or alias, a tag,
    a duplicate or non-text key, a merge key, a long integer, deep nesting, too many
    values), which it then reads again, with positions, and reports as before."""
    block = _block_yaml(text)
    if block is not None:
        return block
    if _BASE_LOADER is yaml.SafeLoader:
        return None  # no libyaml: its events would come from the pure-Python parser
    loader = _BASE_LOADER(text)
    try:
        return _read_events(loader.get_event)
    except (_NotFast, yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()


def _read_events(get_event: Callable[[], Any]) -> list[Any]:
    documents: list[Any] = []
    plain: dict[str, Any] = {}
    enclosing: list[list[Any]] = []  # the open collections' items, innermost last
    items: list[Any] = []  # the innermost open collection's (a mapping's: marker, k, v, ...)
    values = 0
    last_scalar: Any = None
    while True:
        event = get_event()
        kind = event.__class__
        if kind is yaml.ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotFast
            value = event.value
            if event.implicit[0]:  # plain: its text decides what it is (17, true, ~)
                built = plain.get(value, _UNSEEN)
                if built is _UNSEEN:
                    built = _plain_scalar(value)
                    if len(plain) >= _PLAIN_KEPT:
                        plain.clear()
                    plain[value] = built
                value = built
            items.append(value)
            values += 1
            last_scalar = event
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            values += 1
            if (
                event.anchor is not None
                or event.tag is not None
                or len(enclosing) >= MAX_DEPTH
                or values > MAX_EXPANDED
            ):
                raise _NotFast
            enclosing.append(items)
            items = [_MAPPING_ITEMS] if kind is yaml.MappingStartEvent else []
        elif kind is yaml.MappingEndEvent:
            keys = items[1::2]
            try:
                mapping = dict(zip(keys, items[2::2], strict=True))
            except TypeError:  # a collection as a key
                raise _NotFast from None
            if len(mapping) != len(keys) or not _TEXT_ONLY.issuperset(map(type, keys)):
                raise _NotFast  # a duplicate key, or one that reads as a number, a date...
            items = enclosing.pop()
            items.append(mapping)
        elif kind is yaml.SequenceEndEvent:
            sequence = items
            items = enclosing.pop()
            items.append(sequence)
        elif kind is yaml.DocumentStartEvent:
            items, values = [], 0
        elif kind is yaml.DocumentEndEvent:
            if values > MAX_EXPANDED:
                raise _NotFast
            (root,) = items
            # A document with nothing in it (after a trailing ---) is no document.
            empty = root is None and last_scalar is not None and last_scalar.value == ""
            if not (empty and last_scalar is not None and last_scalar.implicit[0]):
                documents.append(root)
        elif kind is yaml.StreamEndEvent:
            break
        elif kind is yaml.AliasEvent:
            raise _NotFast
    if not documents:
        raise _NotFast  # the careful path says the spec is empty
    return documents


_MAPPING_ITEMS = object()  # the first item of an open mapping's list


# -- the block reader: plain block YAML, a line at a time ---------------------------------
#
# libyaml's events cost more than the data they carry (an object and two marks for each
# scalar: most of a large YAML file's read). A file as an inventory script writes it,
# block mappings and sequences of one-line values, is read here a line at a time with
# a few regular expressions instead. It reads a small part of YAML, and gives up on
# anything else, for the events to read: a tab, a carriage return, a character that is
# not ASCII or is a control character, several documents, a comment after a value, a
# value over several lines, an empty value, an anchor, alias or tag, a key that is
# quoted or not text, a duplicate key, an escape other than \\ \" \n \t, a plain
# value with a space, a colon, a # or a quote in it, a flow collection over several lines
# or with a trailing comma, nesting past _BLOCK_DEPTH, too many values. Plain values are
# resolved by PyYAML's own resolver and constructors (_plain_scalar), so 017, yes, ~ and
# 2024-01-01 read as the events read them.

_BLOCK_DEPTH = 100  # deeper files go to the events, which check MAX_DEPTH
# What the reader refuses anywhere in the text (tabs and control characters among them),
# as the bytes that are not: deleting these from an ASCII text leaves only the unusual
# ones, three times as fast as a search for them.
_BLOCK_USUAL = bytes(b for b in range(128) if b == 0x0A or 0x20 <= b <= 0x7E)
# YAML takes a key of one line of at most 1024 characters (libyaml refuses longer ones).
_KEY_TEXT = r"[A-Za-z_][A-Za-z0-9_.\-/]{0,127}"
# A plain value: no space, colon, #, quote, comma or bracket, and no indicator first.
_PLAIN_TEXT = r"(?:[A-Za-z0-9_.~+]|-(?=[0-9.]))[A-Za-z0-9_.~+\-/]*"
_SIMPLE_DOUBLE = r'"[^"\\]*"'  # double-quoted without an escape
_DOUBLE_QUOTED = r'"(?:[^"\\]|\\[\\"nt])*"'
_SINGLE_QUOTED = r"'(?:[^']|'')*'"
# A mapping's line: its key, then a simple double-quoted value's text, a plain value,
# any other value, or nothing (the value starts on the next line).
_KEY_LINE = re.compile(f'({_KEY_TEXT}):(?: +(?:"([^"\\\\]*)"|({_PLAIN_TEXT})|([^ ].*)))?')
_BLOCK_PLAIN = re.compile(_PLAIN_TEXT)
_QUOTED_VALUE = re.compile(f"({_DOUBLE_QUOTED})|({_SINGLE_QUOTED})")
# Flow collections of one level, read by two expressions each: most of an inventory's.
_FLAT_ITEM = f"(?:{_SIMPLE_DOUBLE}|{_PLAIN_TEXT})"
_QUOTED_LIST = re.compile(rf"\[ *(?:{_SIMPLE_DOUBLE} *(?:, *{_SIMPLE_DOUBLE} *)*)?\]")
_QUOTED_TEXTS = re.compile(r'"([^"\\]*)"')
_FLAT_LIST = re.compile(rf"\[ *(?:{_FLAT_ITEM} *(?:, *{_FLAT_ITEM} *)*)?\]")
_FLAT_ITEMS = re.compile(f"({_SIMPLE_DOUBLE})|({_PLAIN_TEXT})")
_FLAT_MAP = re.compile(
    rf"\{{ *(?:{_KEY_TEXT}: +{_FLAT_ITEM} *(?:, *{_KEY_TEXT}: +{_FLAT_ITEM} *)*)?\}}"
)
_FLAT_PAIRS = re.compile(f"({_KEY_TEXT}): +(?:({_SIMPLE_DOUBLE})|({_PLAIN_TEXT}))")
_FLOW_KEY = re.compile(f"({_KEY_TEXT}): +")
_FLOW_SCALAR = re.compile(f"({_DOUBLE_QUOTED})|({_SINGLE_QUOTED})|({_PLAIN_TEXT})")


def _block_yaml(text: str) -> list[Any] | None:
    """The one document of `text` if it is plain block YAML (above), else None."""
    if not text.isascii() or text.encode("ascii").translate(None, _BLOCK_USUAL):
        return None
    try:
        return [_read_block(text.split("\n"), _Plain())]
    except (_NotFast, IndexError, RecursionError):
        return None


class _Plain(dict[str, Any]):
    """Plain values read so far, each read once (as _read_events keeps them)."""

    def __missing__(self, text: str) -> Any:
        if len(self) >= _PLAIN_KEPT:
            self.clear()
        built = self[text] = _plain_scalar(text)
        return built


# What a line holds, worked out once for each distinct line (an inventory repeats most of
# its lines word for word: a host's kind, properties and capacity): (indent, dash, the
# column its key stands at, key, value kind, value, flow values counted). The kinds:
_SKIP, _SCALAR, _LIST, _MAP, _FLOW, _PENDING, _ITEM = range(7)
_Line = tuple[int, bool, int, str | None, int, Any, int]
_SKIPPED: _Line = (0, False, 0, None, _SKIP, None, 0)
_LINES_KEPT = 65_536  # distinct lines remembered; past it the table starts again


def _line(line: str, plain: _Plain) -> _Line:
    """What `line` holds, as far as it does not depend on the lines around it; _NotFast
    where any reading of it would give up (the reader would, on reaching it)."""
    content = line.lstrip(" ")
    if not content or content[0] == "#":
        return _SKIPPED  # blank, or a comment
    indent = len(line) - len(content)
    if content[-1] == " ":
        content = content.rstrip(" ")
    dash = content[:2] == "- "
    if dash:
        item = content[2:].lstrip(" ")
        found = _KEY_LINE.fullmatch(item)
        if found is None:
            if item[0] == "-" and (item[:2] == "- " or item == "-"):
                raise _NotFast  # a list in a list
            kind, value, counted = _value(item, plain)
            return (indent, True, indent, None, _ITEM if kind == _SCALAR else kind, value, counted)
        column = indent + len(content) - len(item)
    else:
        found = _KEY_LINE.fullmatch(content)
        if found is None:
            raise _NotFast
        column = indent
    key_text, double, bare, rest = found.groups()
    key = plain[key_text]
    if type(key) is not str:
        raise _NotFast  # a key that reads as no text
    if double is not None:
        return (indent, dash, column, key, _SCALAR, double, 0)
    if bare is not None:
        return (indent, dash, column, key, _SCALAR, plain[bare], 0)
    if rest is not None:
        kind, value, counted = _value(rest, plain)
        return (indent, dash, column, key, kind, value, counted)
    return (indent, dash, column, key, _PENDING, None, 0)


def _value(text: str, plain: _Plain) -> tuple[int, Any, int]:
    """An inline value as the line table keeps it: a value shared by every line that
    holds it (a scalar), one to copy for each (a flat list or mapping of scalars), or
    the text of any other flow collection, read where it stands (its depth is bounded)."""
    first = text[0]
    if first == "[":
        if _QUOTED_LIST.fullmatch(text) is not None:
            texts = _QUOTED_TEXTS.findall(text)
            return _LIST, tuple(texts), 1 + len(texts)
        if _FLAT_LIST.fullmatch(text) is not None:
            items = _FLAT_ITEMS.findall(text)
            values = tuple(double[1:-1] if double else plain[bare] for double, bare in items)
            return _LIST, values, 1 + len(items)
        return _FLOW, text, 0
    if first == "{":
        if _FLAT_MAP.fullmatch(text) is not None:
            counted = [0]
            return _MAP, _inline(text, plain, counted, 0), counted[0]
        return _FLOW, text, 0
    counted = [0]
    return _SCALAR, _inline(text, plain, counted, 0), counted[0]


def _read_block(lines: list[str], plain: _Plain) -> Any:
    """One pass over the lines with the open blocks on a stack, each at its column: a
    line less indented closes those deeper than it. IndexError where a line is less
    indented than the first (the stack runs out)."""
    deepest = min(_BLOCK_DEPTH, MAX_DEPTH // 2)  # past it the events count exactly
    columns: list[int] = []
    blocks: list[Any] = []  # the open mappings and lists, innermost last
    pending: str | None = None  # a key whose value starts on the next line
    pending_column = 0
    values = 0
    counted = [0]  # the values of flow collections
    column = -1  # the innermost open block's
    block: Any = None  # the innermost open block
    known: dict[str, _Line] = {}
    for line in lines:
        seen = known.get(line)
        if seen is None:
            if len(known) >= _LINES_KEPT:
                known.clear()
            seen = known[line] = _line(line, plain)
        indent, dash, key_column, key, kind, value, flow_values = seen
        if kind == _SKIP:
            continue
        if kind in (_LIST, _MAP) and len(blocks) >= deepest:
            raise _NotFast  # a flow collection past the bound: the events count it
        if pending is not None:
            # The value of the key before: a block more indented, or a list at its column.
            if not (indent > pending_column or (indent == pending_column and dash)):
                raise _NotFast  # an empty value
            opened: Any = [] if dash else {}
            block[pending] = opened
            columns.append(indent)
            blocks.append(opened)
            column, block = indent, opened
            values += 1
            pending = None
            if len(blocks) > deepest:
                raise _NotFast
        elif not blocks:
            if dash or values:
                raise _NotFast  # a list (or ---) at the top, or a second document
            column, block = indent, {}
            columns.append(column)
            blocks.append(block)
            values += 1
        elif indent != column or dash or type(block) is list:
            # Not the next key of the same mapping (the most common line, which passes).
            while columns[-1] > indent:
                columns.pop()
                blocks.pop()
            if columns[-1] != indent:
                raise _NotFast
            if not dash and type(blocks[-1]) is list:
                # A list under its key, at the key's column, ends at the next key.
                columns.pop()
                blocks.pop()
                if columns[-1] != indent:
                    raise _NotFast
            column, block = indent, blocks[-1]
        if dash:
            if type(block) is not list:
                raise _NotFast
            if key is None:
                counted[0] += flow_values
                if kind == _ITEM:
                    block.append(value)
                elif kind == _LIST:
                    block.append(list(value))
                elif kind == _MAP:
                    block.append(dict(value))
                else:
                    block.append(_inline(value, plain, counted, len(blocks)))
                continue
            # A mapping that starts on the item's line: its keys stand where this one does.
            opened = {}
            block.append(opened)
            columns.append(key_column)
            blocks.append(opened)
            column, block = key_column, opened
            values += 1
            if len(blocks) > deepest:
                raise _NotFast
        elif type(block) is not dict or key is None:
            raise _NotFast
        if key in block:
            raise _NotFast  # a duplicate key
        values += 2
        counted[0] += flow_values
        if kind == _SCALAR:
            block[key] = value
        elif kind == _LIST:
            block[key] = list(value)
        elif kind == _MAP:
            block[key] = dict(value)
        elif kind == _FLOW:
            block[key] = _inline(value, plain, counted, len(blocks))
        else:
            pending, pending_column = key, indent
    if pending is not None or not blocks or values + counted[0] > MAX_EXPANDED:
        raise _NotFast
    return blocks[0]


def _inline(text: str, plain: _Plain, counted: list[int], depth: int) -> Any:
    """A value that stands on its line after a key or a dash, with nothing after it."""
    first = text[0]
    if first == "[":
        if _QUOTED_LIST.fullmatch(text) is not None:
            texts: list[Any] = _QUOTED_TEXTS.findall(text)
            counted[0] += 1 + len(texts)
            return texts
        if _FLAT_LIST.fullmatch(text) is not None:
            items = _FLAT_ITEMS.findall(text)
            counted[0] += 1 + len(items)
            return [double[1:-1] if double else plain[bare] for double, bare in items]
    elif first == "{" and _FLAT_MAP.fullmatch(text) is not None:
        pairs = _FLAT_PAIRS.findall(text)
        mapping = {}
        for key_text, double, bare in pairs:
            key = plain[key_text]
            if type(key) is not str:
                raise _NotFast
            mapping[key] = double[1:-1] if double else plain[bare]
        if len(mapping) != len(pairs):
            raise _NotFast  # a duplicate key
        counted[0] += 1 + 2 * len(pairs)
        return mapping
    if first == "[" or first == "{":
        value, end = _flow(text, 0, plain, counted, depth + 1)
        if end != len(text):
            raise _NotFast
        return value
    counted[0] += 1
    if first == '"' or first == "'":
        found = _QUOTED_VALUE.fullmatch(text)
        if found is None:
            raise _NotFast
        return _quoted(found)
    if _BLOCK_PLAIN.fullmatch(text) is None:
        raise _NotFast
    return plain[text]


def _flow(text: str, at: int, plain: _Plain, counted: list[int], depth: int) -> tuple[Any, int]:
    """The flow collection that starts at `at`, and where it ends: items on one line,
    separated by commas, with no comma after the last."""
    if depth > min(_BLOCK_DEPTH, MAX_DEPTH // 2):
        raise _NotFast
    counted[0] += 1
    if text[at] == "[":
        items: list[Any] = []
        at = _after_spaces(text, at + 1)
        if text[at] == "]":
            return items, at + 1
        while True:
            value, at = _flow_item(text, at, plain, counted, depth)
            items.append(value)
            at = _after_spaces(text, at)
            if text[at] == "]":
                return items, at + 1
            if text[at] != ",":
                raise _NotFast
            at = _after_spaces(text, at + 1)
    mapping: dict[str, Any] = {}
    at = _after_spaces(text, at + 1)
    if text[at] == "}":
        return mapping, at + 1
    while True:
        found = _FLOW_KEY.match(text, at)
        if found is None:
            raise _NotFast
        key = plain[found.group(1)]
        if type(key) is not str or key in mapping:
            raise _NotFast
        counted[0] += 1
        mapping[key], at = _flow_item(text, found.end(), plain, counted, depth)
        at = _after_spaces(text, at)
        if text[at] == "}":
            return mapping, at + 1
        if text[at] != ",":
            raise _NotFast
        at = _after_spaces(text, at + 1)


def _flow_item(
    text: str, at: int, plain: _Plain, counted: list[int], depth: int
) -> tuple[Any, int]:
    first = text[at]
    if first == "[" or first == "{":
        return _flow(text, at, plain, counted, depth + 1)
    found = _FLOW_SCALAR.match(text, at)
    if found is None:
        raise _NotFast
    counted[0] += 1
    bare = found.group(3)
    return (plain[bare] if bare is not None else _quoted(found)), found.end()


def _after_spaces(text: str, at: int) -> int:
    while text[at] == " ":
        at += 1
    return at


def _quoted(found: re.Match[str]) -> str:
    """A quoted value's text: group 1 double-quoted (its escapes are JSON's too), group 2
    single-quoted."""
    double = found.group(1)
    if double is not None:
        return str(json.loads(double)) if "\\" in double else double[1:-1]
    return found.group(2)[1:-1].replace("''", "'")


# The resolver keeps no state for a scalar (SafeLoader has no path resolvers).
_resolve: Callable[[type[yaml.Node], str, tuple[bool, bool]], str] = _SCALARS.resolve


def _plain_scalar(text: str) -> Any:
    """What a plain value reads as, as the careful path reads it, or _NotFast."""
    tag = _resolve(yaml.ScalarNode, text, (True, False))
    if tag == _STR:
        return text
    if tag not in _PLAIN_SCALARS or (
        tag == _INT and len(text.lstrip("+-").replace("_", "")) > MAX_DIGITS
    ):
        raise _NotFast
    constructors: dict[str | None, Callable[[yaml.SafeLoader, yaml.Node], Any]]
    constructors = yaml.SafeLoader.yaml_constructors
    try:
        return constructors[tag](_SCALARS, yaml.ScalarNode(tag, text))
    except (yaml.YAMLError, ValueError, OverflowError):
        raise _NotFast from None


# Up to this size, a file libyaml refuses is read again by PyYAML's own parser, whose
# messages say more ("expected ',' or ']', but got '<scalar>'"); larger ones keep libyaml's.
_REWORD_BELOW = 16 * 1024 * 1024


def _compose(text: str, source: str) -> list[yaml.Node]:
    try:
        return _roots(text, _LOADER)
    except yaml.YAMLError as error:
        if _istoo_deep(error):
            raise too_deep(text, source) from None
        if _BASE_LOADER is yaml.SafeLoader or len(text) > _REWORD_BELOW:
            return _worded(text, source, _LOADER)
        return _worded(text, source, yaml.SafeLoader)
    except RecursionError:
        raise too_deep(text, source) from None


def _istoo_deep(error: yaml.YAMLError) -> bool:
    # libyaml refuses flow collections nested past its own limit (also 1000) as a
    # scanner error; it is the same mistake as ours and gets the same message.
    return "nesting depth" in str(getattr(error, "problem", "") or "")


def too_deep(text: str, source: str) -> SpecError:
    """'nests too deep' at the collection that goes past MAX_DEPTH, found by reading the
    events again: the parser keeps no stack of its own, so depth costs it nothing."""
    message = f"nests more than {MAX_DEPTH} levels deep; placed reads no deeper"
    depth = 0
    position: SourcePosition | None = None
    try:
        for event in yaml.parse(text, Loader=_BASE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    position = _event_position(event)
                    break
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        position = SourcePosition(mark.line + 1, mark.column + 1) if mark else None
    except (yaml.YAMLError, RecursionError):
        pass
    return SpecError(source, [Problem(message, position=position)])


def _roots(text: str, loader: Any) -> list[yaml.Node]:
    return [
        root
        for root in yaml.compose_all(text, Loader=loader)
        if root is not None and not _is_empty(root)
    ]


def _worded(text: str, source: str, loader: Any) -> list[yaml.Node]:
    """The YAML error of `text`, as a SpecError with its place."""
    try:
        return _roots(text, loader)
    except yaml.reader.ReaderError as error:
        # The reader counts characters from the start; people count lines and columns.
        found = text[error.position : error.position + 1]
        character = f"U+{ord(found):04X}" if found else "a character"
        raise SpecError(
            source,
            [
                Problem(
                    f"{character} is a control character, which YAML does not allow; remove "
                    "it (or write it as an escape such as \\t inside double quotes)",
                    position=offset_position(text, error.position),
                )
            ],
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        position = SourcePosition(mark.line + 1, mark.column + 1) if mark else None
        message = f"not valid YAML: {error.problem or error.context}"
        if error.problem and error.context and error.context_mark:
            # Where the unfinished part began, e.g. the bracket an error at the end left open.
            start = error.context_mark
            message += f" ({error.context} at line {start.line + 1}, column {start.column + 1})"
        raise SpecError(source, [Problem(message, position=position)]) from None
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem(f"not valid YAML: {error}")]) from None
    except RecursionError:
        raise too_deep(text, source) from None


def _is_empty(node: yaml.Node) -> bool:
    """A document with nothing in it, such as the one after a trailing `---`."""
    return isinstance(node, yaml.ScalarNode) and node.tag == _NULL and node.value == ""


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A collection's nodes in order (a mapping's as key, value, key, value...)."""
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _path_to(root: yaml.Node, target: yaml.Node) -> Path:
    """The path of `target` in the tree (searched only to word an error)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, Path]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(
                (v, (*path, k.value)) for k, v in node.value if isinstance(k, yaml.ScalarNode)
            )
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return ()


def _scalar(node: yaml.ScalarNode, source: str) -> Any:
    if node.tag == _STR:
        return node.value  # what the str constructor returns, without the call
    if node.tag == _INT and len(node.value.lstrip("+-").replace("_", "")) > MAX_DIGITS:
        raise SpecError(
            source,
            [
                Problem(
                    f"a number of {len(node.value)} digits; placed takes integers of at most "
                    f"{MAX_DIGITS} digits",
                    position=_position(node),
                )
            ],
        )
    # Calling the tag's constructor directly keeps no per-node bookkeeping in the shared
    # loader (construct_object would remember every scalar, forever, in every thread).
    # The stubs leave the constructors' type open; every one takes a loader and a node.
    constructors: dict[str | None, Callable[[yaml.SafeLoader, yaml.Node], Any]]
    constructors = yaml.SafeLoader.yaml_constructors
    constructor = constructors.get(node.tag)
    if constructor is None or node.tag not in _PLAIN_SCALARS:
        raise _unsupported_tag(node, source)
    try:
        return constructor(_SCALARS, node)
    except (yaml.YAMLError, ValueError, OverflowError) as error:
        # A marked error's full text repeats the place as '"<unicode string>", line 2'.
        message = getattr(error, "problem", None) or str(error)
        raise SpecError(source, [Problem(message, position=_position(node))]) from None


_PLAIN_COLLECTIONS = {"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"}
# !!binary reads as bytes, which no part of a spec takes; dates are kept so that an id
# YAML reads as one gets the "quote it" message.
_PLAIN_SCALARS = {
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "timestamp")
}


def _unsupported_tag(node: yaml.Node, source: str, key: str = "") -> SpecError:
    # A tag asks a loader to build something; placed builds plain data only, and says so
    # rather than dropping the tag (an unsafe loader would run !!python/object/apply).
    written = node.tag.replace("tag:yaml.org,2002:", "!!")
    return SpecError(
        source,
        [
            Problem(
                f"the YAML tag {quoted(written)} is not supported; placed reads plain YAML "
                "(text, numbers, booleans, lists and mappings): drop the tag",
                key=key,
                position=_position(node),
            )
        ],
    )


def _convert(root: yaml.Node, source: str, any_keys: bool = False) -> Any:
    try:
        return _build(root, source, any_keys)
    except _Misplaced as error:
        path = _path_to(root, error.mapping)
        key = dotted((*path, *error.more))
        raise SpecError(
            source, [Problem(error.message, key=key, position=error.position)]
        ) from None


class _Misplaced(Exception):
    """A problem inside a mapping, to be named by the mapping's path (found only then)."""

    def __init__(
        self, message: str, mapping: yaml.Node, position: SourcePosition, more: Path = ()
    ) -> None:
        self.message, self.mapping, self.position, self.more = message, mapping, position, more


def _build(root: yaml.Node, source: str, any_keys: bool = False) -> Any:
    """The node tree as plain data, in one pass without recursion (a tree may be deep),
    refusing what nests too deeply, aliases that contain themselves, and aliases that
    expand past MAX_EXPANDED values (each use of an alias counts in full)."""
    built: dict[int, Any] = {}
    size: dict[int, int] = {}
    entered: set[int] = set()
    # (node, depth, ready, parent): ready once its children are built.
    stack: list[tuple[yaml.Node, int, bool, yaml.Node | None]] = [(root, 1, False, None)]
    while stack:
        node, depth, ready, parent = stack.pop()
        nid = id(node)
        if not ready and nid in built:
            continue  # an alias to a node already built
        if type(node) is yaml.ScalarNode:
            try:
                built[nid] = _scalar(node, source)
            except SpecError as error:
                # Name the key too (capacity.cpu): the tree is searched only now.
                key = dotted(_path_to(root, node))
                error.problems[:] = [replace(p, key=p.key or key) for p in error.problems]
                raise SpecError(source, error.problems) from None
            size[nid] = 1
            continue
        if not ready:
            if nid in entered:
                raise _loop(root, node, parent, source)
            if depth > MAX_DEPTH:
                raise SpecError(
                    source,
                    [
                        Problem(
                            f"nests more than {MAX_DEPTH} levels deep; placed reads no deeper",
                            position=_position(node),
                        )
                    ],
                )
            if node.tag not in _PLAIN_COLLECTIONS:
                raise _unsupported_tag(node, source, dotted(_path_to(root, node)))
            entered.add(nid)
            stack.append((node, depth, True, parent))
            if isinstance(node, yaml.MappingNode):
                for key_node, _ in node.value:
                    if key_node.tag == _MERGE:  # before its `<<` is read as a value
                        raise _Misplaced(
                            "YAML merge keys (<<) are not supported; write the keys out",
                            node,
                            _position(key_node),
                        )
                for key_node, value_node in reversed(node.value):
                    stack.append((value_node, depth + 1, False, node))
                    stack.append((key_node, depth + 1, False, node))
            else:
                stack.extend((item, depth + 1, False, node) for item in reversed(node.value))
            continue
        entered.discard(nid)
        children = _children(node)
        total = 1 + sum(size[id(child)] for child in children)
        if total > MAX_EXPANDED:
            raise SpecError(
                source,
                [
                    Problem(
                        f"expands to more than {MAX_EXPANDED:,} values through YAML aliases "
                        "(a 'billion laughs'?); placed reads no more",
                        position=_position(node),
                    )
                ],
            )
        size[nid] = total
        if isinstance(node, yaml.SequenceNode):
            built[nid] = [built[id(item)] for item in node.value]
            continue
        result: dict[Any, Any] = {}
        first: dict[Any, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Misplaced("a mapping key must be a plain value", node, _position(key_node))
            key = built[id(key_node)]
            if type(key) is not str and any_keys and key_node.value:
                key = key_node.value
            if type(key) is not str:
                # Every key of a spec is text; YAML reads yes, 1 or 2024-01-01 otherwise.
                message = (
                    f"a key must be text, but {quoted(key_node.value)} reads as "
                    f"{quoted(key)}; quote it"
                )
                raise _Misplaced(message, node, _position(key_node))
            if key in result:
                line = _position(first[key]).line
                raise _Misplaced(
                    f"duplicate key {quoted(key)} (first at line {line})",
                    node,
                    _position(key_node),
                    (key,),
                )
            first[key] = key_node
            result[key] = built[id(value_node)]
        built[nid] = result
    return built[id(root)]


def _loop(root: yaml.Node, node: yaml.Node, parent: yaml.Node | None, source: str) -> SpecError:
    """An alias to a node that contains it, pointed at where the alias stands."""
    assert parent is not None  # the root contains nothing before it is entered
    where = _path_to(root, parent)
    index = next(i for i, child in enumerate(_children(parent)) if child is node)
    # Point at the key that holds the alias, or at the list it stands in.
    if isinstance(parent, yaml.MappingNode):
        key_node = parent.value[index // 2][0]
        part: str | int = key_node.value
        position = _position(key_node)
    else:
        part, position = index, _position(parent)
    return SpecError(
        source,
        [
            Problem(
                "this alias refers to a node that contains it; the data would be endless",
                key=dotted((*where, part)),
                position=position,
            )
        ],
    )


def dotted(path: Path) -> str:
    """inventory[0].children[1].tags: how a path reads in a message."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
