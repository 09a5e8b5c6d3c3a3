"""Where a training job's step time changed: one change point in a step-time series.

Method (pure numpy, deterministic): drop the first `warmup` steps of the series (start-up and
resume steps are slow by nature); replace single-step outliers (the step after an eval or a
checkpoint save, more than 6 robust deviations above the local median) with the local median;
then, on log step time, take the split that maximises the two-sample CUSUM statistic
``sqrt(k (n-k) / n) * |mean(x[:k]) - mean(x[k:])| / sigma``, with sigma the robust spread of
step-to-step differences. The split is a change when that statistic is above `min_score` and the
ratio of medians after/before moves by at least `min_shift`. The first step of the later segment
is the first bad step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Change:
    index: int  # position of the first bad step in the input arrays
    ratio: float  # median after / median before
    score: float
    median_before: float
    median_after: float


def _rolling_median(x: np.ndarray, half: int) -> np.ndarray:
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = np.median(x[max(0, i - half) : i + half + 1])
    return out


def despike(values: np.ndarray, half: int = 10, k: float = 6.0) -> np.ndarray:
    """`values` with isolated upward spikes replaced by the local median."""
    if len(values) < 5:
        return values.copy()
    med = _rolling_median(values, half)
    resid = values - med
    mad = float(np.median(np.abs(resid - np.median(resid)))) * MAD_TO_SIGMA or float(np.std(resid)) or 1e-12
    spikes = resid > k * mad
    out = values.copy()
    out[spikes] = med[spikes]
    return out


def find_change(
    step_time_s: np.ndarray, *, warmup: int = 3, min_segment: int = 10, min_score: float = 8.0, min_shift: float = 0.03
) -> Change | None:
    """The one change point of the series (indices refer to `step_time_s`), or None."""
    t = np.asarray(step_time_s, dtype=float)
    start = min(warmup, max(len(t) - 2 * min_segment, 0))
    body = t[start:].copy()
    bad = ~np.isfinite(body) | (body <= 0)
    if bad.all():
        return None
    body[bad] = np.median(body[~bad])
    n = len(body)
    if n < 2 * min_segment:
        return None
    x = np.log(despike(body))
    diffs = np.diff(x)
    sigma = float(np.median(np.abs(diffs - np.median(diffs)))) * MAD_TO_SIGMA / np.sqrt(2) or float(np.std(x)) or 1e-9
    csum = np.cumsum(x)
    total = csum[-1]
    ks = np.arange(min_segment, n - min_segment + 1)
    mean_before = csum[ks - 1] / ks
    mean_after = (total - csum[ks - 1]) / (n - ks)
    scores = np.sqrt(ks * (n - ks) / n) * np.abs(mean_after - mean_before) / sigma
    best = int(np.argmax(scores))
    k = int(ks[best])
    before, after = float(np.median(body[:k])), float(np.median(body[k:]))
    ratio = after / before
    if scores[best] < min_score or abs(ratio - 1) < min_shift:
        return None
    return Change(index=start + k, ratio=ratio, score=float(scores[best]), median_before=before, median_after=after)
