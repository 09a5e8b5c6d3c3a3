"""Criterion 3, sequential: stop the smoke run as soon as its step-time verdict is decided.

Method ``mixture``: a time-uniform confidence sequence for the slowdown θ = log(smoke / baseline
step time), built with Robbins' normal mixture (H. Robbins, "Statistical methods related to the
law of the iterated logarithm", Ann. Math. Statist. 41, 1970; the two-sided normal-mixture
boundary of S. R. Howard, A. Ramdas, J. McAuliffe, J. Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", Ann. Statist. 49(2), 2021). Its coverage holds at every
step at once, so the run may be stopped whenever it is looked at (every step, or whenever the
log arrives) without raising the error rates; no schedule of looks is planned or kept.

- The smoke steps are prepared exactly as the fixed rule prepares them (`steady_series`: warm-up,
  first-after-restore, checkpoint/eval and > 3x-median outlier steps dropped).
- Autocorrelation and stalls: the steady steps are cut into consecutive blocks of
  `block_steps`; each block contributes the median of its log step times. Block medians of AR(1)
  noise are close to independent and one stall in a block barely moves them. The baseline is cut
  the same way (within each of its segments): its mean block median is the reference, the
  robust spread of its block medians (about their segment's mean, inflated by their lag-1
  autocorrelation, (1 + r) / (1 - r)) the per-block variance σ². A smoke run noisier than its
  baseline widens σ: by the ratio of their step-to-step noise (robust, from the first
  differences), and, from 5 blocks on, to the smoke run's own block-median spread.
- After k blocks, with V = k σ², the mean block-median difference lies within
  sqrt((V + ρ) log((V + ρ) / (ρ α²))) / k of θ for all k at once with probability ≥ 1 - α
  (σ-sub-Gaussian increments). ρ is chosen so the boundary is tightest at `tune_steps` steady
  steps. The reference's own error (its variance over its blocks) and, when the baseline
  measures it between runs, the run-to-run spread (`run_to_run_spread`, as the fixed rule) are
  added in quadrature with the normal quantile z(1 - α/2), as the fixed rule widens its interval.
  The quadrature is an approximation (a union bound would be exact and wider); the calibration
  bench measures the resulting error rates.
- decided PASS when the upper bound ≤ log(1 + margin), decided FAIL when the lower bound >
  log(1 + margin), never before `min_steps` logged smoke steps; otherwise continue.
- At `max_steps` logged smoke steps (today's fixed length) an undecided run is judged by the
  fixed rule (`judge_steptime`) on those steps, so its verdict, INCONCLUSIVE with the further
  steps that would decide included, is exactly the fixed rule's. The sequence is not asked at
  the maximum: it is wider than the fixed interval at any one length, and taking the fixed
  verdict there keeps the two rules in agreement by construction.

Method ``fixed``: today's rule; never stops early, the verdict at `max_steps` is `judge_steptime`'s.
A baseline recorded before the rule was agreed judges this way.

Why not a group-sequential design (Lan & DeMets alpha spending at planned looks): a sequence
needs no look schedule (the orchestrator may look whenever the log streams in, and a late look
costs nothing), and on the calibration bench (1000 runs each, AR(1) 0.5 and 0.8, run-to-run
spread 0.6%) a healthy or a +15 % run is decided at the minimum length already (median 50 of 200
steps, 95th percentile at most 66), with the fixed rule's error rates, so planned looks could
only add steps. The mixture's price is a wider bound at the maximum length, which the fixed
verdict there removes.

Pure: numpy and pandas only; no clock, file or environment access.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass, fields
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from acceptance.judge.steptime import StepTimePolicy, judge_steptime, run_to_run_spread, step_table
from acceptance.judge.steptime_series import Steady, steady_series
from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.margins import Margin, Margins
from acceptance.tools.trainlog import TrainLog

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "METHODS",
    "Decision",
    "Reference",
    "SequentialRule",
    "decide",
    "first_steps",
    "judge_sequential",
    "prepare",
]

METHODS = ("mixture", "fixed")

_POLICY = StepTimePolicy()

CONTINUE = "continue"
PASS = "pass"
FAIL = "fail"
INCONCLUSIVE = "inconclusive"
STOPPED = "stopped"  # ERROR: the data cannot be judged (units differ, ...)


@dataclass(frozen=True)
class SequentialRule:
    """When the smoke run may stop and with what error rates; agreed at handover (`Margins`).

    `min_steps` and `max_steps` count logged smoke steps (what the job runs, warm-up included);
    `block_steps` and `tune_steps` count steady steps. `alpha` bounds the probability that the
    sequence ever excludes the true slowdown (so both a wrong FAIL and a wrong PASS), whenever the
    run is stopped."""

    method: str = "mixture"
    alpha: float = 0.05
    margin: float = Margins.step_time_tolerance
    min_steps: int = 50
    max_steps: int = 200
    block_steps: int = 10
    tune_steps: int = 60

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: expected one of {', '.join(METHODS)}")
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{f.name} must be a finite number, got {value}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha {self.alpha!r}: expected a probability in (0, 0.5), such as 0.05")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin {self.margin!r}: expected a fraction in (0, 1), such as 0.05")
        if self.block_steps < 1 or self.tune_steps < self.block_steps:
            raise ValueError("block_steps must be ≥ 1 and tune_steps ≥ block_steps")
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"min_steps {self.min_steps} and max_steps {self.max_steps}: expected 1 ≤ min ≤ max")

    @classmethod
    def from_margins(cls, margins: Margins) -> SequentialRule:
        """The rule the margins agree on (the baseline's, when judging)."""
        return cls(
            method=margins.smoke_stop_rule,
            alpha=margins.smoke_stop_alpha,
            margin=margins.step_time_tolerance,
            min_steps=margins.smoke_min_steps,
            max_steps=margins.smoke_max_steps,
            block_steps=margins.smoke_block_steps,
            tune_steps=margins.smoke_tune_steps,
        )

    def describe(self) -> str:
        if self.method == "fixed":
            return f"fixed length {self.max_steps} steps"
        return (
            f"normal-mixture confidence sequence, alpha {self.alpha:g}, blocks of {self.block_steps} steps, "
            f"{self.min_steps}..{self.max_steps} steps"
        )


@dataclass(frozen=True)
class Reference:
    """The baseline prepared once for a smoke run's sequential judging (`prepare`)."""

    source: pd.Series | TrainLog
    steady: Steady
    center: float
    sigma: float
    center_var: float
    blocks: int
    spread: float
    spread_source: str
    between: bool
    step_scale: float


@dataclass(frozen=True)
class Decision:
    """What the rule says after the smoke steps seen so far.

    `outcome` is ``continue``, ``pass``, ``fail``, ``inconclusive`` (at the maximum) or ``stopped``
    (the data cannot be judged: `verdict` is an ERROR). `stop` says the job may be stopped now:
    decided and at least the steps other criteria asked to keep (`hold_steps`). `verdict` is None
    while the outcome is ``continue``."""

    outcome: str
    steps_used: int
    max_steps: int
    reason: str
    stop: bool
    verdict: Verdict | None = None

    @property
    def decided(self) -> bool:
        return self.outcome != CONTINUE


def _block_medians(log_values: np.ndarray, block: int) -> np.ndarray:
    k = len(log_values) // block
    if k == 0:
        return np.empty(0)
    return np.asarray(np.median(log_values[: k * block].reshape(k, block), axis=1), dtype=float)


def _robust_sd(x: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(x - np.median(x)))) if len(x) else 0.0


