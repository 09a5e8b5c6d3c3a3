"""No import cycle among the package's modules, counting imports inside functions and under TYPE_CHECKING."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from tests.package_syntax import PACKAGE, nodes


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(found: Mapping[str, Path]) -> dict[str, set[str]]:
    """Which modules of the package each module imports, wherever the import statement stands."""

    def resolve(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: list[str] = []
        for node in nodes(path):
            if isinstance(node, ast.Import):
                targets += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in found else base for a in node.names]
        graph[name] = {t for t in map(resolve, targets) if t is not None and t != name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: set[frozenset[str]] = set()
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.add(frozenset(group))
    return out


def test_the_graph_sees_imports_in_functions_and_under_type_checking(tmp_path: Path) -> None:
    """A cycle closed by a TYPE_CHECKING import or a function-level import is still a cycle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import X\n")
    (pkg / "c.py").write_text("def f():\n    from .sub.d import g\n")
    (pkg / "sub" / "d.py").write_text("def g():\n    from .. import c\n")
    (pkg / "e.py").write_text("import pkg.a\n")
    found = cycles(import_graph(modules(pkg)))
    assert found == {frozenset({"pkg.a", "pkg.sub.b"}), frozenset({"pkg.c", "pkg.sub.d"})}


def test_no_import_cycle_in_the_package() -> None:
    """Criteria see their run through `criteria.runparts`, never the `Criteria` that imports them all; the SSH signals
    see their cluster through `signals.Hosts`, the emulator's HTTP handler its API through `http.Api`."""
    found = cycles(import_graph(modules()))
    assert sorted(sorted(group) for group in found) == []
