"""The criteria of the recovery agreement: one module each, and the one table that names them.

A criterion module says which workloads it needs (handed to the run's `Scheduler`), how it
judges their results (calling the pure `acceptance.judge`), and what it adds to a new
baseline (`baseline_part`). The suite's ``acceptance/test_*.py`` items call it through the
`Run` of their pytest process. Criterion 5 and fabric localization are added the same way; a
site adds its own check through the hooks of `acceptance.hookspecs`.

This module stays import-light: the plugin reads the table below before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CriterionInfo:
    """A criterion as the report names it: its number in the agreement, suite module and title."""

    number: int | None
    module: str
    title: str


CRITERIA: tuple[CriterionInfo, ...] = (
    CriterionInfo(0, "test_preflight", "cluster, node set and versions as agreed"),
    CriterionInfo(1, "test_gpu_diagnostics", "DCGM diagnostics on every GPU"),
    CriterionInfo(2, "test_fabric", "nccl-tests within the margin of the baseline"),
    CriterionInfo(3, "test_smoke_step", "smoke step time within the margin"),
    CriterionInfo(4, "test_loss_continuity", "loss continuous after the restore"),
    CriterionInfo(5, "test_recurrence", "no recurrence during probation"),
    CriterionInfo(None, "test_site_checks", "site checks"),
)

_BY_MODULE = {c.module: c for c in CRITERIA}


def by_module(module: str) -> CriterionInfo | None:
    """The criterion of a suite module (``test_fabric``), None for a module that is not one."""
    return _BY_MODULE.get(module)


def order(module: str) -> int:
    """Where a suite module's items run: criteria in their order, anything else after them."""
    found = _BY_MODULE.get(module)
    return CRITERIA.index(found) if found is not None else len(CRITERIA)