def _step_scale(log_values: np.ndarray) -> float:
    """Robust step-to-step noise of log step time: 1.4826 MAD of the first differences / sqrt 2."""
    d = np.diff(log_values)
    return float(1.4826 * np.median(np.abs(d)) / math.sqrt(2)) if len(d) else 0.0


def prepare(baseline: pd.Series | TrainLog, rule: SequentialRule, policy: StepTimePolicy = _POLICY) -> Reference:
    """The baseline's steady sample, reference level and per-block noise. Raises ValueError
    when the baseline has fewer than two blocks of steady steps in any segment."""
    base = steady_series(baseline, policy, "baseline")
    centered: list[np.ndarray] = []
    all_blocks: list[np.ndarray] = []
    r_num = r_den = 0.0
    diffs: list[np.ndarray] = []
    for seg in base.segments:
        if len(seg) == 0 or not (seg > 0).all():
            continue
        diffs.append(np.diff(np.log(seg)))
        m = _block_medians(np.log(seg), rule.block_steps)
        if len(m) < 2:
            continue
        all_blocks.append(m)
        c = m - m.mean()
        centered.append(c)
        r_num += float(np.sum(c[1:] * c[:-1]))
        r_den += float(np.sum(c * c))
    if not all_blocks:
        raise ValueError(
            f"baseline: fewer than two blocks of {rule.block_steps} steady steps "
            f"({len(base.values)} steady steps); cannot judge sequentially"
        )
    blocks = np.concatenate(all_blocks)
    c = np.concatenate(centered)
    # robust per-block spread, but never below the plain one on few blocks (MAD is noisy)
    sd = _robust_sd(c) if len(c) >= 8 else float(np.std(c, ddof=1)) if len(c) > 1 else 0.0
    r1 = min(max(r_num / r_den, 0.0), 0.9) if r_den > 0 else 0.0
    sigma = sd * math.sqrt((1 + r1) / (1 - r1))
    spread, source, between = run_to_run_spread(base, policy)
    return Reference(
        source=baseline,
        steady=base,
        center=float(blocks.mean()),
        sigma=sigma,
        center_var=sigma**2 / len(blocks),
        blocks=len(blocks),
        spread=spread,
        spread_source=source,
        between=between,
        step_scale=float(1.4826 * np.median(np.abs(np.concatenate(diffs))) / math.sqrt(2)),
    )


