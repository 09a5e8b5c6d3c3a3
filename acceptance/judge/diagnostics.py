"""Criterion 1: the returned node passes DCGM diagnostics on every GPU of the agreement.

Rules: every expected GPU is present; every test that passed at handover
passes now on every GPU; a test run at handover and skipped (or absent) now fails;
DCGM's overall Fail fails the node even when no GPU row fails; warnings are recorded
and fail only when their severity says isolate or reset the GPU. Tests are matched by
their DCGM 4.x names, so a 3.x handover compares with a 4.x run; a version change is
stated, and a handover test the new DCGM no longer has is named, not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from acceptance.judge.verdict import Figure, Status, Verdict
from acceptance.tools import images
from acceptance.tools.dcgm import (
    FAIL,
    PASS,
    SEVERITY_ISOLATE,
    SEVERITY_NAMES,
    SEVERITY_NONE,
    SEVERITY_RESET,
    SKIP,
    SOFTWARE,
    WARN,
    DcgmConditions,
    DcgmMessage,
    DcgmReport,
    DcgmTest,
    action,
    cause,
    codes,
    interpret_exit,
    xid_of,
)


@dataclass(frozen=True)
class DiagnosticsPolicy:
    """The diagnostics margins of the agreement (profile `margins.diagnostics`)."""

    # error_severity values that fail a test DCGM itself passed or only warned about
    fail_severities: frozenset[int] = frozenset({SEVERITY_ISOLATE, SEVERITY_RESET})
    # an all-skip run with no handover to compare is not a pass
    skipped_run_is_inconclusive: bool = True
    # a handover test absent from a newer DCGM's run: named in the evidence; fail it too?
    fail_on_retired_test: bool = False
    # a warning that carries no severity (DCGM's text tables print none): fail it too?
    fail_unrated_warnings: bool = False


# The profile's `dcgm.fail_on_warning_severity`: the DCGM error severities that fail a GPU.
WARNING_THRESHOLDS: dict[str, frozenset[int]] = {
    "isolate": frozenset({SEVERITY_ISOLATE, SEVERITY_RESET}),  # the GPU must be isolated or reset
    "reset": frozenset({SEVERITY_RESET}),
    "any": frozenset(code for code in SEVERITY_NAMES if code != SEVERITY_NONE),
    "none": frozenset(),
}


def policy_for(threshold: str) -> DiagnosticsPolicy:
    """The diagnostics policy of a profile's `fail_on_warning_severity` (isolate, reset, any, none)."""
    return DiagnosticsPolicy(fail_severities=WARNING_THRESHOLDS[threshold], fail_unrated_warnings=threshold == "any")


@dataclass
class _Finding:
    gpu: int | None
    test: str
    what: str
    messages: list[DcgmMessage] = field(default_factory=list)


