"""One scheduler for every workload of a run: each batch submitted once, awaited once, in one process.

A batch is the workloads one criterion needs at the same time (every returned node's DCGM
job; one nccl test; one training run). Whichever pytest process asks first submits the
batch and waits for it while holding the run's GPU lock (GPU workloads never overlap);
every other process, with or without pytest-xdist, reads the same results from the run
folder. So `-n 4` creates exactly the cluster objects `-n 0` does. A process that took over
a batch from one that died adopts its submission (the handles are kept as plain data).
A cluster that fails the batch gives results that say so; nothing here raises to an item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acceptance.clusters.base import Cluster, Handle, RunResult, Workload
from acceptance.criteria.evidence import Evidence
from acceptance.criteria.runfolder import RunFolder
from acceptance.errors import AcceptanceError

GPU_LOCK = "gpus"


@dataclass(frozen=True)
class Batch:
    """Workloads that run together: subject (a node, a test name) → workload.

    `key` is unique within the run; the evidence of each workload goes under
    ``<evidence>/<subject>`` in the report folder.
    """

    key: str
    evidence: str
    workloads: Mapping[str, Workload]
    deadline_s: float


class BatchResults(Mapping[str, RunResult]):
    """The results of a batch by subject, read from the run folder when first asked for."""

    def __init__(self, paths: Mapping[str, str], ready: Mapping[str, RunResult] | None = None) -> None:
        self._paths = dict(paths)
        self._loaded: dict[str, RunResult] = dict(ready or {})
        self._subjects = list(dict.fromkeys([*self._paths, *self._loaded]))

    def __getitem__(self, subject: str) -> RunResult:
        if subject not in self._loaded:
            self._loaded[subject] = RunResult.from_json(json.loads(Path(self._paths[subject]).read_text()))
        return self._loaded[subject]

    def __iter__(self) -> Iterator[str]:
        return iter(self._subjects)

    def __len__(self) -> int:
        return len(self._subjects)


class Scheduler:
    """Runs the batches of one run (see module docstring)."""

    def __init__(self, cluster: Cluster, folder: RunFolder, evidence: Evidence | None, budget_s: float) -> None:
        self.cluster = cluster
        self.folder = folder
        self.evidence = evidence
        self.budget_s = budget_s
        self._done: dict[str, BatchResults] = {}

    def results(self, batch: Batch) -> BatchResults:
        """The batch's results, running it first if no process of the run has."""
        if batch.key not in self._done:
            try:
                paths = self.folder.once(batch.key, lambda: self._execute(batch), timeout_s=self.budget_s)
            except AcceptanceError as exc:  # another process held the batch past every deadline
                return self._not_run(batch, str(exc))
            self._done[batch.key] = BatchResults(paths)
        return self._done[batch.key]

    def _execute(self, batch: Batch) -> dict[str, str]:
        workloads = list(batch.workloads.values())
        try:
            with self.folder.lock(GPU_LOCK, timeout_s=self.budget_s):
                submitted = self.folder.once(
                    f"{batch.key}.submitted", lambda: [h.to_json() for h in self.cluster.submit(workloads)]
                )
                results = self.cluster.wait([Handle.from_json(h) for h in submitted], batch.deadline_s)
        except AcceptanceError as exc:  # the cluster failed us: every subject's item says so
            now = datetime.now(UTC)
            results = [RunResult.not_run(w, str(exc), now) for w in workloads]
        folder = self.folder.path / "results"
        folder.mkdir(exist_ok=True)
        paths = {}
        for (subject, _), result in zip(batch.workloads.items(), results, strict=True):
            if self.evidence is not None:
                self.evidence.result(f"{batch.evidence}/{subject}", result)
            path = folder / f"{batch.key}.{subject}.json"
            path.write_text(json.dumps(result.to_json()))
            paths[subject] = str(path)
        return paths

    def _not_run(self, batch: Batch, reason: str) -> BatchResults:
        now = datetime.now(UTC)
        return BatchResults({}, {s: RunResult.not_run(w, reason, now) for s, w in batch.workloads.items()})
