"""`acceptance lost-time`: lost training time of an incident, by term and owner; resharding or waiting.

    acceptance lost-time --checkpoint-every 60m --failed-after 50m --nodes 16 --gpus-per-node 8 \\
        --detection 5m --repair 2h --revalidation 30m --restart 10m [--reshard-to 15 --tp 8 --pp 2 ...]
    acceptance lost-time --bundle reports/prod/incident-INC-1234 [--restart 10m]   # measured terms

With ``--bundle`` the terms are measured: the failure after the last checkpoint and the checkpoint
interval from the job's logs, detection = bundle time - first bad time, repair = the ticket's first
acceptance run - bundle time, revalidation = that run's start to the passing run's end (the ticket's
reports are found under --reports-dir). A flag given as well overrides a measured term. Text by
default, ``--json`` for scripts; exit 2 for bad or missing inputs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.incident.clocks import parse_utc
from acceptance.incident.lost_time import Layout, LostTime, Reshard, lost_time, reshard
from acceptance.report.history import ticket_reports
from acceptance.units import format_duration, parse_duration, parse_size

GPU_MEMORY = {"H200": 141e9, "H100": 80e9, "A100-SXM4-80GB": 80e9, "A100-SXM4-40GB": 40e9, "B200": 180e9}


def _duration(flag: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        if text.strip().startswith("-"):
            raise argparse.ArgumentTypeError(f"{flag} {text}: a negative time cannot be a term of lost time")
        try:
            return parse_duration(text, allow_zero=True)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{flag}: {exc}") from None

    return parse


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lost-time",
        help="lost training time of an incident; resharding or waiting",
        description=__doc__.split("\n\n", 2)[2] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flag, what in (
        ("--checkpoint-every", "the job's checkpoint interval"),
        ("--failed-after", "failure time after the last checkpoint save"),
        ("--detection", "failure to incident opened"),
        ("--repair", "diagnosis and repair"),
        ("--revalidation", "acceptance run until it passed"),
        ("--restart", "job restart and checkpoint load"),
    ):
        p.add_argument(flag, type=_duration(flag), metavar="DURATION", help=f"{what} (e.g. 90s, 15m, 2h)")
    p.add_argument("--nodes", type=_positive_int, help="nodes of the job")
    p.add_argument("--gpus-per-node", type=_positive_int, help="GPUs per node")
    p.add_argument("--bundle", type=Path, metavar="DIR", help="measure the terms from an incident bundle")
    p.add_argument("--reports-dir", type=Path, default=Path("reports"), metavar="DIR")
    p.add_argument("--reshard-to", type=_positive_int, metavar="N", help="compare with restarting on N nodes")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor-parallel size")
    p.add_argument("--pp", type=_positive_int, default=1, help="pipeline-parallel size")
    p.add_argument("--params", type=float, help="model parameters (e.g. 70e9)")
    p.add_argument(
        "--optimizer-bytes-per-param",
        type=float,
        metavar="B",
        help="bytes of model and optimizer state per parameter (e.g. 16 for mixed-precision Adam)",
    )
    p.add_argument("--gpu-memory", metavar="SIZE", help="memory of one GPU (e.g. 141G; default from --gpu-model)")
    p.add_argument("--gpu-model", help=f"one of {', '.join(GPU_MEMORY)}")
    p.add_argument("--sharded-optimizer", action="store_true", help="state sharded over data parallel (ZeRO-1+)")
    p.add_argument("--step-time", type=float, metavar="S", help="step time on the full node set (s)")
    p.add_argument("--reshard-step-time", type=float, metavar="S", help="measured step time on N nodes (s)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run)


def _measured(args: argparse.Namespace) -> tuple[dict[str, float], dict[str, int], list[str]]:
    """Terms measured from the bundle and the ticket's reports; (seconds, sizes, notes)."""
    path = args.bundle / "bundle.json" if args.bundle.is_dir() else args.bundle
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"--bundle {args.bundle}: not a readable bundle.json ({exc})") from None
    out: dict[str, float] = {}
    sizes: dict[str, int] = {}
    notes: list[str] = []
    created = parse_utc(str(doc.get("created_utc")), "creation time")
    window, steps = doc.get("window") or {}, doc.get("steps") or {}
    bad = parse_utc(window["first_bad_utc"]) if window.get("first_bad_utc") else None
    ckpt = parse_utc(steps["last_checkpoint_utc"]) if steps.get("last_checkpoint_utc") else None
    step_s = steps.get("median_before_s")
    if bad and ckpt:
        out["failed_after"] = (bad - ckpt).total_seconds()
    if steps.get("checkpoint_interval_steps") and step_s:
        out["checkpoint_every"] = float(steps["checkpoint_interval_steps"]) * float(step_s)
    if bad:
        out["detection"] = (created - bad).total_seconds()
    ranks = doc.get("ranks") or {}
    by_node = ranks.get("by_node") or {}
    if by_node and ranks.get("world_size"):
        sizes["nodes"] = len(by_node)
        sizes["gpus_per_node"] = int(ranks["world_size"]) // len(by_node)
    ticket = doc.get("ticket")
    if ticket:
        runs = [r for r in ticket_reports(args.reports_dir, str(ticket)) if r.start_utc and r.start_utc >= created]
        passed = next((r for r in runs if r.passed), None)
        if runs and runs[0].start_utc:
            out["repair"] = (runs[0].start_utc - created).total_seconds()
        if passed is not None and passed.end_utc and runs[0].start_utc:
            out["revalidation"] = (passed.end_utc - runs[0].start_utc).total_seconds()
        if passed is None:
            notes.append(
                f"no passing acceptance run of {ticket} under {args.reports_dir}: repair and revalidation "
                "are not measured"
            )
    else:
        notes.append("the bundle has no ticket: repair and revalidation cannot be matched to acceptance runs")
    return out, sizes, notes


