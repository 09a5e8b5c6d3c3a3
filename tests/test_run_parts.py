"""`criteria.runparts`: the narrow view a criterion gets of its run is one the real `Criteria` gives."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import get_type_hints

from acceptance.criteria import runparts
from tests.test_mock_cluster import run_on


def _members(protocol: type) -> dict[str, object]:
    return {n: m for n, m in vars(protocol).items() if not n.startswith("_")}


def test_the_run_has_every_part_and_each_part_every_member_the_protocols_name(tmp_path: Path) -> None:
    run = run_on(tmp_path)
    parts = _members(runparts.RunParts)
    assert {"context", "scheduler", "diagnostics", "fabric", "localize", "training"} <= set(parts)
    checked = []
    for name, member in parts.items():
        assert hasattr(run, name), f"Criteria has no {name}"
        assert isinstance(member, property)
        kind = get_type_hints(member.fget, vars(runparts)).get("return")
        if not (inspect.isclass(kind) and kind.__module__ == runparts.__name__):
            continue
        part = getattr(run, name)
        for attr, wanted in _members(kind).items():
            found = getattr(type(part), attr, None)  # a method or property of the class, or the instance's own
            assert found is not None or attr in vars(part), (
                f"Criteria.{name} ({type(part).__name__}) has no {attr} that {kind.__name__} names"
            )
            if inspect.isfunction(wanted) and found is not None:
                assert list(inspect.signature(found).parameters) == list(inspect.signature(wanted).parameters)
            checked.append(f"{name}.{attr}")
    assert {"diagnostics.verdict", "fabric.failing_nodes", "localize.for_failure", "training.smoke"} <= set(checked)
