"""Unicode in constraint expressions (issue 11): names and unquoted values in any script,
errors whose column counts characters and whose caret stands under the right one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import placed
from placed.cli.main import app
from placed.policy.expressions import ExpressionError, parse_constraint


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("expression", "props"),
    [
        ("火车站 == 上海", '{"火车站": "上海"}'),
        ("estación_de_tren = Nochistlán", '{"estación_de_tren": "Nochistlán"}'),
        ("기차역 == 서울시", '{"기차역": "서울시"}'),
        ("えき == とうきょう", '{"えき": "とうきょう"}'),
        ("ＡＢＣ == ｘｙｚ", '{"ＡＢＣ": "ｘｙｚ"}'),
    ],
)
def test_expr_takes_any_script(expression: str, props: str) -> None:
    code, out, _ = run("expr", expression, "--props", props)
    assert (code, out.strip()) == (0, "true")


def test_a_unicode_name_can_be_referenced_from_a_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "inventory:\n"
        "  - {id: 上海站, properties: {火车站: 上海, 站台: 12}}\n"
        "  - {id: 北京站, properties: {火车站: 北京, 站台: 30}}\n"
        "workloads:\n"
        "  - {name: 列车, constraints: '火车站 == 上海 && 站台 >= 10'}\n",
        encoding="utf-8",
    )
    code, out, _ = run("plan", str(spec), "-f", "json")
    assert code == 0
    (placement,) = json.loads(out)["placements"]
    assert placement["target"] == "上海站"
    code, out, _ = run("check", str(spec), "-f", "json")
    (row,) = json.loads(out)["workloads"]
    reasons = {t["target"]: [r["message"] for r in t["reasons"]] for t in row["targets"]}
    assert reasons["北京站"] == ['fails 火车站 == 上海 (火车站 is "北京")']


def test_error_columns_count_characters_and_the_caret_lines_up() -> None:
    with pytest.raises(ExpressionError) as caught:
        parse_constraint("火车站 < 上海")
    error = caught.value
    assert error.column == 7  # 火 车 站 space < space 上: the 7th character
    text_line, caret_line = error.render().splitlines()[1:]
    # Each CJK character takes two cells on a terminal, so the caret moves right by the
    # characters' width, not their count.
    assert text_line == "  火车站 < 上海"
    assert caret_line == "  " + " " * 9 + "^"


def test_numbers_stay_ascii() -> None:
    # A full-width digit string is text: `<` needs a number, so it is an error.
    with pytest.raises(ExpressionError):
        parse_constraint("站台 < １２")
    assert placed.evaluate("站台 == １２", {"站台": "１２"}) is True
