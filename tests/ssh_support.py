"""Simulated bare-metal hosts for tests: a real sshd on loopback, and profiles that reach it.

`served_hosts` starts hosts owned by the test (they outlive a killed run, like real machines);
`host_profile` writes a plain ``backend: ssh`` profile for them (no ``sim`` section: the run
sees ordinary SSH hosts). `sim_ssh_profile` writes a ``--cluster=sim-ssh``-style profile, whose
run starts its own hosts. `marked_processes` counts a run's processes with ``ps`` through the
real OpenSSH client.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from acceptance.clusters.ssh.remote import MARKER
from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.ssh.hosts import SimulatedHosts
from acceptance.sim.ssh.sshd import INSTALL_HINT, missing_tools
from tests.suite_process import run_pytest
from tests.suite_run import copy_agreement, exclusive, made_once, run_key, sign_as_demo, suite_args

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "acceptance"
NEEDS_SSHD = pytest.mark.skipif(bool(missing_tools()), reason=INSTALL_HINT)


def addresses(nodes: int, first: int = 40) -> dict[str, str]:
    """sim-node-01 → 127.0.0.<first+1> ...: loopback addresses no shipped profile uses."""
    return {f"sim-node-{i:02d}": f"127.0.0.{first + i}" for i in range(1, nodes + 1)}


def scenario_file(folder: Path, nodes: int) -> Path:
    path = folder / f"healthy-{nodes}.yaml"
    doc = {"name": f"healthy-{nodes}", "description": f"{nodes} healthy H200 nodes", "nodes": nodes,
           "nodes_per_leaf": max(1, nodes // 2), "seed": 1, "faults": []}  # fmt: skip
    path.write_text(yaml.safe_dump(doc))
    return path


@contextmanager
def served_hosts(
    folder: Path, nodes: int = 4, faults: Sequence[str] = (), time_scale: float = 0.002, first: int = 40
) -> Iterator[SimulatedHosts]:
    runner = SimRunner.from_scenario(load_scenario(scenario_file(folder, nodes)), faults, seed=20261129)
    hosts = SimulatedHosts.start(runner, addresses(nodes, first), time_scale)
    try:
        yield hosts
    finally:
        hosts.close()


def _base_profile(nodes: int, tests: Sequence[str], smoke_launch: str) -> dict[str, object]:
    data = yaml.safe_load((ROOT / "baselines" / "sim-ssh" / "cluster.yaml").read_text())
    names = [f"sim-node-{i:02d}" for i in range(1, nodes + 1)]
    data["nodes"]["names"] = names
    half = max(1, nodes // 2)  # the leaves of `scenario_file`
    leaves = {f"leaf-{i // half + 1:02d}": names[i : i + half] for i in range(0, nodes, half)}
    data["localize"]["topology"] = {"leaves": leaves, "spines": {"spine-01": list(leaves)}}
    data["nccl"]["tests"] = [t for t in data["nccl"]["tests"] if t["name"] in tests]
    data["nccl"]["timeout"] = "3m"
    data["dcgm"]["timeout"] = "5m"
    data["smoke"]["timeout"] = "3m"
    data["ssh"]["smoke"] = {"launch": smoke_launch}
    data["ssh"]["command_timeout"] = "1m"
    return data


def host_profile(
    base: Path, hosts: SimulatedHosts, name: str = "rack", tests: Sequence[str] = ("all_reduce_perf",),
    smoke_launch: str = "per-node", **ssh: object,
) -> Path:  # fmt: skip
    """baselines/<name>/cluster.yaml: backend ssh at `hosts`, as a customer's bare-metal profile would be."""
    data = _base_profile(len(hosts.addresses), tests, smoke_launch)
    data["cluster"] = name
    del data["sim"]
    data["ssh"].update({"hosts": dict(hosts.addresses), "port": hosts.port, "user": hosts.user, "key": str(hosts.key),
                        "known_hosts": str(hosts.known_hosts), "config": str(hosts.ssh_config),
                        "launcher": {"identity_file": str(hosts.key)}, "run_dir": str(hosts.run_dir)})  # fmt: skip
    data["ssh"].update(ssh)
    folder = base / "baselines" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    copy_agreement(folder, with_baseline=False, shipped_cluster="sim-ssh")  # allowed_signers: the demo key
    return folder


def sim_ssh_profile(base: Path, nodes: int = 8, tests: Sequence[str] = ("all_reduce_perf",),
                    smoke_launch: str = "per-node", time_scale: float = 0.002, first: int = 60) -> Path:  # fmt: skip
    """baselines/sim-ssh/cluster.yaml like the shipped one, smaller: its runs start their own hosts."""
    data = _base_profile(nodes, tests, smoke_launch)
    data["sim"] = {"scenario": str(scenario_file(base, nodes)), "seed": 20261129, "time_scale": time_scale}
    data["ssh"]["hosts"] = addresses(nodes, first)
    folder = base / "baselines" / "sim-ssh"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    copy_agreement(folder, with_baseline=False, shipped_cluster="sim-ssh")  # allowed_signers: the demo key
    return folder


