"""Benchmark of the nccl-tests parser (issues 3 and 19): throughput, cost relative to plain line
iteration, and peak memory as the input grows; the `acceptance parse nccl` command end to end.

    python bench/parse_nccl.py            # 1,000,000-line capture; 10x and 100x for memory; 34 MB corpus captures
    python bench/parse_nccl.py --quick    # 100,000-line capture; 10x and 100x of that; 8 MB corpus captures

The synthetic capture is in nccl-tests' real format: five collectives, each with a 2,160-rank
header (540 nodes x 4 GPUs), 30 rows, and NCCL INFO lines from every host before the header and
between rows. Larger inputs add INFO noise (the report stays the same), streamed from a generator
in a fresh subprocess per size so that each peak RSS (resource.getrusage, ru_maxrss) is the
parser's own.

The corpus captures (issue 19, when ../shared is there) are built from real outputs
(`bench/noisy_captures.py`): "interleaved", the 540-node report and the 8-node EFA capture between
blocks of the EFA captures' NCCL INFO lines (several reports in one NCCL_DEBUG=INFO log), and
"separate", many whole NCCL_DEBUG=INFO captures of one report each (the 2- and 8-node EFA ones)
one after the other. On each: plain line iteration, the parser (`read_nccl`), and the command
(`python -m acceptance parse nccl FILE > out.json`, a fresh process: start-up, imports, parse and
the JSON written), with their ratios to plain iteration (targets: parser <= 4x, command <= 5x),
the command's peak RSS and JSON size. The three are timed in turn, seven rounds, best of each, with the
package's bytecode written first (as installed), then where the command's CPU goes: the interpreter's
start and imports, the parse, the rows' JSON and the rest of the runs' JSON, each against plain iteration.
Wall and CPU times are both printed: on a machine shared
with other work, wall time measures the others too, CPU time (process_time, the children's rusage)
only ours. Last, flat memory: the command on many captures of the
540-node report (rank lists dominate: 34 MB and 200 MB, quick: 8 and 50 MB), whose JSON is
streamed out run by run.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, and `bench` as a package

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")
NODES, GPUS = 540, 4
SIZES = [1 << k for k in range(2, 32)]  # 4 B .. 2 GiB: 30 rows
HEADER = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place" + " " * 10 + "\n",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "     time   algbw   busbw  #wrong \n",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "      (us)  (GB/s)  (GB/s)         \n",
)


def _fmt(value: float, width: int) -> str:
    power, val = 0, 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def _host(i: int) -> str:
    return f"x3006c0s{i // 8}b{i % 2}n{i % 4}"


def _info_pool(size: int = 4096) -> list[str]:
    pool = []
    for i in range(size):
        host = _host(i % NODES)
        pool.append(
            f"{host}:{60000 + i}:{60100 + i} [{i % GPUS}] NCCL INFO Channel {i % 32:02d}/0 : "
            f"{i % 2160}[{i % GPUS}] "
            f"-> {(i * 7) % 2160}[{(i + 1) % GPUS}] [send] via NET/IB/{i % GPUS}/GDRDMA\n"
        )
    return pool


def _report(collective: str, noise: Iterator[str], noise_per_gap: int, noise_before: int) -> Iterator[str]:
    nranks = NODES * GPUS
    yield "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
    yield f"# Collective test starting: {collective}_perf\n"
    yield (
        "# nThread 1 nGpus 1 minBytes 4 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0\n"
    )
    yield "#\n"
    yield "# Using devices\n"
    for rank in range(nranks):
        yield (
            f"#  Rank {rank:2d} Group  0 Pid {70000 + rank:6d} on {_host(rank // GPUS):>10} device "
            f"{rank % GPUS:2d} [0000:{7 + 0x3F * (rank % GPUS):02x}:00] NVIDIA A100-SXM4-40GB\n"
        )
    yield from itertools.islice(noise, noise_before)
    yield "#\n"
    yield from HEADER
    factor = 2 * (nranks - 1) / nranks
    total = 0.0
    for size in SIZES:
        t = 200.0 + size / 9.0e3
        alg = size / 1e3 / t
        bus = alg * factor
        total += 2 * bus
        half = f"  {_fmt(t, 7)}  {_fmt(alg, 6)}  {_fmt(bus, 6)}  {0:6g}"
        yield f"{size:12d}  {size // 4:12d}  {'float':>8}  {'sum':>6}  {-1:6d}{half}{half}\n"
        yield from itertools.islice(noise, noise_per_gap)
    yield "# Out of bounds values : 0 OK\n"
    yield f"# Avg bus bandwidth    : {total / (2 * len(SIZES)):g} \n"
    yield "#\n"
    yield f"# Collective test concluded: {collective}_perf\n"
    yield "#\n"
    yield "\n"


def capture(lines: int) -> Iterator[str]:
    """About `lines` lines: five reports, the rest NCCL INFO noise."""
    fixed = len(COLLECTIVES) * (NODES * GPUS + len(SIZES) + 14)
    per_report = max(0, lines - fixed) // len(COLLECTIVES)
    per_gap = per_report // (2 * len(SIZES))
    before = per_report - per_gap * len(SIZES)
    noise = itertools.cycle(_info_pool())
    for collective in COLLECTIVES:
        yield from _report(collective, noise, per_gap, before)


def _best(fn, repeat: int, clock=time.perf_counter) -> float:  # type: ignore[no-untyped-def]
    """Best time of `fn` over `repeat` calls, by `clock` (wall time unless told)."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def _child(lines: int) -> None:
    """Parse a streamed capture of `lines` lines; print peak RSS (MiB), time, runs, rows."""
    from acceptance.tools.nccl import parse

    start = time.perf_counter()
    result = parse(capture(lines), "<bench>")
    elapsed = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = sum(len(r.rows) for r in result.runs)
    print(f"{rss:.1f} {elapsed:.2f} {len(result.runs)} {rows} {result.status}")


