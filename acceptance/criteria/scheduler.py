"""One scheduler for every workload of a run: each batch submitted once, awaited once, in one process.

A batch is the workloads one criterion needs at the same time (every returned node's DCGM
job; one nccl test; one training run). Whichever pytest process asks first submits the
batch and waits for it while holding the run's GPU lock (GPU workloads never overlap);
every other process, with or without pytest-xdist, reads the same results from the run
folder. So `-n 4` creates exactly the cluster objects `-n 0` does. A process that took over
a batch from one that died adopts its submission (the handles are kept as plain data).
A cluster that fails the batch gives results that say so; nothing here raises to an item.

A batch that holds no GPUs (``gpus=False``: pulling images ahead of time) never takes the GPU
lock; one named as another batch's `alongside` is started in the background, once per run, as
soon as that batch is submitted, so it runs while that batch does. While a batch is awaited,
its status (`acceptance.progress.status`) is written to ``progress/<key>.json`` in the run
folder and handed to the process's progress listener (the terminal display), if it has one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from acceptance.clusters.base import (
    Cluster,
    Handle,
    ProgressSink,
    StreamsLogs,
    Workload,
    WorkloadProgress,
    WorkloadResult,
)
from acceptance.criteria.evidence import Evidence
from acceptance.criteria.shared_folder import SharedFolder, write_json
from acceptance.errors import AcceptanceError, RunDeadline
from acceptance.progress.status import FOLDER as STATUS_FOLDER
from acceptance.progress.status import BatchStatus, summarize

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
    note: str = ""  # shown on the batch's progress line while it runs
    gpus: bool = True  # False: holds no GPU, so it neither waits for nor takes the GPU lock
    alongside: Batch | None = None  # holds no GPUs; started in the background once this batch is submitted
    #: read the workload's log as it arrives (a backend that `StreamsLogs`, one workload): given the text so far,
    #: it returns why to stop the workload now, or None to let it run; the wait then ends with the stopped result
    watch: Callable[[str], str | None] | None = dataclasses.field(default=None, compare=False)


class ProgressListener(Protocol):
    """Who shows a process's batches while they run (`acceptance.progress.display.LiveDisplay`)."""

    def update(self, status: BatchStatus) -> None: ...

    def foreground(self) -> AbstractContextManager[None]:
        """Held while the calling thread waits for a batch (the terminal is free to draw on)."""
        ...


class BatchResults(Mapping[str, WorkloadResult]):
    """The results of a batch by subject, read from the run folder when first asked for."""

    def __init__(self, paths: Mapping[str, str], ready: Mapping[str, WorkloadResult] | None = None) -> None:
        self._paths = dict(paths)
        self._loaded: dict[str, WorkloadResult] = dict(ready or {})
        self._subjects = list(dict.fromkeys([*self._paths, *self._loaded]))

    def __getitem__(self, subject: str) -> WorkloadResult:
        if subject not in self._loaded:
            self._loaded[subject] = WorkloadResult.from_json(json.loads(Path(self._paths[subject]).read_text()))
        return self._loaded[subject]

    def __iter__(self) -> Iterator[str]:
        return iter(self._subjects)

    def __len__(self) -> int:
        return len(self._subjects)


