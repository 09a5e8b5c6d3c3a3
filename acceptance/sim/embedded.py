"""``--cluster=sim``: the simulated cluster behind its Kubernetes API emulator, for one session.

Joins the two systems of `acceptance.sim`: the cluster model (`sim.model`) runs the tools,
the emulator (`sim.kubeapi`) serves it as a Kubernetes API.

The real Kubernetes backend talks to it through a generated kubeconfig, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from acceptance.errors import ProfileError
from acceptance.profile import Profile
from acceptance.sim.kubeapi import EmulatedApi
from acceptance.sim.model import Fault, SimRunner, load_scenario


@dataclass
class SimulatedCluster:
    """The simulator and its API server, started and stopped with the session."""

    runner: SimRunner
    api: EmulatedApi

    @classmethod
    def start(cls, profile: Profile, faults: Sequence[Fault]) -> SimulatedCluster:
        """`faults`: the acceptance-time ones (criterion 5's belong to its simulated probation)."""
        if profile.sim is None:
            raise ProfileError(f"{profile.path}: backend sim needs a 'sim' section")
        scenario = load_scenario(profile.sim.scenario)
        runner = SimRunner.from_scenario(scenario, faults, seed=profile.sim.seed)
        namespace = str(profile.kube.get("namespace", "default"))
        api = EmulatedApi(runner, time_scale=profile.sim.time_scale, namespaces=("default", namespace),
                          image_pull=scenario.image_pull)  # fmt: skip
        api.start()
        return cls(runner=runner, api=api)

    @property
    def kubeconfig(self) -> Path:
        return self.api.kubeconfig_path

    def close(self) -> None:
        self.api.close()
