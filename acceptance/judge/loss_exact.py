"""Exact continuity checks of a restore: step grid, NaN/Inf, skipped iterations, samples, batch
size, loss scale, and the learning rate at every post-restore step against the pre-incident schedule."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from acceptance.judge.loss_schedule import Schedule, lr_departure
from acceptance.tools.trainlog import Event, TrainLog


@dataclass(frozen=True)
class Finding:
    """One exact-check result; `fatal` ones fail the verdict, the others are notes."""

    step: int | None
    text: str
    fatal: bool = True


@dataclass(frozen=True)
class RestorePoint:
    """The checkpoint step restored (None when unknown), the frames on each side of it, the
    pre-incident learning-rate schedule (every step the pre-incident run logged, the steps past
    the checkpoint included) and the skip events of the post-restore side."""

    step: int | None
    before: pd.DataFrame
    after: pd.DataFrame
    notes: tuple[str, ...]
    schedule: Schedule = field(default_factory=Schedule.empty)
    skips: tuple[Event, ...] = ()


def restore_point(
    before: TrainLog, after: TrainLog, restore_step: int | None, pre_rows: int | None = None
) -> RestorePoint:
    """Find the restore: given, else the resume line of the after-log, else the last checkpoint
    save of the pre-incident log before the after-log's first step. When one log holds both
    sides (the same object passed twice), split it at the resume line or the restore step.
    Only the last `pre_rows` pre-incident rows are materialised (long logs stay cheap)."""
    notes: list[str] = []
    same = before is after
    b_steps, a_steps = before.columns["step"], after.columns["step"]
    pre_mask = np.ones(len(b_steps), dtype=bool)
    post_mask = np.ones(len(a_steps), dtype=bool)
    resumes = [e for e in after.events if e.type == "resume"]
    skips = [e for e in after.events if e.type == "skip"]
    if resumes:
        matching = [e for e in resumes if restore_step is None or e.step == restore_step]
        chosen = matching[-1] if matching else resumes[-1]
        segment = resumes.index(chosen) + 1
        seg = after.columns.get("segment", np.zeros(len(a_steps)))
        if same:
            pre_mask &= seg < segment
        post_mask &= seg >= segment
        skips = [e for e in skips if e.line > chosen.line]
        if restore_step is None and chosen.step is not None:
            restore_step = chosen.step
            notes.append(f"restore step {restore_step} from the log (line {chosen.line})")
        elif restore_step is not None and chosen.step not in (None, restore_step):
            notes.append(f"the log says it loaded step {chosen.step}; judged against the given {restore_step}")
    elif same and restore_step is not None:
        post_mask &= a_steps > restore_step
        pre_mask &= b_steps <= restore_step  # one run: the steps past the restore are the post side
        skips = [e for e in skips if e.step is not None and e.step > restore_step]
    elif same:
        skips = []  # no restore in the one log: nothing is post-restore
    schedule = Schedule.of(before, pre_mask)
    if restore_step is None and post_mask.any():
        first = int(a_steps[post_mask][0])
        saves = [e.step for e in before.events if e.type == "checkpoint_save" and e.step is not None and e.step < first]
        if saves:
            restore_step = max(saves)
            notes.append(f"restore step {restore_step}: the last checkpoint saved before step {first}")
        else:
            notes.append("restore step unknown (no resume line, no checkpoint save): first-step check skipped")
    if restore_step is not None:
        pre_mask &= b_steps <= restore_step
    pre_idx = np.flatnonzero(pre_mask)
    if pre_rows is not None:
        pre_idx = pre_idx[-pre_rows:]
    pre = before.frame(pre_idx).reset_index(drop=True)
    post = after.frame(np.flatnonzero(post_mask)).reset_index(drop=True)
    return RestorePoint(restore_step, pre, post, tuple(notes), schedule, tuple(skips))


def per_step(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per step: several ranks printing one step are merged (mean loss, any NaN)."""
    if "rank" not in frame or frame["rank"].nunique(dropna=True) <= 1:
        return frame
    keys = ["segment", "step"] if "segment" in frame else ["step"]
    agg = {c: ("max" if c in ("nan", "step_time_s") else "mean") for c in frame.columns if c not in keys}
    agg["rank"] = "min"
    return frame.groupby(keys, sort=False, as_index=False).agg(agg)


