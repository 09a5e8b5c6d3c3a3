"""The emulator's controllers: scheduler, kubelet and node lifecycle on one work thread.

Jobs and MPIJobs (``jobs``) create pods; this module places them
(``scheduler``), "runs" their containers through the simulator's
`ToolRunner` on a time scale, writes logs, and applies the injected faults.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acceptance.sim.kubeapi.faults import IMAGE_PULL_FAILS, Faults
from acceptance.sim.kubeapi.jobs import JobControllers
from acceptance.sim.kubeapi.scheduler import Placement
from acceptance.sim.kubeapi.store import Change, Obj, Store, now_iso
from acceptance.sim.model.images import ImageCache, PullModel
from acceptance.sim.runtime import Host, NodeSpec, ToolRun, ToolRunner

Task = tuple[str, str, str]  # (what, namespace, name)
_PRIORITY = {"pod": 0, "job": 1, "mpijob": 2}
ROLE = "training.kubeflow.org/job-role"
MPI_JOB_NAME = "training.kubeflow.org/job-name"


def image_id(image: str) -> str:
    """What the kubelet reports as a container's imageID: the repository with the image's digest.

    The simulator's digest is derived from the reference, so a changed tag is a changed digest.
    """
    repository = image.split("@", 1)[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def node_object(spec: NodeSpec, index: int) -> Obj:
    labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux", **spec.labels}
    amounts = {
        "cpu": "224",
        "memory": "2113647828Ki",
        "pods": "110",
        "ephemeral-storage": "3750000000Ki",
        "nvidia.com/gpu": str(spec.gpus),
        **{k: str(v) for k, v in spec.rdma_resources.items()},
    }
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if spec.gpus else []
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels},
        "spec": {"taints": taints},
        "status": {
            "capacity": dict(amounts),
            "allocatable": dict(amounts),
            "conditions": _node_conditions(spec.ready),
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{index // 250}.{index % 250 + 1}"},
                {"type": "Hostname", "address": spec.name},
            ],
            "nodeInfo": {
                "kubeletVersion": spec.kubelet_version,
                "kubeProxyVersion": spec.kubelet_version,
                "osImage": spec.os_image,
                "kernelVersion": spec.kernel_version,
                "containerRuntimeVersion": spec.container_runtime_version,
                "operatingSystem": "linux",
                "architecture": "amd64",
                "bootID": _uuid(spec.name, "boot"),
                "machineID": _uuid(spec.name, "machine").replace("-", ""),
                "systemUUID": _uuid(spec.name, "system").upper(),
            },
        },
    }


def _uuid(name: str, kind: str) -> str:
    return str(uuid.UUID(hashlib.md5(f"{kind}/{name}".encode()).hexdigest()))


def _node_conditions(ready: bool) -> list[Obj]:
    stamp = now_iso()
    out = [
        {"type": t, "status": "False", "reason": f"KubeletHasSufficient{r}", "message": f"kubelet has {m}",
         "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
        for t, r, m in (
            ("MemoryPressure", "Memory", "sufficient memory available"),
            ("DiskPressure", "Disk", "no disk pressure"),
            ("PIDPressure", "PID", "sufficient PID available"),
        )
    ]  # fmt: skip
    ready_cond = (
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
        if ready
        else {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
              "message": "Kubelet stopped posting node status."}
    )  # fmt: skip
    out.append({**ready_cond, "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
    return out


class Controller:
    """Runs on its own thread; reacts to store changes and to its own timers."""

    def __init__(
        self, store: Store, runner: ToolRunner, time_scale: float, faults: Faults, image_pull: PullModel | None = None
    ) -> None:
        self.store = store
        self.runner = runner
        self.time_scale = time_scale
        self.faults = faults
        self.images = ImageCache(image_pull, time_scale) if image_pull is not None else None
        self.rng = random.Random(faults.seed)
        self.logs: dict[tuple[str, str], str] = {}
        #: a running container's whole output, when it started and how long it runs (wall seconds): its log
        #: grows line by line over that time, as a real container's does (`running_log`)
        self.live: dict[tuple[str, str], tuple[str, float, float]] = {}
        self.placement = Placement()
        self.pending: set[tuple[str, str]] = set()
        self._events: dict[tuple[str, str, str], str] = {}
        self._event_seq = itertools.count()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._queues: tuple[deque[Task], ...] = (deque(), deque(), deque())
        self._queued: set[Task] = set()
        self._wake = threading.Condition()
        self._stop = False
        self._sick_nodes: set[str] = set()
        self._node_cache: dict[str, Obj] | None = None
        self.jobs = JobControllers(self)
        self._thread = threading.Thread(target=self._loop, name="kubeapi-controller", daemon=True)
        store.listeners.append(self._on_change)

    # ------------------------------------------------------------ plumbing

    def start(self, nodes: Sequence[NodeSpec]) -> None:
        for i, spec in enumerate(nodes):
            self.store.create("nodes", node_object(spec, i))
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        self._thread.join(timeout=5)

    def enqueue(self, what: str, namespace: str, name: str) -> None:
        task = (what, namespace, name)
        with self._wake:
            if task not in self._queued:
                self._queued.add(task)
                self._queues[_PRIORITY.get(what, 0)].append(task)
                self._wake.notify()

    def after(self, sim_seconds: float, fn: Callable[[], None]) -> None:
        """Run `fn` on the work thread `sim_seconds` of simulated time from now."""
        due = time.monotonic() + max(0.0, sim_seconds) * self.time_scale
        with self._wake:
            heapq.heappush(self._timers, (due, next(self._seq), fn))
            self._wake.notify()

    def after_wall(self, seconds: float, fn: Callable[[], None]) -> None:
        with self._wake:
            heapq.heappush(self._timers, (time.monotonic() + seconds, next(self._seq), fn))
            self._wake.notify()

    def _on_change(self, change: Change) -> None:
        meta = change.obj["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        if change.resource == "pods":
            self.enqueue("pod", ns, name)
            for ref in meta.get("ownerReferences") or ():
                if ref["kind"] == "Job":
                    self.enqueue("job", ns, ref["name"])
            mpi = (meta.get("labels") or {}).get(MPI_JOB_NAME)
            if mpi:
                self.enqueue("mpijob", ns, mpi)
        elif change.resource == "jobs":
            self.enqueue("job", ns, name)
            for ref in meta.get("ownerReferences") or ():
                if ref["kind"] == "MPIJob":
                    self.enqueue("mpijob", ns, ref["name"])
        elif change.resource == "mpijobs":
            self.enqueue("mpijob", ns, name)
        elif change.resource == "nodes":
            self._node_cache = None

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._stop and not any(self._queues) and not self._due():
                    timeout = self._timers[0][0] - time.monotonic() if self._timers else None
                    self._wake.wait(timeout)
                if self._stop:
                    return
                fns: list[Callable[[], None]] = []
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    fns.append(heapq.heappop(self._timers)[2])
                task = None
                for pending in self._queues:  # pods before Jobs before MPIJobs: owners see bursts at once
                    if pending:
                        task = pending.popleft()
                        self._queued.discard(task)
                        break
            for fn in fns:
                self._guarded(fn, "timer")
            if task is not None:
                self._guarded(lambda t=task: self._dispatch(t), f"{task[0]} {task[1]}/{task[2]}")  # type: ignore[misc]

    def _guarded(self, fn: Callable[[], None], what: str) -> None:
        """One bad object must not stop the controllers: report it and go on, as a real controller would."""
        try:
            fn()
        except Exception:  # logged with its traceback; the loop carries on
            import sys
            import traceback

            print(f"kubeapi controller: error while handling {what}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)

    def _due(self) -> bool:
        return bool(self._timers) and self._timers[0][0] <= time.monotonic()

    def _dispatch(self, task: Task) -> None:
        what, ns, name = task
        if what == "pod":
            self.sync_pod(ns, name)
        elif what == "job":
            self.jobs.sync_job(ns, name)
        elif what == "mpijob":
            self.jobs.sync_mpijob(ns, name)

    # ------------------------------------------------------------ events

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, component: str) -> None:
        """A core/v1 Event about `obj`; repeats of the same message bump `count`."""
        meta = obj["metadata"]
        ns = meta.get("namespace") or "default"
        key = (meta.get("uid", meta["name"]), reason, message)
        stamp = now_iso()
        existing = self._events.get(key)
        if existing is not None:
            self.store.update("events", ns, existing, lambda e: e.update(
                count=e["count"] + 1, lastTimestamp=stamp))  # fmt: skip
            return
        name = f"{meta['name']}.{next(self._event_seq) + 0x17A0000000000000:x}"
        self._events[key] = name
        self.store.create("events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": obj["kind"], "name": meta["name"], "namespace": ns,
                               "uid": meta.get("uid", ""), "apiVersion": obj["apiVersion"]},
            "reason": reason, "message": message[:1024], "type": type_,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        })  # fmt: skip

    # ------------------------------------------------------------ pods

    def _nodes(self) -> dict[str, Obj]:
        cached = self._node_cache
        if cached is None:
            items, _ = self.store.list("nodes")
            cached = self._node_cache = {n["metadata"]["name"]: n for n in items}
        return cached

    def _release(self, ns: str, name: str) -> None:
        self.pending.discard((ns, name))
        if self.placement.release(f"{ns}/{name}"):
            for pns, pname in sorted(self.pending):
                self.enqueue("pod", pns, pname)

    def sync_pod(self, ns: str, name: str) -> None:
        pod = self.store.get("pods", ns, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            self._release(ns, name)
            return
        phase = pod["status"].get("phase")
        if phase in ("Succeeded", "Failed"):
            self._release(ns, name)
            return
        if not pod["spec"].get("nodeName"):
            self._schedule(pod)

    def _schedule(self, pod: Obj) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        node, message = self.placement.choose(pod, self._nodes())
        if node is None:
            self.pending.add((ns, name))

            def unschedulable(p: Obj) -> None:
                p["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                              "message": message, "lastTransitionTime": now_iso(),
                                              "lastProbeTime": None}]  # fmt: skip

            updated = self.store.update("pods", ns, name, unschedulable)
            if updated is not None:
                self.event(updated, "Warning", "FailedScheduling", message, "default-scheduler")
            return
        self.pending.discard((ns, name))
        self.placement.bind(node, f"{ns}/{name}", pod)

        def bind(p: Obj) -> None:
            p["spec"]["nodeName"] = node
            p["status"]["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now_iso(),
                                          "lastProbeTime": None}]  # fmt: skip
            p["status"]["hostIP"] = "10.0.0.1"

        bound = self.store.update("pods", ns, name, bind)
        if bound is None:
            return
        self.event(bound, "Normal", "Scheduled", f"Successfully assigned {ns}/{name} to {node}", "default-scheduler")
        self._start(bound)

    def _start(self, pod: Obj) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        node = pod["spec"]["nodeName"]
        container = pod["spec"]["containers"][0]
        image = container["image"]
        if node in self._sick_nodes:
            return
        self.event(pod, "Normal", "Pulling", f'Pulling image "{image}"', "kubelet")
        if IMAGE_PULL_FAILS in image:
            why = (f'Failed to pull image "{image}": rpc error: code = NotFound desc = failed to pull and unpack '
                   f'image "{image}": failed to resolve reference "{image}": {image}: not found')  # fmt: skip
            self.event(pod, "Warning", "Failed", why, "kubelet")
            self.event(pod, "Warning", "Failed", "Error: ErrImagePull", "kubelet")
            self._set_waiting(ns, name, "ErrImagePull", why)
            self.event(pod, "Normal", "BackOff", f'Back-off pulling image "{image}"', "kubelet")
            self.event(pod, "Warning", "Failed", "Error: ImagePullBackOff", "kubelet")
            self._set_waiting(ns, name, "ImagePullBackOff", f'Back-off pulling image "{image}"')
            return
        images = self.images
        pull = images.request(node, image, time.monotonic()) if images is not None else None
        if images is None or pull is None:
            self.event(pod, "Normal", "Pulled", f'Container image "{image}" already present on machine', "kubelet")
            self._run(pod)
            return
        ready_at, seconds, waited = pull
        self._set_waiting(ns, name, "ContainerCreating", "")
        uid = pod["metadata"]["uid"]
        size = images.model.size_of(image)
        message = (f'Successfully pulled image "{image}" in {seconds:.3f}s ({seconds + waited:.3f}s including '
                   f"waiting). Image size: {size} bytes.")  # fmt: skip
        self.after_wall(max(0.0, ready_at - time.monotonic()), lambda: self._pulled(ns, name, uid, message))

    def _pulled(self, ns: str, name: str, uid: str, message: str) -> None:
        """The pod's image is on its node now: its container starts (unless the pod went meanwhile)."""
        pod = self.store.get("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        if pod["spec"].get("nodeName") in self._sick_nodes or pod["status"].get("phase") != "Pending":
            return
        self.event(pod, "Normal", "Pulled", message, "kubelet")
        self._run(pod)

    def _run(self, pod: Obj) -> None:
        """Create and start the pod's container, then run its command through the simulator."""
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        node = pod["spec"]["nodeName"]
        container = pod["spec"]["containers"][0]
        self.event(pod, "Normal", "Created", f"Created container {container['name']}", "kubelet")
        self.event(pod, "Normal", "Started", f"Started container {container['name']}", "kubelet")
        started = now_iso()

        def running(p: Obj) -> None:
            p["status"].update(phase="Running", startTime=started, podIP="10.244.0.10")
            p["status"]["conditions"] = [
                {"type": t, "status": "True", "lastTransitionTime": started, "lastProbeTime": None}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ]
            p["status"]["containerStatuses"] = [self._cstatus(c, {"running": {"startedAt": started}}, True)
                                                for c in p["spec"]["containers"]]  # fmt: skip

        pod = self.store.update("pods", ns, name, running) or pod
        uid = pod["metadata"]["uid"]
        if node in self.faults.node_not_ready:
            self.after(self.faults.node_not_ready[node], lambda: self._node_not_ready(node))
        if self.faults.evict and self.faults.evict in name:
            self.after(self.faults.evict_after_s, lambda: self._evict(ns, name, uid))
        labels = pod["metadata"].get("labels") or {}
        if labels.get(ROLE) == "worker":
            return  # sshd: runs until the MPIJob is done with it
        argv = [*(container.get("command") or ()), *(container.get("args") or ())]
        env = {e["name"]: str(e.get("value", "")) for e in container.get("env") or ()}
        hosts = self.jobs.hosts_for(pod) if labels.get(ROLE) == "launcher" else []
        try:
            run = self.runner.run(argv, env, node, hosts)
        except Exception as exc:  # the simulator refusing a command = the container failing
            run = ToolRun(f"{' '.join(argv[:1]) or 'container'}: {exc}\n", 127, 0.0)
        output, code, reason, duration = run.stdout, run.exit_code, "Completed" if run.exit_code == 0 else "Error", \
            run.duration_s  # fmt: skip
        if self.faults.oom and self.faults.oom in name:
            lines = output.splitlines(keepends=True)
            output, code, reason, duration = "".join(lines[: len(lines) // 2]), 137, "OOMKilled", duration / 2
        self.live[(ns, name)] = (output, time.monotonic(), max(0.0, duration) * self.time_scale)
        self.after(duration, lambda: self._finish(ns, name, uid, output, code, reason))

    def running_log(self, ns: str, name: str) -> str | None:
        """What a running container has printed so far: its output's lines in proportion to the time it has
        run (simulated time, on the time scale); None when it is not running."""
        found = self.live.get((ns, name))
        if found is None:
            return None
        output, started, wall = found
        lines = output.splitlines(keepends=True)
        done = 1.0 if wall <= 0 else min(1.0, (time.monotonic() - started) / wall)
        return "".join(lines[: int(len(lines) * done)])

    @staticmethod
    def _cstatus(container: Mapping[str, Any], state: Obj, ready: bool) -> Obj:
        image = str(container["image"])
        started = "running" in state or "terminated" in state
        return {"name": container["name"], "image": image, "imageID": image_id(image) if started else "",
                "ready": ready, "restartCount": 0, "started": "running" in state, "state": state}  # fmt: skip

    def _set_waiting(self, ns: str, name: str, reason: str, message: str) -> None:
        def waiting(p: Obj) -> None:
            p["status"]["phase"] = "Pending"
            p["status"]["containerStatuses"] = [
                self._cstatus(c, {"waiting": {"reason": reason, "message": message}}, False)
                for c in p["spec"]["containers"]
            ]

        self.store.update("pods", ns, name, waiting)

    def _alive(self, ns: str, name: str, uid: str) -> Obj | None:
        pod = self.store.get("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return None
        if pod["status"].get("phase") != "Running" or pod["spec"].get("nodeName") in self._sick_nodes:
            return None
        return pod

    def _finish(self, ns: str, name: str, uid: str, output: str, code: int, reason: str) -> None:
        if self._alive(ns, name, uid) is None:
            return
        self.logs[(ns, name)] = output
        self.live.pop((ns, name), None)
        finished = now_iso()

        def terminated(p: Obj) -> None:
            p["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
            for cond in p["status"]["conditions"]:
                if cond["type"] in ("Ready", "ContainersReady"):
                    cond.update(status="False", reason="PodCompleted", lastTransitionTime=finished)
            started = p["status"].get("startTime", finished)
            p["status"]["containerStatuses"] = [self._cstatus(c, {"terminated": {
                "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": finished}}, False)
                for c in p["spec"]["containers"]]  # fmt: skip

        self.store.update("pods", ns, name, terminated)

    def _evict(self, ns: str, name: str, uid: str) -> None:
        pod = self._alive(ns, name, uid)
        if pod is None:
            return
        message = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
                   f"Container {pod['spec']['containers'][0]['name']} was using 2097152Ki, request is 0, "
                   "has larger consumption of memory.")  # fmt: skip
        self.event(pod, "Warning", "Evicted", message, "kubelet")

        def evicted(p: Obj) -> None:
            p["status"].update(phase="Failed", reason="Evicted", message=message)
            for cs in p["status"].get("containerStatuses") or ():
                cs.update(ready=False, state={"terminated": {"exitCode": 137, "reason": "Error",
                                                             "finishedAt": now_iso()}})  # fmt: skip

        self.store.update("pods", ns, name, evicted)

    def _node_not_ready(self, node: str) -> None:
        if node in self._sick_nodes:
            return
        self._sick_nodes.add(node)

        def sick(n: Obj) -> None:
            for cond in n["status"]["conditions"]:
                if cond["type"] == "Ready":
                    cond.update(status="Unknown", reason="NodeStatusUnknown", lastTransitionTime=now_iso(),
                                message="Kubelet stopped posting node status.")  # fmt: skip
            n["spec"]["taints"] = [*n["spec"].get("taints", []),
                                   {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                                   {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]  # fmt: skip

        updated = self.store.update("nodes", "", node, sick)
        if updated is not None:
            self.event(updated, "Normal", "NodeNotReady", f"Node {node} status is now: NodeNotReady",
                       "node-controller")  # fmt: skip
        pods, _ = self.store.list("pods", None, None, lambda p: p["spec"].get("nodeName") == node)
        for pod in pods:
            if pod["status"].get("phase") not in ("Running", "Pending"):
                continue
            self.event(pod, "Warning", "NodeNotReady", "Node is not ready", "node-controller")

            def not_ready(p: Obj) -> None:
                for cond in p["status"].get("conditions") or ():
                    if cond["type"] == "Ready":
                        cond.update(status="False", lastTransitionTime=now_iso())

            self.store.update("pods", pod["metadata"]["namespace"], pod["metadata"]["name"], not_ready)

    def hosts(self, pods: Sequence[Mapping[str, Any]], slots: int) -> list[Host]:
        return [Host(p["spec"].get("hostname", p["metadata"]["name"]), p["spec"].get("nodeName", ""), slots)
                for p in pods]  # fmt: skip
