"""The fault-injection matrix: the suite against a faulty Kubernetes API, by seed.

Each case runs the suite (backend kube) against `acceptance sim serve` with API faults (5xx,
latency, dropped and 410 watches, cut and black-holed connections), optionally a hardware fault
the fabric must catch, an object deleted under the run, or SIGINT/SIGTERM at a random moment.
Rules: no wrong verdict (a PASS where the hardware is faulty; a FAIL where it is healthy: an API
fault may only give an explicit ERROR), the run ends within its bound, zero labelled objects remain.
A case may replace the API faults (`api`: one heavy fault alone), the selection, and the profile's
API retries (`default_retry`: the shipped ones, a 60 s read timeout that a black-holed request waits out).
Used by tests/test_fault_matrix.py (a fixed set) and bench/fault_matrix.py (more seeds, a summary).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import yaml

from tests.served import ROOT, kube_profile, labelled_objects, patiently, served_cluster
from tests.suite_run import copy_agreement

BOUND_S = 240.0  # a run of this subset lasts ~15 s; with every fault it must still end within this
API_FAULTS = (
    "--error-rate", "0.05", "--latency", "0.01", "--watch-drop", "3", "--watch-gone-rate", "0.3",
    "--blackhole-rate", "0.01", "--cut-rate", "0.02",
)  # fmt: skip
SELECT = ("-k", "preflight or sim-node-07 or all_reduce")
#: a deletion case runs the fabric alone, at a pace where the MPIJob lives seconds, not a tenth of one: the
#: deleter's own requests meet the API's faults too, and must land while the job runs
DELETE_SELECT = ("-k", "preflight or all_reduce")


@dataclass(frozen=True)
class Case:
    seed: int
    hardware: str | None = None  # a sim fault: the fabric must never pass
    interrupt: str | None = None  # SIGINT | SIGTERM, at a random moment
    delete_object: bool = False  # delete the nccl MPIJob once it exists
    time_scale: float = 0.002  # slower for a deletion to land while the job runs
    api: tuple[str, ...] = API_FAULTS  # the emulator's API fault options
    only: tuple[str, ...] | None = None  # the selection, instead of the default one
    default_retry: bool = False  # the profile's shipped API retries (else short timeouts, many attempts)
    backoff: str = "0.1s"  # the first retry's wait without default_retry (it doubles up to 5 s)
    bound_s: float = BOUND_S

    @property
    def select(self) -> tuple[str, ...]:
        if self.only is not None:
            return self.only
        return DELETE_SELECT if self.delete_object else SELECT

    @property
    def name(self) -> str:
        parts = [f"seed{self.seed}", self.hardware or "healthy"]
        if self.api != API_FAULTS:
            parts.append("".join(self.api).replace("--", "-").strip("-"))
        if self.interrupt:
            parts.append(self.interrupt)
        if self.delete_object:
            parts.append("deleted-object")
        return "-".join(parts)


@dataclass
class Outcome:
    case: Case
    exit_code: int | None
    wall_s: float
    verdicts: dict[str, str] = field(default_factory=dict)
    objects_left: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    summaries: dict[str, str] = field(default_factory=dict)  # item -> its verdict's summary
    exit_after_output_s: float | None = None  # from the process's last line of output to its exit

    @property
    def hung(self) -> bool:
        return self.exit_code is None


#: the pace of a case whose jobs need not live long: no signal to land mid-run, no object to delete under it
FAST = 0.0001

CASES = (
    Case(1, time_scale=FAST),
    Case(2, hardware="nic-degraded@sim-node-07", time_scale=FAST),
    Case(3, interrupt="SIGTERM"),
    Case(4, hardware="nic-degraded@sim-node-07", interrupt="SIGINT"),
    Case(5, delete_object=True, time_scale=0.2),
    Case(6, hardware="gpu-xid@sim-node-07:2", time_scale=FAST),
)


#: one heavy API fault alone, over more of the suite: each is a slow run (minutes), judged by
#: tests/test_fault_matrix.py's second test. Nine requests in ten fail (the smoke job's creation among
#: them); three connections in a hundred are black-holed, waited out for the shipped 60 s read timeout.
HEAVY = (
    # nine answers in ten fail: nearly every request retries to its last attempt, so the waits between them are
    # short (9 waits of 1 ms doubling: 0.5 s a call, not 21 s) and a 429 asks for none (Retry-After: 0; the shipped
    # 1 s made this one case 80 s long; tests/test_api_faults.py tests the client honouring it)
    Case(
        15,
        api=("--error-rate", "0.9", "--retry-after", "0"),
        only=("-k", "preflight or smoke or loss"),
        bound_s=900.0,
        time_scale=FAST,
        backoff="0.001s",
    ),
    Case(3, api=("--blackhole-rate", "0.03"), only=(), default_retry=True, bound_s=900.0, time_scale=FAST),
)


def _verdicts(junit: Path) -> dict[str, str]:
    """Item -> its verdict property ("skipped"; "error" for a junit error without one; "?" for neither)."""
    out = {}
    if not junit.is_file():
        return out
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        if case.find("skipped") is not None:
            out[case.get("name", "")] = "skipped"
        else:
            out[case.get("name", "")] = props.get("verdict", "error" if case.find("error") is not None else "?")
    return out


def _summaries(junit: Path) -> dict[str, str]:
    if not junit.is_file():
        return {}
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        out[case.get("name", "")] = props.get("summary", "")
    return out


def _copy_output(stream: IO[bytes], log: IO[bytes], last: list[float]) -> None:
    """The process's output into its log, noting when the last line came (its summary ends the output)."""
    for line in stream:
        last[0] = time.monotonic()
        log.write(line)
        log.flush()


