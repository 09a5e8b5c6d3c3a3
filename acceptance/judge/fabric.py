"""Fabric verdict: today's nccl-tests run against the handover baseline's run of the same test.

Order of the checks: today's run must be a clean, complete run (else FAIL quoting
nccl-tests' and NCCL's own error lines); the conditions must be identical (else NOT
COMPARABLE listing the differences); then, for every baseline size ≥ the agreed
minimum, out-of-place busbw ≥ (1 − tolerance) × baseline; `#wrong` must be 0 in
every row; a baseline size missing today fails by name. A busbw more than the nodes' links can
carry (`acceptance.links`) is no measurement: the run fails naming the bound, before any comparison.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pandas as pd

from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.links import BusbwBound, NodeLinks, busbw_bound
from acceptance.margins import Margin, Margins
from acceptance.tools.nccl import NcclConditions, NcclRow, NcclRun, fmt_bytes

MINUS = "\u2212"


def _pct(x: float) -> str:
    text = f"{abs(x) * 100:.1f}".rstrip("0").rstrip(".")
    if text == "0":
        return "0%"
    return f"{MINUS if x < 0 else '+'}{text}%"


def _value(busbw: float | None) -> str:
    """A busbw as the tool printed it: `N/A` for none, `nan`/`inf`, or GB/s."""
    return "N/A" if busbw is None else f"{busbw} GB/s"


def _subject(run: NcclRun, conditions: NcclConditions) -> str:
    if conditions.command and conditions.command.get("program"):
        return str(conditions.command["program"])
    program = run.program
    if program:
        return program.removesuffix("_mpi")
    name = run.collective or conditions.collective
    return f"{name}_perf" if name else "nccl-tests"


def _labeler(rows: Sequence[NcclRow]) -> Callable[[NcclRow], str]:
    kinds = {(r.type, r.redop) for r in rows}

    def label(row: NcclRow) -> str:
        size = fmt_bytes(row.size)
        return size if len(kinds) <= 1 else f"{size} {row.type}" + (f" {row.redop}" if row.redop else "")

    return label


def _failed_run(subject: str, run: NcclRun) -> Verdict:
    errors = run.errors
    damaged = next((e for e in errors if e.kind == "output"), None)
    # a report printed whole but wrong inside (N/A where a measurement belongs, sizes off the sweep) fails:
    # only a run that stopped (cut short, hung) is an error of the check
    status = Status.FAIL if run.status == "failed" or damaged is not None else Status.ERROR
    if run.status == "failed":
        what = "failed"
    elif damaged is not None:
        what = "is incomplete (its report cannot be read whole)"
    else:
        what = "is incomplete (no trailer: cut short or hung)"
    first = next((e for e in errors if "Test " in e.text), damaged or (errors[0] if errors else None))
    summary = f"{subject}: run {what}"
    if first is not None:
        summary += f" — line {first.line}: {first.text}"
    hosts = sorted({e.text.split(":", 1)[0].strip(" .").split()[0] for e in errors if "Test " in e.text})
    figures: dict[str, Figure] = {
        "rows": len(run.rows),
        "error_lines": len(errors),
        "out_of_bounds": run.out_of_bounds,
    }
    if hosts:
        figures["failing_hosts"] = ",".join(hosts)
    return Verdict(status, subject, summary, figures, tuple(str(e) for e in errors))


def implausible(subject: str, run: NcclRun, bound: BusbwBound) -> Verdict | None:
    """FAIL when any busbw of the run (either placement, any size) is more than the links can carry."""
    label = _labeler(run.rows)
    beyond = [
        (row, place, half.busbw)
        for row in run.rows
        for place, half in (("out-of-place", row.oop), ("in-place", row.ip))
        if half is not None and bound.exceeded_by(half.busbw)
    ]
    if not beyond:
        return None
    row, place, busbw = max(beyond, key=lambda b: b[2] or 0.0)
    count = len(beyond)
    summary = (
        f"{subject}: busbw {busbw or 0.0:g} GB/s at {label(row)} ({place}) is more than the links can carry, "
        f"{bound.gbytes_per_s:g} GB/s ({bound.how}): not a measurement"
        + (f"; {count} results beyond it" if count > 1 else "")
    )
    figures: dict[str, Figure] = {
        "unit": "GB/s",
        "busbw_bound": bound.gbytes_per_s,
        "implausible_results": count,
        "implausible_size": row.size,
        "implausible_busbw": busbw,
    }
    evidence = tuple(f"{label(r)} ({p}): busbw {b or 0.0:g} GB/s > {bound.gbytes_per_s:g} GB/s" for r, p, b in beyond)
    return Verdict(Status.FAIL, subject, summary, figures, (f"bound: {bound.how}", *evidence))


def judge_fabric(
    current: NcclRun,
    current_conditions: NcclConditions,
    reference: NcclRun,
    reference_conditions: NcclConditions,
    margins: Margins,
    links: NodeLinks | None = None,
) -> Verdict:
    """`links`: what the nodes' links carry (the profile's `nodes.links`): a busbw above it is refused."""
    subject = _subject(current, current_conditions)
    wrong_rows = [r for r in current.rows for h in (r.oop, r.ip) if h is not None and (h.wrong or 0) > 0]
    corrupt_only = (
        current.status == "failed"
        and (current.out_of_bounds or 0) > 0
        and bool(wrong_rows)
        and not any("Test " in e.text for e in current.errors)
    )
    if current.status != "ok" and not corrupt_only:
        return _failed_run(subject, current)
    refused = implausible(subject, current, busbw_bound(links, current_conditions.node_count))
    if refused is not None:
        return refused
    differences = current_conditions.differences(reference_conditions)
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        return Verdict(
            Status.NOT_COMPARABLE,
            subject,
            f"{subject}: not comparable with the handover baseline: {differences[0]}{more}",
            {"differences": len(differences)},
            tuple(differences),
        )
    return _compare(subject, current, reference, margins)


def _compare(subject: str, current: NcclRun, reference: NcclRun, margins: Margins) -> Verdict:
    label = _labeler(reference.rows)
    now = {r.key: r for r in current.rows}
    margin = Margin.busbw(margins.busbw_tolerance)
    judged = [r for r in reference.rows if r.size >= margins.busbw_min_size]
    records = []
    figures: dict[str, Figure] = {}
    missing: list[NcclRow] = []
    unusable: list[tuple[NcclRow, float | None, float | None]] = []  # a busbw that is N/A or not a number
    worst: tuple[float, NcclRow, float, float] | None = None
    for base in judged:
        row = now.get(base.key)
        expected = base.oop.busbw if base.oop else None
        if row is None:
            missing.append(base)
            records.append((base.size, math.nan, expected, math.nan, False))
            continue
        measured = row.oop.busbw if row.oop else None
        if expected is not None and math.isfinite(expected) and expected <= 0:
            continue  # one rank: nccl-tests' busbw is 0 by definition, nothing to compare
        if measured is None or expected is None or not (math.isfinite(measured) and math.isfinite(expected)):
            # N/A where a measurement belongs is never skipped: the size fails, naming the value
            unusable.append((base, measured, expected))
            records.append((base.size, math.nan if measured is None else measured, expected, math.nan, False))
            continue
        ratio = measured / expected
        records.append((base.size, measured, expected, ratio, margin.within(ratio)))
        figures[f"busbw_oop[{label(base)}]"] = measured
        if worst is None or ratio < worst[0]:
            worst = (ratio, base, measured, expected)
    table = pd.DataFrame.from_records(records, columns=["size", "busbw_now", "busbw_baseline", "ratio", "passed"])
    wrong = [
        (r, place, h.wrong)
        for r in current.rows
        for place, h in (("out-of-place", r.oop), ("in-place", r.ip))
        if h is not None and (h.wrong or 0) > 0
    ]
    n = len(judged)
    scope = f"{n} size{'s' if n != 1 else ''} ≥ {fmt_bytes(margins.busbw_min_size)}"
    figures.update(
        {
            "margin": margin,
            "unit": "GB/s",
            "sizes_compared": n,
            "missing_sizes": len(missing),
            "wrong_rows": len(wrong),
        }
    )
    if worst is not None:
        ratio, base, measured, expected = worst
        figures.update(
            {
                "worst_size": base.size,
                "worst_size_label": label(base),
                "worst_ratio": round(ratio, 4),
                "measured": measured,
                "expected": expected,
            }
        )
    evidence = [
        f"{label(r)}: {int(w) if float(w).is_integer() else w:g} wrong elements ({place})"
        for r, place, w in wrong
        if w is not None
    ]
    evidence += [f"{label(b)}: missing today (busbw {b.oop.busbw if b.oop else '?'} GB/s at handover)" for b in missing]
    slow = table[(table["passed"] == False) & table["busbw_now"].notna()]  # noqa: E712
    evidence += [
        f"{fmt_bytes(int(s))}: busbw {m:.1f} GB/s vs {e:.1f} at handover ({_pct(r - 1)})"
        for s, m, e, r in zip(slow["size"], slow["busbw_now"], slow["busbw_baseline"], slow["ratio"], strict=True)
    ]
    if wrong:
        r, place, w = wrong[0]
        summary = (
            f"{subject}: {w:g} wrong elements at {label(r)} ({place}); data corruption in "
            f"{len(wrong)} result{'s' if len(wrong) != 1 else ''}"
        )
        return Verdict(Status.FAIL, subject, summary, figures, tuple(evidence), table)
    if unusable:
        figures["unusable_sizes"] = len(unusable)
        shown = "; ".join(f"{label(b)}: {_value(m)} now, {_value(e)} at handover" for b, m, e in unusable[:3])
        plural = "s" if len(unusable) != 1 else ""
        summary = f"{subject}: busbw is not a number at {len(unusable)} size{plural} ({shown})"
        evidence += [
            f"{label(b)}: busbw {_value(m)} now vs {_value(e)} at handover: not a measurement" for b, m, e in unusable
        ]
        return Verdict(Status.FAIL, subject, summary, figures, tuple(evidence), table)
    if missing:
        names = ", ".join(label(b) for b in missing[:3]) + (" …" if len(missing) > 3 else "")
        plural = "s" if len(missing) != 1 else ""
        summary = f"{subject}: {len(missing)} size{plural} missing today ({names}), present at handover"
        return Verdict(Status.FAIL, subject, summary, figures, tuple(evidence), table)
    if worst is None:
        return Verdict(
            Status.INCONCLUSIVE,
            subject,
            f"{subject}: no baseline size ≥ {fmt_bytes(margins.busbw_min_size)} to compare",
            figures,
            tuple(evidence),
            table,
        )
    ratio, base, measured, expected = worst
    head = (
        f"busbw {measured:.1f} GB/s at {label(base)} vs {expected:.1f} at handover "
        f"({_pct(ratio - 1)}, margin {_pct(margin.signed)})"
    )
    if not margin.within(ratio):
        return Verdict(Status.FAIL, subject, f"{subject}: {head}; worst of {scope}", figures, tuple(evidence), table)
    return Verdict(
        Status.PASS,
        subject,
        f"{subject}: within margin at all {scope}; worst {head}",
        figures,
        tuple(evidence),
        table,
    )
