"""Criterion 3: smoke-run step time against the pre-incident baseline.

Method (a ratio of medians with a moving-block bootstrap, which respects autocorrelated steps):
drop warm-up steps, the first steps after a restore, steps at eval/checkpoint events and outliers
(> `outlier_factor` × median); take r = median(smoke) / median(baseline) with its confidence
interval (vectorised numpy); PASS when the upper bound ≤ 1 + margin, FAIL when the lower bound
> 1 + margin, INCONCLUSIVE otherwise, with the number of further smoke steps that would
decide. Significance alone never fails a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from acceptance.judge.steptime_series import Steady, steady_series, step_times
from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.margins import Margin, Margins
from acceptance.tools.trainlog import TrainLog

__all__ = [
    "Steady",
    "StepTimePolicy",
    "judge_steptime",
    "run_to_run_spread",
    "steady_series",
    "step_table",
    "step_times",
]


# Rows per series in the verdict's table (plot data for the report), at most.
PLOT_ROWS = 5000


@dataclass(frozen=True)
class StepTimePolicy:
    """Thresholds of the step-time check; defaults from the research note."""

    margin: float = Margins.step_time_tolerance
    warmup_steps: int = 5
    warmup_intervals: int = 2
    after_restore_steps: int = 5
    outlier_factor: float = 3.0
    drop_event_steps: bool = True
    confidence: float = 0.95
    resamples: int = 2000
    block_length: int = 10
    min_steps: int = 30
    between_run_spread: float | None = None
    spread_floor: float = 0.02
    spread_blocks: int = 4
    max_bootstrap_n: int = 1000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{f.name} must be a finite number, got {value}")
        if not 0 < self.margin < 10:
            raise ValueError(f"margin must be a fraction like 0.05, got {self.margin}")
        if not 0.5 <= self.confidence < 1:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")
        if self.resamples < 100 or self.block_length < 1 or self.outlier_factor <= 1:
            raise ValueError("resamples must be ≥ 100, block_length ≥ 1, outlier_factor > 1")


def _block_medians(x: np.ndarray, resamples: int, block: int, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of `resamples` moving-block bootstrap resamples of x (one numpy pass)."""
    if len(x) > cap:  # thin long series: a wider (conservative) interval, bounded cost
        x = x[:: math.ceil(len(x) / cap)]
    n = len(x)
    block = max(1, min(block, n))
    nblocks = -(-n // block)
    windows = sliding_window_view(x, block)
    starts = rng.integers(0, n - block + 1, size=(resamples, nblocks))
    sample = windows[starts].reshape(resamples, nblocks * block)
    if nblocks * block != n:
        sample = np.ascontiguousarray(sample[:, :n])
    k = n // 2
    if n % 2:
        return np.partition(sample, k, axis=1)[:, k]
    part = np.partition(sample, [k - 1, k], axis=1)
    return 0.5 * (part[:, k - 1] + part[:, k])


def _mann_whitney_p(a: np.ndarray, b: np.ndarray, cap: int) -> float:
    """Two-sided Mann-Whitney U p-value, normal approximation (information only; long
    series are thinned to `cap` points)."""
    a = a[:: math.ceil(len(a) / cap)] if len(a) > cap else a
    b = b[:: math.ceil(len(b) / cap)] if len(b) > cap else b
    n1, n2 = len(a), len(b)
    ranks = pd.Series(np.concatenate([a, b])).rank().to_numpy()
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    sd = math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    if sd == 0:
        return 1.0
    z = (u - n1 * n2 / 2) / sd
    return 2 * (1 - NormalDist().cdf(abs(z)))


def run_to_run_spread(base: Steady, policy: StepTimePolicy) -> tuple[float, str, bool]:
    """Run-to-run spread of the baseline: (value, where it comes from, measured between runs)."""
    if policy.between_run_spread is not None:
        return policy.between_run_spread, "given", True
    medians = [float(np.median(seg)) for seg in base.segments if len(seg) >= policy.min_steps]
    if len(medians) >= 2:
        m = np.asarray(medians)
        if len(m) == 2:
            return float(abs(m[0] - m[1]) / m.mean()), f"{len(m)} baseline segments", True
        return (
            float(1.4826 * np.median(np.abs(m - np.median(m))) / np.median(m)),
            f"{len(m)} baseline segments",
            True,
        )
    blocks = np.array_split(base.values, policy.spread_blocks)
    m = np.array([np.median(b) for b in blocks if len(b)])
    within = float(1.4826 * np.median(np.abs(m - np.median(m))) / np.median(m)) if len(m) > 1 else 0.0
    return (
        max(within, policy.spread_floor),
        f"{len(m)} blocks of one run, floor {policy.spread_floor:.0%}",
        False,
    )


def _fmt_time(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s" if value >= 1 else f"{value * 1000:.1f} ms"
    return f"{value:.4g} {unit}"


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def judge_steptime(
    baseline: pd.Series | TrainLog,
    smoke: pd.Series | TrainLog,
    policy: StepTimePolicy = StepTimePolicy(),
    seed: int = 0,
    subject: str = "step time",
) -> Verdict:
    """Judge the smoke run's step time against the baseline's (see module docstring)."""
    base = steady_series(baseline, policy, "baseline")
    run = steady_series(smoke, policy, "smoke")
    evidence = [*base.evidence, *run.evidence]
    unit = base.unit if base.unit == run.unit else "mixed"
    margin = Margin.step_time(policy.margin)
    figures: dict[str, Figure] = {
        "margin": margin,
        "confidence": policy.confidence,
        "unit": unit,
        "n_smoke": len(run.values),
        "n_baseline": len(base.values),
        **{f"smoke_dropped_{k}": v for k, v in run.dropped.items()},
        **{f"baseline_dropped_{k}": v for k, v in base.dropped.items()},
    }
    table = step_table(base, run)
    if base.unit != run.unit:
        return Verdict(
            Status.ERROR,
            subject,
            f"cannot compare: baseline measures {base.unit}, smoke run {run.unit}",
            figures,
            tuple(evidence),
            table,
        )
    if len(base.values) < policy.min_steps or len(run.values) < policy.min_steps:
        short = "smoke run" if len(run.values) < policy.min_steps else "baseline"
        have = min(len(run.values), len(base.values)) if short == "smoke run" else len(base.values)
        figures["further_steps"] = policy.min_steps - len(run.values) if short == "smoke run" else None
        return Verdict(
            Status.INCONCLUSIVE,
            subject,
            f"only {have} steady steps in the {short} (need {policy.min_steps}); run longer to decide",
            figures,
            tuple(evidence),
            table,
        )
    rng = np.random.default_rng(seed)
    med_s, med_b = float(np.median(run.values)), float(np.median(base.values))
    boot_s = np.log(_block_medians(run.values, policy.resamples, policy.block_length, policy.max_bootstrap_n, rng))
    boot_b = np.log(_block_medians(base.values, policy.resamples, policy.block_length, policy.max_bootstrap_n, rng))
    log_r = math.log(med_s / med_b)
    alpha = 1 - policy.confidence
    draws = boot_s - boot_b
    lo_q, hi_q = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    half_lo, half_hi = log_r - float(lo_q), float(hi_q) - log_r
    spread, spread_source, between = run_to_run_spread(base, policy)
    z = NormalDist().inv_cdf(1 - alpha / 2)
    extra = (z * spread) ** 2 if between else 0.0
    half_lo, half_hi = math.sqrt(max(half_lo, 0) ** 2 + extra), math.sqrt(max(half_hi, 0) ** 2 + extra)
    ratio, lo, hi = math.exp(log_r), math.exp(log_r - half_lo), math.exp(log_r + half_hi)
    limit = margin.limit(1.0)
    enforceable = policy.margin >= 2 * spread
    figures.update(
        smoke_median=med_s,
        baseline_median=med_b,
        ratio=ratio,
        ci_low=lo,
        ci_high=hi,
        spread=spread,
        spread_source=spread_source,
        margin_enforceable=enforceable,
        mann_whitney_p=_mann_whitney_p(run.values, base.values, policy.max_bootstrap_n),
    )
    if margin.within(hi):
        status = Status.PASS
    elif not margin.within(lo):
        status = Status.FAIL
    else:
        status = Status.INCONCLUSIVE
    ci = f"{policy.confidence:.0%} CI {_pct(lo - 1)}..{_pct(hi - 1)}"
    summary = (
        f"{subject} {_fmt_time(med_s, unit)} vs {_fmt_time(med_b, unit)} at baseline "
        f"({_pct(ratio - 1)}, {ci}, margin {_pct(margin.signed)}) over {len(run.values)} steps"
    )
    if status is Status.INCONCLUSIVE:
        further = _further_steps(
            boot_s=boot_s,
            boot_b=boot_b,
            log_r=log_r,
            log_limit=math.log(limit),
            n=len(run.values),
            z=z,
            extra=extra,
        )
        figures["further_steps"] = further
        summary += (
            f"; about {further} more smoke steps would decide"
            if further is not None
            else "; more smoke steps cannot decide (ratio at the margin or baseline too noisy)"
        )
    if not enforceable:
        note = (
            f"margin {_pct(margin.signed)} is under twice the run-to-run spread "
            f"{spread:.1%} ({spread_source}): not enforceable for this job at current variance"
        )
        summary += f"; margin not enforceable (under 2x the run-to-run spread {spread:.1%})"
        evidence.append(note)
    evidence.append(f"run-to-run spread {spread:.2%} from {spread_source}")
    evidence.append(f"Mann-Whitney U p = {figures['mann_whitney_p']:.3g} (information only)")
    return Verdict(status, subject, summary, figures, tuple(evidence), table)


def step_table(baseline: Steady, smoke: Steady) -> pd.DataFrame:
    """Both whole series in long form for the report: `series` ("smoke" | "baseline"), `step`,
    `step_time`, `kept` (survived the warm-up, after-restore, event and outlier drops).

    Smoke rows come first. A series longer than `PLOT_ROWS` is thinned evenly (a handover
    baseline may hold 100 000 steps; the histogram needs a sample, the medians are figures).
    The frame is marked `attrs["plot_only"] = True`: its rows are plot data; the figures
    already carry the medians, ratio and counts, so junit need not repeat the rows."""
    table = pd.concat([smoke.frame("smoke", PLOT_ROWS), baseline.frame("baseline", PLOT_ROWS)], ignore_index=True)
    table.attrs["plot_only"] = True
    return table


def _further_steps(
    *,
    boot_s: np.ndarray,
    boot_b: np.ndarray,
    log_r: float,
    log_limit: float,
    n: int,
    z: float,
    extra: float,
) -> int | None:
    """Smoke steps to add so that the interval clears the limit, if the point estimate holds."""
    distance = abs(log_r - log_limit)
    var_s, var_b = float(np.var(boot_s)), float(np.var(boot_b))
    room = (distance / z) ** 2 - var_b - extra / z**2
    if room <= 0 or var_s == 0:
        return None
    needed = math.ceil(var_s * n / room)
    return max(needed - n, 1)
