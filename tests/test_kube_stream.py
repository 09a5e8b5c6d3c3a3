"""The Kubernetes backend's optional `StreamsLogs`: a running workload's log as it grows, and a stop
that ends the wait with the log kept and every object deleted (issue 28)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from acceptance.clusters.base import SmokeWorkload, StreamsLogs
from acceptance.sim.runtime import Host, ToolRun
from tests.kube_tool_double import CannedRunner
from tests.test_kube_e2e import NODES, cluster, labelled


@dataclass
class CountingRunner(CannedRunner):
    """``[mpirun ...] count N``: prints N lines over N simulated seconds."""

    def run(self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host]) -> ToolRun:
        if "count" in argv:  # the launcher's mpirun ... count N
            n = int(argv[list(argv).index("count") + 1])
            return ToolRun("".join(f"line {i}\n" for i in range(1, n + 1)), 0, float(n))
        return super().run(argv, env, node, hosts)


def smoke(n: int) -> SmokeWorkload:
    return SmokeWorkload("train-smoke", NODES[:2], 8, ("count", str(n)), {}, 600)


def test_a_followed_log_grows_while_the_job_runs_and_a_stop_ends_it_with_nothing_left() -> None:
    with cluster(time_scale=0.03, runner=CountingRunner()) as (api, kube):
        assert isinstance(kube, StreamsLogs)
        [handle] = kube.submit([smoke(200)])  # 200 simulated seconds: 6 s of wall time
        chunks: list[str] = []

        def follow() -> None:
            for chunk in kube.follow(handle, 60):
                chunks.append(chunk)
                if sum(c.count("\n") for c in chunks) >= 20:
                    kube.stop(handle, "decided PASS after 20 of at most 200 steps")
                    return

        thread = threading.Thread(target=follow)
        thread.start()
        [result] = kube.wait([handle], 60)
        thread.join(10)
        assert len(chunks) > 1, "the log arrived in pieces, as the job printed it"
        assert all(c.endswith("\n") for c in chunks), "complete lines only"
        assert result.ok
        assert result.status == "succeeded"
        assert result.exit_code is None
        assert result.stopped == "decided PASS after 20 of at most 200 steps"
        assert "stopped by the harness" in result.reason
        printed = result.output.splitlines()
        assert 20 <= len(printed) < 200, "the log up to the stop is kept"
        assert printed[:3] == ["line 1", "line 2", "line 3"]
        assert labelled(api, leases=False) == [], "the stopped MPIJob and its pods are deleted at once"


def test_a_job_that_is_not_stopped_runs_to_its_end_unchanged() -> None:
    with cluster(time_scale=0.01, runner=CountingRunner()) as (_api, kube):
        [handle] = kube.submit([smoke(50)])
        followed = "".join(kube.follow(handle, 30))
        [result] = kube.wait([handle], 30)
        assert result.ok
        assert result.exit_code == 0
        assert result.stopped == ""
        assert result.output == followed == "".join(f"line {i}\n" for i in range(1, 51))
        assert "stopped" not in result.to_json()


def test_a_broken_follow_is_resumed_without_repeating_or_losing_a_line() -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from acceptance.clusters.base import Handle
    from acceptance.clusters.kube.client import KubeApiError
    from acceptance.clusters.kube.follow import follow_log

    full = "".join(f"line {i}\n" for i in range(1, 11))
    phases = iter(["Running", "Running", "Succeeded"])
    follows: list[int] = []

    class Api:
        core = SimpleNamespace(list_namespaced_pod=None)

        def call(self, what: str, fn: object, *args: object, **kwargs: object) -> dict[str, object]:
            pod = {"metadata": {"name": "p", "labels": {"training.kubeflow.org/job-role": "launcher"}},
                   "status": {"phase": next(phases)}}  # fmt: skip
            return {"items": [pod]}

        def follow(self, namespace: str, pod: str, timeout_s: float) -> Iterator[str]:
            follows.append(1)
            if len(follows) == 1:
                yield full[:23]  # "line 1\nline 2\nline 3\nli": the stream breaks mid-line
                raise KubeApiError("follow log of pod p: connection reset")
            yield full[:60]

        def log(self, namespace: str, pod: str) -> str:
            return full

    handle = Handle(smoke(10), (("MPIJob", "train-smoke"),), (), datetime.now(UTC))
    chunks = list(follow_log(Api(), "ns", "run", handle, 30, lambda: False, sleep=lambda s: None))  # type: ignore[arg-type]
    assert len(follows) == 2
    assert "".join(chunks) == full
    assert chunks[0] == "line 1\nline 2\nline 3\n", "complete lines only"
