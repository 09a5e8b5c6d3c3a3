"""Backend knowledge stays in clusters/ (and the simulator in sim/): outside them nothing compares with a
backend's name, asks the profile's ``sim`` section whether a run is simulated, or imports the simulator."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.package_syntax import PACKAGE, nodes

INSIDE = ("clusters", "sim")  # the packages that may know backends and the simulator
BACKENDS = frozenset({"kube", "sim", "ssh", "slurm"})
#: the `acceptance sim` subcommand is the simulator's own command line: it runs the simulator, asks nothing
ALLOWED_IMPORTS = frozenset({"cmd/sim.py"})


def _names(node: ast.expr) -> Iterator[str]:
    """The backend names a comparison operand spells: a literal, or literals in a tuple, list or set."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    for item in items:
        if isinstance(item, ast.Constant) and item.value in BACKENDS:
            yield str(item.value)


def _asks_sim_section(node: ast.Compare) -> bool:
    """``profile.sim is None`` / ``is not None``: the "any backend over the simulator" rule."""
    operands = [node.left, *node.comparators]
    section = any(isinstance(o, ast.Attribute) and o.attr == "sim" for o in operands)
    none = any(isinstance(o, ast.Constant) and o.value is None for o in operands)
    return section and none


def _imports_simulator(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        hit = [a.name for a in node.names if a.name == "acceptance.sim" or a.name.startswith("acceptance.sim.")]
        return hit[0] if hit else None
    if isinstance(node, ast.ImportFrom) and node.module is not None:
        if node.module == "acceptance.sim" or node.module.startswith("acceptance.sim."):
            return node.module
        if node.module == "acceptance" and any(a.name == "sim" for a in node.names):
            return "acceptance.sim"
    return None


def hits(package: Path = PACKAGE) -> list[str]:
    """``file:line: what`` for each place outside clusters/ and sim/ that knows a backend or the simulator."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.split("/")[0] in INSIDE:
            continue
        for node in nodes(path):
            if isinstance(node, ast.Compare):
                named = [n for operand in (node.left, *node.comparators) for n in _names(operand)]
                if named:
                    out.append(f"{rel}:{node.lineno}: compares with backend name {named[0]!r}")
                elif _asks_sim_section(node):
                    out.append(f"{rel}:{node.lineno}: asks the profile's sim section whether the run is simulated")
            module = _imports_simulator(node)
            if module is not None and rel not in ALLOWED_IMPORTS:
                out.append(f"{rel}:{getattr(node, 'lineno', 0)}: imports {module}")
    return out


def test_nothing_outside_clusters_and_sim_names_a_backend_or_imports_the_simulator() -> None:
    found = hits()
    assert not found, "ask acceptance.clusters.backend_of(profile) or the cluster instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expect"),
    [
        ('if profile.backend == "sim":\n    pass\n', "compares with backend name 'sim'"),
        ('ok = profile.backend not in ("kube", "ssh")\n', "compares with backend name 'kube'"),
        ("ok = profile.sim is not None\n", "asks the profile's sim section"),
        ("from acceptance.sim.probation import STEP_TIME\n", "imports acceptance.sim.probation"),
        ("import acceptance.sim.model\n", "imports acceptance.sim.model"),
        ("from acceptance import sim\n", "imports acceptance.sim"),
    ],
)
def test_the_scan_finds_each_kind_of_hit(tmp_path: Path, source: str, expect: str) -> None:
    (tmp_path / "cmd").mkdir()
    (tmp_path / "cmd" / "x.py").write_text(source)
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "y.py").write_text(source)  # inside: allowed
    found = hits(tmp_path)
    assert len(found) == 1, found
    assert found[0].startswith("cmd/x.py:1: ")
    assert expect in found[0]


def test_the_scan_leaves_other_comparisons_alone(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text('ok = mode == "judge" or name in ("a", "b") or value is None\n')
    assert hits(tmp_path) == []
