"""Criterion 4: loss continuity after a restore.

Exact checks first: the first step after the restore is the checkpoint step + 1 (on the log's
grid), no gaps or repeats, no NaN/Inf, no skipped iterations, consumed samples and global batch
size continuous, the learning rate on the pre-incident schedule at every step, loss scale kept.
Then robust z-scores of log(loss) after the restore against a Theil–Sen trend (vs log step)
fitted to the last pre-incident points, scale 1.4826·MAD of the residuals: FAIL on any
|z| > spike_z in the first `check_steps` points or |median z| > shift_z over the first
`shift_window` points. The verdict names the first offending step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from acceptance.judge.loss_exact import exact_checks, per_step, restore_point
from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.margins import Margins
from acceptance.tools.trainlog import TrainLog

__all__ = ["LossPolicy", "judge_loss"]


@dataclass(frozen=True)
class LossPolicy:
    """Thresholds of the loss-continuity check; defaults from the research note."""

    trend_window: int = 300
    min_trend_points: int = 100
    min_points: int = 20
    check_steps: int = 50
    spike_z: float = Margins.loss_spike_z
    shift_window: int = 20
    shift_z: float = Margins.loss_shift_z
    grad_norm_z: float = 6.0
    min_post_points: int = 5
    lr_rel_tol: float = 1e-3
    lr_override: bool = False
    sigma_floor: float = 1e-6

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{f.name} must be a finite number, got {value}")
        if self.spike_z <= 0 or self.shift_z <= 0 or self.trend_window < 3 or self.check_steps < 1:
            raise ValueError("spike_z and shift_z must be > 0, trend_window ≥ 3, check_steps ≥ 1")


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Median pairwise slope and the median intercept (robust line fit)."""
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    ok = dx != 0
    slope = float(np.median((y[j] - y[i])[ok] / dx[ok])) if ok.any() else 0.0
    return slope, float(np.median(y - slope * x))


def _transform(loss: np.ndarray) -> tuple[np.ndarray, str]:
    return (np.log(loss), "log-loss") if (loss > 0).all() else (loss, "loss")


def judge_loss(
    before: TrainLog,
    after: TrainLog,
    restore_step: int | None = None,
    policy: LossPolicy = LossPolicy(),
    subject: str = "loss continuity",
) -> Verdict:
    """Judge the loss from the restored step onward against the pre-incident run."""
    point = restore_point(before, after, restore_step, pre_rows=policy.trend_window + 2)
    pre, post = per_step(point.before), per_step(point.after)
    evidence = list(point.notes)
    figures: dict[str, Figure] = {
        "restore_step": point.step,
        "first_step_after": int(post["step"].iloc[0]) if len(post) else None,
        "spike_z": policy.spike_z,
        "shift_z": policy.shift_z,
    }
    pre_loss = pre[np.isfinite(pre["loss"])].tail(policy.trend_window) if "loss" in pre else pre.iloc[0:0]
    post_loss = post[np.isfinite(post["loss"])] if "loss" in post else post.iloc[0:0]
    if point.step is not None:
        post_loss = post_loss[post_loss["step"] > point.step]
    post_loss = post_loss.head(policy.check_steps)
    window = pre.iloc[pre.index.get_loc(pre_loss.index[0]) :] if len(pre_loss) else pre.tail(policy.trend_window)
    judged = post.index.get_indexer(post_loss.index)
    shown = max(policy.trend_window, policy.check_steps, int(judged.max()) + 1 if judged.size else 0)
    table = loss_table(window, post.head(shown))
    if not len(post):
        at = f" at step {point.step}" if point.step is not None else ""
        return Verdict(
            Status.INCONCLUSIVE,
            subject,
            f"not enough steps: the log has no step after the restore{at} (none run or logged yet)",
            figures,
            tuple(evidence),
            table,
        )

    findings = exact_checks(point, pre, post, policy.lr_rel_tol, policy.lr_override)
    evidence.extend(f.text for f in findings if not f.fatal)
    fatal = [f for f in findings if f.fatal]
    if fatal:
        first = min(fatal, key=lambda f: f.step if f.step is not None else -1)
        figures["first_offending_step"] = first.step
        figures["exact_failures"] = len(fatal)
        evidence[:0] = [f.text for f in fatal]
        table = loss_table(window, _through(post, first.step, shown))
        return Verdict(Status.FAIL, subject, first.text, figures, tuple(evidence), table)

    figures["trend_points"] = len(pre_loss)
    figures["post_points"] = len(post_loss)
    if len(pre_loss) < policy.min_points or len(post_loss) < policy.min_post_points:
        which = "pre-incident" if len(pre_loss) < policy.min_points else "post-restore"
        return Verdict(
            Status.INCONCLUSIVE,
            subject,
            f"exact checks passed, but only {len(pre_loss)} pre-incident and {len(post_loss)} "
            f"post-restore loss points: too few {which} points for the statistical check",
            figures,
            tuple(evidence),
            table,
        )
    if len(pre_loss) < policy.min_trend_points:
        evidence.append(f"trend fitted on only {len(pre_loss)} pre-incident points (want {policy.min_trend_points})")
    return _statistical(
        pre_loss,
        post=post_loss,
        restore=point.step,
        policy=policy,
        subject=subject,
        figures=figures,
        evidence=evidence,
        table=table,
        rows=(window.index.get_indexer(pre_loss.index), len(window) + judged),
    )


