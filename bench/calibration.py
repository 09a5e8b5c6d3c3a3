"""Calibration of the step-time and loss judges on seeded synthetic series (issue 8).

    python bench/calibration.py               # 1000 replicas per scenario
    python bench/calibration.py --replicas 200

Step time (margin 5%, CV 2%, 1000 baseline and 200 smoke steps, 2% stall outliers 1.5-5x,
a 10x first step): FAIL rate of a +7% slowdown (power) and of a healthy run (false alarm),
for i.i.d. and AR(1) (phi 0.5) noise; also PASS/INCONCLUSIVE shares.
Loss (log-loss trend + noise, restore at step 400, 300-point trend window): healthy PASS
rate, FAIL rate for a sustained +4 and -4 robust-sigma shift, and for a single step 8 sigmas
above the trend in the first 5 steps after the restore (and 8 sigmas added to the noise),
for i.i.d. and AR(1) (phi 0.3) noise. The tests run the same scenarios with 100 replicas.

Sequential smoke rule (`--sequential`, issue 28): healthy, +3%, +7% and +15% smoke runs of at
most 200 steps against a 1000-step baseline, AR(1) phi 0.5 (and 0.8) noise, stalls as above,
and a run-to-run spread (each run, baseline and smoke, has its own level: sd 0.6%, the
simulator's between-run variation). For each,
the fixed 200-step rule and the sequential rule (`acceptance.judge.steptime_seq`, streamed
step by step, min 50 steps) on the same series: FAIL / PASS / INCONCLUSIVE shares, median
and 95th percentile of smoke steps used.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.steptime_seq import SequentialRule, judge_sequential, prepare
from acceptance.tools.trainlog import TrainLog

SIGMA = 0.01


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    eps = rng.standard_normal(n)
    if phi:
        for i in range(1, n):
            eps[i] = phi * eps[i - 1] + np.sqrt(1 - phi**2) * eps[i]
    return eps


def step_series(rng: np.random.Generator, n: int, phi: float, slow: float = 1.0) -> pd.Series:
    t = 1.2 * slow * (1 + 0.02 * ar1(rng, n, phi))
    hit = rng.random(n) < 0.02
    t[hit] *= rng.uniform(1.5, 5.0, hit.sum())
    t[0] *= 10
    return pd.Series(t, index=np.arange(1, n + 1))


def loss_logs(
    rng: np.random.Generator, phi: float, shift: float = 0.0, spike_at: int | None = None, mode: str = "set"
) -> tuple[TrainLog, TrainLog]:
    steps = np.arange(1, 461)
    trend = np.log(6.0) - 0.18 * np.log(steps)
    u = trend + SIGMA * ar1(rng, len(steps), phi)
    u[400:] += shift * SIGMA
    if spike_at is not None:
        i = 400 + spike_at
        u[i] = trend[i] + 8 * SIGMA if mode == "set" else u[i] + 8 * SIGMA
    loss = np.exp(u)
    return (
        TrainLog("synthetic", "<before>", {"step": steps[:400], "loss": loss[:400]}),
        TrainLog("synthetic", "<after>", {"step": steps[400:], "loss": loss[400:]}),
    )


def steptime(replicas: int) -> None:
    policy = StepTimePolicy()
    for phi in (0.0, 0.5):
        rng = np.random.default_rng(1000 + int(phi * 10))
        slow: Counter[str] = Counter()
        ok: Counter[str] = Counter()
        start = time.perf_counter()
        for i in range(replicas):
            base = step_series(rng, 1000, phi)
            slow[judge_steptime(base, step_series(rng, 200, phi, 1.07), policy, seed=i).status.value] += 1
            ok[judge_steptime(base, step_series(rng, 200, phi), policy, seed=i).status.value] += 1
        per_call = (time.perf_counter() - start) / (2 * replicas) * 1000
        label = "iid" if not phi else f"AR(1) phi={phi}"
        print(
            f"step time, {label}: +7% slowdown FAIL {slow['fail'] / replicas:.1%} "
            f"(inconclusive {slow['inconclusive'] / replicas:.1%}); healthy FAIL {ok['fail'] / replicas:.1%} "
            f"(PASS {ok['pass'] / replicas:.1%}, inconclusive {ok['inconclusive'] / replicas:.1%}); "
            f"{replicas} replicas, {per_call:.1f} ms per judge call"
        )


def sweep(replicas: int) -> None:
    """Outcome shares against the true slowdown (iid noise): how the margin edge behaves."""
    policy = StepTimePolicy()
    rng = np.random.default_rng(3000)
    for slow in (1.0, 1.03, 1.04, 1.05, 1.06, 1.07):
        counts: Counter[str] = Counter()
        for i in range(replicas):
            base = step_series(rng, 1000, 0.0)
            counts[judge_steptime(base, step_series(rng, 200, 0.0, slow), policy, seed=i).status.value] += 1
        shares = ", ".join(f"{k} {counts[k] / replicas:.1%}" for k in ("pass", "inconclusive", "fail"))
        print(f"step time, true slowdown {slow - 1:+.0%}: {shares} ({replicas} replicas)")


def sequential(replicas: int, phi: float, run_spread: float = 0.006, rule: SequentialRule | None = None) -> None:
    """The sequential rule next to the fixed 200-step rule on the same seeded series."""
    policy = StepTimePolicy()
    rule = rule or SequentialRule()
    print(
        f"sequential vs fixed, AR(1) phi={phi}, CV 2%, run-to-run sd {run_spread:.1%}, {replicas} replicas; "
        f"rule: {rule.describe()}"
    )
    print(f"{'slowdown':>9} {'rule':>10} {'FAIL':>7} {'PASS':>7} {'INCONCL':>7} {'median':>7} {'p95':>5}")
    for k, slow in enumerate((1.0, 1.03, 1.07, 1.15)):
        rng = np.random.default_rng(5000 + 10 * k + int(phi * 10))
        fixed: Counter[str] = Counter()
        seq: Counter[str] = Counter()
        used: list[int] = []
        for i in range(replicas):
            base = step_series(rng, 1000, phi, 1 + run_spread * rng.standard_normal())
            smoke = step_series(rng, 200, phi, slow * (1 + run_spread * rng.standard_normal()))
            fixed[judge_steptime(base, smoke, policy, seed=i).status.value] += 1
            decision = judge_sequential(prepare(base, rule, policy), smoke, rule, policy, seed=i)
            seq[decision.outcome] += 1
            used.append(decision.steps_used)
        for name, counts, steps in (("fixed", fixed, [200] * replicas), ("sequential", seq, used)):
            print(
                f"{slow - 1:>+9.0%} {name:>10} {counts['fail'] / replicas:>7.1%} {counts['pass'] / replicas:>7.1%} "
                f"{counts['inconclusive'] / replicas:>7.1%} {np.median(steps):>7.0f} {np.percentile(steps, 95):>5.0f}"
            )


def loss(replicas: int) -> None:
    policy = LossPolicy()
    for phi in (0.0, 0.3):
        rng = np.random.default_rng(2000 + int(phi * 10))
        counts: Counter[str] = Counter()
        start = time.perf_counter()
        for i in range(replicas):
            counts["healthy pass"] += judge_loss(*loss_logs(rng, phi), 400, policy).passed
            counts["+4 sigma fail"] += not judge_loss(*loss_logs(rng, phi, shift=4), 400, policy).passed
            counts["-4 sigma fail"] += not judge_loss(*loss_logs(rng, phi, shift=-4), 400, policy).passed
            counts["8-sigma step fail"] += not judge_loss(*loss_logs(rng, phi, spike_at=i % 5), 400, policy).passed
            counts["+8 sigma added fail"] += not judge_loss(
                *loss_logs(rng, phi, spike_at=i % 5, mode="add"), 400, policy
            ).passed
        per_call = (time.perf_counter() - start) / (5 * replicas) * 1000
        rates = ", ".join(f"{name} {value / replicas:.1%}" for name, value in counts.items())
        label = "iid" if not phi else f"AR(1) phi={phi}"
        print(f"loss, {label}: {rates}; {replicas} replicas, {per_call:.1f} ms per judge call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--sweep", action="store_true", help="step time: outcome shares vs true slowdown")
    parser.add_argument("--sequential", action="store_true", help="step time: sequential vs fixed smoke rule")
    parser.add_argument("--run-spread", type=float, default=0.006, help="--sequential: run-to-run sd (0.006)")
    parser.add_argument("--phi", type=float, action="append", help="--sequential: AR(1) phi (default 0.5 and 0.8)")
    args = parser.parse_args()
    if args.sweep:
        sweep(args.replicas)
        return
    if args.sequential:
        for phi in args.phi or (0.5, 0.8):
            sequential(args.replicas, phi, args.run_spread)
        return
    steptime(args.replicas)
    loss(args.replicas)


if __name__ == "__main__":
    main()
