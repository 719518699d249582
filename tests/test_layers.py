"""Layers point down only (DEVELOPERS.md, "Layers"), read from the source with ast: an
import inside a function counts as much as one at the top.

From the top: cli and service -> operations -> store and engine -> policy -> model. The
service reaches the store and the engine through the operations only: it imports neither
sqlalchemy nor the store's tables nor the engine, and opens no transaction."""

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

# What the service leaves to the operations layer: the database, its tables, and the
# transactions opened on it (store/database.py's `reading` and `writing`); and planning
# (the engine and its policies: POST /v1/plan calls operations/spec_plan.py).
BELOW_THE_SERVICE = {"sqlalchemy", "placed.store.tables", "placed.store.database"} | {
    "placed.engine",
    "placed.policy",
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


def service_modules_below_it() -> set[str]:
    """The service's modules that import sqlalchemy, the store's tables or the engine."""
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


# What the service may use of the commit path: the type of a change's reporter and the
# reporter that reports nothing. Planning a change and committing it are the operations'.
SERVICE_USES_OF_PLACING = {"Reporter", "silent"}
COMMIT_MODULES = {"placed.operations.placing", "placed.operations.transactions"}


def placing_uses(path: Path) -> set[str]:
    """What a module takes of the commit path: names imported from its modules and
    attributes read off them (`placing.transact`)."""
    tree = ast.parse(path.read_text(), str(path))
    bound: set[str] = set()
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in COMMIT_MODULES:
            used.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "placed.operations":
            bound.update(
                alias.asname or alias.name
                for alias in node.names
                if f"placed.operations.{alias.name}" in COMMIT_MODULES
            )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            used.add(node.attr)
    return used


def test_the_service_plans_and_commits_through_operations() -> None:
    """A change's route authorizes, parses, calls one operation and answers: no module
    of the service plans a change or commits one itself."""
    wrong = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / "service").rglob("*.py"))
        for name in placing_uses(path) - SERVICE_USES_OF_PLACING
    }
    assert not wrong, "move the change into an operation (placed/operations/)"


def test_the_walk_sees_a_commit_in_the_service(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from placed.operations import placing\n"
        "from placed.operations.transactions import transact\n"
        "def f(r: placing.Reporter) -> None:\n    placing.transact(1, 2, 3)\n"
    )
    assert placing_uses(module) == {"Reporter", "transact"}
