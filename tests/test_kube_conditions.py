"""Each workload kind's table of conditions, walked on Job and MPIJob objects as their controllers write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acceptance.clusters.kube.conditions import JOB, MPIJOB, TABLES, WaitTable, ending
from acceptance.clusters.kube.status import Outcome, conditions

DATA = Path(__file__).parent / "data" / "kube_wait"
SCHEDULING_S = 300.0
DETAIL = "container nccl of pod ar-r1-launcher-x2k9 on node gpu-01 exited 1 (Error)"

NOT_CREATED = (
    "MPIJob ar-r1 has no Created condition after 300 s: the MPI operator is not running or rejected it (see the events)"
)
BACKOFF = "Job has reached the specified backoff limit"
#: object file → its outcome and grace; when young (just submitted) it is the same, but for the `Needs` rows
EXPECTED: dict[str, tuple[Outcome, float] | None] = {
    "mpijob-no-status": (Outcome("error", NOT_CREATED), 0.0),
    "mpijob-created": None,
    "mpijob-running": None,
    "mpijob-restarting": None,
    "mpijob-suspended": None,
    "mpijob-succeeded": (Outcome("succeeded", "", 0), 0.0),
    "mpijob-failed-backofflimit": (Outcome("failed", f"MPIJob BackoffLimitExceeded/: {BACKOFF}; {DETAIL}"), 2.0),
    "mpijob-evicted": (Outcome("failed", f"MPIJob MPIJobEvicted: 1/4 workers are evicted; {DETAIL}"), 2.0),
    "job-running": None,
    "job-suspended": None,
    "job-failure-target": None,
    "job-complete": (Outcome("succeeded", "", 0), 0.0),
    "job-failed-backofflimit": (Outcome("failed", f"BackoffLimitExceeded: {BACKOFF}; {DETAIL}"), 0.0),
    "job-deadline": (Outcome("timeout", "DeadlineExceeded: Job was active longer than specified deadline"), 0.0),
}
YOUNG = {"mpijob-no-status": None}


def _load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text())
    return doc


def _walk(obj: dict[str, Any], age_s: float, exit_code: int | None = None) -> tuple[Outcome, float] | None:
    found = ending(TABLES[obj["kind"]], obj, name=obj["metadata"]["name"], exit_code=exit_code, pod_detail=DETAIL,
                   age_s=age_s, scheduling_timeout_s=SCHEDULING_S)  # fmt: skip
    return None if found is None else (found.outcome, found.grace_s)


def test_every_recorded_object_has_an_expectation() -> None:
    assert sorted(p.stem for p in DATA.glob("*.json")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_table_gives_the_outcome_of_each_recorded_object(name: str) -> None:
    """Young and past the scheduling deadline, each object ends its wait as its table says (or not yet)."""
    obj = _load(name)
    assert _walk(obj, age_s=1.0) == YOUNG.get(name, EXPECTED[name])
    assert _walk(obj, age_s=SCHEDULING_S + 1) == EXPECTED[name]


@pytest.mark.parametrize("table", [JOB, MPIJOB], ids=lambda t: t.kind)
def test_every_condition_the_objects_show_is_named_by_their_table(table: WaitTable) -> None:
    """A condition a controller writes is either a row of the table or listed as ending nothing."""
    named = {row.type for row in table.ends} | {need.type for need in table.needs} | table.ignored
    shown = {
        c for p in DATA.glob("*.json") if (o := json.loads(p.read_text()))["kind"] == table.kind for c in conditions(o)
    }
    assert shown <= named
    assert shown  # the corpus has objects of this kind


def test_mpijob_table_names_every_v2beta1_condition() -> None:
    """The v2beta1 API defines Created, Running, Restarting, Succeeded, Failed and Suspended: none is left out."""
    named = {row.type for row in MPIJOB.ends} | {need.type for need in MPIJOB.needs} | MPIJOB.ignored
    assert named == {"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"}


def test_the_main_pods_exit_code_is_the_outcomes() -> None:
    """A success or failure carries the launcher's or Job pod's exit code; a success without one is 0."""
    assert _walk(_load("mpijob-succeeded"), age_s=1.0, exit_code=3) == (Outcome("succeeded", "", 3), 0.0)
    failed = _walk(_load("job-failed-backofflimit"), age_s=1.0, exit_code=137)
    assert failed == (Outcome("failed", f"BackoffLimitExceeded: {BACKOFF}; {DETAIL}", 137), 0.0)
    created = _walk(_load("mpijob-no-status"), age_s=SCHEDULING_S + 1, exit_code=1)
    assert created == (Outcome("error", NOT_CREATED, None), 0.0)


def test_a_condition_that_is_not_true_ends_nothing() -> None:
    """``Failed`` with status False (or Unknown) is not a failure; the first true row wins."""
    obj = _load("job-failed-backofflimit")
    for cond in obj["status"]["conditions"]:
        cond["status"] = "False"
    assert _walk(obj, age_s=SCHEDULING_S + 1) is None
