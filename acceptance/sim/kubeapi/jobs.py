"""The Job controller and the MPI operator (v2beta1) of the emulator.

Behaviour follows the MPI operator v2beta1 as it really runs: the MPIJob gets a hostfile
ConfigMap, bare worker pods and a launcher ``batch/v1`` Job; conditions
Created/Running/Succeeded/Failed with the operator's reasons; ``cleanPodPolicy``
applied once the job is finished; TTL and deadlines on the launcher Job only.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from acceptance.sim.kubeapi.store import ApiError, Obj, Store, now_iso
from acceptance.sim.runtime import Host

OPERATOR = "mpi-operator"

#: A Job's activeDeadlineSeconds is cluster time, and the emulator's cluster time is what it models (the pods'
#: work, scaled by time_scale), not its own work: creating and scheduling the pods and the watches take wall
#: time a real cluster spends in milliseconds, which scaled would count as minutes (at 0.0001 a 30-minute
#: deadline is 0.18 s of wall time, and a round of localization jobs on a busy machine was killed by it).
#: So the deadline runs from the first pod's start, scaled; a Job whose pod never starts still meets it, this
#: many wall seconds after its scaled deadline.
DEADLINE_ALLOWANCE_S = 5.0


class Controller(Protocol):
    """What the job controllers use of the emulator's controller loop (`controller.Controller`)."""

    store: Store
    time_scale: float

    def after(self, sim_seconds: float, fn: Callable[[], None]) -> None: ...

    def after_wall(self, seconds: float, fn: Callable[[], None]) -> None: ...

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str, component: str) -> None: ...

    def hosts(self, pods: Sequence[Mapping[str, Any]], slots: int) -> list[Host]: ...