def _with_rule(verdict: Verdict, reason: str, figures: Mapping[str, Figure]) -> Verdict:
    """`verdict` with the rule's reason after its summary and the rule's figures beside its own."""
    return dataclasses.replace(verdict, summary=f"{verdict.summary}; {reason}", figures={**verdict.figures, **figures})


def _logged_steps(data: pd.Series | TrainLog) -> np.ndarray:
    """The distinct logged steps, in logged order."""
    if isinstance(data, TrainLog):
        steps = data.columns.get("step")
        return np.asarray(pd.unique(np.asarray(steps))) if steps is not None else np.empty(0, dtype=np.int64)
    return np.arange(len(data))


def first_steps(data: pd.Series | TrainLog, n: int) -> pd.Series | TrainLog:
    """The first `n` logged steps of a smoke series or log (events up to the last step kept)."""
    if isinstance(data, pd.Series):
        return data.iloc[:n]
    steps = data.columns.get("step")
    if steps is None:
        return data
    distinct = pd.unique(np.asarray(steps))
    if len(distinct) <= n:
        return data
    keep = np.isin(steps, distinct[:n])
    last = float(np.max(distinct[:n])) if n else -math.inf
    return TrainLog(
        data.format,
        data.source,
        {name: col[keep] for name, col in data.columns.items()},
        tuple(e for e in data.events if e.step is None or e.step <= last),
        data.timers,
        data.notes,
    )


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _tightest_rho(alpha: float) -> float:
    """r minimising (1 + r) log((1 + r) / (r α²)): ρ = r V* makes the boundary tightest at V*.
    The derivative log((1 + r) / (r α²)) - 1 / r rises through 0 once; bisect on log r."""
    lo, hi = math.log(1e-6), math.log(1e3)
    for _ in range(60):
        mid = (lo + hi) / 2
        r = math.exp(mid)
        if math.log((1 + r) / (r * alpha**2)) - 1 / r < 0:
            lo = mid
        else:
            hi = mid
    return math.exp((lo + hi) / 2)


def bounds(ref: Reference, run: Steady, rule: SequentialRule) -> tuple[float, float, float, int] | None:
    """(estimate, lower, upper) of log(smoke / baseline) from the confidence sequence, and the
    blocks used; None before two complete blocks."""
    values = run.values
    if len(values) == 0 or not (values > 0).all():
        return None
    y = _block_medians(np.log(values), rule.block_steps)
    k = len(y)
    if k < 2:
        return None
    # a smoke run noisier than the baseline widens the sequence: the step-to-step noise ratio
    # (many degrees of freedom from the start), and the block medians' own spread from 5 blocks
    sigma = ref.sigma * max(1.0, _step_scale(np.log(values)) / ref.step_scale) if ref.step_scale > 0 else ref.sigma
    if k >= 5:
        sigma = max(sigma, _robust_sd(y))
    sigma = max(sigma, 1e-9)
    v = k * sigma**2
    rho = _tightest_rho(rule.alpha) * (rule.tune_steps / rule.block_steps) * sigma**2
    half = math.sqrt((v + rho) * math.log((v + rho) / (rho * rule.alpha**2))) / k
    z = NormalDist().inv_cdf(1 - rule.alpha / 2)
    fixed_var = ref.center_var + (ref.spread**2 if ref.between else 0.0)
    half = math.sqrt(half**2 + z**2 * fixed_var)
    est = float(y.mean()) - ref.center
    return est, est - half, est + half, k


