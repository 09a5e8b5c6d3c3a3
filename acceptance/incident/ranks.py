"""Which ranks ran on which nodes, merged from every source that says so.

Sources, strongest first: NCCL INFO lines (``host:pid:tid [dev] NCCL INFO comm ... rank R``), torchrun's
failure summaries (``host`` / ``rank``), the launcher (``mpirun noticed that process rank R ... on node
H``), and pod placement (MPIJob workers by replica index x slots, in hostfile order: Open MPI's default
by-slot mapping). A host becomes a node through the pods' names and hostnames (``job-worker-3``, or
``job-worker-3.job.ns.svc``), or when it is itself a node of the cluster (host networking, bare metal).
Two sources that disagree about a rank are reported as a conflict, never silently merged.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from acceptance.incident.model import RankEntry, RankMap
from acceptance.tools.launcher import LauncherEvent
from acceptance.tools.torchlogs import TorchLog

REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"


def node_of(host: str | None, placement: Mapping[str, str], nodes: Collection[str]) -> str | None:
    """The node a host name points to: a pod's name or hostname (or its first DNS label), or a node."""
    if not host:
        return None
    short = host.split(".", 1)[0]
    for candidate in (host, short):
        if candidate in placement:
            return placement[candidate]
    return host if host in nodes else short if short in nodes else None


def rank_map(
    logs: Sequence[TorchLog],
    launcher: Sequence[LauncherEvent],
    placement: Mapping[str, str],
    nodes: Iterable[str],
    *,
    workers: Sequence[tuple[int, str]] = (),
    slots: int | None = None,
    world_size: int | None = None,
) -> RankMap:
    """`workers`: (replica index, node) of MPI workers; with `slots`, ranks index*slots.. are on that node."""
    nodes = set(nodes)
    found: dict[int, dict[str, set[str]]] = {}  # rank -> host -> sources

    def add(rank: int, host: str, source: str) -> None:
        found.setdefault(rank, {}).setdefault(host, set()).add(source)

    for log in logs:
        for fact in log.ranks:
            add(fact.rank, fact.host, fact.source)
    for event in launcher:
        if event.kind == "rank-exited" and event.rank is not None and event.host:
            add(event.rank, event.host, "mpirun")
    if slots:
        for index, node in workers:
            for rank in range(index * slots, (index + 1) * slots):
                add(rank, node, "placement")
    entries: list[RankEntry] = []
    conflicts: list[str] = []
    placed = set(placement.values()) | set(nodes)
    for rank in sorted(found):
        by_where: dict[str, tuple[list[str], set[str]]] = {}
        for host, sources in sorted(found[rank].items()):
            where = node_of(host, placement, nodes) or host
            hosts, kept = by_where.setdefault(where, ([], set()))
            hosts.append(host)
            kept |= sources
        if len(by_where) > 1:
            said = "; ".join(f"{w} ({', '.join(sorted(s))})" for w, (_, s) in sorted(by_where.items()))
            conflicts.append(f"rank {rank}: the sources disagree: {said}")
        where, (hosts, sources) = max(by_where.items(), key=lambda item: len(item[1][1]))
        host = next((h for h in hosts if h != where), hosts[0])
        entries.append(RankEntry(rank, host, where if where in placed else None, tuple(sorted(sources))))
    sizes = [log.world_size for log in logs if log.world_size]
    world = world_size or (max(sizes) if sizes else None)
    return RankMap(world, tuple(entries), tuple(conflicts))
