"""A large YAML file read by rapidyaml (ryml, C++): its tree emitted as JSON, read by the
C JSON parser. PyYAML's own event API costs more than the whole goal for 100,000 targets
(pulling 3.4 million events out of libyaml), and ryml parses and emits the same file in a
fraction of that.

ryml reads YAML 1.2 and placed reads YAML as PyYAML's SafeLoader does (YAML 1.1), so this
route answers only where the two provably agree and declines (None) everywhere else, for
the libyaml event path to read as before:

- before parsing, on the text: a tab, a carriage return, a line break PyYAML counts that
  ryml does not (NEL, U+2028, U+2029), a character PyYAML refuses, a document marker or
  directive, and anything that may be an anchor, alias, tag, complex key or block scalar
  (ryml drops tags and emits an alias as its text);
- after emitting, on the JSON: a string that would read as anything but text were it
  plain (yes, ~, 0x1F, 2024-01-01: ryml keeps them text, PyYAML does not; quoted ones are
  declined too, since JSON no longer tells them apart), a number PyYAML reads otherwise
  (1e3 is text to it) or that ryml may have rewritten (-.5 comes out as -0.5), an
  integer past MAX_DIGITS, a duplicate key, more than MAX_EXPANDED values, and nesting
  deeper than ryml's emitter goes (64, far below MAX_DEPTH).

tests/test_spec_rapid.py holds this route to the event path on generated documents.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import yaml

# Smaller files gain little, and stay on the one path every small test reads.
RAPID_FROM = 256 * 1024

# ryml's JSON emitter refuses collections nested deeper than 65; the bound is far past it.
_EMITTER_DEPTH = 100

# Characters on which ryml and PyYAML part, wherever they stand (quoted or not).
_REFUSED = ("\t", "\r", "\x85", "\u2028", "\u2029", "\ufeff")
# Characters whose absence lets the text go to ryml without a closer look.
_SCREENED = ("&", "*", "!", "|", ">", "?", "%")
# Where one of them may mean something to YAML: at the start of a token, outside a quoted
# scalar that opens and closes on the same line (an expression's `&&` or `!=`).
_RISKY_TEXT = re.compile(r"%|(?:^|[\s\[{,])[&*!|>?]")
# Escapes read alike by both (in a double-quoted scalar; elsewhere a backslash is itself,
# and declining there is only slower): not a surrogate's \u, not \x, \N, \L, \e...
_ESCAPE = re.compile(r'\\(?![\\"nt/]|u(?![dD][89abAB])[0-9a-fA-F]{4})')
_QUOTED = re.compile(r"""(?:^|(?<=[\s\[{,]))(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\n]|'')*')""")


def _risky_strings() -> re.Pattern[str]:
    """A JSON string whose text PyYAML would read as something else than text, were it a
    plain scalar: PyYAML's own implicit resolvers, between quotes."""
    patterns: list[str] = []
    for resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.values():
        for _, regexp in resolvers:
            body = regexp.pattern.strip()
            assert body.startswith("^") and body.endswith("$")
            inner = f"(?x:{body[1:-1]})" if regexp.flags & re.VERBOSE else f"(?:{body[1:-1]})"
            if inner not in patterns:
                patterns.append(inner)
    # A string starts after `[`, `{`, `,`, `:` or a space in ryml's JSON (a quote inside
    # a string is escaped, a closing one is followed by one of them); the lookahead skips
    # the many strings no resolver could take before trying each.
    return re.compile('"(?<=[\\[{,: \n]")(?=[-+.0-9yYnNtTfFoO~<="])(?:' + "|".join(patterns) + ')"')


_RISKY_STRING = _risky_strings()


class _Declined(Exception):
    pass


def _integer(digits: int, text: str) -> int:
    # JSON's integers (-?(0|[1-9][0-9]*)) are all integers to PyYAML too, and the same.
    if len(text) > digits and len(text.lstrip("-")) > digits:
        raise _Declined
    return int(text)


def _float(plain: Callable[[str], Any], text: str) -> float:
    # ryml writes a leading point with a zero (.5 as 0.5, -.5 as -0.5): PyYAML reads .5
    # as a number, -.5 as text, so a negative fraction is not taken at its word.
    if text.startswith("-0."):
        raise _Declined
    value = plain(text)
    if type(value) is not float:
        raise _Declined
    return value


def _constant(name: str) -> Any:
    raise _Declined


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Declined
    return found


def _quiet_stderr() -> int:
    """ryml prints its errors on the process's stderr before raising: point it at the
    null device meanwhile (only ever with one thread: see `read`)."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
    finally:
        os.close(null)
    return saved


def _restore_stderr(saved: int) -> None:
    os.dup2(saved, 2)
    os.close(saved)


# PyYAML takes a key written without `?` only within 1024 characters; ryml at any length.
_KEY_LENGTH = 1024


def _longest_line(text: str) -> int:
    """The longest line's length in bytes (at least its characters), at C speed."""
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    breaks = np.flatnonzero(data == 10)
    return int(np.diff(breaks, prepend=-1, append=len(data)).max())


def _screened(text: str) -> bool:
    """Nothing in the text on which ryml and PyYAML may differ (see the module's list)."""
    if any(char in text for char in _REFUSED):
        return False
    for char in _SCREENED:
        at = text.find(char)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            if _RISKY_TEXT.search(_QUOTED.sub('""', text[start:end])):
                return False
            at = text.find(char, end)
    if text.startswith(("---", "...")) or "\n---" in text or "\n..." in text:
        return False
    if "\\" in text and _ESCAPE.search(text):
        return False
    if _longest_line(text) > _KEY_LENGTH + 1:
        return False
    return yaml.reader.Reader.NON_PRINTABLE.search(text) is None


def alone() -> bool:
    """Whether this thread is the process's only one (silencing stderr is then safe)."""
    return threading.active_count() == 1


def read(
    text: str,
    plain: Callable[[str], Any],
    *,
    digits: int,
    depth: int,
    expanded: int,
    smallest: int | None = None,
) -> list[Any] | None:
    """The text's one document as plain data, exactly as the event path reads it, or None
    when this route does not answer. `plain` reads a plain scalar as the event path does
    (raising to decline); `digits`, `depth` and `expanded` are its bounds. Only in a
    process with one thread (the CLI): stderr is silenced while ryml parses, which would
    swallow another thread's writes."""
    if len(text) < (RAPID_FROM if smallest is None else smallest):
        return None
    if not alone() or depth < _EMITTER_DEPTH:
        return None
    try:
        import ryml  # type: ignore[import-untyped]
    except ImportError:
        return None
    if not _screened(text):
        return None
    saved = _quiet_stderr()
    try:
        tree = ryml.parse_in_arena(text)
        # A node is at most two values (a key and its value): more may be past the bound.
        emitted = ryml.emit_json(tree) if 2 * tree.size() <= expanded else None
        del tree
    except Exception:  # ryml's own exceptions (parse, depth): the event path decides
        return None
    finally:
        _restore_stderr(saved)
    if not emitted or _RISKY_STRING.search(f" {emitted}" if emitted[0] == '"' else emitted):
        return None
    try:
        data = json.loads(
            emitted,
            object_pairs_hook=_pairs,
            parse_int=partial(_integer, digits),
            parse_float=partial(_float, plain),
            parse_constant=_constant,
        )
    except Exception:  # _Declined, `plain`'s refusal, JSON's errors, RecursionError
        return None
    return [data]