def decide(
    ref: Reference,
    smoke: pd.Series | TrainLog,
    rule: SequentialRule,
    policy: StepTimePolicy = _POLICY,
    *,
    hold_steps: int = 0,
    seed: int = 0,
    subject: str = "step time",
) -> Decision:
    """The rule's answer after the smoke steps logged so far: the call criteria/smoke.py makes
    each time the streamed smoke log grows.

    How to call it: ``ref = prepare(recorded_baseline_series, rule, policy)`` once, with
    ``rule = SequentialRule.from_margins(ctx.margins)`` (the baseline's agreed values) and the
    policy criteria/smoke.py already builds; then, per arriving step (or batch of steps),
    ``d = decide(ref, smoke_log_so_far, rule, policy, hold_steps=H)`` where H is the most logged
    smoke steps another criterion needs (criterion 4's ``LossPolicy().check_steps`` after the
    restore). Stop the job when ``d.stop``; the criterion's verdict is ``d.verdict``. When the
    job ends before ``d.stop`` (it ran its command's length, or died), call once more on the
    whole log: a log at or past `max_steps` gets the fixed rule's verdict on its first
    `max_steps` steps; a shorter undecided one is judged by the fixed rule too (INCONCLUSIVE
    with further steps when it is short), via `judge_sequential`.
    """
    if policy.margin != rule.margin:  # one agreed margin: the rule's, for the fixed verdict too
        policy = dataclasses.replace(policy, margin=rule.margin)
    seen = len(_logged_steps(smoke))
    if seen > rule.max_steps:
        smoke = first_steps(smoke, rule.max_steps)
        seen = rule.max_steps
    at_max = seen >= rule.max_steps
    hold = max(hold_steps, rule.min_steps)
    if seen < rule.min_steps:
        return Decision(CONTINUE, seen, rule.max_steps, f"{seen} of at least {rule.min_steps} steps", False)
    run = steady_series(smoke, policy, "smoke")
    if run.unit != ref.steady.unit:
        verdict = judge_steptime(ref.source, smoke, policy, seed=seed, subject=subject)
        return Decision(STOPPED, seen, rule.max_steps, verdict.summary, True, verdict)
    if rule.method == "mixture" and seen >= rule.min_steps and not at_max:
        found = bounds(ref, run, rule)
        if found is not None:
            est, lo, hi, k = found
            limit = math.log(Margin.step_time(rule.margin).limit(1.0))
            outcome = PASS if hi <= limit else FAIL if lo > limit else CONTINUE
            if outcome != CONTINUE:
                verdict = _early_verdict(ref, run, rule, outcome, (est, lo, hi, k), seen, subject)
                reason = f"decided {outcome.upper()} after {seen} of at most {rule.max_steps} steps"
                return Decision(outcome, seen, rule.max_steps, reason, seen >= hold, verdict)
    if not at_max:
        return Decision(
            CONTINUE, seen, rule.max_steps, f"undecided after {seen} of at most {rule.max_steps} steps", False
        )
    verdict = judge_steptime(ref.source, smoke, policy, seed=seed, subject=subject)
    outcome = {Status.PASS: PASS, Status.FAIL: FAIL, Status.INCONCLUSIVE: INCONCLUSIVE}.get(verdict.status, STOPPED)
    how = "fixed rule" if rule.method == "fixed" else "fixed rule at the maximum"
    reason = f"{outcome if outcome != STOPPED else 'error'} after {seen} of at most {rule.max_steps} steps ({how})"
    verdict = _with_rule(verdict, reason, _rule_figures(rule, seen, outcome, "fixed"))
    return Decision(outcome, seen, rule.max_steps, reason, seen >= hold_steps, verdict)


def _rule_figures(rule: SequentialRule, seen: int, outcome: str, by: str) -> Mapping[str, Figure]:
    return {
        "stop_rule": rule.method,
        "stop_alpha": rule.alpha,
        "steps_used": seen,
        "min_steps": rule.min_steps,
        "max_steps": rule.max_steps,
        "decided_by": by,
        "decision": outcome,
    }


