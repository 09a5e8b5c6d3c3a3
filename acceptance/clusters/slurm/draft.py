"""A first ``backend: slurm`` profile drafted from the live controller (`acceptance init NAME --slurm`).

The controller is asked what the preflight asks (``scontrol --version``, ``scontrol -o show node``): the
partition's nodes are the node set, with their GPUs as gres. The GPU product, driver and CUDA come from the
preflight's own inventory, one ``srun`` step per usable node (a job named and commented with a run id of
its own, as every job of the harness is); a node Slurm would not run it on (drained, down, not
responding) stays in the node set with a note saying its state and reason, and a step that cannot run
leaves the GPU facts out with a note saying why. A partition the controller does not know stops the
draft naming the partitions it has. `draft_slurm_profile` is pure.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from acceptance.clusters.base import NodeInfo
from acceptance.clusters.drafting import agreement_lines, common, env_and_nodes_lines, most_gpus, q, signers_lines
from acceptance.clusters.slurm.transport import LocalTransport, LoginTransport, Transport
from acceptance.errors import AcceptanceError, ClusterError, ParseError, UsageError
from acceptance.profile import load_profile_file
from acceptance.tools import slurm as tools


@dataclass(frozen=True)
class SlurmAccess:
    """How `acceptance init` reaches the scheduler, and which of its partitions holds the agreement's nodes."""

    partition: str
    login: str | None = None
    account: str | None = None
    run_dir: str | None = None


@dataclass(frozen=True)
class SlurmFacts:
    """What the controller and the inventory step said."""

    version: str
    where: str
    nodes: tuple[tools.Node, ...]  # the partition's nodes, in the controller's order
    infos: Mapping[str, NodeInfo] = field(default_factory=dict)  # the preflight's view of each node
    step_problem: str = ""  # why the inventory step gave no GPU facts ("" when it ran)


def _transport(access: SlurmAccess) -> Transport:
    return LoginTransport(access.login) if access.login else LocalTransport()


def discover_slurm(access: SlurmAccess, transport: Transport | None = None) -> SlurmFacts:
    """Ask the controller, then the nodes (see the module docstring); ClusterError when the controller does not
    answer, UsageError when the partition is not one of its own."""
    shell = transport or _transport(access)
    try:
        return _discover(access, shell)
    finally:
        if transport is None:
            shell.close()


def _discover(access: SlurmAccess, shell: Transport) -> SlurmFacts:
    version = shell.run("scontrol --version", 60)
    if not version.ok:
        raise ClusterError(f"the Slurm controller does not answer on {shell.where}: {version.said()}")
    listed = shell.run("scontrol -o show node", 60)
    if not listed.ok:
        raise ClusterError(f"the Slurm controller does not answer on {shell.where}: {listed.said()}")
    try:
        every = tools.parse_nodes(listed.stdout, "scontrol -o show node").nodes
    except ParseError as exc:
        raise ClusterError(f"scontrol -o show node: {exc}") from None
    nodes = tuple(n for n in every if access.partition in n.partitions)
    if not nodes:
        known = sorted({p for n in every for p in n.partitions})
        raise UsageError(f"partition {access.partition!r} has no node on the Slurm cluster of {shell.where} "
                         f"(its partitions: {', '.join(known) or 'none'})")  # fmt: skip
    said = version.stdout.strip() or "slurm (unknown)"
    facts = SlurmFacts(said, shell.where, nodes)
    return _inventory(access, shell, facts)


def _inventory(access: SlurmAccess, shell: Transport, facts: SlurmFacts) -> SlurmFacts:
    """The preflight's inventory of the nodes, by the backend itself over a profile of the controller's facts."""
    from dataclasses import replace

    from acceptance.clusters.slurm.cluster import SlurmCluster

    text, _ = draft_slurm_profile("init-probe", access, facts)
    with tempfile.TemporaryDirectory(prefix="ra-init-slurm-") as folder:
        path = Path(folder) / "cluster.yaml"
        path.write_text(text, encoding="utf-8")
        profile = load_profile_file(path)
    assert profile.slurm is not None
    run_id = f"ra-init-{datetime.now(UTC):%Y%m%d%H%M%S}"
    cluster = SlurmCluster(profile, run_id, shell, profile.slurm)
    try:
        inventory = cluster.inventory()
    except AcceptanceError as exc:
        return replace(facts, step_problem=str(exc))
    infos = {i.name: i for i in inventory.nodes}
    answered = [i for i in infos.values() if i.ready]
    problem = "" if answered else "; ".join(f"{i.name}: {i.conditions.get('Ready')}" for i in inventory.nodes[:3])
    return replace(facts, infos=infos, step_problem=problem)


