"""A site's own checks, added through `acceptance.hookspecs`, judged like the built-in criteria.

A `SiteCheck` names the workloads it needs (one per subject: a node, a link...), judges each
subject's result, and may keep what it measured in a new baseline, to be judged against at
the next run. Its workloads run once per run, together, alone on the GPUs and NICs, through
the same scheduler as every criterion; its verdicts get the same junit properties, evidence
folder and HTML report rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acceptance.clusters.base import Workload, WorkloadResult
from acceptance.criteria.context import RunContext
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.scheduler import Batch
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import UsageError
from acceptance.judge.verdict import Verdict

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts


class SiteCheck:
    """Subclass this in a conftest.py or plugin and return instances from `pytest_acceptance_site_checks`.

    `name` must be unique and usable in a file name; `title` heads the check's rows in the report.
    """

    name: str = ""
    title: str = ""
    deadline_s: float = 600.0

    def workloads(self, context: RunContext) -> Mapping[str, Workload]:
        """Subject → the workload that measures it (every subject is one test item)."""
        raise NotImplementedError

    def judge(
        self, subject: str, result: WorkloadResult, reference: Mapping[str, Any] | None, context: RunContext
    ) -> Verdict:
        """The subject's verdict; `reference` is what `keep` returned for it when the baseline was recorded."""
        raise NotImplementedError

    def keep(self, subject: str, result: WorkloadResult) -> Mapping[str, Any] | None:
        """What a new baseline keeps of this subject's result (None: nothing)."""
        return None


class SiteChecks:
    """The site checks of one pytest process."""

    def __init__(self, run: RunParts, checks: Sequence[SiteCheck]) -> None:
        self.run = run
        self.checks = {c.name: c for c in checks}

    def verdict(self, name: str, subject: str) -> Verdict:
        check = self.checks[name]
        ctx = self.run.context
        self.run.diagnostics.finish_first()
        batch = Batch(f"site-{name}", f"site/{name}", check.workloads(ctx), check.deadline_s)
        result = self.run.scheduler.results(batch)[subject]
        reference = None
        if ctx.baseline is not None:
            reference = (ctx.baseline.baseline.data["results"].get("site") or {}).get(name, {}).get(subject)
        verdict = check.judge(subject, result, reference, ctx)
        if ctx.recording:
            kept = check.keep(subject, result)
            if kept is not None:
                self.run.folder.write_part(f"site-{name}", subject, dict(kept))
        return verdict


def items(context: RunContext, checks: Sequence[SiteCheck]) -> list[tuple[str, str]]:
    """(check, subject) of every site-check item, in order; a check without a name or title is refused."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for check in checks:
        if not check.name or not check.title or check.name in seen:
            raise UsageError(f"site check {check!r}: needs a unique `name` and a `title` (have {sorted(seen)})")
        seen.add(check.name)
        out.extend((check.name, subject) for subject in check.workloads(context))
    return out


def baseline_part(folder: SharedFolder, names: Sequence[str]) -> BaselinePart:
    """What the site checks kept of their results, by check and subject."""
    kept = {name: parts for name in names if (parts := folder.parts(f"site-{name}"))}
    return BaselinePart(results={"site": kept} if kept else {})