def judge_node(
    node: str,
    current: DcgmReport,
    reference: DcgmReport | None,
    expected_gpus: Sequence[int] | int,
    policy: DiagnosticsPolicy,
    exit_code: int | None = None,
    *,
    level: int | None = None,
    reference_level: int | None = None,
    image: str | None = None,
    reference_image: str | None = None,
) -> Verdict:
    gpus = list(range(expected_gpus)) if isinstance(expected_gpus, int) else sorted(expected_gpus)
    now = DcgmConditions(current.dcgm_version, level)
    then = DcgmConditions(reference.dcgm_version, reference_level) if reference else None
    where = f"DCGM {current.dcgm_version or '(version not printed)'}" + (f" r{level}" if level else "")
    figures: dict[str, Figure] = {
        "node": node,
        "dcgm_version": current.dcgm_version,
        "level": level,
        "gpus_expected": len(gpus),
        "gpus_seen": len(current.gpus),
    }
    if reference is not None:
        figures["handover_dcgm_version"] = reference.dcgm_version
    for test in current.tests:
        figures[f"test.{test.name}"] = test.status
        for gpu, status in sorted(test.gpus.items()):
            figures[f"gpu{gpu}.{test.name}"] = status
    table = _table(node, current, reference)
    notes = [_explain(d) for d in now.differences(then)] if then else []
    if reference is not None:
        notes.extend(_replaced_gpus(current, reference))

    exit_meaning = interpret_exit(exit_code) if exit_code is not None else None
    if exit_code is not None:
        figures["exit_code"] = exit_code
    if (current.status == "error" and not any(t.status == FAIL for t in current.tests)) or (
        exit_meaning is not None and not exit_meaning.ran
    ):
        why = "; ".join(e.text for e in current.errors) or (exit_meaning.meaning if exit_meaning else "")
        summary = f"{node}: the diagnostic did not complete ({_short(why)}) — {where}; rerun it before judging"
        return Verdict(Status.ERROR, node, summary, figures, (*notes, *(e.text for e in current.errors)), table)

    if image and reference_image and image != reference_image:
        summary = (
            f"{node}: not comparable with the handover baseline: DCGM image {images.shown(image, reference_image)} "
            f"now, {reference_image} at handover; run the agreed image (kube.images.dcgm) or record a new baseline"
        )
        figures["handover_image"] = reference_image
        return Verdict(Status.NOT_COMPARABLE, node, summary, figures, tuple(notes), table)
    if level is not None and reference_level is not None and level != reference_level:
        # another level runs other tests: a comparison would read a condition change as broken hardware
        summary = (
            f"{node}: not comparable with the handover baseline: DCGM level -r {level} now, -r {reference_level} "
            f"at handover; run the agreed level (dcgm.level) or record a new baseline"
        )
        figures["handover_level"] = reference_level
        return Verdict(Status.NOT_COMPARABLE, node, summary, figures, tuple(notes), table)
    findings = _findings(current, reference, gpus, policy, notes=notes, levels=(level, reference_level))
    if exit_meaning is not None and not exit_meaning.passed and not findings:
        findings.append(_Finding(None, "-", f"dcgmi exited {exit_code} ({exit_meaning.meaning}) but no test failed"))
    if current.status == FAIL and not findings:
        findings.append(
            _Finding(None, "-", "DCGM reports the run failed: " + "; ".join(e.text for e in current.errors))
        )
    disagree = [t.name for t in current.tests if t.summary is not None or (t.status != FAIL and t.failed_rows())]
    if disagree:
        figures["summary_disagrees"] = ", ".join(disagree)
    figures["failures"] = len(findings)
    evidence = [*(_evidence(node, current, reference, f) for f in findings), *notes]
    if findings:
        first = _headline(findings)
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        summary = f"{node}{_gpu(first.gpu)}: {first.what}{more} — {where}; {action(first.messages)}"
        figures["worst_gpu"] = first.gpu
        return Verdict(Status.FAIL, node, summary, figures, tuple(evidence), table)
    if policy.skipped_run_is_inconclusive and current.incomplete:
        summary = f"{node}: every test beyond the software checks was skipped, nothing was exercised — {where}"
        return Verdict(Status.INCONCLUSIVE, node, summary, figures, tuple(evidence), table)
    ran = [t.name for t in current.tests if t.status != SKIP]
    versus = (
        f" ({then.dcgm_version or 'unknown'} at handover)" if then and then.dcgm_version != now.dcgm_version else ""
    )
    plural = "s" if len(gpus) != 1 else ""
    summary = f"{node}: {len(gpus)} GPU{plural} passed {len(ran)} tests ({', '.join(ran)}) — {where}{versus}"
    return Verdict(Status.PASS, node, summary, figures, tuple(evidence), table)


def _findings(
    current: DcgmReport,
    reference: DcgmReport | None,
    gpus: list[int],
    policy: DiagnosticsPolicy,
    *,
    notes: list[str],
    levels: tuple[int | None, int | None],
) -> list[_Finding]:
    found: list[_Finding] = []
    for gpu in gpus:
        if gpu not in current.gpus:
            found.append(_Finding(gpu, "-", "missing from the diagnostic output"))
    extra = sorted(set(current.gpus) - set(gpus))
    if extra:
        notes.append(f"GPUs {extra} are in the output but not in the agreement")
    for test in current.tests:
        found.extend(_test_findings(test, policy, notes))
    if reference is not None:
        found.extend(_against_handover(current, reference, policy, notes, level=levels[0], reference_level=levels[1]))
    return found


def _test_findings(test: DcgmTest, policy: DiagnosticsPolicy, notes: list[str]) -> list[_Finding]:
    out = []
    rows = test.failed_rows()
    if test.status == FAIL or rows:  # a failed row fails the test whatever DCGM's summary of it says
        summary = test.summary or (test.status if test.status != FAIL else None)
        against = f" (DCGM's summary of the test says {summary.capitalize()})" if summary else ""
        if summary:
            failed = ", ".join(rows) or "a result that names no entity"
            notes.append(
                f"{test.name}: DCGM's summary says {summary.capitalize()} but {failed} failed; "
                "judged by the rows (a failed entity fails the node)"
            )
        failing = [g for g, s in sorted(test.gpus.items()) if s == FAIL]
        for gpu in failing:
            msgs = [m for m in test.messages if m.gpu == gpu and m.kind != "info"] or [
                m for m in test.messages if m.gpu is None and m.kind != "info"
            ]
            out.append(_Finding(gpu, test.name, f"{test.name} failed{_because(msgs)}{against}", msgs))
        for entity in (e for e, s in sorted(test.entities.items()) if s == FAIL):
            msgs = [m for m in test.messages if m.entity == entity and m.kind != "info"] or [
                m for m in test.messages if m.entity is None and m.kind != "info"
            ]
            out.append(_Finding(None, test.name, f"{test.name} failed on {entity}{_because(msgs)}{against}", msgs))
        if not rows:
            msgs = [m for m in test.messages if m.kind != "info"]
            named = next((m.gpu for m in msgs if m.gpu is not None), None)
            what = f"{test.name} failed with no GPU row failing{_because(msgs)}{against}"
            out.append(_Finding(named, test.name, what, msgs))
        return out
    for m in test.messages:
        if m.kind == "info":
            continue
        if m.error_severity in policy.fail_severities or (m.error_severity is None and policy.fail_unrated_warnings):
            out.append(_Finding(m.gpu, test.name, f"{test.name} {test.status} but {cause(m)} ({codes(m)})", [m]))
        else:
            notes.append(
                f"recorded warning, {test.name}{_gpu(m.gpu)}: {cause(m)}" + (f" ({codes(m)})" if codes(m) else "")
            )
    if test.status == WARN:
        notes.append(f"{test.name} warned (recorded; not a failure under the agreed policy)")
    return out


