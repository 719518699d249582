"""No module of placed imports, directly or through others, a module that imports it
back: a cycle makes import order matter and hides which layer owns what. Imports under
TYPE_CHECKING and inside functions count too: they are how cycles hide."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found.update(n for n in names if n in known)
    return found


def test_no_module_imports_itself_through_others() -> None:
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    known = set(paths)
    graph = {name: imports(path, known) - {name} for name, path in paths.items()}
    cycles = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        stack.append(name)
        for other in sorted(graph[name]):
            if other.startswith(name + "."):
                continue  # a package importing its own modules
            if state.get(other) == 1:
                cycles.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    assert [" -> ".join(c) for c in cycles] == []
