"""Where a constraint or a property list uses one of placed's extensions that an Open
Horizon hub would reject (`placed validate --dialect openhorizon`), so that a policy meant
to go back to a hub can be checked before it is published.

The extensions are listed in the README ("Where placed departs from Open Horizon") and in
DEPARTURES in tests/test_openhorizon_corpus.py; the rules here follow Open Horizon's
lexer as docs/openhorizon-semantics.md writes it up (section 2.1): AND, OR, && and || need
a blank on both sides; a version range is `[`/`(` then a three-part version, `,` and a
three-part version or INFINITY, with no blank inside the brackets in placed's stricter
reading of hzn; a quoted value holds only letters, digits, `_ - / ! ? + ~ . '`, blanks
and (in a list) commas; `in` is no ordinary word; an expression is one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from placed.model import Notice, Property, Spec
from placed.policy.deployment import deployment_of

# What a hub's lexer takes inside quotes, besides letters and digits (and `,` in a list).
_QUOTED_EXTRA = set("_-/!?+~.' \t,")
_QUOTED = re.compile(r'"([^"]*)"')
_RANGE = re.compile(r"[\[(]([^\[\]()]*)[\])]")
_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
_KEYWORD = re.compile(r"AND|OR|&&|\|\|")
_IN_WORD = re.compile(r"(?<![\w.\-/])in(?![\w.\-/])")


@dataclass(frozen=True, slots=True)
class Extension:
    column: int  # 1-based, in the expression's text
    message: str


def extensions(text: str) -> list[Extension]:
    """Every place in one constraint expression that a hub would reject but placed takes."""
    found: list[Extension] = []
    unquoted = _QUOTED.sub(lambda m: " " * len(m.group(0)), text)
    if "\n" in text.strip():
        found.append(Extension(text.index("\n") + 1, "an expression over several lines"))
    for match in _QUOTED.finditer(text):
        bad = sorted({c for c in match.group(1) if not c.isalnum() and c not in _QUOTED_EXTRA})
        if bad:
            shown = " ".join(repr(c) for c in bad)
            found.append(
                Extension(match.start() + 1, f"{shown} inside quotes (a hub's lexer refuses it)")
            )
    for match in _KEYWORD.finditer(unquoted):
        word = match.group(0)
        if word in ("AND", "OR") and _glued(unquoted, match.start(), match.end()):
            continue  # part of a longer word such as ORIGIN: not a keyword at all
        before = unquoted[match.start() - 1] if match.start() else " "
        after = unquoted[match.end()] if match.end() < len(unquoted) else " "
        if not (before.isspace() and after.isspace()):
            found.append(Extension(match.start() + 1, f"{word} without a blank on both sides"))
    for match in _RANGE.finditer(unquoted):
        inside = match.group(1)
        if "," not in inside:
            continue  # parentheses around a term, not a range
        if any(c.isspace() for c in inside):
            found.append(Extension(match.start() + 1, "blanks inside a version range"))
        low, _, high = (part.strip() for part in inside.partition(","))
        for bound in (low, high):
            if bound != "INFINITY" and not _VERSION.match(bound) and re.match(r"^[0-9.]+$", bound):
                found.append(
                    Extension(
                        match.start() + 1,
                        f"range bound {bound} has fewer than three parts (write 1.0.0)",
                    )
                )
    for match in _IN_WORD.finditer(unquoted):
        rest = text[match.end() :].strip()
        before = unquoted[: match.start()].rstrip()
        # `name in "a,b"` is the operator; `in` where a name or a value stands is a word.
        if before and not re.search(r"(==|!=|<=|>=|=|<|>|AND|OR|&&|\|\||\()$", before) and rest:
            continue
        found.append(Extension(match.start() + 1, "`in` as a property name or value"))
    return sorted(found, key=lambda e: e.column)


def _glued(text: str, start: int, end: int) -> bool:
    """Whether the letters at [start, end) are part of a longer word."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return bool(_WORD_CHAR.match(before) or _WORD_CHAR.match(after))


_WORD_CHAR = re.compile(r"[\w.\-/]")


def dialect_notices(spec: Spec) -> list[Notice]:
    """Every extension a hub would reject, in the spec's constraints and properties."""
    notices: list[Notice] = []

    def constraints(texts: tuple[str, ...], owner: str, **where: str) -> None:
        for text in texts:
            for found in extensions(text):
                notices.append(
                    Notice(
                        "openhorizon-extension",
                        f"{owner} constraint `{text}`, column {found.column}: {found.message}",
                        **where,
                    )
                )

    def properties(props: Mapping[str, Property], owner: str, **where: str) -> None:
        for prop in props.values():
            if prop.written_as_list:
                notices.append(
                    Notice(
                        "openhorizon-extension",
                        f"{owner} property {prop.name} has a YAML/JSON list as its value; a "
                        'hub takes a list of strings only as one string ("a,b")',
                        **where,
                    )
                )

    for location in spec.inventory.locations():
        constraints(location.constraints, f"{location.kind} {location.id}", target=location.id)
        properties(location.properties, f"{location.kind} {location.id}", target=location.id)
    for workload in spec.workloads:
        deployment = deployment_of(workload)
        constraints(deployment.constraints, "the policy's", workload=workload.name)
        properties(deployment.properties, "the policy's", workload=workload.name)
        for service in deployment.services:
            owner = f"service {service.url}'s"
            constraints(service.constraints, owner, workload=workload.name)
            properties(service.properties, owner, workload=workload.name)
    return notices
