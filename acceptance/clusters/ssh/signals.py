"""What SSH hosts say about their health: kernel Xid lines, reachability and GPUs now, evidence files.

Bare-metal hosts keep no history of their state the way Kubernetes keeps node conditions: the
answers are what each host says when asked (`node_signals` says so in its ``Coverage`` event),
plus the NVIDIA driver's kernel lines since a time, from ``journalctl -k`` or, without a
journal, ``dmesg``. A host whose kernel log cannot be read is named, never counted as quiet.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

from acceptance.clusters.base import (
    GPUS_NOT_ALLOCATABLE,
    NODE_NOT_READY,
    NODE_PROBLEM,
    ClusterEvent,
    ClusterInventory,
)
from acceptance.clusters.ssh.hostset import HostSet
from acceptance.profile import Profile


class Hosts(Protocol):
    """What `node_signals` asks of the SSH cluster (`SshCluster` is one): its hosts, profile and inventory."""

    @property
    def hostset(self) -> HostSet: ...

    @property
    def profile(self) -> Profile: ...

    def inventory(self) -> ClusterInventory: ...


UNREADABLE = "@kernel-log-unreadable"
KERNEL_LOG_UNREAD = "KernelLogNotRead"
KERNEL_LINES = 200
EVIDENCE_BYTES = 4 * 1024 * 1024


def kernel_script(since: datetime) -> str:
    """sh: the NVIDIA driver's kernel lines (``NVRM: Xid``, ``NVRM: GPU``) since `since`, ISO-stamped."""
    stamp = int(since.timestamp())
    return (
        f"out=$(journalctl -k -q --no-pager -o short-iso --since=@{stamp} 2>/dev/null) || "
        f"out=$(dmesg --time-format iso 2>/dev/null) || {{ echo {UNREADABLE}; exit 0; }}\n"
        f"printf '%s\\n' \"$out\" | grep -E 'NVRM: (Xid|GPU)' | tail -n {KERNEL_LINES}\nexit 0\n"
    )


def _when(text: str) -> datetime | None:
    try:
        found = datetime.fromisoformat(text.replace(",", "."))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def parse_kernel(node: str, text: str, since: datetime) -> tuple[list[ClusterEvent], bool]:
    """`kernel_script`'s output → events (``Node/<node>``, reason ``NVRM``), and whether the log was readable."""
    out: list[ClusterEvent] = []
    for line in text.splitlines():
        if line.strip() == UNREADABLE:
            return [], False
        if not line.strip():
            continue
        stamp, _, rest = line.partition(" ")
        when = _when(stamp)
        if when is not None and when < since:  # dmesg has no --since: older lines are dropped here
            continue
        message = rest.strip() if when is not None else line.strip()  # uptime stamps ([ 1234.5]) stay in the line
        out.append(ClusterEvent(when, f"Node/{node}", "NVRM", message, "Warning"))
    return out, True


def kernel_events(hosts: HostSet, nodes: Sequence[str], since: datetime) -> tuple[list[ClusterEvent], dict[str, str]]:
    """The kernel's NVIDIA lines of `nodes` since `since`, oldest first; and the hosts that could not say: why."""
    found: list[ClusterEvent] = []
    silent: dict[str, str] = {}
    for node, answer in hosts.each(list(nodes), hosts.script(kernel_script(since), 30), 40).items():
        if isinstance(answer, BaseException):
            silent[node] = hosts.why(node, answer)
            continue
        events, readable = parse_kernel(node, answer.stdout, since)
        if not readable:
            silent[node] = "neither journalctl -k nor dmesg may be read by this user"
        found += events
    return sorted(found, key=lambda e: e.time or since), silent


def unread(silent: dict[str, str], now: datetime) -> list[ClusterEvent]:
    """One event per host whose kernel log was not read: never taken for a quiet kernel."""
    return [ClusterEvent(now, f"Node/{node}", KERNEL_LOG_UNREAD, f"kernel log not read: {why}")
            for node, why in silent.items()]  # fmt: skip


def node_signals(cluster: Hosts, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
    """`Cluster.node_signals` over SSH: each host now (reachable, Ready, GPUs), and its kernel lines since `since`."""
    now = datetime.now(UTC)
    wanted = list(dict.fromkeys(nodes))
    out: list[ClusterEvent] = []
    inventory = cluster.inventory()
    for name in wanted:
        info = inventory.node(name)
        if info is None:
            out.append(ClusterEvent(now, f"Node/{name}", NODE_NOT_READY, "not a host of this profile"))
            continue
        if not info.ready:
            reason = NODE_NOT_READY if info.conditions.get("Reachable") == "False" else NODE_PROBLEM
            out.append(ClusterEvent(now, f"Node/{name}", reason, info.conditions.get("Ready", "not ready"), "Warning"))
        if info.conditions.get("Reachable") != "False" and info.allocatable_gpus < cluster.profile.gpus_per_node:
            out.append(ClusterEvent(now, f"Node/{name}", GPUS_NOT_ALLOCATABLE,
                                    f"nvidia-smi lists {info.allocatable_gpus} of {cluster.profile.gpus_per_node} GPUs",
                                    "Warning"))  # fmt: skip
    reachable = [n for n in wanted if (i := inventory.node(n)) is not None and i.conditions.get("Reachable") != "False"]
    kernel, silent = kernel_events(cluster.hostset, reachable, since)
    out += kernel
    out.append(ClusterEvent(now, "cluster", "Coverage", "SSH hosts keep no node history: reachability, readiness and "
                            "GPUs are as of now; the NVIDIA driver's kernel lines as far back as each host's "
                            "journal or dmesg buffer reaches"))  # fmt: skip
    if silent:
        said = ", ".join(f"{node} ({why})" for node, why in silent.items())
        out.append(ClusterEvent(now, "cluster", "Coverage", f"kernel log NOT read on {said}"))
    return sorted(out, key=lambda e: e.time or since)


def evidence_script() -> str:
    """sh: the host's kernel log and ``nvidia-smi -q``, each after a marker line (what an incident bundle keeps)."""
    return (
        "echo @dmesg\n"
        f"(journalctl -k -q --no-pager -o short 2>/dev/null || dmesg 2>/dev/null || "
        f"echo {UNREADABLE}) | tail -c {EVIDENCE_BYTES}\n"
        "echo @nvidia-smi-q\n"
        f"nvidia-smi -q 2>&1 | head -c {EVIDENCE_BYTES}\n"
        "exit 0\n"
    )


def parse_evidence(text: str) -> dict[str, str]:
    """`evidence_script`'s output → ``{"dmesg": ..., "nvidia-smi-q": ...}`` (what could be read)."""
    parts: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") in ("@dmesg", "@nvidia-smi-q"):
            current = line.strip()[1:]
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    return {k: "".join(v) for k, v in parts.items() if "".join(v).strip() and UNREADABLE not in "".join(v)[:64]}


def host_evidence(hosts: HostSet, nodes: Sequence[str]) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Each node's kernel log and ``nvidia-smi -q`` as text (node → name → text); and what could not be read."""
    found: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for node, answer in hosts.each(list(nodes), hosts.script(evidence_script(), 60), 75).items():
        if isinstance(answer, BaseException):
            missing.append(f"{node}: {hosts.why(node, answer)}")
            continue
        found[node] = parse_evidence(answer.stdout)
        missing += [f"{node}: {name} could not be read" for name in ("dmesg", "nvidia-smi-q")
                    if name not in found[node]]  # fmt: skip
    return found, missing
