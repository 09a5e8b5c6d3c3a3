"""Criterion 5 on a simulated backend: the production period after the acceptance, simulated with the
run's probation faults (``--sim-fault KIND...@OFFSET``), instead of a Prometheus of the cluster."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from acceptance.profile import Profile
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.probation import SimulatedProbation


class SimulatedPeriod:
    """`acceptance.clusters.base.SimulatesProbation` for the simulated backends (a mixin: they hold
    `profile`, `faults` and `run_id`)."""

    profile: Profile
    faults: SimFaults
    run_id: str

    def probation_period(self, nodes: Sequence[str], start: datetime, length_s: float) -> SimulatedProbation:
        return SimulatedProbation.open(self.profile, nodes, start, length_s, self.faults.probation, self.run_id)
