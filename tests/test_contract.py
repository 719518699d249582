"""The README's output contract is what the commands print.

Each document of the contract section is written as a shape, after a marker naming a
command that prints one:

    <!-- contract: plan examples/distinct-racks.yaml -->
    ```text
    {"name", "placements": [{"workload", "unit", "container"?}], "events": [{*}]}
    ```

A key is required unless marked `?` (present only where it applies); every key printed
must be documented; `[...]` shapes each element of a list, `{*}` is a mapping whose keys
are data (per service, per VM). The test runs the command and compares, recursively.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lark import Lark, Transformer
from typer.testing import CliRunner

from placed.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()

GRAMMAR = r"""
?value: object | list | ANY_OBJECT | STRING | WORD
object: "{" [entry ("," entry)*] "}"
entry: STRING OPTIONAL? (":" value)?
list: "[" [value] "]"
ANY_OBJECT: "{*}"
OPTIONAL: "?"
WORD: /[A-Za-z0-9_.<>-]+/
%import common.ESCAPED_STRING -> STRING
%import common.WS
%ignore WS
"""


@dataclass
class Shape:
    """What a value must look like: an object with keys, a list of shapes, or anything."""

    keys: dict[str, tuple[bool, Shape]] | None = None  # name -> (required, shape)
    item: Shape | None = None
    is_list: bool = False
    free: bool = False  # a mapping whose keys are data, or a plain value
    notes: list[str] = field(default_factory=list)


class _Build(Transformer[Any, Shape]):
    def object(self, entries: list[Any]) -> Shape:
        keys: dict[str, tuple[bool, Shape]] = {}
        for entry in entries:
            if entry is not None:
                name, required, shape = entry
                keys[name] = (required, shape)
        return Shape(keys=keys)

    def entry(self, parts: list[Any]) -> tuple[str, bool, Shape]:
        name = json.loads(str(parts[0]))
        optional = any(str(p) == "?" for p in parts[1:] if not isinstance(p, Shape))
        shape = next((p for p in parts[1:] if isinstance(p, Shape)), Shape(free=True))
        return name, not optional, shape

    def list(self, parts: list[Any]) -> Shape:
        item = parts[0] if parts and isinstance(parts[0], Shape) else Shape(free=True)
        return Shape(item=item, is_list=True)

    def ANY_OBJECT(self, _: Any) -> Shape:  # lark calls a terminal's callback by its name
        return Shape(free=True)


PARSER = Lark(GRAMMAR, start="value", parser="lalr")


def shape_of(text: str) -> Shape:
    built = _Build().transform(PARSER.parse(text))
    return built if isinstance(built, Shape) else Shape(free=True)  # a plain value


CONTRACTS = [
    (args, text)
    for markers, text in re.findall(
        r"((?:<!-- contract: [^\n]+ -->\n)+)```text\n(.*?)```", README, re.S
    )
    for args in re.findall(r"<!-- contract: ([^\n]+) -->", markers)
]


def mismatches(shape: Shape, value: Any, where: str) -> list[str]:
    if shape.free:
        return []
    if shape.is_list:
        if not isinstance(value, list):
            return [f"{where}: documented as a list, printed {type(value).__name__}"]
        assert shape.item is not None
        found = []
        for i, element in enumerate(value):
            found += mismatches(shape.item, element, f"{where}[{i}]")
        return found
    assert shape.keys is not None
    if not isinstance(value, dict):
        return [f"{where}: documented as an object, printed {type(value).__name__}"]
    found = [f"{where}.{k}: printed, not documented" for k in value if k not in shape.keys]
    for name, (required, inner) in shape.keys.items():
        if name not in value:
            if required:
                found.append(f"{where}.{name}: documented, not printed")
            continue
        if value[name] is not None:
            found += mismatches(inner, value[name], f"{where}.{name}")
    return found


def test_the_contract_section_documents_every_command() -> None:
    commands = {shlex.split(args)[0] for args, _ in CONTRACTS}
    every = {"plan", "check", "explain", "simulate", "validate", "dedications", "expr"}
    assert every | {"explain-spec"} <= commands


@pytest.mark.parametrize(("args", "text"), CONTRACTS, ids=[a for a, _ in CONTRACTS])
def test_the_contract_is_what_is_printed(args: str, text: str, monkeypatch: Any) -> None:
    monkeypatch.chdir(ROOT)
    shape = shape_of(text)
    done = CliRunner().invoke(app, [*shlex.split(args), "--format", "json"])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code in (0, 1, 2), done.output  # 2: the errors document
    printed = json.loads(done.stdout)
    # A file of several documents prints each, under "documents".
    documents = printed.get("documents", [printed])
    for i, document in enumerate(documents):
        assert mismatches(shape, document, f"[{i}]") == []


def run_json(*args: str) -> Any:
    done = CliRunner().invoke(app, [*args, "--format", "json"])
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.stdout)


def test_an_incompatible_target_has_no_score() -> None:
    data = run_json("check", str(ROOT / "examples" / "cloudstack-dedication.yaml"), "--all")
    rows = [t for w in data["workloads"] for t in w["targets"]]
    assert any(not t["compatible"] for t in rows)
    for row in rows:
        assert (row["score"] is None) == (not row["compatible"]), row
    traced = run_json("explain", str(ROOT / "examples" / "distinct-racks.yaml"), "web/3")
    assert all(t["score"] is None for t in traced["targets"] if not t["compatible"])


def test_explain_gives_every_key_placed_or_not() -> None:
    racks = str(ROOT / "examples" / "distinct-racks.yaml")
    placed, unplaced = run_json("explain", racks, "web/0"), run_json("explain", racks, "web/3")
    assert set(placed) == set(unplaced)
    assert placed["summary"] is None and placed["filtered"] is None and placed["target"]
    assert unplaced["target"] is None and unplaced["reason"] is None and unplaced["summary"]
