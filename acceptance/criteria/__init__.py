"""The criteria of the recovery agreement: one module each, and the one registry that names them.

A criterion module says which workloads it needs (handed to the run's `Scheduler`), how it
judges their results (calling the pure `acceptance.judge`), and what it adds to a new
baseline (`baseline_part`). The suite's ``acceptance/test_*.py`` items call it through the
`Criteria` of their pytest process. A site adds its own check through the hooks of
`acceptance.hookspecs`.

`CRITERIA` is the only list of them: the scheduler's order, the recording of a baseline, the
report's banner, the probation report and the plugin all read it. Adding a criterion is one
module here, one thin ``acceptance/test_*.py`` and one `Criterion` record. This module stays
import-light (it names the criterion's class and baseline parts, it does not import them):
the plugin reads it before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Phase = Literal["acceptance", "probation", "site"]


@dataclass(frozen=True)
class Criterion:
    """One criterion of the agreement and everything that is named after it.

    `noun` and `detail` make the report's banner line (``3/4 nodes passed DCGM``); `phase` says
    whether it belongs to the acceptance of a repair, to the probation after it, or to the site's
    own checks; `workloads` are the kinds of batches it submits (their evidence folders);
    `criterion` is the ``module:Class`` of the object a `Criteria` holds as `attribute`; `baseline_parts`
    are the modules whose ``baseline_part(folder, profile)`` a ``--record-baseline`` run keeps.
    """

    number: int | None
    module: str
    title: str
    noun: str
    detail: str
    phase: Phase
    attribute: str
    criterion: str
    workloads: tuple[str, ...] = ()
    baseline_parts: tuple[str, ...] = ()


_PKG = "acceptance.criteria"

CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        0, "test_preflight", "cluster, node set and versions as agreed", "preflight checks", "", "acceptance",
        "preflight", f"{_PKG}.preflight:Preflight", baseline_parts=(f"{_PKG}.preflight",),
    ),
    Criterion(
        1, "test_gpu_diagnostics", "DCGM diagnostics on every GPU", "nodes", " DCGM", "acceptance",
        "diagnostics", f"{_PKG}.diagnostics:Diagnostics", ("dcgm", "prepull"), (f"{_PKG}.diagnostics",),
    ),
    Criterion(
        2, "test_fabric", "nccl-tests within the margin of the baseline", "nccl-tests", " within the agreed margin",
        "acceptance", "fabric", f"{_PKG}.fabric:Fabric", ("nccl", "localize"), (f"{_PKG}.fabric", f"{_PKG}.localize"),
    ),
    Criterion(
        3, "test_smoke_step", "smoke step time within the margin", "smoke runs", " within the step-time margin",
        "acceptance", "smoke", f"{_PKG}.smoke:SmokeStep", ("training",), (f"{_PKG}.smoke",),
    ),
    Criterion(
        4, "test_loss_continuity", "loss continuous after the restore", "loss checks", "", "acceptance",
        "loss", f"{_PKG}.loss:LossContinuity", ("training",),
    ),
    Criterion(
        5, "test_recurrence", "no recurrence during probation", "probation checks", "", "probation",
        "recurrence", f"{_PKG}.recurrence:Recurrence",
    ),
    Criterion(
        None, "test_site_checks", "site checks", "items", "", "site", "site", f"{_PKG}.site:SiteChecks", ("site",),
    ),
)  # fmt: skip

_BY_MODULE = {c.module: c for c in CRITERIA}
_BY_NUMBER = {c.number: c for c in CRITERIA if c.number is not None}


def by_module(module: str) -> Criterion | None:
    """The criterion of a suite module (``test_fabric``), None for a module that is not one."""
    return _BY_MODULE.get(module)


def module(number: int) -> str:
    """The suite module of criterion `number` (``2`` → ``test_fabric``)."""
    return _BY_NUMBER[number].module


def of_phase(phase: Phase) -> tuple[Criterion, ...]:
    """The criteria of one phase, in their order."""
    return tuple(c for c in CRITERIA if c.phase == phase)


def modules_of(phase: Phase) -> frozenset[str]:
    """The suite modules of one phase (``probation`` → ``{"test_recurrence"}``)."""
    return frozenset(c.module for c in of_phase(phase))


def order(module: str) -> int:
    """Where a suite module's items run: criteria in their order, anything else after them."""
    found = _BY_MODULE.get(module)
    return CRITERIA.index(found) if found is not None else len(CRITERIA)