def _early_verdict(
    ref: Reference,
    run: Steady,
    rule: SequentialRule,
    outcome: str,
    found: tuple[float, float, float, int],
    seen: int,
    subject: str,
) -> Verdict:
    est, lo, hi, k = found
    med_s, med_b = float(np.median(run.values)), float(np.median(ref.steady.values))
    ratio = math.exp(est)
    enforceable = rule.margin >= 2 * ref.spread
    margin = Margin.step_time(rule.margin)
    figures: dict[str, Figure] = {
        "margin": margin,
        "confidence": 1 - rule.alpha,
        "unit": ref.steady.unit,
        "n_smoke": len(run.values),
        "n_baseline": len(ref.steady.values),
        **{f"smoke_dropped_{name}": v for name, v in run.dropped.items()},
        **{f"baseline_dropped_{name}": v for name, v in ref.steady.dropped.items()},
        "smoke_median": med_s,
        "baseline_median": med_b,
        "ratio": ratio,
        "ci_low": math.exp(lo),
        "ci_high": math.exp(hi),
        "spread": ref.spread,
        "spread_source": ref.spread_source,
        "margin_enforceable": enforceable,
        "blocks": k,
        "block_steps": rule.block_steps,
        **_rule_figures(rule, seen, outcome, "sequence"),
    }
    reason = f"decided {outcome.upper()} after {seen} of at most {rule.max_steps} steps"
    summary = (
        f"{subject} {_pct(ratio - 1)} against the baseline ({1 - rule.alpha:.0%} confidence sequence "
        f"{_pct(math.exp(lo) - 1)}..{_pct(math.exp(hi) - 1)}, margin {_pct(margin.signed)}) over "
        f"{len(run.values)} steady steps: {reason}"
    )
    evidence = [
        *ref.steady.evidence,
        *run.evidence,
        f"stopping rule: {rule.describe()}; block medians of log step time, {k} smoke blocks against "
        f"{ref.blocks} baseline blocks, per-block sd {ref.sigma:.3%}",
        f"run-to-run spread {ref.spread:.2%} from {ref.spread_source}",
    ]
    if not enforceable:
        evidence.append(
            f"margin {_pct(margin.signed)} is under twice the run-to-run spread {ref.spread:.1%} "
            f"({ref.spread_source}): not enforceable for this job at current variance"
        )
    return Verdict(
        Status.PASS if outcome == PASS else Status.FAIL,
        subject,
        summary,
        figures,
        tuple(evidence),
        step_table(ref.steady, run),
    )


def replay(
    ref: Reference,
    smoke: pd.Series | TrainLog,
    rule: SequentialRule,
    policy: StepTimePolicy = _POLICY,
    *,
    hold_steps: int = 0,
    seed: int = 0,
    subject: str = "step time",
) -> Iterator[Decision]:
    """`decide` after each logged step of a whole smoke log, as if it streamed in."""
    total = min(len(_logged_steps(smoke)), rule.max_steps)
    for n in range(1, total + 1):
        yield decide(ref, first_steps(smoke, n), rule, policy, hold_steps=hold_steps, seed=seed, subject=subject)


def judge_sequential(
    baseline: pd.Series | TrainLog | Reference,
    smoke: pd.Series | TrainLog,
    rule: SequentialRule | None = None,
    policy: StepTimePolicy = _POLICY,
    *,
    hold_steps: int = 0,
    seed: int = 0,
    subject: str = "step time",
) -> Decision:
    """The decision at which a streamed smoke run would have stopped (the first `stop`), or, when
    the log ends first, the fixed rule's verdict on the whole log with the steps used."""
    rule = rule or SequentialRule()
    if policy.margin != rule.margin:
        policy = dataclasses.replace(policy, margin=rule.margin)
    ref = baseline if isinstance(baseline, Reference) else prepare(baseline, rule, policy)
    last: Decision | None = None
    for last in replay(ref, smoke, rule, policy, hold_steps=hold_steps, seed=seed, subject=subject):
        if last.stop:
            return last
    seen = min(len(_logged_steps(smoke)), rule.max_steps)
    if last is not None and last.decided:
        return last  # decided, held for another criterion's steps that never came
    verdict = judge_steptime(ref.source, first_steps(smoke, rule.max_steps), policy, seed=seed, subject=subject)
    outcome = {Status.PASS: PASS, Status.FAIL: FAIL}.get(verdict.status, INCONCLUSIVE)
    reason = f"{outcome} after {seen} of at most {rule.max_steps} steps (the log ended; fixed rule)"
    verdict = _with_rule(verdict, reason, _rule_figures(rule, seen, outcome, "fixed"))
    return Decision(outcome, seen, rule.max_steps, reason, True, verdict)
