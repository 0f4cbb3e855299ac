"""No import cycles between autofusion modules, counting the imports inside functions.

Imports inside functions hide cycles from import-time errors: the cycle only bites when the
function runs, in whichever order the modules happen to load. The graph here has an edge
``a -> b`` for every ``import b`` / ``from b import x`` anywhere in ``a`` (module level, in
functions, in classes), resolved to the module named (``from pkg import mod`` is an edge to
``pkg.mod``). Imports under ``if TYPE_CHECKING:`` never run and are not edges.

Allowed cycles are listed in :data:`ALLOWED` with the reason; keep it tiny.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: (module, module) pairs whose mutual imports are accepted, with the reason.
ALLOWED: dict[frozenset[str], str] = {
    # compile() returns a DynamicModel (a CompiledModel subclass defined in dynamic.py) for
    # unpinned symbols, and DynamicModel compiles each specialisation with compile(). Breaking
    # it means moving CompiledModel out of api.py, left to the dynamic-shape work on api.py.
    frozenset({"autofusion.api", "autofusion.dynamic"}): "api.compile <-> DynamicModel",
}


def _modules(root: Path, package: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for f in sorted((root / package).rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """``module -> modules of package it imports`` (run-time imports anywhere in the file)."""
    mods = _modules(root, package)

    def edges(name: str, path: Path) -> set[str]:
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    for stmt in child.orelse:
                        visit_one(stmt)
                    continue
                visit_one(child)

        def visit_one(node: ast.AST) -> None:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    found.add(sub if sub in mods else base)
            visit(node)

        visit(ast.parse(path.read_text(), str(path)))
        return {m for m in found if m in mods and m != name}

    return {name: edges(name, path) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _describe(graph: dict[str, set[str]], comp: list[str]) -> str:
    members = set(comp)
    arrows = [f"{a} -> {b}" for a in comp for b in sorted(graph[a] & members)]
    return "cycle: " + "; ".join(arrows)


def test_autofusion_has_no_import_cycles() -> None:
    graph = import_graph(ROOT, "autofusion")
    assert len(graph) > 100, "the module scan found too few modules"
    bad = [c for c in cycles(graph) if frozenset(c) not in ALLOWED]
    assert not bad, "\n".join(_describe(graph, c) for c in bad)


def test_allowed_cycles_still_exist() -> None:
    """An allow-list entry whose cycle is gone must be removed (it would hide a new one)."""
    found = {frozenset(c) for c in cycles(import_graph(ROOT, "autofusion"))}
    stale = [sorted(k) for k in ALLOWED if k not in found]
    assert not stale, f"remove these from ALLOWED, their cycle is gone: {stale}"


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    """A cycle closed only by an import inside a function is found; one closed only under
    ``if TYPE_CHECKING:`` is not (it never runs)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n    return x\n")
    (pkg / "c.py").write_text("from . import d\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n"
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.d"}
    assert graph["pkg.d"] == set()
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