def _statistical(
    pre: pd.DataFrame,
    *,
    post: pd.DataFrame,
    restore: int | None,
    policy: LossPolicy,
    subject: str,
    figures: dict[str, Figure],
    evidence: list[str],
    table: pd.DataFrame,
    rows: tuple[np.ndarray, np.ndarray],
) -> Verdict:
    both = np.concatenate([pre["loss"].to_numpy(float), post["loss"].to_numpy(float)])
    u_all, space = _transform(both)
    u_pre, u_post = u_all[: len(pre)], u_all[len(pre) :]
    offset = 1 - min(int(pre["step"].min()), 1)
    x_pre = np.log(pre["step"].to_numpy(float) + offset)
    x_post = np.log(post["step"].to_numpy(float) + offset)
    slope, intercept = theil_sen(x_pre, u_pre)
    resid = u_pre - (intercept + slope * x_pre)
    sigma = max(1.4826 * float(np.median(np.abs(resid - np.median(resid)))), policy.sigma_floor)
    z = (u_post - (intercept + slope * x_post)) / sigma
    fitted = intercept + slope * np.log(np.maximum(table["step"].to_numpy(float) + offset, 1e-12))
    z_col = np.full(len(table), np.nan)
    z_col[rows[0]], z_col[rows[1]] = resid / sigma, z
    out = _with_trend(table, fitted if space == "loss" else np.exp(fitted), z_col)
    steps = post["step"].to_numpy(np.int64)
    k = int(np.argmax(np.abs(z)))
    shift = float(np.median(z[: policy.shift_window]))
    figures.update(
        sigma=sigma,
        space=space,
        max_abs_z=float(abs(z[k])),
        max_z_step=int(steps[k]),
        median_z=shift,
    )
    where = f"after restore at step {restore}" if restore is not None else "after the restore"
    basis = f"σ {sigma:.3g} in {space} from {len(pre)} pre-incident points"
    spikes = np.flatnonzero(np.abs(z) > policy.spike_z)
    grad_note = _grad_cospike(pre, post, policy)
    if grad_note:
        evidence.append(grad_note)
    if abs(shift) > policy.shift_z:
        window = steps[: policy.shift_window]
        beyond = np.flatnonzero(
            np.sign(z[: policy.shift_window]) * np.sign(shift) * np.abs(z[: policy.shift_window]) > policy.shift_z
        )
        first = int(steps[beyond[0]]) if beyond.size else int(window[0])
        figures["first_offending_step"] = first
        direction = "up" if shift > 0 else "down (replayed data?)"
        summary = (
            f"loss level shifted {direction} {where}: median z {shift:+.1f} over steps "
            f"{window[0]}..{window[-1]} (limit ±{policy.shift_z:g}); first step beyond at {first}"
        )
        if spikes.size:
            i = int(spikes[0])
            evidence.append(f"also |z| > {policy.spike_z:g} at step {steps[i]} (z {z[i]:+.1f})")
        evidence.append(basis)
        return Verdict(Status.FAIL, subject, summary, figures, tuple(evidence), out)
    if spikes.size:
        i = int(spikes[0])
        figures["first_offending_step"] = int(steps[i])
        loss, trend = float(post["loss"].iloc[i]), _back(intercept + slope * x_post[i], space)
        summary = (
            f"loss jumps at step {steps[i]} {where}: z {z[i]:+.1f} (limit ±{policy.spike_z:g}), "
            f"loss {loss:.4g} vs trend {trend:.4g}"
        )
        evidence.append(basis)
        return Verdict(Status.FAIL, subject, summary, figures, tuple(evidence), out)
    summary = (
        f"loss continuous {where}: max |z| {abs(z[k]):.1f} at step {steps[k]}, median z {shift:+.1f} "
        f"over {min(len(z), policy.shift_window)} steps "
        f"(limits ±{policy.spike_z:g}, ±{policy.shift_z:g}; {basis})"
    )
    return Verdict(Status.PASS, subject, summary, figures, tuple(evidence), out)