def compute(args: argparse.Namespace) -> tuple[LostTime, Reshard | None, list[str]]:
    measured: dict[str, float] = {}
    sizes: dict[str, int] = {}
    notes: list[str] = []
    if args.bundle is not None:
        measured, sizes, notes = _measured(args)
    names = ("checkpoint_every", "failed_after", "detection", "repair", "revalidation", "restart")
    values: dict[str, float | None] = {}
    from_evidence: set[str] = set()
    for name in names:
        flag = getattr(args, name)
        if flag is not None:
            values[name] = flag
        elif name in measured:
            values[name] = measured[name]
            from_evidence.add(name)
        else:
            values[name] = None
    missing = [n for n in names if values[n] is None and n != "failed_after"]
    nodes, gpus = args.nodes or sizes.get("nodes"), args.gpus_per_node or sizes.get("gpus_per_node")
    if missing or nodes is None or gpus is None:
        need = (
            [f"--{n.replace('_', '-')}" for n in missing]
            + (["--nodes"] if nodes is None else [])
            + (["--gpus-per-node"] if gpus is None else [])
        )
        raise UsageError(f"lost-time needs {', '.join(need)} (or a --bundle that measures them)")
    if values["failed_after"] is not None and values["failed_after"] < 0:
        raise UsageError("lost-time: the failure cannot come before the last checkpoint (negative --failed-after)")
    result = lost_time(
        checkpoint_every_s=float(values["checkpoint_every"] or 0),
        failed_after_s=values["failed_after"],
        nodes=nodes,
        gpus_per_node=gpus,
        detection_s=float(values["detection"] or 0),
        repair_s=float(values["repair"] or 0),
        revalidation_s=float(values["revalidation"] or 0),
        restart_s=float(values["restart"] or 0),
        measured=frozenset(from_evidence),
    )
    plan = None
    if args.reshard_to is not None:
        memory = parse_size(args.gpu_memory) if args.gpu_memory else GPU_MEMORY.get(args.gpu_model or "")
        plan = reshard(
            result,
            args.reshard_to,
            layout=Layout(args.tp, args.pp),
            step_time_full_s=args.step_time,
            step_time_reshard_s=args.reshard_step_time,
            params=args.params,
            state_bytes_per_param=args.optimizer_bytes_per_param,
            gpu_memory_bytes=memory,
            sharded_state=args.sharded_optimizer,
        )
    return result, plan, notes