def _interval(pre: pd.DataFrame, post: pd.DataFrame) -> int:
    for frame in (pre, post):
        if len(frame) >= 2:
            diffs = np.diff(frame["step"].to_numpy(np.int64))
            diffs = diffs[diffs > 0]
            if diffs.size:
                values, counts = np.unique(diffs, return_counts=True)
                return int(values[np.argmax(counts)])
    return 1


def _last(frame: pd.DataFrame, column: str) -> tuple[int, float] | None:
    if column not in frame:
        return None
    ok = frame[np.isfinite(frame[column].to_numpy(float))]
    return (int(ok["step"].iloc[-1]), float(ok[column].iloc[-1])) if len(ok) else None


def exact_checks(
    point: RestorePoint, pre: pd.DataFrame, post: pd.DataFrame, lr_tol: float, lr_override: bool
) -> list[Finding]:
    """The exact checks of the restore `point`, on its per-step frames `pre` and `post`."""
    out: list[Finding] = []
    restore = point.step
    interval = _interval(pre, post)
    steps = post["step"].to_numpy(np.int64)
    if restore is not None:
        phase = int(pre["step"].iloc[-1]) % interval if len(pre) else int(steps[0]) % interval
        expected = restore + ((phase - restore) % interval or interval)
        if steps[0] != expected:
            grid = f" on the log's every-{interval}-steps grid" if interval > 1 else ""
            out.append(
                Finding(
                    int(steps[0]),
                    f"first step after restore is {steps[0]}, expected {expected}"
                    f" (checkpoint step {restore} + 1{grid})",
                )
            )
        if len(pre) and int(pre["step"].iloc[-1]) < restore:
            out.append(
                Finding(
                    None,
                    f"pre-incident log ends at step {pre['step'].iloc[-1]}, before the checkpoint {restore}",
                    False,
                )
            )
    diffs = np.diff(steps)
    for i in np.flatnonzero((diffs <= 0) | (diffs > interval))[:1]:
        a, b = int(steps[i]), int(steps[i + 1])
        text = (
            f"step {b} repeated after step {a} (steps must increase)"
            if b <= a
            else f"steps {a + 1}..{b - 1} missing after step {a} (log interval {interval})"
        )
        out.append(Finding(b, text))
    bad = np.zeros(len(post), dtype=bool)
    if "nan" in post:
        bad |= post["nan"].to_numpy(bool)
    for column in ("loss", "grad_norm"):
        if column in post:
            bad |= np.isinf(post[column].to_numpy(float))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        loss = post["loss"].iloc[i] if "loss" in post else float("nan")
        out.append(Finding(int(steps[i]), f"NaN/Inf at step {steps[i]} after restore (loss {loss})"))
    out.extend(_skipped(point.skips, restore))
    out.extend(_samples(pre, post, restore, interval))
    out.extend(_schedule(point.schedule, pre, post, lr_tol, lr_override))
    return out


_COUNT = re.compile(r"^(\d+) ")


def _skipped(skips: tuple[Event, ...], restore: int | None) -> list[Finding]:
    """Skipped iterations after the restore (fp16 loss-scale overflows the run skipped): a finding."""
    if not skips:
        return []
    counts = [int(m.group(1)) if (m := _COUNT.match(e.detail)) else 1 for e in skips]
    first = skips[0]
    where = f"at step {first.step}" if first.step is not None else f"at line {first.line}"
    after = f"the restore at step {restore}" if restore is not None else "the restore"
    total = sum(counts)
    more = f"; {total} in all over {len(skips)} reports" if len(skips) > 1 else ""
    return [
        Finding(
            first.step,
            f"{counts[0]} skipped iteration{'s' if counts[0] != 1 else ''} {where} after {after} "
            f"(log line {first.line}: {first.detail}{more})",
        )
    ]


