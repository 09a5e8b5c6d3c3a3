"""From parsed inputs and what the cluster and the agreement say, to the `Bundle` (pure).

Two steps, so that the I/O layer can ask the cluster about the nodes the evidence points at:
`findings(inputs, context)` derives fields 1-5 and the affected nodes; `bundle(...)` adds the
nodes' cluster evidence (field 6), the change log (field 7) and the severity, and lists what is
missing. Nothing here raises for bad or partial input: what could not be derived is named in
`Bundle.missing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from acceptance.incident import severity as sev
from acceptance.incident.affected import affected_nodes
from acceptance.incident.inputs import Parsed
from acceptance.incident.model import (
    AffectedNode,
    Bundle,
    ChangeLog,
    ClusterIds,
    InputFile,
    NcclOutput,
    NodeEvidence,
    RankMap,
)
from acceptance.incident.nccl import groups
from acceptance.incident.ranks import rank_map
from acceptance.incident.window import Analysis, analyse


@dataclass(frozen=True)
class Context:
    cluster: str
    created: datetime  # naive UTC
    nodes: tuple[str, ...] = ()  # the agreement's node set
    gpus_per_node: int | None = None
    provider: Mapping[str, str] = field(default_factory=dict)
    full_size: int | None = None
    full_size_from: str = ""
    policy: sev.SeverityPolicy = field(default_factory=sev.SeverityPolicy)
    ticket: str | None = None
    harness_version: str = ""
    simulated: bool = False
    offset: timedelta = timedelta(0)
    around: datetime | None = None
    placement: Mapping[str, str] = field(default_factory=dict)  # pod name / hostname → node
    workers: tuple[tuple[int, str], ...] = ()  # (MPI worker replica index, node)
    slots: int | None = None


@dataclass(frozen=True)
class Findings:
    ranks: RankMap
    nccl: NcclOutput
    analysis: Analysis
    affected: tuple[AffectedNode, ...]
    job_nodes: tuple[str, ...]


def findings(inputs: Sequence[Parsed], ctx: Context) -> Findings:
    logs = [i.torch for i in inputs]
    events = [e for i in inputs for e in i.launcher]
    ranks = rank_map(logs, events, ctx.placement, ctx.nodes, workers=ctx.workers, slots=ctx.slots)
    nccl = groups(inputs, ranks, ctx.offset)
    analysis = analyse(inputs, nccl, ctx.offset, ctx.around)
    affected = affected_nodes(inputs, ranks, nccl, dict(ctx.placement), ctx.nodes)
    job_nodes = tuple(sorted({e.node for e in ranks.entries if e.node} | set(ctx.placement.values())))
    return Findings(ranks, nccl, analysis, affected, job_nodes)


def _missing(inputs: Sequence[Parsed], f: Findings, ctx: Context) -> list[str]:
    out: list[str] = []
    for item in inputs:
        out += [f"{item.label}: {p}" for p in item.problems]
    if not inputs:
        out.append("no job logs were given (--job-logs PATH or --job SELECTOR)")
    if not ctx.provider:
        out.append("field 1: the profile names no provider identifiers (provider: cluster_id, data_center)")
    if not f.affected:
        out.append(
            "field 1: no evidence names a node (no lost rank, launcher host, Xid or bad condition); "
            "the acceptance suite's fabric check localises a slow node"
        )
    w = f.analysis.window
    if w.how == "none":
        out.append(f"field 2: no window: {w.detail}")
    elif w.first_bad_utc is None and w.last_healthy_utc is None:
        out.append("field 2: the logs carry no times for the window's steps (UTC unknown, steps only)")
    if not f.ranks.entries:
        out.append(
            "field 3: no rank → node mapping: the logs have no NCCL INFO lines, torchrun summaries or launcher "
            "lines naming hosts; give --job SELECTOR (pod placement) or rerun with NCCL_DEBUG=INFO"
        )
    elif f.ranks.world_size and len(f.ranks.entries) < f.ranks.world_size:
        out.append(f"field 3: {len(f.ranks.entries)} of {f.ranks.world_size} ranks mapped to a host")
    if not f.nccl.groups:
        out.append("field 4: no NCCL or watchdog error lines in the logs")
    if not f.analysis.series.rows:
        out.append("field 5: no step-time series: no training steps in the logs")
    if ctx.full_size is None:
        out.append("severity: no baseline full size (nodes x GPUs) to compare the job's size with")
    return out


def _years(inputs: Sequence[Parsed]) -> str:
    """Which year the time stamps without one (c10d ``E626 06:24:44``, glog) were read in, and from what."""
    dated: dict[str, list[str]] = {}
    undated = [i.label for i in inputs if i.torch.yearless and i.torch.year is None]
    for item in inputs:
        if item.torch.yearless and item.torch.year is not None:
            dated.setdefault(item.year_from or f"{item.torch.year}", []).append(item.label)
    parts = [f"{how} ({_some(labels)})" for how, labels in dated.items()]
    if undated:
        parts.append(f"left undated: no year known ({_some(undated)})")
    return f"; time stamps without a year (c10d, glog): {'; '.join(parts)}" if parts else ""


def _some(labels: list[str]) -> str:
    return ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")


def bundle(
    inputs: Sequence[Parsed],
    f: Findings,
    ctx: Context,
    nodes: Sequence[NodeEvidence],
    changes: ChangeLog,
    notes: Sequence[str] = (),
) -> Bundle:
    world = f.ranks.world_size
    impact = sev.Impact(
        f.analysis.window, f.analysis.ratio, f.analysis.slow_for_s, world, ctx.full_size, f.analysis.job_failed
    )
    level, why = sev.propose(impact, ctx.policy.degraded)
    own = [g for g in f.nccl.groups if g.kind == "exception"]
    hardware = any(
        g.kind in ("cuda-error", "nccl-error", "nccl-warn", "watchdog-timeout") for g in f.nccl.groups
    ) or any(i.kernel is not None or any(e.kind in ("node-failure", "ssh-failed") for e in i.launcher) for i in inputs)
    if level == "down" and own and not hardware:
        why += (
            f"; but the logs show the job's own Python exception ({own[0].text[:100]}) and no GPU, NCCL or node "
            "error: check the job itself before the cluster"
        )
    severity = sev.severity(ctx.policy, level, why, ctx.created)
    missing = [*_missing(inputs, f, ctx), *notes]
    if level is not None and not severity.clocks:
        missing.append(f"severity: the profile states no clocks for level {level!r} (severity.levels.{level})")
    cluster = ClusterIds(
        name=ctx.cluster,
        provider=dict(ctx.provider),
        node_count=len(ctx.nodes) or None,
        job_nodes=f.job_nodes,
        affected=f.affected,
    )
    files = tuple(InputFile(i.label, i.kinds, i.sha256, i.lines) for i in inputs)
    clock = "UTC" if not ctx.offset else f"UTC{'+' if ctx.offset >= timedelta(0) else '-'}{abs(ctx.offset)}"
    clock += _years(inputs)
    return Bundle(
        created_utc=ctx.created,
        ticket=ctx.ticket,
        harness_version=ctx.harness_version,
        simulated=ctx.simulated,
        log_clock=clock,
        cluster=cluster,
        window=f.analysis.window,
        ranks=f.ranks,
        nccl=f.nccl,
        steps=f.analysis.series,
        nodes=tuple(nodes),
        changes=changes,
        severity=severity,
        inputs=files,
        missing=tuple(missing),
    )