def _text(result: LostTime, plan: Reshard | None, notes: list[str]) -> list[str]:
    g = result.gpus
    out = [
        f"lost training time = work since the last checkpoint + detection + diagnosis and repair + revalidation "
        f"+ restart and checkpoint load, over {result.nodes} nodes x {result.gpus_per_node} GPUs = {g} GPUs",
        "",
    ]
    for t in result.terms:
        how = "measured" if t.measured else "estimate"
        out.append(
            f"  {t.name:<32} {format_duration(t.seconds):>9} = {t.hours:7.3f} h x {g} = "
            f"{result.gpu_hours_of(t):8.1f} GPU-h  [{t.owner}, {how}: {t.formula}]"
        )
    out.append(
        f"  {'total':<32} {format_duration(result.hours * 3600):>9} = {result.hours:7.3f} h x {g} = "
        f"{result.gpu_hours:8.1f} GPU-h"
    )
    owners = result.by_owner()
    out += [
        "",
        f"by owner: customer {owners['customer']:.3f} h = {owners['customer'] * g:.1f} GPU-h (checkpoint "
        f"interval, restart); provider {owners['provider']:.3f} h = {owners['provider'] * g:.1f} GPU-h "
        "(detection, repair, revalidation)",
        f"lost work before repair begins: {result.terms[0].hours:.4f} h x {g} GPUs = "
        f"{result.before_repair_gpu_hours:.1f} GPU-hours",
    ]
    if plan is not None:
        out += [
            "",
            f"resharding to {plan.to_nodes} nodes while the repair runs (throughput fraction f = "
            f"{plan.fraction:.4f}: {plan.fraction_formula}):",
            f"  wait:    R + V + S = {plan.lost_wait_h:.3f} h = {plan.lost_wait_h * g:.1f} GPU-h",
            f"  reshard: R + V + 2S - f x max(0, R + V - S) = {plan.lost_reshard_h:.3f} h = "
            f"{plan.lost_reshard_h * g:.1f} GPU-h",
            f"  → {plan.better} loses less for this repair estimate"
            + (" (but a condition below does not hold)" if any(h is False for _, h, _ in plan.checks) else "")
            + (
                f" (resharding wins when repair + revalidation exceed {plan.break_even_repair_h:.3f} h)"
                if plan.break_even_repair_h is not None
                else ""
            ),
        ]
        if plan.step_time_reshard_s is not None and plan.step_time_full_s is not None:
            out.append(
                f"  step time {plan.step_time_full_s:g} s on {result.nodes} nodes → "
                f"{plan.step_time_reshard_s:.3f} s on {plan.to_nodes}"
            )
        out.append("  what must hold for a reshard:")
        for what, holds, why in plan.checks:
            mark = "yes" if holds else "NO" if holds is False else "unchecked"
            out.append(f"    [{mark}] {what}: {why}")
    out += [f"note: {n}" for n in notes]
    return out


def _json(result: LostTime, plan: Reshard | None, notes: list[str]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "nodes": result.nodes,
        "gpus_per_node": result.gpus_per_node,
        "gpus": result.gpus,
        "terms": [
            {
                "name": t.name,
                "owner": t.owner,
                "seconds": t.seconds,
                "hours": t.hours,
                "gpu_hours": result.gpu_hours_of(t),
                "measured": t.measured,
                "formula": t.formula,
            }
            for t in result.terms
        ],
        "hours": result.hours,
        "gpu_hours": result.gpu_hours,
        "by_owner_hours": result.by_owner(),
        "before_repair_gpu_hours": result.before_repair_gpu_hours,
        "notes": notes,
    }
    if plan is not None:
        doc["reshard"] = {
            "to_nodes": plan.to_nodes,
            "fraction": plan.fraction,
            "fraction_formula": plan.fraction_formula,
            "lost_wait_hours": plan.lost_wait_h,
            "lost_reshard_hours": plan.lost_reshard_h,
            "better": plan.better,
            "break_even_repair_hours": plan.break_even_repair_h,
            "step_time_reshard_s": plan.step_time_reshard_s,
            "checks": [{"condition": c, "holds": h, "why": w} for c, h, w in plan.checks],
        }
    return doc


def _run(args: argparse.Namespace) -> int:
    result, plan, notes = compute(args)
    if args.json:
        json.dump(_json(result, plan, notes), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print("\n".join(_text(result, plan, notes)))
    return 0
