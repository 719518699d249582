"""The Open Horizon dialect check (issue 11, item 5): every extension placed accepts and a
hub rejects is flagged, and nothing a hub accepts is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from placed.cli.main import app
from placed.policy.expressions.dialect import extensions

from .test_openhorizon_corpus import CORPUS, PLACED, Accepts, key


def _texts(expr: str | list[str]) -> list[str]:
    return [expr] if isinstance(expr, str) else list(expr)


@pytest.mark.parametrize(
    "case", [c for c in CORPUS["evaluate"] if key(c) not in PLACED], ids=lambda c: key(c)[:40]
)
def test_what_a_hub_accepts_is_not_flagged(case: dict[str, Any]) -> None:
    for text in _texts(case["expr"]):
        assert extensions(text) == [], (text, case["why"])


# The corpus is unsure whether a hub rejects names and values that merely start with "in"
# (its lexer's InStr), so those two departures are not held to a warning.
UNSURE = {"initialized == true", "status == initializing"}
ACCEPTED_ONLY_BY_PLACED = [
    expr
    for expr, departure in PLACED.items()
    if isinstance(departure, Accepts) and expr not in UNSURE
]


@pytest.mark.parametrize("expr", ACCEPTED_ONLY_BY_PLACED)
def test_every_extension_placed_accepts_is_flagged(expr: str) -> None:
    assert extensions(expr), expr


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        ("a == 1&&b == 2", 7, "&& without a blank"),
        ("(a == 1)AND (b == 2)", 9, "AND without a blank"),
        ("ver in [1.0.0, 2.0.0)", 8, "blanks inside a version range"),
        ("ver in [1.0,2.0.0)", 8, "range bound 1.0 has fewer than three parts"),
        ('url == "https://x"', 8, "':' inside quotes"),
        ("in == 1", 1, "`in` as a property name or value"),
        ("a == 1 AND\nb == 2", 11, "an expression over several lines"),
    ],
)
def test_each_extension_names_its_column(text: str, column: int, words: str) -> None:
    found = extensions(text)
    assert any(e.column == column and words in e.message for e in found), found


def test_keywords_inside_words_and_quotes_are_not_keywords() -> None:
    assert extensions('ORIGIN == x && name == "AND,OR"') == []


SPEC = """
inventory:
  - id: rack1
    kind: rack
    constraints: 'tier == "gold:1"'
    children:
      - {id: n1, properties: {zones: [east, west], site: lab}}
workloads:
  - name: web
    constraints: ["ver in [1.0, 2.0.0)", 'site == lab']
    properties: {flavours: "a,b"}
    service: {url: web, constraints: "a == 1&&b == 2", properties: {l: [x]}}
"""


def test_the_spec_check_names_each_place() -> None:
    from placed.policy.expressions.dialect import dialect_notices
    from placed.spec import load_spec_text

    notices = dialect_notices(load_spec_text(SPEC, "spec.yaml"))
    found = sorted((n.target or n.workload or "", n.message) for n in notices)
    assert found == [
        (
            "n1",
            "host n1 property zones has a YAML/JSON list as its value; a hub takes a list "
            'of strings only as one string ("a,b")',
        ),
        (
            "rack1",
            "rack rack1 constraint `tier == \"gold:1\"`, column 9: ':' inside quotes "
            "(a hub's lexer refuses it)",
        ),
        (
            "web",
            "service web's constraint `a == 1&&b == 2`, column 7: && without a blank on both sides",
        ),
        (
            "web",
            "service web's property l has a YAML/JSON list as its value; a hub takes a "
            'list of strings only as one string ("a,b")',
        ),
        (
            "web",
            "the policy's constraint `ver in [1.0, 2.0.0)`, column 8: blanks inside a "
            "version range",
        ),
        (
            "web",
            "the policy's constraint `ver in [1.0, 2.0.0)`, column 8: range bound 1.0 has "
            "fewer than three parts (write 1.0.0)",
        ),
    ]


def test_validate_warns_only_with_the_openhorizon_dialect(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC)
    plain = CliRunner().invoke(app, ["validate", str(path), "-f", "json"])
    assert plain.exit_code == 0
    assert not [w for w in json.loads(plain.stdout)["warnings"] if "extension" in w["code"]]
    hub = CliRunner().invoke(app, ["validate", str(path), "--dialect", "openhorizon", "-f", "json"])
    assert hub.exit_code == 0
    codes = [w["code"] for w in json.loads(hub.stdout)["warnings"]]
    assert codes.count("openhorizon-extension") == 6
