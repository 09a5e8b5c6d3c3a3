"""The syntax trees of the package's modules, parsed once per test process.

Four tests read the whole package as syntax (import cycles, layering, the exception tree, the criteria
registry): each parsed and walked all of its modules on its own, about 1.5 s of CPU each on the 2-core machine.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import acceptance

PACKAGE = Path(acceptance.__file__).resolve().parent


@functools.cache
def modules() -> tuple[Path, ...]:
    """Every ``.py`` file of the package, sorted."""
    return tuple(sorted(PACKAGE.rglob("*.py")))


def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def _package_nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_parsed(path)))


def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at `path`, in `ast.walk` order (shared: read them, never change them). A module
    of the package is parsed once per process, as it does not change during a session; any other file (a
    test's own, in its tmp_path) each time."""
    resolved = path.resolve()
    if resolved.is_relative_to(PACKAGE):
        return _package_nodes(resolved)
    return tuple(ast.walk(_parsed(path)))