def _samples(pre: pd.DataFrame, post: pd.DataFrame, restore: int | None, interval: int) -> list[Finding]:
    out: list[Finding] = []
    gbs_pre = _last(pre, "global_batch_size")
    if gbs_pre is not None and "global_batch_size" in post:
        g = post["global_batch_size"].to_numpy(float)
        differ = np.flatnonzero(np.isfinite(g) & (g != gbs_pre[1]))
        if differ.size:
            s = int(post["step"].iloc[differ[0]])
            out.append(
                Finding(
                    s,
                    f"global batch size {g[differ[0]]:g} at step {s}, was {gbs_pre[1]:g} before the restore",
                )
            )
    if "consumed_samples" not in pre or "consumed_samples" not in post:
        return out
    c_pre = pre[np.isfinite(pre["consumed_samples"].to_numpy(float))]
    c_post = post[np.isfinite(post["consumed_samples"].to_numpy(float))]
    if len(c_pre) < 2 or not len(c_post):
        return out
    if gbs_pre is not None:
        per_step = gbs_pre[1]
    else:
        rate = np.diff(c_pre["consumed_samples"].to_numpy(float)) / np.diff(c_pre["step"].to_numpy(float))
        per_step = float(np.median(rate[np.isfinite(rate)]))
    s_post, v_post = c_post["step"].to_numpy(np.int64), c_post["consumed_samples"].to_numpy(float)
    if restore is not None:
        at = c_pre[c_pre["step"] <= restore]
        if len(at):
            base_step, base = int(at["step"].iloc[-1]), float(at["consumed_samples"].iloc[-1])
            expected = base + per_step * (s_post[0] - base_step)
            if abs(v_post[0] - expected) > 0.5:
                out.append(
                    Finding(
                        int(s_post[0]),
                        f"consumed samples {v_post[0]:.0f} at step {s_post[0]}, expected {expected:.0f} "
                        f"({base:.0f} at step {base_step} + {per_step:g} per step)",
                    )
                )
    jumps = np.diff(v_post) - per_step * np.diff(s_post)
    wrong = np.flatnonzero(np.abs(jumps) > 0.5)
    if wrong.size:
        s = int(s_post[wrong[0] + 1])
        out.append(
            Finding(
                s,
                f"consumed samples jump by {np.diff(v_post)[wrong[0]]:.0f} at step {s}, expected {per_step:g} per step",
            )
        )
    return out


def _schedule(
    schedule: Schedule, pre: pd.DataFrame, post: pd.DataFrame, lr_tol: float, lr_override: bool
) -> list[Finding]:
    out: list[Finding] = []
    if "lr" in post and len(schedule):
        if lr_override:
            out.append(Finding(None, "learning-rate override declared: schedule continuity not checked", False))
        else:
            post_lr = post[np.isfinite(post["lr"].to_numpy(float))]
            departure = lr_departure(
                schedule, post_lr["step"].to_numpy(np.int64), post_lr["lr"].to_numpy(float), lr_tol
            )
            if departure.note:
                out.append(Finding(None, departure.note, False))
            if departure.step is not None:
                out.append(Finding(departure.step, departure.text))
    scale_pre, scale_post = _last(pre, "loss_scale"), _first(post, "loss_scale")
    if scale_pre and scale_post and scale_pre[1] > 0 and not 0.5 <= scale_post[1] / scale_pre[1] <= 2:
        out.append(
            Finding(
                scale_post[0],
                f"loss scale {scale_post[1]:g} at step {scale_post[0]}, was {scale_pre[1]:g} at the checkpoint",
            )
        )
    return out


def _first(frame: pd.DataFrame, column: str) -> tuple[int, float] | None:
    if column not in frame:
        return None
    ok = frame[np.isfinite(frame[column].to_numpy(float))]
    return (int(ok["step"].iloc[0]), float(ok[column].iloc[0])) if len(ok) else None