# Columns of criterion 3 (step time, throughput): not part of the loss table.
_TIMING = ("step_time_s", "tflops", "tokens_per_s", "samples_per_s")


def loss_table(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The last pre-restore rows (`phase` "before", from the first point of the trend window)
    and the first post-restore rows ("after": as many as the window, at least the judged ones
    and up to the offending step) for the report, in that order, timing columns left out.
    The statistical check adds `trend` (the Theil–Sen fit in loss units, extrapolated after the
    restore) and `z` (robust z-scores: fit residuals before, the judged points after).

    Marked `attrs["plot_only"] = True`: the rows are plot data (hundreds of steps); the figures
    and evidence already name the restore, the offending step and the z-scores."""
    parts = [
        frame.drop(columns=[c for c in _TIMING if c in frame]).assign(phase=phase)
        for frame, phase in ((before, "before"), (after, "after"))
    ]
    table = pd.concat(parts, ignore_index=True)
    first = [c for c in ("phase", "step", "loss") if c in table]
    table = table[first + [c for c in table.columns if c not in first]]
    table.attrs["plot_only"] = True
    return table


def _through(post: pd.DataFrame, step: int | None, rows: int) -> pd.DataFrame:
    """The first `rows` post-restore rows, more when needed to reach `step` (and a few past it)."""
    at = np.flatnonzero(post["step"].to_numpy() == step) if step is not None else np.empty(0, np.int64)
    return post.head(max(rows, int(at[0]) + 20 if at.size else 0))


def _with_trend(table: pd.DataFrame, trend: np.ndarray, z: np.ndarray) -> pd.DataFrame:
    out = table.assign(trend=trend, z=z)
    first = [c for c in ("phase", "step", "loss", "trend", "z") if c in out]
    out = out[first + [c for c in out.columns if c not in first]]
    out.attrs["plot_only"] = True
    return out


def _back(u: float, space: str) -> float:
    return math.exp(u) if space == "log-loss" else u


def _grad_cospike(pre: pd.DataFrame, post: pd.DataFrame, policy: LossPolicy) -> str | None:
    if "grad_norm" not in pre or "grad_norm" not in post:
        return None
    g_pre = pre["grad_norm"].to_numpy(float)
    g_post = post["grad_norm"].to_numpy(float)
    g_pre = g_pre[np.isfinite(g_pre) & (g_pre > 0)]
    ok = np.isfinite(g_post) & (g_post > 0)
    if len(g_pre) < policy.min_points or not ok.any():
        return None
    lg = np.log(g_pre)
    scale = max(1.4826 * float(np.median(np.abs(lg - np.median(lg)))), policy.sigma_floor)
    zg = (np.log(g_post[ok]) - np.median(lg)) / scale
    hits = np.flatnonzero(zg > policy.grad_norm_z)
    if not hits.size:
        return None
    step = int(post["step"].to_numpy()[ok][hits[0]])
    return f"warning: grad-norm spike at step {step} (z {zg[hits[0]]:+.1f} > {policy.grad_norm_z:g})"