def draft_slurm_profile(name: str, access: SlurmAccess, facts: SlurmFacts) -> tuple[str, tuple[str, ...]]:
    """The profile text for cluster `name` (the partition's nodes are the node set), and the notes."""
    notes: list[str] = []
    nodes = list(facts.nodes)
    gpus, odd = most_gpus({n.name: n.gpus for n in nodes})
    if gpus == 0:
        raise ValueError(f"no node of partition {access.partition} offers GPUs as gres (gpu:...): "
                         f"{', '.join(n.name for n in nodes[:5])}")  # fmt: skip
    if odd:
        notes.append(f"most nodes of partition {access.partition} offer {gpus} GPUs, these differ: {', '.join(odd)}")
    unusable = [f"{n.name}: {reason}" for n in nodes if (reason := _not_usable(n)) is not None]
    if unusable:
        notes.append("not usable now (kept in the node set; preflight will fail until fixed): " + "; ".join(unusable))
    stepped = [facts.infos[n.name] for n in nodes if n.name in facts.infos and facts.infos[n.name].ready]
    product, others = common([i.labels.get("nvidia.com/gpu.product") for i in stepped])
    if others:
        notes.append(f"GPU products differ: {product} on most nodes, also {', '.join(others)}")
    driver, drivers = common([i.labels.get("nvidia.com/cuda.driver-version.full") for i in stepped])
    if drivers:
        notes.append(f"driver versions differ: {driver} on most nodes, also {', '.join(drivers)}")
    cuda, _ = common([i.labels.get("nvidia.com/cuda.runtime-version.full") for i in stepped])
    if facts.step_problem:
        notes.append(f"the inventory step (srun on the usable nodes) gave no GPU facts, so gpu_product is left out: "
                     f"{facts.step_problem}")  # fmt: skip
    types = sorted({g.type for n in nodes for g in n.gres if g.name == "gpu" and g.type})
    summary = f"{len(nodes)} x {gpus} {product or 'GPU'} nodes in Slurm partition {access.partition}"
    slurm_lines = ["slurm:", f"  partition: {q(access.partition)}"]
    account = "  # account: ACCOUNT         # sbatch --account, where the site needs one"
    login = "  # login: HOST              # run the commands on a login node over SSH (else: this machine)"
    slurm_lines += [
        f"  account: {q(access.account)}" if access.account else account,
        "  # reservation: RESV        # the maintenance reservation the acceptance runs in, if any",
        f"  login: {q(access.login)}" if access.login else login,
    ]
    slurm_lines += [
        "  launch: srun               # or mpirun (Open MPI inside the allocation): recorded in the baseline",
        "  mpi: pmi2                  # srun --mpi=",
        f"  run_dir: {q(access.run_dir or '/tmp/recovery-acceptance-slurm')}"
        + ("" if access.run_dir else "   # the jobs' outputs: a shared file system the login node sees"),
        "  pending_timeout: 10m       # a job still PENDING this long fails with the scheduler's reason",
    ]
    env = env_and_nodes_lines(gpus, product, driver, cuda, [n.name for n in nodes])
    lines = [
        f"# Drafted by `acceptance init` from the Slurm controller on {facts.where} ({facts.version}), partition",
        f"# {access.partition}: {len(nodes)} nodes, {len(stepped)} of them answered the inventory step"
        + (f" (gres gpu types: {', '.join(types)})." if types else "."),
        "# Facts read from the cluster are values; the agreement's choices are commented defaults: review them",
        "# with the other party before recording the handover baseline.",
        f"cluster: {q(name)}",
        f"description: {q(summary)}",
        "backend: slurm",
        *signers_lines(),
        "",
        *slurm_lines,
        *env,
        "# localize:                 # Slurm nodes carry no labels: list the fabric to name a bad switch or link",
        "#   topology: {leaves: {leaf-01: [...]}, spines: {spine-01: [leaf-01]}}",
        "",
        *agreement_lines(),
    ]
    return "\n".join(lines) + "\n", tuple(notes)


def _not_usable(node: tools.Node) -> str | None:
    from acceptance.clusters.slurm.cluster import node_reason

    return None if node.state.usable else node_reason(node)
