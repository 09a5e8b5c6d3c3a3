"""Lost training time of an incident, term by term, and whether restarting on fewer nodes loses less.

    lost = work since the last checkpoint + detection + diagnosis and repair + revalidation
           + restart and checkpoint load

in hours of the whole job, and in GPU-hours (hours x nodes x GPUs per node: every GPU of the job
waits through every term). Who controls each term: the checkpoint interval (hence the work since
the last checkpoint) and the restart are the customer's; detection, repair and revalidation the
provider's. The seed's example: checkpoints every 60 min, failure 50 min after the last save,
16 nodes x 8 GPUs → 50/60 h x 128 = 106.7 GPU-hours of lost work before repair begins.

Resharding (`reshard`): instead of waiting for the repair (R) and revalidation (V), restart at once
on N of the job's nodes (restart S), run at the fraction f of full throughput that N nodes give,
and restart on the full set (S again) when it is back. Both paths are compared over the same
horizon H = R + V + S (when the waiting path runs at full speed again):

    waiting:    lost_wait    = R + V + S
    resharding: lost_reshard = H + S - f * max(0, R + V - S)

so resharding loses less exactly when f * (R + V - S) > S, i.e. when R + V > S + S / f.
f is the data-parallel share: dp(N) / dp(full) with dp(n) = floor(n x GPUs / (TP x PP)), when the
global batch stays the same (the baseline's step time scales by dp(full)/dp(N)), or a measured
step time at N nodes (f = full step time / step time at N).

Pure: numbers in, figures out; a bad input is a `UsageError` that names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from acceptance.errors import UsageError

H = 3600.0


@dataclass(frozen=True)
class Term:
    name: str
    owner: str  # "customer" | "provider"
    seconds: float
    measured: bool
    formula: str

    @property
    def hours(self) -> float:
        return self.seconds / H


@dataclass(frozen=True)
class LostTime:
    terms: tuple[Term, ...]
    nodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def hours(self) -> float:
        return sum(t.hours for t in self.terms)

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.gpus

    def gpu_hours_of(self, term: Term) -> float:
        return term.hours * self.gpus

    def by_owner(self) -> dict[str, float]:
        out: dict[str, float] = {"customer": 0.0, "provider": 0.0}
        for t in self.terms:
            out[t.owner] += t.hours
        return out

    @property
    def before_repair_gpu_hours(self) -> float:
        """GPU-hours of work lost before repair begins: the work since the last checkpoint."""
        return self.gpu_hours_of(self.terms[0])


def _check(name: str, seconds: float | None) -> float:
    if seconds is None:
        raise UsageError(f"lost-time: {name} is needed (e.g. --{name.replace('_', '-')} 30m)")
    if not math.isfinite(seconds) or seconds < 0:
        raise UsageError(f"lost-time: {name} must be a duration >= 0, not {seconds!r}")
    return seconds


def lost_time(
    *,
    checkpoint_every_s: float,
    failed_after_s: float | None,
    nodes: int,
    gpus_per_node: int,
    detection_s: float,
    repair_s: float,
    revalidation_s: float,
    restart_s: float,
    measured: frozenset[str] = frozenset(),
) -> LostTime:
    """The five terms; `failed_after_s` None means unknown, taken as half the interval on average.

    `measured` names the terms that come from evidence rather than estimates.
    """
    if not math.isfinite(checkpoint_every_s) or checkpoint_every_s <= 0:
        raise UsageError(f"lost-time: the checkpoint interval must be positive, not {checkpoint_every_s!r}")
    if nodes < 1 or gpus_per_node < 1:
        raise UsageError(f"lost-time: nodes and GPUs per node must be at least 1 (got {nodes} x {gpus_per_node})")
    if failed_after_s is None:
        since, formula = checkpoint_every_s / 2, "checkpoint interval / 2 (failure time unknown: the average)"
    else:
        since = _check("failed_after", failed_after_s)
        if since > checkpoint_every_s:
            raise UsageError(
                f"lost-time: the failure came {since / 60:g} min after the last checkpoint, later than the "
                f"checkpoint interval of {checkpoint_every_s / 60:g} min: a checkpoint was missed (use the time "
                "since the last checkpoint actually saved, or the real interval)"
            )
        formula = "time from the last checkpoint save to the failure"
    terms = (
        Term("work since the last checkpoint", "customer", since, "failed_after" in measured, formula),
        Term(
            "detection",
            "provider",
            _check("detection", detection_s),
            "detection" in measured,
            "failure to the incident being opened",
        ),
        Term(
            "diagnosis and repair",
            "provider",
            _check("repair", repair_s),
            "repair" in measured,
            "incident opened to the repaired nodes handed back",
        ),
        Term(
            "revalidation",
            "provider",
            _check("revalidation", revalidation_s),
            "revalidation" in measured,
            "the acceptance run until its pass",
        ),
        Term(
            "restart and checkpoint load",
            "customer",
            _check("restart", restart_s),
            "restart" in measured,
            "job restart until training steps again",
        ),
    )
    return LostTime(terms, nodes, gpus_per_node)


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    pp: int = 1

    def dp(self, nodes: int, gpus_per_node: int) -> int:
        return (nodes * gpus_per_node) // (self.tp * self.pp)


@dataclass(frozen=True)
class Reshard:
    to_nodes: int
    fraction: float  # throughput on `to_nodes` / full throughput
    fraction_formula: str
    lost_wait_h: float
    lost_reshard_h: float
    break_even_repair_h: float | None
    checks: tuple[tuple[str, bool | None, str], ...]  # (condition, holds?, why)
    step_time_full_s: float | None = None
    step_time_reshard_s: float | None = None

    @property
    def better(self) -> str:
        return "reshard" if self.lost_reshard_h < self.lost_wait_h else "wait"


def reshard(
    lost: LostTime,
    to_nodes: int,
    *,
    layout: Layout = Layout(),
    step_time_full_s: float | None = None,
    step_time_reshard_s: float | None = None,
    params: float | None = None,
    state_bytes_per_param: float | None = None,
    gpu_memory_bytes: float | None = None,
    sharded_state: bool = False,
) -> Reshard:
    """Compare waiting for the repair with restarting on `to_nodes` nodes meanwhile (see the module docstring)."""
    full, g = lost.nodes, lost.gpus_per_node
    if not 1 <= to_nodes < full:
        raise UsageError(f"lost-time: --reshard-to must be between 1 and {full - 1} (the job has {full} nodes)")
    if layout.tp < 1 or layout.pp < 1:
        raise UsageError("lost-time: --tp and --pp must be at least 1")
    checks: list[tuple[str, bool | None, str]] = []
    divides = (to_nodes * g) % (layout.tp * layout.pp) == 0
    checks.append(
        (
            "the parallel layout divides the remaining GPUs",
            divides,
            f"{to_nodes} x {g} = {to_nodes * g} GPUs, TP x PP = {layout.tp} x {layout.pp} = "
            f"{layout.tp * layout.pp}: data-parallel size {layout.dp(to_nodes, g)}"
            + ("" if divides else " with GPUs left over"),
        )
    )
    if params is not None and state_bytes_per_param is not None and gpu_memory_bytes is not None:
        shards = layout.tp * layout.pp * (layout.dp(to_nodes, g) if sharded_state else 1)
        per_gpu = params * state_bytes_per_param / max(shards, 1)
        fits = per_gpu <= gpu_memory_bytes
        how = "over TP x PP x DP (sharded optimizer)" if sharded_state else "over TP x PP (replicated per DP rank)"
        checks.append(
            (
                "model and optimizer state fit in GPU memory",
                fits,
                f"{params:.3g} params x {state_bytes_per_param:g} B / {shards} shards {how} = "
                f"{per_gpu / 2**30:.1f} GiB per GPU vs {gpu_memory_bytes / 2**30:.1f} GiB "
                "(activations not counted)",
            )
        )
    else:
        checks.append(
            (
                "model and optimizer state fit in GPU memory",
                None,
                "not checked: give --params, --optimizer-bytes-per-param and --gpu-memory",
            )
        )
    checks.append(
        (
            "the data loader state can be restored at the new size",
            None,
            "not checkable here: the job's data loader must support a different data-parallel size",
        )
    )
    if step_time_reshard_s is not None and step_time_full_s is not None:
        if step_time_reshard_s <= 0 or step_time_full_s <= 0:
            raise UsageError("lost-time: step times must be positive")
        fraction = step_time_full_s / step_time_reshard_s
        formula = (
            f"measured: full step time {step_time_full_s:g} s / step time on {to_nodes} nodes {step_time_reshard_s:g} s"
        )
    else:
        dp_full, dp_to = layout.dp(full, g), layout.dp(to_nodes, g)
        if dp_to < 1:
            raise UsageError(
                f"lost-time: {to_nodes} node(s) cannot hold one replica of TP x PP = {layout.tp * layout.pp} GPUs"
            )
        fraction = dp_to / dp_full
        formula = f"data-parallel share dp({to_nodes}) / dp({full}) = {dp_to} / {dp_full}"
        if step_time_full_s is not None:
            step_time_reshard_s = step_time_full_s * dp_full / dp_to
    terms = {t.name: t.hours for t in lost.terms}
    r_v = terms["diagnosis and repair"] + terms["revalidation"]
    s = terms["restart and checkpoint load"]
    lost_wait = r_v + s
    lost_re = lost_wait + s - fraction * max(0.0, r_v - s)
    break_even = s + s / fraction if fraction > 0 else None
    return Reshard(
        to_nodes,
        fraction,
        formula,
        lost_wait,
        lost_re,
        break_even,
        tuple(checks),
        step_time_full_s,
        step_time_reshard_s,
    )