def _delete_mpijob_when_it_appears(kubeconfig: Path, stop: threading.Event) -> None:
    """Delete the run's first MPIJob as soon as the API announces it (a watch, not a poll that a short job can
    slip past); ends quietly when the run is over or the emulator has gone."""
    from kubernetes import client, config, watch

    custom = client.CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig)))
    where = ("kubeflow.org", "v2beta1", "recovery-acceptance", "mpijobs")
    while not stop.is_set():
        stream = watch.Watch()
        try:
            # the API drops, fails and blackholes some requests: a blackholed watch without a client-side
            # timeout would hang here while the job ran to its end (the case then "passed" instead of erroring)
            listing = custom.list_namespaced_custom_object
            events = stream.stream(listing, *where, timeout_seconds=2, _request_timeout=(2, 3))
            for event in events:
                if event["type"] == "ADDED":
                    patiently(custom.delete_namespaced_custom_object, *where, event["object"]["metadata"]["name"])
                    return
                if stop.is_set():
                    return
        except Exception:  # the emulator went away with the run, or a dropped watch: look again unless stopped
            stop.wait(0.2)
        finally:
            stream.stop()


def run_case(case: Case, folder: Path) -> Outcome:
    folder.mkdir(parents=True, exist_ok=True)
    sim = ["--fault", case.hardware] if case.hardware else []
    serve = [
        "--time-scale",
        str(case.time_scale),
        "--seed",
        str(case.seed),
        "--api-seed",
        str(case.seed),
        *case.api,
        *sim,
    ]
    with served_cluster(folder, *serve) as kubeconfig:
        profile_folder = kube_profile(folder, kubeconfig, lease="5s")
        profile = profile_folder / "cluster.yaml"
        data = yaml.safe_load(profile.read_text())
        if not case.default_retry:
            data["kube"]["api_retry"] = {
                "attempts": 10,
                "backoff": case.backoff,
                "connect_timeout": "2s",
                "read_timeout": "3s",
            }
        profile.write_text(yaml.safe_dump(data, sort_keys=False))
        copy_agreement(profile_folder)  # the sim baseline, as this cluster's own
        junit = folder / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", str(ROOT / "acceptance"), "--cluster=remote",
            f"--baselines-dir={profile_folder.parent}", f"--report-dir={folder / 'report'}", f"--junitxml={junit}",
            "--no-sign", "--returned-node=sim-node-07", "-p", "no:cacheprovider", *case.select,
        ]  # fmt: skip
        stop = threading.Event()
        deleter = threading.Thread(target=_delete_mpijob_when_it_appears, args=(kubeconfig, stop), daemon=True)
        started = time.monotonic()
        last_output = [started]
        with (folder / "pytest.out").open("wb") as log:
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=folder)
            assert proc.stdout is not None
            copier = threading.Thread(target=_copy_output, args=(proc.stdout, log, last_output), daemon=True)
            copier.start()
            if case.delete_object:
                deleter.start()
            if case.interrupt:  # at a random moment once the run has started (its header is out)
                while "collected" not in (folder / "pytest.out").read_text() and proc.poll() is None:
                    time.sleep(0.05)
                time.sleep(random.Random(case.seed).uniform(0.0, 6.0))
                proc.send_signal(getattr(signal, case.interrupt))
            try:
                code: int | None = proc.wait(timeout=case.bound_s - (time.monotonic() - started))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
                code = None
            ended = time.monotonic()
            copier.join(timeout=10)
            proc.stdout.close()
        stop.set()
        wall = ended - started
        left = labelled_objects(kubeconfig)
        outcome = Outcome(case, code, wall, _verdicts(junit), left, summaries=_summaries(junit))
        outcome.exit_after_output_s = ended - last_output[0] if code is not None else None
    outcome.wrong = _wrong(outcome)
    return outcome


def _wrong(outcome: Outcome) -> list[str]:
    """Verdicts that contradict the cluster's real state (an explicit error or a skip is never wrong)."""
    case = outcome.case
    out = []
    for item, verdict in outcome.verdicts.items():
        if "nccl_busbw" in item and case.hardware and verdict == "pass":
            out.append(f"{item}: pass on a faulty fabric ({case.hardware})")
        if "gpu-xid" in (case.hardware or "") and "dcgm" in item and verdict == "pass":
            out.append(f"{item}: pass on a GPU with an XID")
        if not case.hardware and verdict in ("fail", "not-comparable"):
            out.append(f"{item}: {verdict} on a healthy cluster (an API fault must be an explicit error)")
    return out


def summary(outcomes: list[Outcome]) -> str:
    wrong = sum(len(o.wrong) for o in outcomes)
    hangs = sum(o.hung for o in outcomes)
    left = sum(len(o.objects_left) for o in outcomes)
    slowest = max((o.wall_s for o in outcomes), default=0.0)
    bound = max((o.case.bound_s for o in outcomes), default=BOUND_S)
    return (f"fault matrix: {len(outcomes)} runs tried, {wrong} wrong verdicts, {hangs} hangs, {left} objects left; "
            f"slowest run {slowest:.1f} s (bound {bound:.0f} s)")  # fmt: skip
