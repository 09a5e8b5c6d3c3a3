"""Backend ``sim``: the Kubernetes backend, unchanged, against the simulator's API emulator.

The controller process starts the simulated cluster behind its emulator on loopback; every
other pytest process of the run attaches to it through the kubeconfig the emulator wrote.
The emulator stops when the process that started it closes the cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime

from acceptance.clusters.base import ClusterEvent
from acceptance.clusters.kube import KubeCluster, KubeSettings
from acceptance.clusters.sim_probation import SimulatedPeriod
from acceptance.errors import AcceptanceError, ClusterError, UsageError
from acceptance.profile import Profile
from acceptance.sim.embedded import SimulatedCluster
from acceptance.sim.model.faultspec import SimFaults


class EmbeddedSimCluster(SimulatedPeriod, KubeCluster):
    """A simulated cluster served for this run (or joined, in an xdist worker)."""

    def __init__(
        self, profile: Profile, settings: KubeSettings, run_id: str, server: SimulatedCluster | None, faults: SimFaults
    ) -> None:
        super().__init__(settings, run_id)
        self.server = server
        self.faults = faults
        self.profile = profile

    @classmethod
    def start(cls, profile: Profile, run_id: str, faults: SimFaults) -> EmbeddedSimCluster:
        try:
            server = SimulatedCluster.start(profile, faults.acceptance)
        except AcceptanceError as exc:
            raise ClusterError(str(exc)) from None
        try:
            faults.check([n.name for n in server.runner.cluster.nodes])
            return cls(profile, _settings(profile, str(server.kubeconfig)), run_id, server, faults)
        except BaseException:
            server.close()
            raise

    @classmethod
    def attach(cls, profile: Profile, run_id: str, info: Mapping[str, str]) -> EmbeddedSimCluster:
        if not info.get("kubeconfig"):
            raise UsageError("this pytest process was not told where the run's simulated cluster is")
        faults = SimFaults.from_text(info.get("faults", ""))
        return cls(profile, _settings(profile, info["kubeconfig"]), run_id, None, faults)

    def describe(self) -> list[str]:
        url = self.server.api.url if self.server is not None else self.settings.kubeconfig
        return [f"SIMULATED cluster: Kubernetes API emulator at {url}; faults: {self.faults.shown()}"]

    def node_signals(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        """The simulated production period's node events: the emulator's own nodes live in wall-clock time,
        not in the simulated window after the acceptance."""
        from acceptance.sim.probation import simulated_node_signals

        return simulated_node_signals(self.profile, nodes, since, self.faults.probation)

    def attach_info(self) -> dict[str, str]:
        return {"kubeconfig": self.settings.kubeconfig or "", "faults": str(self.faults)}

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.server is not None:
                self.server.close()


def _settings(profile: Profile, kubeconfig: str) -> KubeSettings:
    settings = KubeSettings.from_mapping(profile.kube, source=str(profile.path))
    return dataclasses.replace(settings, kubeconfig=kubeconfig, context=None)
