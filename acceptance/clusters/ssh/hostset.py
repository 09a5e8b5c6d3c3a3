"""The run's hosts: where each is, its kept connection, and one command on many of them at once."""

from __future__ import annotations

import getpass
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from acceptance.clusters.base import NodeInfo
from acceptance.clusters.ssh import inventory, parallel, remote
from acceptance.clusters.ssh.connection import CommandResult, Connection, Connector
from acceptance.clusters.ssh.hostkeys import KnownHosts
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.clusters.ssh.targets import HostTarget, load_config, resolve_targets
from acceptance.errors import SshError

Answer = CommandResult | BaseException


class HostSet:
    """Every node of the agreement (and the head node), each with one connection opened on first use."""

    def __init__(self, settings: SshSettings, nodes: Sequence[str], *, accept_new: bool) -> None:
        self.settings = settings
        self.targets: dict[str, HostTarget] = resolve_targets(
            settings, nodes, load_config(settings.config), getpass.getuser()
        )
        self.known = KnownHosts(settings.known_hosts, accept_new=accept_new)
        self.connector = Connector(self.known, settings.connect_timeout_s)
        self.connections = {node: Connection(t, self.connector) for node, t in self.targets.items()}

    @property
    def nodes(self) -> list[str]:
        return list(self.targets)

    def each(
        self, nodes: Sequence[str], fn: Callable[[Connection], CommandResult], deadline_s: float
    ) -> dict[str, Answer]:
        """`fn` on the connection of every node at once: node → its result, or why there is none."""
        outcomes = parallel.each(lambda node: fn(self.connections[node]), list(nodes), deadline_s)
        out: dict[str, Answer] = {}
        for node, o in zip(nodes, outcomes, strict=True):
            if o.error is not None:
                out[node] = o.error
            elif o.value is None:
                out[node] = SshError(f"{node}: no answer within {deadline_s:.0f} s")
            else:
                out[node] = o.value
        return out

    def script(self, text: str, timeout_s: float | None = None) -> Callable[[Connection], CommandResult]:
        """A call that runs the sh script `text` on a connection, within `timeout_s` (default: the profile's)."""
        timeout = timeout_s or self.settings.command_timeout_s
        return lambda conn: conn.run(remote.sh(text), timeout)

    @staticmethod
    def why(node: str, error: BaseException) -> str:
        """The error's text without the node's name in front (the caller names the node)."""
        text = str(error)
        return text[len(node) + 2 :] if text.startswith(f"{node}: ") else text

    def close(self) -> None:
        self.connector.close()
        for conn in self.connections.values():
            conn.close()


@dataclass(frozen=True)
class Reading:
    """One host's inventory: the node as the preflight judges it, its facts, or why it did not answer."""

    info: NodeInfo
    facts: inventory.HostFacts | None
    error: BaseException | None


def read_inventory(hosts: HostSet) -> dict[str, Reading]:
    """Every host's `inventory` at once (the head node's with `mpirun --version`): node → its reading."""
    settings, timeout = hosts.settings, hosts.settings.command_timeout_s

    def launcher(node: str) -> str | None:
        return settings.launcher_mpirun if node == settings.head_node else None

    answers = hosts.each(
        hosts.nodes,
        lambda conn: conn.run(remote.sh(inventory.inventory_script(launcher(conn.node))), timeout),
        timeout + settings.connect_timeout_s + 5,
    )
    out: dict[str, Reading] = {}
    for node, answer in answers.items():
        if isinstance(answer, BaseException):
            out[node] = Reading(inventory.unreachable(node, hosts.why(node, answer)), None, answer)
            continue
        conn = hosts.connections[node]
        host_key = f"{conn.key.key_type} {conn.key.fingerprint}" if conn.key else ""
        facts = inventory.parse_facts(answer.stdout)
        info = inventory.node_info(node, facts, server_version=conn.server_version, host_key=host_key,
                                   launcher=launcher(node))  # fmt: skip
        out[node] = Reading(info, facts, None)
    return out
