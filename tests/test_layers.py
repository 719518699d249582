"""Layers point down only (DEVELOPERS.md, "Layers"), read from the source with ast: an
import inside a function counts as much as one at the top.

From the top: cli and service -> operations -> store and engine -> policy -> model. The
service reaches the store through the operations only: it imports neither sqlalchemy nor
the store's tables."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "placed"

# What each layer may not import: placed's own layers above it, and web frameworks.
WEB = {"fastapi", "starlette", "uvicorn"}
FORBIDDEN = {
    "model": {"placed.spec", "placed.policy", "placed.engine", "placed.store", "placed.cli"}
    | {"placed.operations", "placed.service"},
    "policy": {"placed.engine", "placed.store", "placed.operations", "placed.service"}
    | {"placed.cli"},
    "engine": {"placed.store", "placed.operations", "placed.service", "placed.cli"} | WEB,
    "store": {"placed.service", "placed.cli", "placed.operations"} | WEB,
    "operations": {"placed.service", "placed.cli"} | WEB,
}

# What the service leaves to the operations layer.
BELOW_THE_SERVICE = {"sqlalchemy", "placed.store.tables"}


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


def service_modules_below_it() -> set[str]:
    """The service's modules that import sqlalchemy or the store's tables."""
    return {
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / "service").rglob("*.py"))
        if any(breaks(name, BELOW_THE_SERVICE) for name in imports(path))
    }


def test_the_service_reaches_the_store_through_the_operations() -> None:
    found = service_modules_below_it()
    assert found == set(), "call an operation (placed/operations/) instead"


def test_the_walk_sees_a_table_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from placed.store.tables import Token\nfrom sqlalchemy.orm import Session\n")
    assert {n for n in imports(module) if breaks(n, BELOW_THE_SERVICE)} == {
        "placed.store.tables",
        "placed.store.tables.Token",
        "sqlalchemy.orm",
        "sqlalchemy.orm.Session",
    }