_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def pod_suffix(seed: str) -> str:
    """The Job controller's 5-character pod suffix, derived from `seed` so reruns name pods alike."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def owner_ref(obj: Mapping[str, Any]) -> Obj:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _conditions(obj: Mapping[str, Any]) -> dict[str, Obj]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}


def _true(conds: Mapping[str, Obj], kind: str) -> bool:
    return conds.get(kind, {}).get("status") == "True"


def _set_condition(obj: Obj, kind: str, status: str, reason: str, message: str) -> None:
    stamp = now_iso()
    conds = obj.setdefault("status", {}).setdefault("conditions", [])
    for cond in conds:
        if cond["type"] == kind:
            if cond["status"] != status:
                cond["lastTransitionTime"] = stamp
            cond.update(status=status, reason=reason, message=message, lastUpdateTime=stamp)
            return
    conds.append({"type": kind, "status": status, "reason": reason, "message": message,
                  "lastUpdateTime": stamp, "lastTransitionTime": stamp})  # fmt: skip


class JobControllers:
    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self.store = controller.store
        self._invalid: set[str] = set()
        self._timed: set[str] = set()

    # ------------------------------------------------------------ batch/v1 Job

    def _job_pods(self, job: Mapping[str, Any]) -> list[Obj]:
        pods = self.store.owned(job["metadata"]["uid"], "pods")
        return sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])

    def _new_job_pod(self, job: Obj, attempt: int) -> None:
        meta, template = job["metadata"], copy.deepcopy(job["spec"]["template"])
        uid, name = meta["uid"], meta["name"]
        labels = {**(template.get("metadata") or {}).get("labels", {}),
                  "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                  "controller-uid": uid, "job-name": name}  # fmt: skip
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{pod_suffix(f'{name}/{attempt}')}",
                "generateName": f"{name}-",
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": (template.get("metadata") or {}).get("annotations", {}),
                "ownerReferences": [owner_ref(job)],
            },
            "spec": template["spec"],
            "status": {"phase": "Pending", "qosClass": "BestEffort"},
        }
        try:
            self.store.create("pods", pod)
        except ApiError:
            return

    def sync_job(self, ns: str, name: str) -> None:
        job = self.store.get("jobs", ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        conds = _conditions(job)
        uid = job["metadata"]["uid"]
        if _true(conds, "Complete") or _true(conds, "Failed"):
            ttl = job["spec"].get("ttlSecondsAfterFinished")
            if ttl is not None and f"ttl/{uid}" not in self._timed:
                self._timed.add(f"ttl/{uid}")
                self.c.after_wall(float(ttl), lambda: self._expire(ns, name, uid))
            return
        pods = self._job_pods(job)
        failed = [p for p in pods if p["status"].get("phase") == "Failed"]
        succeeded = [p for p in pods if p["status"].get("phase") == "Succeeded"]
        active = [p for p in pods if p["status"].get("phase") not in ("Failed", "Succeeded")]
        backoff = int(job["spec"].get("backoffLimit", 6))
        deadline = job["spec"].get("activeDeadlineSeconds")
        if deadline and self.c.time_scale > 0:
            started = bool(failed or succeeded) or any(p["status"].get("phase") == "Running" for p in active)
            self._time_deadline(ns, name, uid, float(deadline), started)
        stamp = now_iso()
        outcome: tuple[str, str, str] | None = None
        if succeeded:
            outcome = ("Complete", "", "")
        elif len(failed) > backoff:
            outcome = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        elif not active:
            self._new_job_pod(job, len(failed))
            active = [None]  # type: ignore[list-item]
        ready = sum(1 for p in active if p and any(
            c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or ()))  # fmt: skip

        def status(j: Obj) -> None:
            st = j.setdefault("status", {})
            st.setdefault("startTime", stamp)
            st.update(active=0 if outcome else len(active), failed=len(failed), succeeded=len(succeeded),
                      ready=0 if outcome else ready, terminating=0)  # fmt: skip
            st["uncountedTerminatedPods"] = {}
            for key in ("active", "failed", "succeeded"):
                if not st[key]:
                    del st[key]
            if outcome:
                kind, reason, message = outcome
                if kind == "Failed":
                    _set_condition(j, "FailureTarget", "True", reason, message)
                _set_condition(j, kind, "True", reason, message)
                if kind == "Complete":
                    st["completionTime"] = stamp

        updated = self.store.update("jobs", ns, name, status)
        if outcome and updated is not None:
            kind, reason, message = outcome
            if kind == "Complete":
                self.c.event(updated, "Normal", "Completed", "Job completed", "job-controller")
            else:
                self.c.event(updated, "Warning", reason, message, "job-controller")
                for pod in active:
                    if pod is not None:
                        self._delete_quietly("pods", ns, pod["metadata"]["name"])

    def _time_deadline(self, ns: str, name: str, uid: str, deadline: float, started: bool) -> None:
        """`deadline` (cluster seconds) from the first pod's start; from the Job's creation with the allowance."""
        if f"deadline/{uid}" not in self._timed:
            self._timed.add(f"deadline/{uid}")
            wall = deadline * self.c.time_scale + DEADLINE_ALLOWANCE_S
            self.c.after_wall(wall, lambda: self._deadline(ns, name, uid))
        if started and f"deadline-running/{uid}" not in self._timed:
            self._timed.add(f"deadline-running/{uid}")
            self.c.after(deadline, lambda: self._deadline(ns, name, uid))

    def _deadline(self, ns: str, name: str, uid: str) -> None:
        job = self.store.get("jobs", ns, name)
        if job is None or job["metadata"]["uid"] != uid:
            return
        conds = _conditions(job)
        if _true(conds, "Complete") or _true(conds, "Failed"):
            return
        if any(p["status"].get("phase") == "Succeeded" for p in self._job_pods(job)):
            return  # finished in time: the Job's own sync, queued, marks it complete
        message = "Job was active longer than specified deadline"
        for pod in self._job_pods(job):
            if pod["status"].get("phase") not in ("Succeeded", "Failed"):
                self._delete_quietly("pods", ns, pod["metadata"]["name"])

        def failed(j: Obj) -> None:
            j["status"]["active"] = 0
            _set_condition(j, "FailureTarget", "True", "DeadlineExceeded", message)
            _set_condition(j, "Failed", "True", "DeadlineExceeded", message)

        updated = self.store.update("jobs", ns, name, failed)
        if updated is not None:
            self.c.event(updated, "Warning", "DeadlineExceeded", message, "job-controller")

    def _expire(self, ns: str, name: str, uid: str) -> None:
        job = self.store.get("jobs", ns, name)
        if job is not None and job["metadata"]["uid"] == uid:
            self._delete_quietly("jobs", ns, name, "Background")

    def _delete_quietly(self, resource: str, ns: str, name: str, propagation: str = "Background") -> None:
        with contextlib.suppress(ApiError):
            self.store.delete(resource, ns, name, propagation)

    # ------------------------------------------------------------ MPIJob

    def _mpi_problems(self, mj: Mapping[str, Any]) -> list[str]:
        spec, name = mj["spec"], mj["metadata"]["name"]
        replicas = spec.get("mpiReplicaSpecs") or {}
        out = []
        launcher, worker = replicas.get("Launcher"), replicas.get("Worker")
        if launcher is None:
            out.append("spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec")
        elif launcher.get("replicas", 1) != 1:
            out.append("spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: must be 1")
        if worker is not None and worker.get("replicas", 0) < 1:
            out.append("spec.mpiReplicaSpecs[Worker].replicas: Invalid value: must be greater than or equal to 1")
        for role, rspec in replicas.items():
            if role not in ("Launcher", "Worker"):
                out.append(f"spec.mpiReplicaSpecs[{role}]: Unsupported value: supported values: Launcher, Worker")
            elif rspec.get("restartPolicy", "Never") not in ("Never", "OnFailure"):
                out.append(f"spec.mpiReplicaSpecs[{role}].restartPolicy: Unsupported value: "
                           f"\"{rspec.get('restartPolicy')}\": supported values: \"Never\", \"OnFailure\"")  # fmt: skip
        count = (worker or {}).get("replicas", 0)
        if not _DNS1035.match(f"{name}-worker-{max(count - 1, 0)}") or len(f"{name}-worker-{count - 1}") > 63:
            out.append(f"metadata.name: Invalid value: \"{name}\": will not able to create pod and service with "
                       "invalid DNS label")  # fmt: skip
        policy = (spec.get("runPolicy") or {}).get("cleanPodPolicy")
        if policy is not None and policy not in ("None", "Running", "All"):
            out.append(f'spec.runPolicy.cleanPodPolicy: Unsupported value: "{policy}"')
        return out

    def _workers(self, mj: Mapping[str, Any]) -> list[Obj]:
        pods = self.store.owned(mj["metadata"]["uid"], "pods")
        owned = [p for p in pods if p["metadata"]["labels"].get("training.kubeflow.org/job-role") == "worker"]
        return sorted(owned, key=lambda p: int(p["metadata"]["labels"].get("training.kubeflow.org/replica-index", 0)))

    def _replica_template(self, mj: Obj, role: str, index: int | None) -> Obj:
        name, ns = mj["metadata"]["name"], mj["metadata"]["namespace"]
        rspec = mj["spec"]["mpiReplicaSpecs"][role]
        template = rspec.get("template") or {}  # shared, never edited: stored objects are immutable
        labels = {**(template.get("metadata") or {}).get("labels", {}),
                  "training.kubeflow.org/operator-name": OPERATOR, "training.kubeflow.org/job-name": name,
                  "training.kubeflow.org/job-role": role.lower()}  # fmt: skip
        if index is not None:
            labels["training.kubeflow.org/replica-index"] = str(index)
        spec = dict(template.get("spec") or {})
        spec["containers"] = [dict(c) for c in spec.get("containers") or ()]
        spec["restartPolicy"] = rspec.get("restartPolicy", "OnFailure" if role == "Launcher" else "Never")
        spec["hostname"] = f"{name}-worker-{index}" if role == "Worker" else f"{name}-launcher"
        spec["subdomain"] = name
        first = spec["containers"][0]
        env = list(first.get("env") or ())
        if role == "Worker":
            env.append({"name": "K_MPI_JOB_ROLE", "value": "worker"})
            if not first.get("command") and not first.get("args"):
                first["command"] = ["/usr/sbin/sshd", "-De"]
        else:
            slots = str(mj["spec"].get("slotsPerWorker", 1))
            env += [{"name": k, "value": v} for k, v in (
                ("K_MPI_JOB_ROLE", "launcher"), ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
                ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
                ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"), ("OMPI_MCA_orte_set_default_slots", slots),
                ("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", ""))]  # fmt: skip
            first["volumeMounts"] = [*(first.get("volumeMounts") or ()), {"name": "mpi-job-config",
                                                                          "mountPath": "/etc/mpi"}]  # fmt: skip
            spec["volumes"] = [*(spec.get("volumes") or ()), {"name": "mpi-job-config",
                                                              "configMap": {"name": f"{name}-config"}}]  # fmt: skip
        first["env"] = env
        meta = {"labels": labels, "namespace": ns, "ownerReferences": [owner_ref(mj)]}
        return {"metadata": meta, "spec": spec}

    def _create_children(self, mj: Obj) -> None:
        name, ns = mj["metadata"]["name"], mj["metadata"]["namespace"]
        slots = mj["spec"].get("slotsPerWorker", 1)
        count = (mj["spec"]["mpiReplicaSpecs"].get("Worker") or {}).get("replicas", 0)
        hostfile = "".join(f"{name}-worker-{i}.{name}.{ns}.svc slots={slots}\n" for i in range(count))
        with contextlib.suppress(ApiError):
            self.store.create("configmaps", {
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"{name}-config", "namespace": ns, "labels": {"app": name},
                             "ownerReferences": [owner_ref(mj)]},
                "data": {"hostfile": hostfile, "discover_hosts.sh": "#!/bin/sh\n"},
            })  # fmt: skip
        for i in range(count):
            template = self._replica_template(mj, "Worker", i)
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"{name}-worker-{i}", **template["metadata"]},
                   "spec": template["spec"], "status": {"phase": "Pending", "qosClass": "BestEffort"}}  # fmt: skip
            try:
                self.store.create("pods", pod)
            except ApiError:
                continue

    def _create_launcher(self, mj: Obj) -> None:
        name, ns = mj["metadata"]["name"], mj["metadata"]["namespace"]
        template = self._replica_template(mj, "Launcher", None)
        run = mj["spec"].get("runPolicy") or {}
        spec: Obj = {"template": {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]},
                     "backoffLimit": run.get("backoffLimit", 6), "podReplacementPolicy": "Failed"}  # fmt: skip
        for key in ("activeDeadlineSeconds", "ttlSecondsAfterFinished"):
            if key in run:
                spec[key] = run[key]
        with contextlib.suppress(ApiError):
            self.store.create("jobs", {
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": f"{name}-launcher", "namespace": ns, "labels": {"app": name},
                             "ownerReferences": [owner_ref(mj)]},
                "spec": spec, "status": {},
            })  # fmt: skip

    def sync_mpijob(self, ns: str, name: str) -> None:
        mj = self.store.get("mpijobs", ns, name)
        if mj is None or mj["metadata"].get("deletionTimestamp"):
            return
        uid = mj["metadata"]["uid"]
        if uid in self._invalid:
            return
        problems = self._mpi_problems(mj)
        if problems:
            self._invalid.add(uid)
            self.c.event(mj, "Warning", "ValidationError", "; ".join(problems), OPERATOR)
            return
        conds = _conditions(mj)
        if "Created" not in conds:
            self._create_children(mj)

            def created(m: Obj) -> None:
                _set_condition(m, "Created", "True", "MPIJobCreated", f"MPIJob {ns}/{name} is created.")
                m["status"]["startTime"] = now_iso()

            mj = self.store.update("mpijobs", ns, name, created) or mj
            self.c.event(mj, "Normal", "MPIJobCreated", f"MPIJob {ns}/{name} is created.", OPERATOR)
            conds = _conditions(mj)
        workers = self._workers(mj)
        if _true(conds, "Succeeded") or _true(conds, "Failed"):
            return
        count = (mj["spec"]["mpiReplicaSpecs"].get("Worker") or {}).get("replicas", 0)
        launcher_job = self.store.get("jobs", ns, f"{name}-launcher")
        launcher_pods = self._job_pods(launcher_job) if launcher_job else []
        evicted = [w for w in workers if w["status"].get("reason") == "Evicted"]
        if evicted:
            self._finish(mj, "Failed", "MPIJobEvicted", f"{len(evicted)}/{count} workers are evicted", clean=False)
            return
        if launcher_job is None:
            ready = [w for w in workers if _true(_conditions(w), "Ready")]
            policy = mj["spec"].get("launcherCreationPolicy", "AtStartup")
            if policy == "AtStartup" or (len(ready) == count and count > 0):
                self._create_launcher(mj)
        else:
            lconds = _conditions(launcher_job)
            if _true(lconds, "Complete"):
                self._finish(mj, "Succeeded", "MPIJobSucceeded", f"MPIJob {ns}/{name} successfully completed.")
                return
            if _true(lconds, "Failed"):
                reason = lconds["Failed"].get("reason", "")
                if reason == "BackoffLimitExceeded":
                    last = [p for p in launcher_pods if p["status"].get("phase") == "Failed"]
                    reason += "/" + (last[-1]["status"].get("reason", "") if last else "")
                self._finish(mj, "Failed", reason or "MPIJobFailed", lconds["Failed"].get("message", ""))
                return
        running = bool(launcher_pods) and launcher_pods[-1]["status"].get("phase") == "Running" and \
            len(workers) == count and all(w["status"].get("phase") == "Running" for w in workers)  # fmt: skip

        def status(m: Obj) -> None:
            st = m["status"]
            st["replicaStatuses"] = {
                "Launcher": {k: v for k, v in (("active", sum(
                    p["status"].get("phase") in ("Pending", "Running") for p in launcher_pods)),) if v},
                "Worker": {k: v for k, v in (
                    ("active", sum(w["status"].get("phase") == "Running" for w in workers)),
                    ("failed", sum(w["status"].get("phase") == "Failed" for w in workers))) if v},
            }  # fmt: skip
            if running and not _true(_conditions(m), "Running"):
                _set_condition(m, "Running", "True", "MPIJobRunning", f"MPIJob {ns}/{name} is running.")

        was_running = _true(conds, "Running")
        updated = self.store.update("mpijobs", ns, name, status)
        if running and not was_running and updated is not None:
            self.c.event(updated, "Normal", "MPIJobRunning", f"MPIJob {ns}/{name} is running", OPERATOR)

    def _finish(self, mj: Obj, kind: str, reason: str, message: str, clean: bool = True) -> None:
        ns, name = mj["metadata"]["namespace"], mj["metadata"]["name"]

        def finished(m: Obj) -> None:
            stamp = now_iso()
            if "Running" in _conditions(m):
                _set_condition(m, "Running", "False", "MPIJobRunning", f"MPIJob {ns}/{name} is finished.")
            else:
                _set_condition(m, "Running", "False", "MPIJobRunning", f"MPIJob {ns}/{name} is finished.")
            _set_condition(m, kind, "True", reason, message)
            m["status"]["completionTime"] = stamp

        updated = self.store.update("mpijobs", ns, name, finished)
        if updated is None:
            return
        if kind == "Succeeded":
            self.c.event(updated, "Normal", "MPIJobSucceeded", message, OPERATOR)
        else:
            self.c.event(updated, "Warning", reason, message, OPERATOR)
        policy = (mj["spec"].get("runPolicy") or {}).get("cleanPodPolicy", "None")
        if not clean or policy == "None":
            return
        for worker in self._workers(mj):
            if policy == "All" or worker["status"].get("phase") in ("Running", "Pending"):
                self._delete_quietly("pods", ns, worker["metadata"]["name"])

    def hosts_for(self, launcher_pod: Mapping[str, Any]) -> list[Host]:
        """The hostfile of the launcher's MPIJob, resolved to the workers' nodes."""
        labels = launcher_pod["metadata"].get("labels") or {}
        ns = launcher_pod["metadata"]["namespace"]
        mj = self.store.get("mpijobs", ns, labels.get("training.kubeflow.org/job-name", ""))
        if mj is None:
            return []
        slots = int(mj["spec"].get("slotsPerWorker", 1))
        return self.c.hosts(self._workers(mj), slots)