def _against_handover(
    current: DcgmReport,
    reference: DcgmReport,
    policy: DiagnosticsPolicy,
    notes: list[str],
    *,
    level: int | None,
    reference_level: int | None,
) -> list[_Finding]:
    """Handover tests that passed must pass now. When only DCGM's version changed (same level),
    a handover test the new DCGM does not run is named instead of judged."""
    out = []
    changed = current.dcgm_version != reference.dcgm_version and level == reference_level
    for old in reference.tests:
        if old.status not in (PASS, WARN):
            continue
        new = current.test(old.name)
        if new is None:
            if changed:
                notes.append(
                    f"handover test {old.name} (DCGM {reference.dcgm_version or 'unknown'}) is not in "
                    f"DCGM {current.dcgm_version or 'unknown'}'s run at the same level: not judged"
                )
                if policy.fail_on_retired_test:
                    out.append(_Finding(None, old.name, f"handover test {old.name} no longer exists"))
            else:
                out.append(_Finding(None, old.name, f"{old.name} ran at handover and is missing now{_lvl(level)}"))
            continue
        if new.status == SKIP:
            out.append(
                _Finding(None, old.name, f"{old.name} skipped now, {old.status} at handover", list(new.messages))
            )
            continue
        for gpu, was in sorted(old.gpus.items()):
            if was in (PASS, WARN) and new.gpus.get(gpu, SKIP) == SKIP and new.gpus:
                out.append(_Finding(gpu, old.name, f"{old.name} skipped on GPU {gpu} now, passed at handover"))
    return out


def _explain(difference: str) -> str:
    if difference.startswith("DCGM"):
        return f"{difference}: tests matched by their DCGM 4.x names"
    return f"{difference}: another level runs other tests, so the runs are not compared"


def _replaced_gpus(current: DcgmReport, reference: DcgmReport) -> list[str]:
    """GPUs whose serial changed since handover: a board was swapped (recorded, not judged)."""
    out = []
    for gpu, device in sorted(current.devices.items()):
        old = reference.devices.get(gpu)
        if old and old.serial and device.serial and old.serial != device.serial:
            out.append(f"GPU {gpu} serial {device.serial} now, {old.serial} at handover (replaced)")
    return out


def _headline(findings: list[_Finding]) -> _Finding:
    """The finding the summary leads with: an XID first, then a GPU's coded hardware failure, then the rest."""

    def rank(f: _Finding) -> tuple[int, ...]:
        return (
            not any(xid_of(m.text) is not None for m in f.messages),
            f.gpu is None,
            not f.messages,
            f.test == SOFTWARE,
        )

    return min(findings, key=rank)


def _evidence(node: str, report: DcgmReport, reference: DcgmReport | None, f: _Finding) -> str:
    who = node
    if f.gpu is not None:
        device = report.devices.get(f.gpu)
        label = device.label() if device else ""
        if not label and reference is not None and f.gpu in reference.devices:
            label = f"{reference.devices[f.gpu].label()} at handover".strip()
            label = "" if label == "at handover" else label
        who += f" GPU {f.gpu}" + (f" ({label})" if label else "")
    lines = [f"{who}: {f.what}"]
    for m in f.messages:
        code = codes(m)
        lines.append(f"{m.text}" + (f" [{code}]" if code else ""))
    return " | ".join(lines)


def _because(messages: list[DcgmMessage]) -> str:
    return f" ({cause(messages[0])})" if messages else ""


def _lvl(level: int | None) -> str:
    return f" at -r {level}" if level is not None else ""


def _gpu(gpu: int | None) -> str:
    return f" GPU {gpu}" if gpu is not None else ""


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _table(node: str, current: DcgmReport, reference: DcgmReport | None) -> pd.DataFrame:
    rows = []
    for test in current.tests:
        old = reference.test(test.name) if reference else None
        cells: list[tuple[int | None, str]] = [*sorted(test.gpus.items())] or [(None, test.status)]
        for gpu, status in cells:
            handover = (old.gpus.get(gpu, old.status) if gpu is not None else old.status) if old else None
            rows.append({"node": node, "gpu": gpu, "test": test.name, "status": status, "handover": handover})
    return pd.DataFrame(rows, columns=["node", "gpu", "test", "status", "handover"])