class Scheduler:
    """Runs the batches of one run (see module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        folder: SharedFolder,
        evidence: Evidence | None,
        budget_s: float,
        progress: ProgressListener | None = None,
        deadline: datetime | None = None,
    ) -> None:
        """`deadline`: the run's own (`RunContext.deadline`): no batch starts after it, none is awaited past it."""
        self.cluster = cluster
        self.folder = folder
        self.evidence = evidence
        self.budget_s = budget_s
        self.progress = progress
        self.deadline = deadline
        self._done: dict[str, BatchResults] = {}
        self._background: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._closed = False

    def results(self, batch: Batch) -> BatchResults:
        """The batch's results, running it first if no process of the run has."""
        if batch.key not in self._done:
            try:
                with self.progress.foreground() if self.progress is not None else nullcontext():
                    paths = self.folder.once(batch.key, lambda: self._execute(batch), timeout_s=self._patience_s())
            except AcceptanceError as exc:  # another process held the batch past every deadline
                return self._not_run(batch, str(exc))
            self._done[batch.key] = BatchResults(paths)
        return self._done[batch.key]

    def start(self, batch: Batch) -> None:
        """Run a batch that holds no GPUs in a background thread (once per run; `results` then joins it)."""
        if batch.gpus:
            raise ValueError(f"batch {batch.key} holds GPUs: it runs under the GPU lock, never in the background")
        with self._lock:
            if self._closed or batch.key in self._background:
                return
            thread = threading.Thread(target=self._background_run, args=(batch,), name=f"batch-{batch.key}",
                                      daemon=True)  # fmt: skip
            self._background[batch.key] = thread
        thread.start()

    def _background_run(self, batch: Batch) -> None:
        try:
            self.folder.once(batch.key, lambda: self._execute(batch), timeout_s=self._patience_s())
        except AcceptanceError:  # another process runs it: nothing for this thread to do
            return

    def close(self, timeout_s: float) -> list[str]:
        """Wait at most `timeout_s` for background batches; one still running then files no evidence
        (the report is being written), and its objects go with the run's. Returns what was left."""
        deadline = time.monotonic() + timeout_s
        for thread in list(self._background.values()):
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._closed = True
            return [
                f"batch {key} (holding no GPUs) had not ended when the session did; its objects are deleted with "
                "the run's"
                for key, thread in self._background.items()
                if thread.is_alive()
            ]

    def _left_s(self) -> float:
        """Seconds until the run's deadline (infinite without one; negative once it has passed)."""
        return math.inf if self.deadline is None else (self.deadline - datetime.now(UTC)).total_seconds()

    def _patience_s(self) -> float:
        """How long to wait for another process's batch: its budget, and a minute past the run's deadline at most
        (time for that process to file its own results)."""
        return min(self.budget_s, max(0.0, self._left_s()) + 60.0)

    def _check_deadline(self, what: str) -> float:
        """The seconds left of the run; RunDeadline once none are."""
        left = self._left_s()
        if left <= 0:
            assert self.deadline is not None
            raise RunDeadline(f"the run's deadline ({self.deadline:%Y-%m-%dT%H:%M:%SZ}, the profile's run.deadline) "
                              f"passed {what}")  # fmt: skip
        return left

    def _execute(self, batch: Batch) -> dict[str, str]:
        workloads = list(batch.workloads.values())
        try:
            left = self._check_deadline("before this batch started: it was not started")
            with self.folder.lock(GPU_LOCK, timeout_s=min(self.budget_s, left)) if batch.gpus else nullcontext():
                self._check_deadline("while this batch waited for the GPUs: it was not started")
                submitted = self.folder.once(
                    f"{batch.key}.submitted", lambda: [h.to_json() for h in self.cluster.submit(workloads)]
                )
                if batch.alongside is not None:
                    self.start(batch.alongside)
                handles = [Handle.from_json(h) for h in submitted]
                wait_s = min(batch.deadline_s, self._check_deadline("before this batch was awaited"))
                watcher = self._watch(batch, handles, wait_s)
                try:
                    results = self.cluster.wait(handles, wait_s, progress=self._sink(batch))
                finally:
                    if watcher is not None:
                        watcher.join(timeout=5.0)
                if wait_s < batch.deadline_s:
                    results = [self._cut_short(r) for r in results]
        except AcceptanceError as exc:  # the cluster failed us: every subject's item says so
            now = datetime.now(UTC)
            results = [WorkloadResult.not_run(w, str(exc), now) for w in workloads]
        folder = self.folder.path / "results"
        folder.mkdir(exist_ok=True)
        paths = {}
        with self._lock:  # a background batch that outlived the session files no evidence into a signed report
            evidence = None if self._closed else self.evidence
            for (subject, _), result in zip(batch.workloads.items(), results, strict=True):
                if evidence is not None:
                    evidence.result(f"{batch.evidence}/{subject}", result)
                path = folder / f"{batch.key}.{subject}.json"
                path.write_text(json.dumps(result.to_json()))
                paths[subject] = str(path)
        return paths

    def _watch(self, batch: Batch, handles: Sequence[Handle], wait_s: float) -> threading.Thread | None:
        """Follow the log of a watched batch's one workload in a thread; stop it when the watch says so."""
        cluster = self.cluster
        if batch.watch is None or len(handles) != 1 or not isinstance(cluster, StreamsLogs):
            return None
        watch, handle = batch.watch, handles[0]

        def follow() -> None:
            text: list[str] = []
            try:
                for chunk in cluster.follow(handle, wait_s):
                    text.append(chunk)
                    reason = watch("".join(text))
                    if reason:
                        cluster.stop(handle, reason)
                        return
            except AcceptanceError:  # the log could not be followed: the job runs its length, judged whole
                return

        thread = threading.Thread(target=follow, name=f"watch-{batch.key}", daemon=True)
        thread.start()
        return thread

    def _cut_short(self, result: WorkloadResult) -> WorkloadResult:
        """A workload the run's deadline cut short (not its own): an error, nothing to judge, not a timeout."""
        if result.status != "timeout" or self._left_s() > 1.0:
            return result
        said = f"the run's deadline (the profile's run.deadline) passed while this workload ran: {result.reason}"
        return dataclasses.replace(result, status="error", reason=said)

    def _sink(self, batch: Batch) -> ProgressSink:
        """Where the cluster's progress reports of `batch` go: the run folder, and this process's listener."""
        target = self.folder.path / STATUS_FOLDER / f"{batch.key}.json"

        def report(progress: Sequence[WorkloadProgress]) -> None:
            status = summarize(batch.key, progress, note=batch.note, updated=time.time())
            with suppress(OSError):  # progress is a courtesy: it never fails the batch
                write_json(target, status.to_json())
            if self.progress is not None:
                self.progress.update(status)

        return report

    def _not_run(self, batch: Batch, reason: str) -> BatchResults:
        now = datetime.now(UTC)
        return BatchResults({}, {s: WorkloadResult.not_run(w, reason, now) for s, w in batch.workloads.items()})