def _baseline_rss() -> float:
    """Peak RSS of a child that imports the parser and parses nothing (the interpreter's floor)."""
    root = str(Path(__file__).resolve().parents[1])
    code = (
        f"import resource, sys; sys.path.insert(0, {root!r}); import acceptance.tools.nccl; "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def _plain(path: Path) -> None:
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        for _ in handle:
            pass


def _command_child(path: str, out: str) -> None:
    """The command as a user runs it, in this fresh process: peak RSS and the heavy modules it loaded."""
    from acceptance.cli import main

    with open(out, "w", encoding="utf-8") as handle:
        saved, sys.stdout = sys.stdout, handle
        try:
            code = main(["parse", "nccl", path])
        finally:
            sys.stdout = saved
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    heavy = [m for m in ("pandas", "numpy", "matplotlib", "kubernetes") if m in sys.modules]
    print(f"{rss:.1f} {code} {','.join(heavy) or '-'}")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Wall and CPU time of one call of `fn` (CPU: this process and the children it waited for)."""
    start, start_cpu = time.perf_counter(), time.process_time() + _children_cpu()
    fn()
    return time.perf_counter() - start, time.process_time() + _children_cpu() - start_cpu


def _run_command(path: Path, out: Path) -> None:
    with open(out, "w") as handle:
        subprocess.run([sys.executable, "-m", "acceptance", "parse", "nccl", str(path)], stdout=handle, check=False)


def _command_facts(path: Path, out: Path) -> tuple[str, float]:
    """The command's peak RSS, exit code and heavy modules (a fresh process), and its JSON size in MB."""
    child = subprocess.run(
        [sys.executable, __file__, "--command-child", str(path), str(out)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return child, out.stat().st_size / 1e6


def _rounds(fns: dict[str, object], rounds: int) -> dict[str, tuple[float, float, float]]:
    """Each function's best wall and CPU time and its median CPU ratio to the first one's, measured in turn
    round after round: on a machine whose speed drifts (a shared host), a ratio taken within one round
    compares times taken under the same conditions, and the median drops the rounds a neighbour spoiled."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(_timed(fn))
    first = times[next(iter(fns))]
    return {
        name: (
            min(w for w, _ in got),
            min(c for _, c in got),
            statistics.median(c / base for (_, c), (_, base) in zip(got, first, strict=True)),
        )
        for name, got in times.items()
    }


def _compile_package() -> None:
    """Write the package's bytecode first, as an installed package has it: a checkout run with
    PYTHONDONTWRITEBYTECODE would otherwise compile every changed module at each command's start."""
    import compileall

    compileall.compile_dir(Path(__file__).resolve().parents[1] / "acceptance", quiet=2)


def _corpus(quick: bool) -> None:
    from acceptance.cmd.parse_nccl import read_nccl
    from bench.noisy_captures import build, corpus_dir

    _compile_package()

    if corpus_dir() is None:
        print("corpus captures: ../shared/corpus/nccl is absent; skipped")
        return
    size = 8e6 if quick else 34e6
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("interleaved", "separate"):
            path = Path(tmp) / f"{kind}.txt"
            lines, info_lines = build(kind, size, path)
            mb = path.stat().st_size / 1e6
            capture = read_nccl(path)
            out = Path(tmp) / "out.json"
            best = _rounds(
                {
                    "plain": lambda p=path: _plain(p),
                    "parser": lambda p=path: read_nccl(p),
                    "command": lambda p=path, o=out: _run_command(p, o),
                },
                7,
            )
            (plain_s, plain_cpu, _), (parse_s, parse_cpu, parse_x), (command_s, command_cpu, command_x) = best.values()
            child, json_mb = _command_facts(path, out)
            rss, code, heavy = child.split()
            info = info_lines / lines
            print(
                f"{kind}: {mb:.1f} MB, {lines:,} lines ({info:.0%} NCCL INFO), {len(capture.runs)} runs, "
                f"status {capture.status}"
            )
            print(f"  plain line iteration: best wall {plain_s:.3f} s, CPU {plain_cpu:.3f} s")
            print(
                f"  parser (read_nccl):   {parse_x:.2f}x plain, median of 7 rounds' CPU ratios (target <= 4x); "
                f"best wall {parse_s:.3f} s, CPU {parse_cpu:.3f} s"
            )
            print(
                f"  command end to end:   {command_x:.2f}x plain, median of 7 rounds' CPU ratios (target <= 5x); "
                f"best wall {command_s:.3f} s, CPU {command_cpu:.3f} s; exit {code}, "
                f"peak RSS {rss} MiB, JSON {json_mb:.1f} MB, heavy modules loaded: {heavy}"
            )
            print("  where the command's CPU goes:")
            _breakdown(path)
        print("flat memory, the command on many captures of the 540-node report (JSON streamed run by run):")
        for mb_wanted in (8e6, 50e6) if quick else (34e6, 200e6):
            path = Path(tmp) / f"ranks-{mb_wanted:.0f}.txt"
            lines, _ = build("ranks", mb_wanted, path)
            out = Path(tmp) / "out.json"
            best = _rounds({"plain": lambda p=path: _plain(p), "command": lambda p=path, o=out: _run_command(p, o)}, 1)
            (_, plain_cpu, _), (command_s, command_cpu, _) = best.values()
            child, json_mb = _command_facts(path, out)
            rss, code, heavy = child.split()
            print(
                f"  {path.stat().st_size / 1e6:6.1f} MB, {lines:>10,} lines: command wall {command_s:6.2f} s, "
                f"CPU {command_cpu:6.2f} s ({command_cpu / plain_cpu:.1f}x plain), peak RSS {rss:>6} MiB, "
                f"JSON {json_mb:6.1f} MB, exit {code}"
            )
            path.unlink()


def _breakdown(path: Path, rounds: int = 7) -> None:
    """Where the command's time goes, each part as a multiple of plain iteration (median of rounds)."""
    from acceptance.cmd.jsonout import pretty
    from acceptance.cmd.parse_nccl import read_nccl

    runs = read_nccl(path).runs
    empty = path.with_name("empty.txt")
    empty.write_text("nothing of nccl-tests\n")

    def start() -> None:  # the interpreter and the command's imports, on a file with nothing to parse
        command = [sys.executable, "-m", "acceptance", "parse", "nccl", str(empty)]
        subprocess.run(command, capture_output=True, check=False)

    parts = {
        "plain": lambda: _plain(path),
        "interpreter start and imports": start,
        "parse (read_nccl, runs handed on)": lambda: read_nccl(path, None, lambda run: None),
        "rows' JSON from their text": lambda: [run.rows.json_texts() for run in runs],
        "runs' JSON, rows included": lambda: [pretty(run.to_json(rows_as_text=True), 4, 2) for run in runs],
    }
    for name, (_, _, ratio) in _rounds(parts, rounds).items():
        if name != "plain":
            print(f"    {name + ':':38s} {ratio:.2f}x plain")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100,000 lines instead of 1,000,000; 8 MB corpus captures")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--command-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--corpus-only", action="store_true", help="only the corpus captures (issue 19)")
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return 0
    if args.command_child:
        _command_child(*args.command_child)
        return 0
    if args.corpus_only:
        _corpus(args.quick)
        return 0

    from acceptance.cmd.parse_nccl import read_nccl

    base = 100_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "capture.txt"
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(capture(base))
        size_mb = path.stat().st_size / 1e6
        with open(path, encoding="utf-8") as handle:
            n_lines = sum(1 for _ in handle)

        result = read_nccl(path)
        plain_s = _best(lambda: _plain(path), 3)
        parse_s = _best(lambda: read_nccl(path), 3)
    rows = sum(len(r.rows) for r in result.runs)
    runs = len(result.runs)
    print(
        f"capture: {n_lines:,} lines, {size_mb:.1f} MB, {runs} runs x {result.runs[0].nranks} ranks, "
        f"{rows} rows, status {result.status}"
    )
    print(f"plain line iteration: {plain_s:.3f} s ({size_mb / plain_s:.0f} MB/s)")
    rate = n_lines / parse_s / 1e6
    print(f"read_nccl:            {parse_s:.3f} s ({size_mb / parse_s:.1f} MB/s, {rate:.2f} M lines/s)")
    print(f"ratio parse / plain iteration: {parse_s / plain_s:.2f}x (target <= 5x)")
    print(f"peak RSS, fresh process per size (interpreter + imports alone: {_baseline_rss():.1f} MiB):")
    for scale in (1, 10, 100):
        lines = base * scale
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(lines)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        ).stdout.split()
        print(
            f"  {scale:>3}x ({lines:>11,} lines streamed): peak RSS {out[0]:>7} MiB, parse {out[1]:>6} s, "
            f"{out[2]} runs, {out[3]} rows, {out[4]}"
        )
    _corpus(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
