"""The service sits on top: nothing below it imports it (or the web framework), and it
never reaches into the CLI. Imports inside functions and under TYPE_CHECKING count."""

from __future__ import annotations

import ast
from pathlib import Path

PLACED = Path(__file__).resolve().parent.parent / "src" / "placed"
WEB = ("fastapi", "starlette", "uvicorn", "prometheus_client", "httpx")


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def offenders(packages: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(PLACED)} imports {name}"
        for package in packages
        for path in sorted((PLACED / package).rglob("*.py"))
        for name in sorted(imported(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def test_nothing_below_the_service_imports_it_or_the_web_framework() -> None:
    below = ("model", "policy", "spec", "engine")
    assert offenders(below, ("placed.service", "placed.cli", *WEB)) == []


def test_the_service_never_imports_the_cli() -> None:
    assert offenders(("service",), ("placed.cli",)) == []


def test_the_cli_reaches_the_service_only_through_serve() -> None:
    # Every other command starts without importing the web framework.
    found = offenders(("cli",), ("placed.service", *WEB))
    assert all(line.startswith("cli/serve.py") for line in found), found


def test_the_client_speaks_only_http() -> None:
    # A program using placed.client talks to a server: it loads neither the server, nor
    # its store, nor the CLI.
    forbidden = ("placed.service", "placed.store", "placed.cli", "sqlalchemy", "fastapi")
    found = imported(PLACED / "client.py")
    assert "httpx" in found
    assert [n for n in found if any(n == f or n.startswith(f + ".") for f in forbidden)] == []
