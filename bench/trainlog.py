"""Benchmark: parse and judge a very long Megatron-LM log (issue 8).

    python bench/trainlog.py                 # 10,000,000 steps
    python bench/trainlog.py --steps 1000000
    python bench/trainlog.py --memory        # peak memory vs kept columns at 1,000,000 steps
    python bench/trainlog.py --file /tmp     # also read_trainlog() on the log written there (3.5 GB)

The log is synthetic but in Megatron-LM's real iteration-line format (timestamp, consumed
samples, elapsed time (ms), throughput, learning rate, batch size, lm loss, loss scale, grad
norm, skipped and NaN counts), with a checkpoint save every 1000 steps. It is streamed from a
generator (no 3 GB file on disk); the generator's own cost is measured and subtracted. With
`--file DIR` the same log is also written to DIR once and read back with `read_trainlog` of
`acceptance.cmd.parse_trainlog` (the path a user takes). Each measurement runs in a fresh subprocess so
that peak RSS (ru_maxrss) is its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TIMES = [f"{1200.0 + (k * 37 % 41) * 0.6:.1f}" for k in range(1000)]
LOSSES = [f"{2.1 + (k * 53 % 97) * 0.002:.6E}" for k in range(1000)]


def megatron_lines(steps: int) -> Iterator[str]:
    for s in range(1, steps + 1):
        k = s % 1000
        yield (
            f" [2025-03-20 10:22:37] iteration {s:8d}/{steps:8d} | consumed samples: {s * 128:12d} | "
            f"elapsed time per iteration (ms): {TIMES[k]} | throughput per GPU (TFLOP/s/GPU): 412.0 | "
            f"learning rate: 2.999900E-04 | global batch size:   128 | lm loss: {LOSSES[k]} | "
            "loss scale: 1.0 | "
            "grad norm: 0.912 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
        )
        if k == 0:
            yield f"  successfully saved checkpoint from iteration {s:7d} to /ckpt [ t 1/4, p 1/1 ]\n"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_file(path: str, keep: list[str] | None) -> dict[str, object]:
    """read_trainlog on a log on disk (runs in its own process)."""
    from acceptance.cmd.parse_trainlog import read_trainlog

    start = time.perf_counter()
    log = read_trainlog(path, keep=keep)
    parse_s = time.perf_counter() - start
    return {"file": path, "read_s": round(parse_s, 2), "rows": len(log), "peak_rss_mib": round(_peak_mib(), 1)}


def write_log(directory: str, steps: int) -> str:
    path = Path(directory) / f"trainlog_bench_{steps}.log"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with open(partial, "w", encoding="utf-8") as out:
            out.writelines(megatron_lines(steps))
        partial.rename(path)
    return str(path)


def child(steps: int, keep: list[str] | None, judge: bool) -> dict[str, object]:
    """One measurement (runs in its own process)."""
    import pandas as pd

    from acceptance.judge.loss import LossPolicy, judge_loss
    from acceptance.judge.steptime import StepTimePolicy, judge_steptime
    from acceptance.tools.trainlog import parse

    base_rss = _peak_mib()
    start = time.perf_counter()
    lines = sum(1 for _ in megatron_lines(steps))
    gen_s = time.perf_counter() - start
    start = time.perf_counter()
    log = parse(megatron_lines(steps), "<bench>", keep=keep)
    parse_s = time.perf_counter() - start - gen_s
    out: dict[str, object] = {
        "steps": steps,
        "lines": lines,
        "keep": keep,
        "generator_s": round(gen_s, 2),
        "parse_s": round(parse_s, 2),
        "parse_us_per_line": round(parse_s / lines * 1e6, 2),
        "rows": len(log),
        "columns": sorted(log.columns),
        "peak_rss_after_parse_mib": round(_peak_mib(), 1),
        "rss_before_mib": round(base_rss, 1),
    }
    if judge:
        smoke = pd.Series(log.columns["step_time_s"][-200:], index=log.columns["step"][-200:])
        start = time.perf_counter()
        v = judge_steptime(log, smoke, StepTimePolicy())
        out["judge_steptime_s"] = round(time.perf_counter() - start, 2)
        out["judge_steptime"] = v.status.value
        start = time.perf_counter()
        lv = judge_loss(log, log, steps - 300, LossPolicy())
        out["judge_loss_s"] = round(time.perf_counter() - start, 2)
        out["judge_loss"] = lv.status.value
        out["total_s"] = round(parse_s + out["judge_steptime_s"] + out["judge_loss_s"], 2)  # type: ignore[operator]
        out["peak_rss_mib"] = round(_peak_mib(), 1)
    return out


def run(steps: int, keep: list[str] | None, judge: bool) -> dict[str, object]:
    args = [sys.executable, __file__, "--child", "--steps", str(steps), "--keep", json.dumps(keep)]
    if judge:
        args.append("--judge")
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10_000_000)
    parser.add_argument("--memory", action="store_true", help="peak memory vs kept columns (1M steps)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--judge", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--keep", default="null", help=argparse.SUPPRESS)
    parser.add_argument("--file", default=None, metavar="DIR", help="also time read_trainlog on the log written to DIR")
    parser.add_argument("--read", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.steps, json.loads(args.keep), args.judge)))
        return
    if args.read:
        print(json.dumps(child_file(args.read, json.loads(args.keep))))
        return
    if args.memory:
        for keep in (
            ["step_time_s"],
            ["step_time_s", "loss"],
            ["step_time_s", "loss", "lr", "consumed_samples"],
            None,
        ):
            r = run(1_000_000, keep, judge=False)
            print(
                f"1,000,000 steps keep={keep}: parse {r['parse_s']} s ({r['parse_us_per_line']} us/line), "
                f"peak RSS {r['peak_rss_after_parse_mib']} MiB "
                f"(interpreter+imports {r['rss_before_mib']} MiB)"
            )
        return
    r = run(args.steps, ["step_time_s", "loss", "lr", "consumed_samples"], judge=True)
    print(json.dumps(r, indent=2))
    print(
        f"{r['steps']:,} steps ({r['lines']:,} lines): parse {r['parse_s']} s "
        f"({r['parse_us_per_line']} us/line; generator {r['generator_s']} s excluded), "
        f"judge step time {r['judge_steptime_s']} s, judge loss {r['judge_loss_s']} s, "
        f"total {r['total_s']} s, peak RSS {r['peak_rss_mib']} MiB"
    )
    if args.file:
        path = write_log(args.file, args.steps)
        keep = json.dumps(["step_time_s", "loss", "lr", "consumed_samples"])
        argv = [sys.executable, __file__, "--read", path, "--keep", keep]
        f = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
        print(f"read_trainlog {path}: {f['read_s']} s for {f['rows']:,} steps, peak RSS {f['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
