"""What one host is, asked in one command (pure: the script, and its output → `NodeInfo`).

Per host: its hostname (the name its processes print, e.g. in nccl-tests' rank lines), OS and
kernel, the GPUs (`nvidia-smi --query-gpu`), the processes holding them
(`--query-compute-apps`), the driver and CUDA versions (plain `nvidia-smi`), `dcgmi --version`,
and on the head node `mpirun --version`. A node is usable ("Ready") when it answered, listed
its GPUs without complaint and no process holds one of them; otherwise its `Ready` condition
says why, in words the preflight verdict repeats (the PID and name of a process on a GPU).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from acceptance.clusters.base import NodeInfo
from acceptance.clusters.ssh.mpi import MpiVersion, parse_mpirun_version
from acceptance.errors import ParseError
from acceptance.tools import nvsmi

HOSTNAME_LABEL = "recovery-acceptance/hostname"
DCGM_LABEL = "recovery-acceptance/dcgm-version"
HOST_KEY_LABEL = "recovery-acceptance/host-key"
MPI_LABEL = "recovery-acceptance/mpirun"
_SECTIONS = ("hostname", "os", "kernel", "gpus", "apps", "smi", "dcgmi", "mpirun")


def inventory_script(mpirun: str | None) -> str:
    """One script, one section per question (``@name``, then ``@rc name N`` after the ones that can fail)."""
    lines = [
        "echo @hostname; hostname",
        'echo @os; (lsb_release -ds 2>/dev/null || (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"))',
        "echo @kernel; uname -r",
        f'echo @gpus; {shlex.join(nvsmi.query_gpus_argv())} 2>&1; echo "@rc gpus $?"',
        f'echo @apps; {shlex.join(nvsmi.query_apps_argv())} 2>&1; echo "@rc apps $?"',
        "echo @smi; nvidia-smi 2>&1 | head -n 12",
        "echo @dcgmi; dcgmi --version 2>&1 | head -n 3",
    ]
    if mpirun is not None:
        lines.append(f"echo @mpirun; {shlex.quote(mpirun)} --version 2>&1 | head -n 3")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class HostFacts:
    """The sections of one host's answer."""

    sections: Mapping[str, str]
    codes: Mapping[str, int]

    def text(self, name: str) -> str:
        return self.sections.get(name, "")

    def first_line(self, name: str) -> str:
        lines = [line.strip() for line in self.text(name).splitlines() if line.strip()]
        return lines[0].strip("\"'") if lines else ""

    @property
    def mpirun(self) -> MpiVersion | None:
        return parse_mpirun_version(self.text("mpirun"))


def parse_facts(text: str) -> HostFacts:
    sections: dict[str, list[str]] = {}
    codes: dict[str, int] = {}
    current = ""
    for line in text.splitlines():
        rc = re.match(r"^@rc (\w+) (-?\d+)$", line)
        if rc:
            codes[rc.group(1)] = int(rc.group(2))
            continue
        if line.startswith("@") and line[1:] in _SECTIONS:
            current = line[1:]
            sections[current] = []
        elif current:
            sections[current].append(line)
    return HostFacts({k: "\n".join(v) for k, v in sections.items()}, codes)


def node_info(node: str, facts: HostFacts, *, server_version: str, host_key: str, launcher: str | None) -> NodeInfo:
    """The node as the preflight judges it (see the module docstring); `launcher`: the head node's mpirun."""
    problems: list[str] = []
    if launcher is not None and facts.mpirun is None:
        said = facts.first_line("mpirun") or "nothing"
        problems.append(f"head node without Open MPI: `{launcher} --version` said {said!r}")
    try:
        gpus = nvsmi.parse_gpus(facts.text("gpus"), source=f"{node}: nvidia-smi --query-gpu")
    except ParseError as exc:
        gpus = nvsmi.GpuList((), (str(exc),))
    if facts.codes.get("gpus", 0) != 0 or gpus.problems:
        said = "; ".join(gpus.problems[:2]) or f"exit {facts.codes.get('gpus')}"
        problems.append(f"nvidia-smi: {said}")
    try:
        apps = nvsmi.parse_apps(facts.text("apps"), source=f"{node}: nvidia-smi --query-compute-apps")
    except ParseError as exc:
        apps = []
        problems.append(str(exc))
    by_uuid = {g.uuid: g.index for g in gpus.gpus}
    for app in apps:
        where = f"GPU {by_uuid[app.gpu_uuid]}" if app.gpu_uuid in by_uuid else f"GPU {app.gpu_uuid}"
        problems.append(f"{where} busy: {app.describe()} holds it")
    versions = nvsmi.parse_versions(facts.text("smi"))
    names = sorted({g.name for g in gpus.gpus})
    drivers = sorted({g.driver_version for g in gpus.gpus if g.driver_version})
    labels = {
        HOSTNAME_LABEL: facts.first_line("hostname") or node,
        "nvidia.com/gpu.count": str(len(gpus.gpus)),
        HOST_KEY_LABEL: host_key,
    }
    if names:
        labels["nvidia.com/gpu.product"] = ", ".join(names)
    driver = ", ".join(drivers) or versions.driver
    if driver:
        labels["nvidia.com/cuda.driver-version.full"] = driver
    if versions.cuda:
        labels["nvidia.com/cuda.runtime-version.full"] = versions.cuda
    dcgm = re.search(r"version\s*:?\s*([0-9][0-9.]*)", facts.text("dcgmi"), re.IGNORECASE)
    if dcgm:
        labels[DCGM_LABEL] = dcgm.group(1)
    if facts.mpirun is not None:
        labels[MPI_LABEL] = str(facts.mpirun)
    ready = "True" if not problems else "; ".join(problems)
    return NodeInfo(
        name=node,
        ready=not problems,
        unschedulable=False,
        conditions={"Ready": ready, "Reachable": "True"},
        allocatable_gpus=len(gpus.gpus),
        labels=labels,
        kubelet_version=server_version,
        os_image=facts.first_line("os"),
        kernel_version=facts.first_line("kernel"),
    )


def unreachable(node: str, why: str) -> NodeInfo:
    """A node the harness could not reach (refused, timed out, host key refused...)."""
    return NodeInfo(node, False, False, {"Ready": f"unreachable over SSH: {why}", "Reachable": "False"}, 0, {}, "", "")
