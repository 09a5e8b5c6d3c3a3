"""``--cluster=sim-ssh``: the SSH backend, unchanged, against simulated hosts behind a real sshd.

A profile with backend ``ssh`` and a ``sim`` section: the controller process starts the hosts
(`acceptance.sim.ssh.hosts`) for the run, with the profile's scenario, seed and ``--sim-fault``s,
and reaches them with the keys, known_hosts and port it generated; xdist workers attach to the
same hosts. The profile's addresses (``127.0.0.x``) are where each node listens; the hosts keep
their run folders in a folder of their own (simulated clusters share this machine's disk).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from acceptance.clusters.sim_probation import SimulatedPeriod
from acceptance.clusters.ssh.cluster import SshCluster
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.clusters.ssh.targets import split_address
from acceptance.errors import AcceptanceError, ClusterError, UsageError
from acceptance.profile import Profile
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.ssh.hosts import SimulatedHosts


def _addresses(profile: Profile) -> dict[str, str]:
    assert profile.ssh is not None
    return {node: split_address(profile.ssh.hosts[node])[0] for node in profile.nodes}


def _settings(profile: Profile, hosts: SimulatedHosts) -> SshSettings:
    assert profile.ssh is not None
    return dataclasses.replace(
        profile.ssh, hosts=dict(hosts.addresses), port=hosts.port, user=hosts.user, key=hosts.key,
        known_hosts=hosts.known_hosts, config=hosts.ssh_config, jump=None, launcher_identity=str(hosts.key),
        run_dir=str(hosts.run_dir),
    )  # fmt: skip


class SimulatedSshCluster(SimulatedPeriod, SshCluster):
    """The SSH backend over the simulated hosts of this run (started here, or joined)."""

    def __init__(
        self, profile: Profile, run_id: str, hosts: SimulatedHosts, faults: SimFaults, *, owner: bool,
        accept_new: bool,
    ) -> None:  # fmt: skip
        self.hosts = hosts
        self.faults = faults
        self.owner = owner
        super().__init__(profile, run_id, settings=_settings(profile, hosts), accept_new=accept_new)

    @classmethod
    def start(cls, profile: Profile, run_id: str, faults: SimFaults, *, accept_new: bool) -> SimulatedSshCluster:
        from acceptance.sim.model import SimRunner, load_scenario

        if profile.sim is None or profile.ssh is None:
            raise UsageError(f"{profile.path}: a simulated SSH cluster needs an 'ssh' and a 'sim' section")
        try:
            runner = SimRunner.from_scenario(load_scenario(profile.sim.scenario), faults.acceptance,
                                             seed=profile.sim.seed)  # fmt: skip
            faults.check([n.name for n in runner.cluster.nodes])
        except AcceptanceError as exc:
            raise UsageError(str(exc)) from None
        unknown = [n for n in profile.nodes if not runner.cluster.has_node(n)]
        if unknown:
            raise UsageError(f"{profile.path}: nodes {', '.join(unknown)} are not in the simulated cluster "
                             f"({runner.cluster.describe_nodes()})")  # fmt: skip
        addresses = _addresses(profile)
        remote = {n: a for n, a in addresses.items() if not a.startswith("127.")}
        if remote:
            node, address = next(iter(remote.items()))
            raise UsageError(f"{profile.path}: ssh.hosts.{node}: {address} is not a loopback address; the simulated "
                             "hosts listen on 127.0.0.x (drop the 'sim' section to reach real hosts)")  # fmt: skip
        if len(set(addresses.values())) != len(addresses):
            raise UsageError(f"{profile.path}: ssh.hosts: each simulated node needs its own loopback address")
        hosts = SimulatedHosts.start(runner, addresses, profile.sim.time_scale)
        try:
            return cls(profile, run_id, hosts, faults, owner=True, accept_new=accept_new)
        except BaseException:
            hosts.close()
            raise

    @classmethod
    def attach(cls, profile: Profile, run_id: str, info: Mapping[str, str]) -> SimulatedSshCluster:
        if not info.get("sim_ssh_dir") or not info.get("port", "").isdigit():
            raise UsageError("this pytest process was not told where the run's simulated hosts are")
        try:
            hosts = SimulatedHosts.attach(Path(info["sim_ssh_dir"]), _addresses(profile), int(info["port"]))
        except ClusterError as exc:
            raise UsageError(str(exc)) from None
        faults = SimFaults.from_text(info.get("faults", ""))
        return cls(profile, run_id, hosts, faults, owner=False, accept_new=bool(info.get("accept_new")))

    def describe(self) -> list[str]:
        first = next(iter(self.hosts.addresses.values()))
        return [
            f"SIMULATED bare-metal cluster: {len(self.hosts.addresses)} hosts behind a real OpenSSH sshd on loopback "
            f"({first} ... port {self.hosts.port}), tool shims backed by the simulator; "
            f"faults: {self.faults.shown()}",
            *super().describe(),
        ]

    def attach_info(self) -> dict[str, str]:
        return {**super().attach_info(), "sim_ssh_dir": str(self.hosts.folder), "port": str(self.hosts.port),
                "faults": str(self.faults)}  # fmt: skip

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.owner:
                self.hosts.close()
