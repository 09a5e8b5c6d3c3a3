"""What each workload kind's conditions mean for a wait, as tables (pure: objects in, an `Outcome` out).

Each kind declares, in the order they are tried, the conditions that end its wait (`Ends`: a
condition True, optionally with one of some reasons) and the conditions it must reach in time
(`Needs`), in the manner of lightkube's ``wait(for_conditions, raise_for_conditions)``; one
evaluator (`ending`) walks a kind's table. The conditions a kind may show that end nothing are
listed too (`ignored`), so that a table says what it leaves out.

Job (batch/v1): ``Complete`` succeeds; ``Failed`` fails, as a timeout when its reason is
``DeadlineExceeded`` (``FailureTarget`` is interim). MPIJob (kubeflow.org/v2beta1): ``Succeeded``
succeeds; ``Failed`` fails (the launcher Job's reason, or ``MPIJobEvicted``), after a grace for a
pod's own failure, which names the node; an MPIJob without ``Created`` after the scheduling
deadline was never taken up by the operator (it sets no condition on a job it finds invalid).
``Running``, ``Restarting`` (defined, never set by the v2 controller) and ``Suspended`` end nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from acceptance.clusters.base import RunStatus
from acceptance.clusters.kube.status import Obj, Outcome, true_condition


def _said(cond: Obj) -> str:
    return f"{cond.get('reason', '')}: {cond.get('message', '')}"


@dataclass(frozen=True)
class Ends:
    """The condition `type` True (with one of `reasons`, when given) ends the wait as `status`.

    `reason` words the outcome from the condition; `pod_detail` adds how the main pod's container
    ended; `grace_s` is how long to wait first for a pod's own failure (a better reason), if any.
    """

    type: str
    status: RunStatus
    reason: Callable[[Obj], str] = lambda cond: ""
    reasons: frozenset[str] = frozenset()
    pod_detail: bool = False
    grace_s: float = 0.0

    def matches(self, obj: Obj) -> Obj | None:
        cond = true_condition(obj, self.type)
        if cond is None or (self.reasons and cond.get("reason", "") not in self.reasons):
            return None
        return cond


@dataclass(frozen=True)
class Needs:
    """The condition `type` True within the scheduling deadline, else the wait ends as `status`."""

    type: str
    status: RunStatus
    reason: Callable[[str, float], str]  # (object name, the deadline in s) → why


@dataclass(frozen=True)
class WaitTable:
    """One workload kind's wait: the conditions that end it, in order; those it must reach; those it ignores."""

    kind: str
    ends: tuple[Ends, ...]
    needs: tuple[Needs, ...] = ()
    ignored: frozenset[str] = frozenset()


#: how long a Failed MPIJob waits for the pod watch to say which pod failed and why (the operator's reason,
#: "MPIJobEvicted: 1/4 workers are evicted", may arrive first on its own watch; the pod's names the node)
POD_REASON_GRACE_S = 2.0


def _deadline(cond: Obj) -> str:
    return f"DeadlineExceeded: {cond.get('message', '')}"


def _mpijob_failed(cond: Obj) -> str:
    return f"MPIJob {_said(cond)}".rstrip(": ")


def _not_created(name: str, after_s: float) -> str:
    return (
        f"MPIJob {name} has no Created condition after {after_s:.0f} s: "
        "the MPI operator is not running or rejected it (see the events)"
    )


JOB = WaitTable(
    "Job",
    ends=(
        Ends("Complete", "succeeded"),
        Ends("Failed", "timeout", _deadline, reasons=frozenset({"DeadlineExceeded"})),
        Ends("Failed", "failed", _said, pod_detail=True),
    ),
    ignored=frozenset({"FailureTarget", "SuccessCriteriaMet", "Suspended"}),
)

MPIJOB = WaitTable(
    "MPIJob",
    ends=(
        Ends("Succeeded", "succeeded"),
        Ends("Failed", "failed", _mpijob_failed, pod_detail=True, grace_s=POD_REASON_GRACE_S),
    ),
    needs=(Needs("Created", "error", _not_created),),
    ignored=frozenset({"Running", "Restarting", "Suspended"}),
)

TABLES = {table.kind: table for table in (JOB, MPIJOB)}


@dataclass(frozen=True)
class Ending:
    """The row of a table that ends a wait, and the outcome it gives."""

    outcome: Outcome
    grace_s: float = 0.0


def ending(
    table: WaitTable,
    obj: Obj,
    *,
    name: str,
    exit_code: int | None,
    pod_detail: str,
    age_s: float,
    scheduling_timeout_s: float,
) -> Ending | None:
    """How `obj`'s conditions end its wait, by `table` (None: not ended yet).

    `exit_code`: the main pod's, if it has ended (a success without one is 0); `pod_detail`: how the
    main pod's container ended, in words ("" when it has not); `age_s`: since the object was submitted.
    """
    for row in table.ends:
        cond = row.matches(obj)
        if cond is None:
            continue
        reason = row.reason(cond)
        if row.pod_detail and pod_detail:
            reason += f"; {pod_detail}"
        code = (0 if exit_code is None else exit_code) if row.status == "succeeded" else exit_code
        return Ending(Outcome(row.status, reason, code), row.grace_s)
    if age_s > scheduling_timeout_s:
        for need in table.needs:
            if true_condition(obj, need.type) is None:
                return Ending(Outcome(need.status, need.reason(name, scheduling_timeout_s), None))
    return None
