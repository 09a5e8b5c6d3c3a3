"""The registry of `acceptance.criteria` is the only list of criteria: every consumer reads it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from acceptance import criteria
from acceptance.criteria import CRITERIA, probation_report, recording
from acceptance.report import decision
from tests.package_syntax import PACKAGE, modules, nodes
from tests.test_mock_cluster import run_on


def test_every_suite_module_has_one_record_and_every_record_a_module() -> None:
    """Each ``acceptance/test_*.py`` is one criterion of the registry, and each record names one that exists."""
    suite = {p.stem for p in PACKAGE.glob("test_*.py")}
    named = [c.module for c in CRITERIA]
    assert len(named) == len(set(named))
    assert set(named) == suite


def test_banner_nouns_are_the_registry_s() -> None:
    """The report's banner line names each criterion with its record's noun (site checks: ``items``)."""
    assert {c.number: (c.noun, c.detail) for c in CRITERIA} == decision._NOUNS
    assert decision.ACCEPTANCE_CRITERIA == (0, 1, 2, 3, 4)


def test_probation_report_reads_acceptance_modules_from_the_registry() -> None:
    """A report is an acceptance when it holds a passed item of an acceptance-phase criterion."""
    assert set(probation_report.ACCEPTANCE_MODULES) == {c.module for c in CRITERIA if c.phase == "acceptance"}
    assert criteria.modules_of("probation") == {"test_recurrence"}


def test_recording_keeps_the_parts_the_registry_names_in_its_order() -> None:
    """``--record-baseline`` calls exactly the ``baseline_part`` of each module the records list."""
    named = [name for c in CRITERIA for name in c.baseline_parts]
    assert [f.__module__ for f in recording.part_functions()] == named
    assert named == [f"acceptance.criteria.{m}" for m in ("preflight", "diagnostics", "fabric", "localize", "smoke")]


def test_each_record_names_the_criterion_object_the_run_holds(tmp_path: Path) -> None:
    """``module:Class`` resolves, and a `Criteria` holds an instance of it under the record's attribute."""
    run = run_on(tmp_path)
    for c in CRITERIA:
        module, _, cls = c.criterion.partition(":")
        assert isinstance(getattr(run, c.attribute), getattr(importlib.import_module(module), cls)), c


def test_no_module_names_a_criterion_s_suite_module_but_the_registry() -> None:
    """No string in the package spells a suite module's name (``"test_fabric"``, ``"test_fabric.py"``) outside
    the registry: a module matched as a string is a second list that the registry does not update."""
    names = {c.module for c in CRITERIA} | {f"{c.module}.py" for c in CRITERIA}
    found = []
    for path in modules():
        if path == PACKAGE / "criteria" / "__init__.py" or (path.parent == PACKAGE and path.name.startswith("test_")):
            continue
        for node in nodes(path):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert found == []
