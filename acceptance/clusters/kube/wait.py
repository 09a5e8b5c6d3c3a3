"""Waiting for submitted workloads: success, failure and deadline, from watches.

Success and failure by the workload's own conditions are each kind's table (`kube.conditions`: the
Job's ``Complete``, the MPIJob's ``Succeeded``, their ``Failed`` ...). Failure comes earlier from any
pod of the workload that is Evicted, stuck in ImagePullBackOff (and the like), OOMKilled, on a node
that is not Ready, or Pending with the scheduler's ``Unschedulable`` past the scheduling deadline.
When a workload ends (or its deadline passes) its log is read, then it is deleted.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from acceptance.clusters.base import Handle, ProgressSink, WorkloadProgress, WorkloadResult, workload_kind
from acceptance.clusters.kube.client import KubeApi
from acceptance.clusters.kube.conditions import TABLES, ending
from acceptance.clusters.kube.manifests import MPI_API_VERSION, label_value, run_selector
from acceptance.clusters.kube.progress import workload_progress
from acceptance.clusters.kube.settings import WORKLOAD_KEY, KubeSettings
from acceptance.clusters.kube.status import (
    ASSIGNED,
    Obj,
    Outcome,
    conditions,
    container_state,
    image_of,
    owner_of,
    parse_time,
    pod_failure,
    unschedulable_message,
    where,
)
from acceptance.clusters.kube.watch import Feed, Item
from acceptance.errors import KubeApiError

ROLE = "training.kubeflow.org/job-role"
#: how long the end of a wait waits for its watches' threads to end, all together (their sockets are shut down
#: first; one held in a black-holed connect is left, to end at its own timeout)
FEED_END_S = 5.0
TOPS = {"jobs": "Job", "mpijobs": "MPIJob"}
LOG_TAIL_LINES = 50
EVAL_EVERY_S = 0.05
PROGRESS_EVERY_S = 1.0


@dataclass
class _Track:
    handle: Handle
    kind: str
    name: str
    label: str
    deadline: float
    created_at: float
    unschedulable_since: float | None = None
    outcome: Outcome | None = None
    pods_seen: dict[str, str] = field(default_factory=dict)
    result: WorkloadResult | None = None
    failed_seen: float | None = None  # when a condition that ends the wait after a grace was first seen
    stopped: str = ""  # why the harness stopped it (`KubeCluster.stop`)


class _State:
    def __init__(self) -> None:
        self.pods: dict[str, dict[str, Obj]] = {}  # workload label -> pod name -> pod
        self.tops: dict[tuple[str, str], Obj] = {}  # (kind, name) -> Job/MPIJob
        self.not_ready: dict[str, str] = {}  # node -> why
        self.dirty: set[str] = set()
        self.placement: dict[str, dict[str, str]] = {}  # workload label -> pod -> node, kept after deletion
        self.deleted: set[tuple[str, str]] = set()  # Jobs/MPIJobs seen deleted, or missing from a fresh list
        self.listed: dict[str, set[str]] = {}  # jobs/mpijobs -> names of the latest full list
        self._listing: dict[str, set[str]] = {}

    def apply(self, item: Item) -> None:
        resource, kind, obj = item
        if kind == "SYNCED":
            if resource in TOPS:
                self.listed[resource] = self._listing.pop(resource, set())
                self.dirty.add("*")
            return
        meta = obj.get("metadata") or {}
        if kind == "SYNC" and resource in TOPS:
            self._listing.setdefault(resource, set()).add(meta["name"])
        if resource == "nodes":
            ready = conditions(obj).get("Ready", {})
            if kind != "DELETED" and ready.get("status") == "True":
                self.not_ready.pop(meta["name"], None)
            else:
                why = f"{ready.get('reason', 'Deleted')}: {ready.get('message', '')}".strip(": ")
                if self.not_ready.get(meta["name"]) != why:
                    self.not_ready[meta["name"]] = why
                    self.dirty.add("*")
            return
        label = (meta.get("labels") or {}).get(WORKLOAD_KEY, "")
        self.dirty.add(label)
        if resource == "pods":
            node = (obj.get("spec") or {}).get("nodeName")
            if node:
                self.placement.setdefault(label, {})[meta["name"]] = node
            pods = self.pods.setdefault(label, {})
            if kind == "DELETED":
                pods.pop(meta["name"], None)
            else:
                pods[meta["name"]] = obj
        else:
            key = (TOPS[resource], meta["name"])
            if kind == "DELETED":
                self.tops.pop(key, None)
                self.deleted.add(key)
            else:
                self.tops[key] = obj

    def gone(self, kind: str, name: str) -> bool:
        """The object was deleted (a DELETED event, or absent from a list made after it was created)."""
        resource = next(r for r, k in TOPS.items() if k == kind)
        listed = self.listed.get(resource)
        return (kind, name) in self.deleted or (listed is not None and name not in listed)


class Waiter:
    def __init__(
        self, api: KubeApi, settings: KubeSettings, run_id: str, stops: Mapping[str, str] | None = None
    ) -> None:
        """`stops`: workload object name → why the harness stops it; read while waiting (it may grow)."""
        self.api = api
        self.stops: Mapping[str, str] = stops if stops is not None else {}
        self.settings = settings
        self.run_id = run_id
        self.ns = settings.namespace

    def _feeds(self, tracks: Sequence[_Track], out: queue.Queue[Item], stop: threading.Event) -> list[Feed]:
        sel = {"namespace": self.ns, "label_selector": run_selector(self.run_id)}
        feeds = [Feed(self.api, "pods", self.api.core.list_namespaced_pod, out, stop, **sel),
                 Feed(self.api, "nodes", self.api.core.list_node, out, stop)]  # fmt: skip
        if any(t.kind == "Job" for t in tracks):
            feeds.append(Feed(self.api, "jobs", self.api.batch.list_namespaced_job, out, stop, **sel))
        if any(t.kind == "MPIJob" for t in tracks):
            group, version = MPI_API_VERSION.split("/")
            feeds.append(Feed(self.api, "mpijobs", self.api.custom.list_namespaced_custom_object, out, stop,
                              group=group, version=version, plural="mpijobs", **sel))  # fmt: skip
        return feeds

    def wait(
        self, handles: Sequence[Handle], deadline_s: float, progress: ProgressSink | None = None
    ) -> list[WorkloadResult]:
        now = time.monotonic()
        tracks = []
        for h in handles:
            kind, name = h.objects[0]
            own = now + h.workload.deadline_s + self.settings.scheduling_timeout_s
            tracks.append(_Track(h, kind, name, label_value(h.workload.name), min(now + deadline_s, own), now))
        out: queue.Queue[Item] = queue.Queue()
        stop = threading.Event()
        feeds = self._feeds(tracks, out, stop)
        state = _State()
        for feed in feeds:
            feed.start()
        try:
            self._loop(tracks, feeds, out, state, progress)
        finally:
            stop.set()
            for feed in feeds:
                feed.close()
            ends = time.monotonic() + FEED_END_S  # none outlives its wait (nor, at the run's end, the interpreter)
            for feed in feeds:
                feed.end(max(0.0, ends - time.monotonic()))
        events = self._events(tracks)
        return [self._result(t, events) for t in tracks]

    def _loop(
        self,
        tracks: list[_Track],
        feeds: list[Feed],
        out: queue.Queue[Item],
        state: _State,
        progress: ProgressSink | None = None,
    ) -> None:
        pending = {id(t): t for t in tracks}
        by_label: dict[str, list[_Track]] = {}
        for t in tracks:
            by_label.setdefault(t.label, []).append(t)
        last_sweep = last_eval = last_progress = 0.0
        next_deadline = min(t.deadline for t in tracks)
        while pending:
            now = time.monotonic()
            if progress is not None and now - last_progress >= PROGRESS_EVERY_S:
                last_progress = now
                progress([self._progress(t, state, now) for t in tracks])
            timeout = max(0.0, min(0.5, min(t.deadline for t in pending.values()) - now))
            try:
                state.apply(out.get(timeout=timeout))
                while True:
                    state.apply(out.get_nowait())
            except queue.Empty:
                pass
            # nodes are optional: a namespaced service account may not list them (no NotReady detection then)
            failed_feed = next((f for f in feeds if f.error and f.resource != "nodes"), None)
            now = time.monotonic()
            if failed_feed is not None:
                for t in pending.values():
                    t.outcome = Outcome("error", f"cannot follow {failed_feed.resource}: {failed_feed.error}")
            if not all(f.synced.is_set() for f in feeds) and failed_feed is None:
                continue
            if now - last_eval < EVAL_EVERY_S and failed_feed is None and now < next_deadline:
                continue  # let a burst of events pile up: evaluate a big workload once, not per event
            last_eval = now
            next_deadline = min(t.deadline for t in pending.values())
            if "*" in state.dirty or now - last_sweep >= 0.5:
                todo = list(pending.values())
                last_sweep = now
            else:
                todo = [t for label in state.dirty for t in by_label.get(label, ()) if id(t) in pending]
            state.dirty.clear()
            listed = {id(t) for t in todo}
            todo += [t for t in pending.values() if t.name in self.stops and id(t) not in listed]
            for t in todo:
                if t.outcome is None and t.name in self.stops:
                    t.stopped = self.stops[t.name]
                    t.outcome = Outcome("succeeded", f"stopped by the harness: {t.stopped}")
                if t.outcome is None:
                    t.outcome = self._evaluate(t, state, now)
                if t.outcome is None and now >= t.deadline:
                    t.outcome = Outcome("timeout", f"no final state within {t.deadline - t.created_at:.0f} s: "
                                        f"{self._describe(t, state)}")  # fmt: skip
                if t.outcome is not None:
                    self._finish(t, state)
                    pending.pop(id(t), None)
        if progress is not None:
            now = time.monotonic()
            progress([self._progress(t, state, now) for t in tracks])

    def _progress(self, t: _Track, state: _State, now: float) -> WorkloadProgress:
        pods = state.pods.get(t.label, {})
        return workload_progress(t.handle, pods, self._main_pod(t, pods), t.outcome, now - t.created_at,
                                 t.deadline - t.created_at)  # fmt: skip

    def _evaluate(self, t: _Track, state: _State, now: float) -> Outcome | None:
        top = state.tops.get((t.kind, t.name))
        if top is None and state.gone(t.kind, t.name):
            return Outcome("error", f"{t.kind} {t.name} was deleted while this run waited for it (by `acceptance "
                           "cleanup`, kubectl or another controller): its result is lost")  # fmt: skip
        pods = state.pods.get(t.label, {})
        t.pods_seen.update(state.placement.get(t.label, {}))
        main = self._main_pod(t, pods)
        code = self._exit_code(main)
        unschedulable: str | None = None
        for pod in sorted(pods.values(), key=lambda p: p["metadata"]["name"]):
            doomed = pod_failure(pod, state.not_ready, code)
            if doomed is not None:
                return doomed
            unschedulable = unschedulable_message(pod) or unschedulable
        if top is not None:
            found = ending(
                TABLES[t.kind],
                top,
                name=t.name,
                exit_code=code,
                pod_detail=self._pod_detail(main),
                age_s=now - t.created_at,
                scheduling_timeout_s=self.settings.scheduling_timeout_s,
            )
            if found is not None and found.grace_s:
                t.failed_seen = t.failed_seen if t.failed_seen is not None else now
                if now - t.failed_seen < found.grace_s and now < t.deadline:
                    return None  # a pod's own failure, if one is on its way, is the better reason
            if found is not None:
                return found.outcome
        if unschedulable is None:
            t.unschedulable_since = None
        else:
            t.unschedulable_since = t.unschedulable_since or now
            if now - t.unschedulable_since >= self.settings.scheduling_timeout_s:
                return Outcome("unschedulable", unschedulable)
        return None

    @staticmethod
    def _pod_detail(pod: Obj | None) -> str:
        if pod is None:
            return ""
        term = container_state(pod, "terminated")
        if term is None:
            return ""
        return f"container {term['container']} of {where(pod)} exited {term.get('exitCode')} ({term.get('reason', '')})"

    def _main_pod(self, t: _Track, pods: Mapping[str, Obj]) -> Obj | None:
        found = [
            p for p in pods.values() if t.kind == "Job" or (p["metadata"].get("labels") or {}).get(ROLE) == "launcher"
        ]
        found.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
        return found[-1] if found else None

    @staticmethod
    def _exit_code(pod: Obj | None) -> int | None:
        term = container_state(pod, "terminated") if pod else None
        return int(term["exitCode"]) if term and term.get("exitCode") is not None else None

    def _describe(self, t: _Track, state: _State) -> str:
        pods = state.pods.get(t.label, {})
        if not pods:
            return f"{t.kind} {t.name} has no pods"
        parts = []
        for pod in sorted(pods.values(), key=lambda p: p["metadata"]["name"])[:3]:
            waiting = container_state(pod, "waiting")
            phase = (pod.get("status") or {}).get("phase", "?")
            parts.append(f"{where(pod)} {phase}" + (f" ({waiting.get('reason')})" if waiting else ""))
        return "; ".join(parts) + (f" (+{len(pods) - 3} more pods)" if len(pods) > 3 else "")

    def _finish(self, t: _Track, state: _State) -> None:
        """Read the log of a finished workload, then delete it (its pods go with it)."""
        assert t.outcome is not None
        status, reason, code = t.outcome.status, t.outcome.reason, t.outcome.exit_code
        t.pods_seen.update(state.placement.get(t.label, {}))
        pods = state.pods.get(t.label, {})
        main = self._main_pod(t, pods)
        if main is None or not _settled(main):
            # the job's watch can report completion before the pods' watch shows its pods, or shows them ended:
            # read them afresh, so that exit code, times and the image's digest are the pod's last state
            with contextlib.suppress(KubeApiError):  # else the watch's view stays; the log read below names the API
                pods = {**pods, **self._list_pods(t)}
            main = self._main_pod(t, pods)
            if status == "failed":  # the pod's own failure (OOMKilled, Evicted) is the better reason than the Job's
                reason = self._pod_reason(pods, state) or reason
        output = ""
        if main is not None:
            try:
                output = self.api.log(self.ns, main["metadata"]["name"]) or ""
            except KubeApiError as exc:  # what it printed could not be read: a success gives nothing to judge
                reason = f"{reason}; " * bool(reason) + f"its log could not be read: {exc}"
                status = "error" if status == "succeeded" else status
        started, finished = self._times(pods)
        if code is None and main is not None:
            code = self._exit_code(main)
        t.result = WorkloadResult(
            workload=t.handle.workload.name,
            kind=workload_kind(t.handle.workload),
            output=output,
            exit_code=code,
            status=status,
            reason=reason,
            started=started,
            finished=finished or datetime.now(UTC),
            placement={k: v for k, v in sorted(t.pods_seen.items()) if v},
            events=(),
            manifests=t.handle.manifests,
            log_tail="".join(output.splitlines(keepends=True)[-LOG_TAIL_LINES:]),
            image=image_of(main, pods.values()) if main is not None else "",
            stopped=t.stopped if status == "succeeded" else "",
        )
        undeleted = self._delete(t)
        if undeleted and status not in ("succeeded", "failed"):  # it may still run: say so beside the reason
            t.result = replace(t.result, reason=f"{reason}; {undeleted}" if reason else undeleted)

    @staticmethod
    def _pod_reason(pods: Mapping[str, Obj], state: _State) -> str:
        for pod in sorted(pods.values(), key=lambda p: p["metadata"]["name"]):
            doomed = pod_failure(pod, state.not_ready, None)
            if doomed is not None:
                return doomed.reason
        return ""

    def _list_pods(self, t: _Track) -> dict[str, Obj]:
        selector = f"{run_selector(self.run_id)},{WORKLOAD_KEY}={t.label}"
        doc = self.api.call(f"list pods of {t.name}", self.api.core.list_namespaced_pod, self.ns,
                            label_selector=selector)  # fmt: skip
        return {p["metadata"]["name"]: p for p in doc.get("items") or ()}

    @staticmethod
    def _times(pods: Mapping[str, Obj]) -> tuple[datetime | None, datetime | None]:
        starts, ends = [], []
        for pod in pods.values():
            started = parse_time((pod.get("status") or {}).get("startTime"))
            if started:
                starts.append(started)
            term = container_state(pod, "terminated")
            ended = parse_time(term.get("finishedAt")) if term else None
            if ended:
                ends.append(ended)
        return (min(starts) if starts else None, max(ends) if ends else None)

    def _delete(self, t: _Track) -> str:
        """Delete a finished workload; what stopped that ("" when nothing did): the run's cleanup retries it."""
        try:
            if t.kind == "Job":
                self.api.call(f"delete Job {t.name}", self.api.batch.delete_namespaced_job, t.name, self.ns,
                              propagation_policy="Foreground")  # fmt: skip
            else:
                group, version = MPI_API_VERSION.split("/")
                self.api.call(f"delete MPIJob {t.name}", self.api.custom.delete_namespaced_custom_object, group,
                              version, self.ns, "mpijobs", t.name, propagation_policy="Foreground")  # fmt: skip
        except KubeApiError as exc:
            if exc.status != 404:  # 404: gone already
                return f"it could not be deleted ({exc}); the run's cleanup retries"
        return ""

    def _events(self, tracks: Sequence[_Track]) -> dict[str, list[dict[str, str]]]:
        """Events of every workload's objects, from one list of the namespace's events."""
        owner = {t.name: t.label for t in tracks}
        try:
            doc = self.api.call("list events", self.api.core.list_namespaced_event, self.ns)
        except KubeApiError:
            return {}
        out: dict[str, list[dict[str, str]]] = {}
        for ev in doc.get("items") or ():
            involved = ev.get("involvedObject") or {}
            label = owner_of(owner, involved.get("name", ""))
            if label is None:
                continue
            out.setdefault(label, []).append({
                "time": ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp") or "",
                "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
                "reason": ev.get("reason", ""), "message": ev.get("message", ""), "type": ev.get("type", ""),
            })  # fmt: skip
        for items in out.values():
            items.sort(key=lambda e: e["time"])
        return out

    def _result(self, t: _Track, events: Mapping[str, list[dict[str, str]]]) -> WorkloadResult:
        assert t.result is not None
        mine = events.get(t.label, [])
        placement = dict(t.result.placement)
        for ev in mine:  # pods deleted before the watch saw them bound (cleanPodPolicy) are in the events
            found = ASSIGNED.match(ev["message"]) if ev["reason"] == "Scheduled" else None
            if found:
                placement.setdefault(found.group(1), found.group(2))
        return replace(t.result, events=tuple(mine), placement=dict(sorted(placement.items())))


def _settled(pod: Obj) -> bool:
    """Whether a pod's state, as last seen, is its final word: its container ended and the image's digest known."""
    return container_state(pod, "terminated") is not None and "@sha256:" in image_of(pod)