def ssh_command(hosts: SimulatedHosts, node: str, command: str, timeout: float = 60) -> str:
    """`command` on `node` through the real OpenSSH client, strict host keys."""
    argv = ["ssh", "-F", "/dev/null", "-i", str(hosts.key), "-p", str(hosts.port), "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={hosts.known_hosts}",
            f"{hosts.user}@{hosts.addresses[node]}", command]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=True).stdout


def marked_processes(hosts: SimulatedHosts, run_id: str | None = None) -> dict[str, list[str]]:
    """node → ``ps`` lines (pid and command) of processes whose environment carries a run marker."""
    wanted = f"{MARKER}={run_id}" if run_id else f"{MARKER}="
    mine = f"SIM_SSH_DIR={hosts.folder}"  # these hosts' sessions (another test's hosts may share the process table)
    out = {}
    for node in hosts.addresses:
        lines = ssh_command(hosts, node, "ps -e -ww -o pid=,args= e").splitlines()
        out[node] = [line[:300] for line in (x.strip() for x in lines)
                     if wanted in line and mine in line and "ps -e" not in line]  # fmt: skip
    return out


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    junit: Path
    report: Path

    def outcomes(self) -> dict[str, str]:
        out = {}
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            kind = next((t for t in ("failure", "error", "skipped") if case.find(t) is not None), "passed")
            out[f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"] = kind
        return out

    def failing_modules(self) -> set[str]:
        return {k.split("::")[0] for k, v in self.outcomes().items() if v in ("failure", "error")}

    def message(self, name: str) -> str:
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            if case.get("name") == name:
                found = case.find("failure") if case.find("failure") is not None else case.find("error")
                if found is None:
                    found = case.find("skipped")
                return "" if found is None else f"{found.get('message', '')}\n{found.text or ''}"
        return ""

    def properties(self, name: str) -> dict[str, str]:
        """The junit properties of test case `name` (``test_nccl_busbw[all_reduce_perf]``)."""
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            if case.get("name") == name:
                props = case.find("properties")
                return {p.get("name", ""): p.get("value", "") for p in (props if props is not None else ())}
        raise AssertionError(f"no test case {name} in {self.junit}")

    def suite_properties(self) -> dict[str, str]:
        suite = ET.parse(self.junit).getroot().find("testsuite")
        assert suite is not None
        props = suite.find("properties")
        return {p.get("name", ""): p.get("value", "") for p in (props if props is not None else ())}


def pytest_argv(baselines: Path, cluster: str, report: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *suite_args(cluster, baselines, report, report / "junit.xml", *args)]


def run_suite(baselines: Path, cluster: str, report: Path, *args: str, timeout: float = 600) -> Run:
    argv = suite_args(cluster, baselines, report, report / "junit.xml", *args)
    finished = run_pytest(argv, report.parent, timeout=timeout)
    return Run(finished.returncode, finished.stdout, finished.stderr, report / "junit.xml", report)


class SuiteRuns:
    """A test module's suite runs on one simulated cluster, each made once per session on demand (whichever
    xdist worker asks first; `base` from `session_folder`); the first records the baseline (signed with the demo
    key) that the later ones are judged against."""

    def __init__(self, base: Path, baselines: Path, cluster: str) -> None:
        self.base = base
        self.baselines = baselines
        self.cluster = cluster
        self.variants: dict[str, SuiteRuns] = {}  # by name, for the suite_run marks that name one

    @classmethod
    def recorded(cls, base: Path, cluster: str, profile: Callable[[Path], Path]) -> SuiteRuns:
        """Runs under `base` of the cluster whose profile folder `profile(base)` writes, once per session."""
        with exclusive(base.with_name(base.name + ".lock")):
            folder = base / "baselines" / cluster
            if not folder.is_dir():
                base.mkdir(parents=True, exist_ok=True)
                assert profile(base) == folder
            made = cls(base, folder.parent, cluster)
            if not list(folder.glob("handover-*.json.sig")):
                recorded = made.get("--record-baseline")
                assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-2000:]
                [path] = folder.glob("handover-*.json")
                sign_as_demo(path)
        return made

    def variant(self, name: str, edit: Callable[[str], str]) -> SuiteRuns:
        """Runs against a copy of this cluster's folder (its signed baseline) whose profile `edit` rewrote: the
        shared profile stays as it is for the runs other workers make meanwhile."""
        base = self.base / f"variant-{name}"
        with exclusive(base.with_name(base.name + ".lock")):
            folder = base / "baselines" / self.cluster
            if not folder.is_dir():
                shutil.copytree(self.baselines / self.cluster, folder)
                profile = folder / "cluster.yaml"
                profile.write_text(edit(profile.read_text()))
        return SuiteRuns(base, folder.parent, self.cluster)

    def get(self, *args: str) -> Run:
        folder = self.base / run_key(args)

        def make() -> bytes:
            run = run_suite(self.baselines, self.cluster, folder / "report", *args)
            return json.dumps({"returncode": run.returncode, "stdout": run.stdout, "stderr": run.stderr}).encode()

        said = json.loads(made_once(folder / "result.json", make))
        return Run(
            said["returncode"], said["stdout"], said["stderr"], folder / "report" / "junit.xml", folder / "report"
        )
