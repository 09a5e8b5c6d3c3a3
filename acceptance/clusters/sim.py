"""Backend ``sim``: the Kubernetes backend, unchanged, against the simulator's API emulator.

The controller process starts the simulated cluster behind its emulator on loopback; every
other pytest process of the run attaches to it through the kubeconfig the emulator wrote.
The emulator stops when the process that started it closes the cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from acceptance.clusters.kube import KubeCluster, KubeSettings
from acceptance.errors import AcceptanceError, ClusterError, UsageError
from acceptance.profile import Profile
from acceptance.sim.embedded import SimulatedCluster


class EmbeddedSimCluster(KubeCluster):
    """A simulated cluster served for this run (or joined, in an xdist worker)."""

    def __init__(
        self, settings: KubeSettings, run_id: str, server: SimulatedCluster | None, faults: Sequence[str]
    ) -> None:
        super().__init__(settings, run_id)
        self.server = server
        self.faults = tuple(faults)

    @classmethod
    def start(cls, profile: Profile, run_id: str, faults: Sequence[str]) -> EmbeddedSimCluster:
        try:
            server = SimulatedCluster.start(profile, faults)
        except AcceptanceError as exc:
            raise ClusterError(str(exc)) from None
        try:
            return cls(_settings(profile, str(server.kubeconfig)), run_id, server, faults)
        except BaseException:
            server.close()
            raise

    @classmethod
    def attach(cls, profile: Profile, run_id: str, info: Mapping[str, str]) -> EmbeddedSimCluster:
        if not info.get("kubeconfig"):
            raise UsageError("this pytest process was not told where the run's simulated cluster is")
        faults = tuple(f for f in info.get("faults", "").split(",") if f)
        return cls(_settings(profile, info["kubeconfig"]), run_id, None, faults)

    def describe(self) -> list[str]:
        url = self.server.api.url if self.server is not None else self.settings.kubeconfig
        return [f"SIMULATED cluster: Kubernetes API emulator at {url}; faults: {', '.join(self.faults) or 'none'}"]

    def attach_info(self) -> dict[str, str]:
        return {"kubeconfig": self.settings.kubeconfig or "", "faults": ",".join(self.faults)}

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.server is not None:
                self.server.close()


def _settings(profile: Profile, kubeconfig: str) -> KubeSettings:
    settings = KubeSettings.from_mapping(profile.kube, source=str(profile.path))
    return dataclasses.replace(settings, kubeconfig=kubeconfig, context=None)
