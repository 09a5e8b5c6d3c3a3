"""``--cluster=sim-slurm``: the Slurm backend, unchanged, against a real slurmctld and one slurmd per node.

A profile with backend ``slurm`` and a ``sim`` section. The controller process starts the simulated
Slurm (`acceptance.sim.slurm.daemons`), the simulator behind a Unix socket and the same tool shims
as ``--cluster=sim-ssh`` (`acceptance.sim.ssh.shims`). The jobs' steps find the shims first on their
PATH, through a wrapper per tool that says which node it runs on (``SLURMD_NODENAME``) and turns a
Slurm task rank into the rank the shims' rendezvous reads. Faults: the simulator's (``--sim-fault``
as for ``--cluster=sim``), plus ``node-drain@NODE`` (drained with a reason by an admin),
``slurmd-down@NODE`` (the node's slurmd stopped: NOT_RESPONDING, then DOWN) and ``node-reserved@NODE``
(a MAINT reservation ``sim-maint-NODE`` holds the node from now on, for a day).
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from acceptance.clusters.sim_probation import SimulatedPeriod
from acceptance.clusters.slurm.cluster import SlurmCluster
from acceptance.clusters.slurm.transport import LocalTransport
from acceptance.errors import AcceptanceError, UsageError
from acceptance.profile import Profile, SlurmSettings
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.ssh.hosts import SYSTEM_PATH
from acceptance.sim.ssh.server import SimServer
from acceptance.sim.ssh.shims import shims, write_shims

if TYPE_CHECKING:
    from acceptance.sim.slurm.daemons import SimSlurm

DRAIN_REASON = "recovery-acceptance simulator: node-drain fault (an admin drained it)"
RESERVATION = "sim-maint-{node}"  # the node-reserved fault's MAINT reservation (not the profile's)
SLURMD_DOWN_S = 60.0  # how long to wait for slurmctld to notice a stopped slurmd


_RANK = """\
if [ -n "${SLURM_PROCID:-}" ] && [ "${SLURM_NTASKS:-1}" -gt 1 ] && [ -z "${OMPI_COMM_WORLD_RANK:-}" ]; then
  export OMPI_COMM_WORLD_RANK="$SLURM_PROCID" OMPI_COMM_WORLD_SIZE="$SLURM_NTASKS"
  export OMPI_MCA_ess_base_jobid="slurm-$SLURM_JOB_ID.${SLURM_STEP_ID:-0}"
