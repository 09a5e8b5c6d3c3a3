"""`acceptance analyze steptime|loss`: judge training logs from the command line.

Human summary by default, `--json` for scripts. Exit 0 pass, 1 fail, 3 inconclusive,
2 unreadable input (or a comparison that cannot be made).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from acceptance.cmd.parse_trainlog import parse_columns, read_trainlog
from acceptance.errors import ParseError
from acceptance.judge.loss import LossPolicy, judge_loss
from acceptance.judge.steptime import StepTimePolicy, judge_steptime
from acceptance.judge.verdict import Status, Verdict
from acceptance.tools.trainlog import TrainLog

EXIT = {
    Status.PASS: 0,
    Status.FAIL: 1,
    Status.INCONCLUSIVE: 3,
    Status.NOT_COMPARABLE: 1,
    Status.ERROR: 2,
    Status.PENDING: 3,
}


def _fraction(text: str) -> float:
    """`0.05` or `5%` (finite)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.05 or 5%, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a fraction like 0.05 or 5%, got {text!r} (not a number)")
    return value


def _number(text: str) -> float:
    """A finite number: a threshold of NaN compares false with everything and would pass any run."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", default=None, help="skip detection: the logs' format")
    parser.add_argument(
        "--column", action="append", default=None, metavar="NAME=FIELD", help="generic JSONL/CSV mapping"
    )
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("analyze", help="judge training logs: step time or loss continuity")
    checks = parser.add_subparsers(dest="check", metavar="CHECK", required=True)

    st = checks.add_parser("steptime", help="smoke-run step time vs the pre-incident baseline")
    st.add_argument(
        "--baseline",
        type=Path,
        action="append",
        required=True,
        metavar="LOG",
        help="pre-incident log (repeat for several runs: their spread is measured)",
    )
    st.add_argument("--run", type=Path, required=True, metavar="LOG", help="the smoke run's log")
    d = StepTimePolicy()
    st.add_argument("--margin", type=_fraction, default=d.margin, help=f"agreed slowdown margin (default {d.margin:g})")
    st.add_argument("--warmup-steps", type=int, default=d.warmup_steps)
    st.add_argument("--warmup-intervals", type=int, default=d.warmup_intervals)
    st.add_argument("--after-restore-steps", type=int, default=d.after_restore_steps)
    st.add_argument("--outlier-factor", type=_number, default=d.outlier_factor)
    st.add_argument("--keep-event-steps", action="store_true", help="keep steps at checkpoint/eval events")
    st.add_argument("--confidence", type=_number, default=d.confidence)
    st.add_argument("--resamples", type=int, default=d.resamples)
    st.add_argument("--block-length", type=int, default=d.block_length)
    st.add_argument("--min-steps", type=int, default=d.min_steps)
    st.add_argument("--between-run-spread", type=_fraction, default=None)
    st.add_argument("--spread-floor", type=_fraction, default=d.spread_floor)
    st.add_argument("--seed", type=int, default=0)
    _common(st)
    st.set_defaults(func=_steptime)

    lo = checks.add_parser("loss", help="loss continuity from the restored step onward")
    lo.add_argument("--before", type=Path, required=True, metavar="LOG", help="pre-incident log")
    lo.add_argument("--after", type=Path, required=True, metavar="LOG", help="log of the resumed run")
    lo.add_argument("--restore-step", type=int, default=None, help="checkpoint step restored (default: from the logs)")
    p = LossPolicy()
    lo.add_argument("--trend-window", type=int, default=p.trend_window)
    lo.add_argument("--min-trend-points", type=int, default=p.min_trend_points)
    lo.add_argument("--min-points", type=int, default=p.min_points)
    lo.add_argument("--check-steps", type=int, default=p.check_steps)
    lo.add_argument("--spike-z", type=_number, default=p.spike_z)
    lo.add_argument("--shift-window", type=int, default=p.shift_window)
    lo.add_argument("--shift-z", type=_number, default=p.shift_z)
    lo.add_argument("--grad-norm-z", type=_number, default=p.grad_norm_z)
    lo.add_argument("--lr-rel-tol", type=_number, default=p.lr_rel_tol)
    lo.add_argument("--lr-override", action="store_true", help="the LR was changed on purpose at the restore")
    _common(lo)
    lo.set_defaults(func=_loss)


def _read(path: Path, args: argparse.Namespace) -> TrainLog:
    label = "<stdin>" if str(path) == "-" else str(path)
    if label != "<stdin>" and path.is_dir():
        raise ParseError(label, 0, "", "a log file (this is a directory)")
    if label != "<stdin>" and not path.is_file():
        raise ParseError(label, 0, "", "an existing log file")
    return read_trainlog(path, args.format, parse_columns(args.column))


def _combine(logs: list[TrainLog]) -> TrainLog:
    """Several baseline runs as one log whose segments are the runs."""
    if len(logs) == 1:
        return logs[0]
    names = sorted({n for log in logs for n in log.columns})
    columns: dict[str, np.ndarray] = {}
    for name in names:
        parts = []
        for i, log in enumerate(logs):
            n = len(log)
            if name == "segment":
                parts.append(np.full(n, float(i)))
            else:
                parts.append(log.columns.get(name, np.full(n, np.nan)).astype(float))
        columns[name] = np.concatenate(parts)
    columns["segment"] = np.concatenate([np.full(len(log), float(i)) for i, log in enumerate(logs)])
    columns["step"] = columns["step"].astype(np.int64)
    return TrainLog(logs[0].format, " + ".join(log.source for log in logs), columns)


def _emit(verdict: Verdict, check: str, as_json: bool) -> int:
    if as_json:
        doc = {
            "kind": "analysis",
            "check": check,
            "status": verdict.status.value,
            "subject": verdict.subject,
            "summary": verdict.summary,
            "figures": verdict.flat_figures(),
            "evidence": list(verdict.evidence),
        }
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(verdict.message())
    return EXIT[verdict.status]


def _fail_input(exc: Exception) -> int:
    print(f"acceptance analyze: {exc}", file=sys.stderr)
    return 2


def _steptime(args: argparse.Namespace) -> int:
    try:
        policy = StepTimePolicy(
            margin=args.margin,
            warmup_steps=args.warmup_steps,
            warmup_intervals=args.warmup_intervals,
            after_restore_steps=args.after_restore_steps,
            outlier_factor=args.outlier_factor,
            drop_event_steps=not args.keep_event_steps,
            confidence=args.confidence,
            resamples=args.resamples,
            block_length=args.block_length,
            min_steps=args.min_steps,
            between_run_spread=args.between_run_spread,
            spread_floor=args.spread_floor,
        )
        baseline = _combine([_read(p, args) for p in args.baseline])
        run = _read(args.run, args)
        verdict = judge_steptime(baseline, run, policy, seed=args.seed)
    except (ParseError, ValueError) as exc:
        return _fail_input(exc)
    return _emit(verdict, "steptime", args.json)


def _loss(args: argparse.Namespace) -> int:
    try:
        fields = {f.name for f in dataclasses.fields(LossPolicy)}
        policy = LossPolicy(**{k: v for k, v in vars(args).items() if k in fields})
        before = _read(args.before, args)
        after = before if args.after == args.before else _read(args.after, args)
        verdict = judge_loss(before, after, args.restore_step, policy)
    except (ParseError, ValueError) as exc:
        return _fail_input(exc)
    return _emit(verdict, "loss", args.json)
