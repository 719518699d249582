"""Layers point down only (DEVELOPERS.md, "Layers"), read from the source with ast: an
import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "placed"

# What each layer may not import: placed's own layers above it, and web frameworks.
WEB = {"fastapi", "starlette", "uvicorn"}
FORBIDDEN = {
    "model": {"placed.spec", "placed.policy", "placed.engine", "placed.store", "placed.cli"}
    | {"placed.service"},
    "policy": {"placed.engine", "placed.store", "placed.service", "placed.cli"},
    "engine": {"placed.store", "placed.service", "placed.cli"} | WEB,
    "store": {"placed.service", "placed.cli"} | WEB,
}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; placed imports absolutely")
    return found


def breaks(name: str, forbidden: set[str]) -> bool:
    return any(name == f or name.startswith(f + ".") for f in forbidden)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, layer
    wrong = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in files
        for name in imports(path)
        if breaks(name, FORBIDDEN[layer])
    }
    assert not wrong


def test_the_walk_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from placed.engine import planner\n    import fastapi\n")
    assert breaks("placed.engine.planner", FORBIDDEN["policy"])
    assert {"placed.engine", "fastapi"} <= imports(module)