fi
"""


def step_wrapper(tool: str, folder: str) -> str:
    """The wrapper a job step runs for `tool`: the node the shims expect and, for a tool whose ranks meet
    (nccl-tests, the training job), the Slurm task rank as the rank the rendezvous reads; then the shim."""
    q = shlex.quote(folder)
    ranked = tool.endswith("_perf") or tool.startswith("python")
    return (
        f"#!/bin/sh\n# {tool} in a job step of the simulated Slurm: the sim-ssh shim, told its node and rank\n"
        f"export SIM_SSH_DIR={q}\n"
        'export SIM_SSH_NODE="${SLURMD_NODENAME:-${SIM_SSH_NODE:-}}"\n'
        + (_RANK if ranked else "")
        + f'exec {q}/bin/{tool} "$@"\n'
    )


class SimulatedSlurmCluster(SimulatedPeriod, SlurmCluster):
    """The Slurm backend over the simulated Slurm of this run."""

    def __init__(
        self, profile: Profile, run_id: str, settings: SlurmSettings, env: Mapping[str, str],
        faults: SimFaults, folder: Path | None, slurm: SimSlurm | None, server: SimServer | None,
    ) -> None:  # fmt: skip
        super().__init__(profile, run_id, LocalTransport(env, inherit=False), settings)
        self.faults = faults
        self.folder = folder
        self.slurm = slurm
        self.server = server
        self.env = dict(env)

    @classmethod
    def start(cls, profile: Profile, run_id: str, faults: SimFaults) -> SimulatedSlurmCluster:
        from acceptance.sim.model import SimRunner, load_scenario
        from acceptance.sim.slurm.daemons import SimSlurm, require

        require()
        if profile.sim is None:
            raise UsageError(f"{profile.path}: a simulated Slurm cluster needs a 'sim' section")
        try:
            SimFaults(faults.scheduler).check(profile.nodes)  # Slurm drains a node of the profile's partition
            runner = SimRunner.from_scenario(load_scenario(profile.sim.scenario), faults.acceptance,
                                             seed=profile.sim.seed)  # fmt: skip
            faults.check([n.name for n in runner.cluster.nodes])
        except AcceptanceError as exc:
            raise UsageError(str(exc)) from None
        unknown = [n for n in profile.nodes if not runner.cluster.has_node(n)]
        if unknown:
            raise UsageError(f"{profile.path}: nodes {', '.join(unknown)} are not in the simulated cluster")
        folder = Path(tempfile.mkdtemp(prefix="ra-sim-slurm-"))
        server: SimServer | None = None
        slurm: SimSlurm | None = None
        try:
            folder.chmod(0o755)
            (folder / "rendezvous").mkdir()
            write_shims(folder, runner.versions.os_image, runner.versions.dcgm)
            steps = folder / "step-bin"
            steps.mkdir()
            for tool in shims("python", "python", "", ""):
                path = steps / tool
                path.write_text(step_wrapper(tool, str(folder)))
                path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            server = SimServer(folder, runner, profile.sim.time_scale)
            server.start()
            slurm = SimSlurm.start(profile.nodes, gpus_per_node=profile.gpus_per_node,
                                   cpus_per_node=max(2, profile.gpus_per_node))  # fmt: skip
            env = {**slurm.env(), "PATH": ":".join((str(steps), *SYSTEM_PATH)), "SIM_SSH_DIR": str(folder)}
            env = {k: v for k, v in env.items() if k in ("PATH", "SLURM_CONF", "SIM_SSH_DIR", "HOME", "LANG", "USER")}
            settings = dataclasses.replace(profile.slurm or SlurmSettings(), run_dir=str(folder / "runs"),
                                           login=None, partition=(profile.slurm.partition if profile.slurm else None)
                                           or slurm.spec.partition)  # fmt: skip
            for fault in faults.scheduler:
                if fault.kind == "node-drain":
                    slurm.drain(fault.node, DRAIN_REASON)
                elif fault.kind == "node-reserved":
                    slurm.reserve(RESERVATION.format(node=fault.node), [fault.node])
                else:
                    slurm.stop_slurmd(fault.node)
            down = [f.node for f in faults.scheduler if f.kind == "slurmd-down"]
            if down:
                slurm.wait_nodes(lambda n: not n.state.usable, SLURMD_DOWN_S, "the stopped slurmd noticed", down)
            return cls(profile, run_id, settings, env, faults, folder, slurm, server)
        except BaseException:
            if slurm is not None:
                slurm.stop()
            if server is not None:
                server.close()
            shutil.rmtree(folder, ignore_errors=True)  # made above by this process
            raise

    @classmethod
    def attach(cls, profile: Profile, run_id: str, info: Mapping[str, str]) -> SimulatedSlurmCluster:
        if not info.get("slurm_conf") or not info.get("sim_dir"):
            raise UsageError("this pytest process was not told where the run's simulated Slurm is")
        folder = Path(info["sim_dir"])
        env = {"SLURM_CONF": info["slurm_conf"], "SIM_SSH_DIR": str(folder),
               "PATH": ":".join((str(folder / "step-bin"), *SYSTEM_PATH))}  # fmt: skip
        settings = dataclasses.replace(profile.slurm or SlurmSettings(), run_dir=str(folder / "runs"), login=None,
                                       partition=info.get("partition") or None)  # fmt: skip
        faults = SimFaults.from_text(info.get("faults", ""))
        return cls(profile, run_id, settings, env, faults, None, None, None)

    def describe(self) -> list[str]:
        return [
            f"SIMULATED Slurm cluster: a real slurmctld and {len(self.profile.nodes)} slurmd on loopback "
            f"(SLURM_CONF {self.env.get('SLURM_CONF')}), job steps running tool shims backed by the simulator; "
            f"faults: {self.faults.shown()}",
            *super().describe(),
        ]

    def attach_info(self) -> dict[str, str]:
        return {"slurm_conf": self.env.get("SLURM_CONF", ""), "sim_dir": self.env.get("SIM_SSH_DIR", ""),
                "partition": self.settings.partition or "", "faults": str(self.faults)}  # fmt: skip

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.slurm is not None:
                self.slurm.stop()
                self.slurm = None
            if self.server is not None:
                self.server.close()
                self.server = None
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)  # made by `start` in this process
                self.folder = None
