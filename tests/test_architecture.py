"""The package's shape: no import cycles (function-level imports included), short functions, short modules.

Read from the source with ``ast``, nothing is imported. The limits are the project's style rules:
a function (nested helpers counted in their parent) fits in about 150 lines, a module in about 700.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "sigmabnn"
MAX_FUNCTION_LINES = 150
MAX_MODULE_LINES = 700


def _module_name(path: Path) -> str:
    parts = ["sigmabnn", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest module prefix of a dotted name (``a.b.c`` -> ``a.b`` when ``c`` is not a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every sigmabnn module ``module`` imports, at any depth of its code (``TYPE_CHECKING`` blocks excluded)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    skip = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "sigmabnn":
                continue
            target = _resolve(name, modules)
            if target and target != module:
                out.add(target)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    # a package's __init__ that re-exports its submodules is the package's front door, not a dependency
    # of those submodules: drop __init__ -> own-submodule edges, keep everything else
    for m, p in modules.items():
        if p.name == "__init__.py":
            graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    return graph


def test_no_import_cycles():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            is_fn = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_fn and not nested:
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                length = child.end_lineno - first + 1
                if length > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(SRC)}:{child.lineno} {child.name} ({length} lines)")
            visit(child, nested or is_fn)

    visit(tree, False)
    return out


def test_functions_fit_on_two_screens():
    long = [f for p in sorted(SRC.rglob("*.py")) for f in _long_functions(p)]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: " + ", ".join(long)


def test_modules_are_short():
    long = [
        f"{p.relative_to(SRC)} ({n} lines)"
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not long, f"modules over {MAX_MODULE_LINES} lines: " + ", ".join(long)
