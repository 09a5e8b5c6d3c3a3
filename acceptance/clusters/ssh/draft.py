"""A first ``backend: ssh`` profile drafted from what the hosts say (`acceptance init --hosts`).

Every host is asked the preflight's own inventory (`inventory`: GPUs by ``nvidia-smi --query-gpu``,
driver and CUDA, ``dcgmi --version``, ``mpirun --version`` on the head node) over connections that
check host keys strictly against known_hosts: a host whose key is unknown or changed stops the draft
with the fingerprint and the ``ssh-keyscan`` line, never a profile naming an unverified host. A host
that does not answer stays in the node set with a note. `draft_ssh_profile` is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from acceptance.clusters.base import NodeInfo
from acceptance.clusters.drafting import agreement_lines, common, env_and_nodes_lines, most_gpus, q, signers_lines
from acceptance.clusters.ssh import inventory
from acceptance.clusters.ssh.hostset import HostSet, read_inventory
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.errors import HostKeyRefused, UsageError


@dataclass(frozen=True)
class HostAccess:
    """How `acceptance init` reaches the hosts: what the user named (unset: the ssh config's)."""

    hosts: Mapping[str, str]  # node name → address[:port]
    user: str | None = None
    port: int | None = None
    key: Path | None = None
    known_hosts: Path | None = None
    config: Path | None = None
    jump: str | None = None

    @property
    def head(self) -> str:
        """The head node: the first host named."""
        return next(iter(self.hosts))

    def settings(self) -> SshSettings:
        return SshSettings(
            hosts=dict(self.hosts), user=self.user, port=self.port, key=self.key, known_hosts=self.known_hosts,
            head_node=self.head, config=self.config, jump=self.jump, connect_timeout_s=15.0, command_timeout_s=60.0,
        )  # fmt: skip


def discover_hosts(access: HostAccess) -> list[NodeInfo]:
    """Each host as the preflight would see it; refused host keys stop everything (see the module docstring)."""
    hostset = HostSet(access.settings(), list(access.hosts), accept_new=False)
    try:
        readings = read_inventory(hostset)
        refused = [str(r.error) for r in readings.values() if isinstance(r.error, HostKeyRefused)]
        if refused:
            raise UsageError("host keys not accepted, so no profile was written:\n  " + "\n  ".join(refused))
        return [readings[node].info for node in access.hosts]
    finally:
        hostset.close()


def draft_ssh_profile(name: str, access: HostAccess, infos: Sequence[NodeInfo]) -> tuple[str, tuple[str, ...]]:
    """The profile text for cluster `name` (the hosts named are the node set, in that order), and the notes."""
    answered = [i for i in infos if i.conditions.get("Reachable") != "False"]
    if not answered:
        reasons = "; ".join(f"{i.name}: {i.conditions.get('Ready')}" for i in infos[:3])
        raise ValueError(f"no host answered ({reasons})")
    notes: list[str] = []
    silent = [f"{i.name} ({i.conditions.get('Ready')})" for i in infos if i not in answered]
    if silent:
        notes.append(f"did not answer (kept in the node set; preflight will fail until they do): {'; '.join(silent)}")
    unusable = [f"{i.name}: {i.conditions.get('Ready')}" for i in answered if not i.ready]
    if unusable:
        notes.append("not usable now (preflight will fail until fixed): " + "; ".join(unusable))
    gpus, odd = most_gpus({i.name: i.allocatable_gpus for i in answered})
    if gpus == 0:
        raise ValueError(f"no GPU listed by nvidia-smi on {', '.join(i.name for i in answered)}")
    if odd:
        notes.append(f"most hosts have {gpus} GPUs, these differ: {', '.join(odd)}")
    product, others = common([i.labels.get("nvidia.com/gpu.product") for i in answered])
    if others:
        notes.append(f"GPU products differ: {product} on most hosts, also {', '.join(others)}")
    driver, drivers = common([i.labels.get("nvidia.com/cuda.driver-version.full") for i in answered])
    if drivers:
        notes.append(f"driver versions differ: {driver} on most hosts, also {', '.join(drivers)}")
    cuda, _ = common([i.labels.get("nvidia.com/cuda.runtime-version.full") for i in answered])
    head = access.head
    head_info = next((i for i in infos if i.name == head), None)
    if head_info is not None and inventory.MPI_LABEL not in head_info.labels and head_info in answered:
        notes.append(f"no Open MPI mpirun on the head node {head}: nccl-tests need it (apt-get install openmpi-bin)")
    if not any(inventory.DCGM_LABEL in i.labels for i in answered):
        notes.append("no dcgmi on the hosts: criterion 1 needs NVIDIA DCGM (datacenter-gpu-manager)")
    keys = sorted({i.labels.get(inventory.HOST_KEY_LABEL, "") for i in answered} - {""})
    ssh_lines = ["ssh:", "  hosts:"] + [f"    {q(n)}: {q(a)}" for n, a in access.hosts.items()]
    given = (("user", access.user), ("port", access.port), ("key", access.key),
             ("known_hosts", access.known_hosts), ("config", access.config), ("jump", access.jump))  # fmt: skip
    for key, value in given:
        if value is not None:
            ssh_lines.append(f"  {key}: {q(str(value) if isinstance(value, Path) else value)}")
    summary = f"{len(infos)} x {gpus} {product or 'GPU'} hosts"
    lines = [
        f"# Drafted by `acceptance init` from {len(answered)} of {len(infos)} hosts over SSH (host keys checked",
        f"# against {access.known_hosts or '~/.ssh/known_hosts'}: {len(keys)} distinct key(s)). Facts read from",
        "# the hosts are values; the agreement's choices are commented defaults: review them with the other party",
        "# before recording the handover baseline.",
        f"cluster: {q(name)}",
        f"description: {q(summary)}",
        "backend: ssh",
        *signers_lines(),
        "",
        *ssh_lines,
        f"  head_node: {q(head)}       # runs mpirun for nccl-tests and the smoke job",
        *env_and_nodes_lines(gpus, product, driver, cuda, list(access.hosts)),
        "# localize:                 # hosts carry no labels: list the fabric to name a bad switch or link",
        "#   topology: {leaves: {leaf-01: [...]}, spines: {spine-01: [leaf-01]}}",
        "",
    ]
    lines += agreement_lines()
    return "\n".join(lines) + "\n", tuple(notes)
