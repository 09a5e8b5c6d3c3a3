"""The agreement as a document: Markdown and printable HTML, from the profile and its latest baseline.

Every section is made from the objects the suite judges with: the criteria table
(`acceptance.criteria.CRITERIA`), the baseline's margins, criterion 5's `RecurrenceRules`, the
severity levels (`SeverityPolicy`), the coverage hours, the lost-time formula
(`acceptance.incident.lost_time`). What the profile does not state is written "to agree", never
invented. Pure: text out.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acceptance.agreement.coverage import Coverage
from acceptance.criteria import CRITERIA
from acceptance.incident.lost_time import lost_time
from acceptance.incident.model import LEVEL_TITLES, LEVELS
from acceptance.incident.severity import SeverityPolicy
from acceptance.judge.recurrence_rules import RecurrenceRules
from acceptance.margins import Margins
from acceptance.units import format_duration, format_size, parse_duration

TO_AGREE = "to agree"

# One row per incident step: (key in the profile's agreement.responsibility, the step, the evidence the
# gate itself produces for it (None: none of the harness's), the severity clock that bounds it).
STEPS: tuple[tuple[str, str, str | None, str | None], ...] = (
    ("detect", "detect the failure", "the signed incident bundle (`acceptance bundle`)", "respond"),
    ("isolate", "isolate the node", None, None),
    ("repair", "repair or replace the node", "criterion 1: DCGM diagnostics pass on every GPU", "restore"),
    ("fabric", "prove the fabric healthy", "criterion 2: nccl-tests within the margin of the baseline", "restore"),
    ("ready", "tell the customer the cluster is ready", "the signed passing acceptance report", "restore"),
    ("checkpoint_policy", "checkpoint policy", None, None),
    ("restart_decision", "the restart decision", None, None),
    ("fewer_nodes", "resume on fewer nodes or wait", "`acceptance lost-time --reshard-to`: wait vs reshard", None),
    ("training_evidence", "training-side evidence", "criteria 3 and 4: smoke step time, loss continuity", None),
)
LOST_TIME_TERMS = ("checkpoint_every", "detection", "repair", "revalidation", "restart")


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: tuple[str, ...] = ()
    table: tuple[tuple[str, ...], ...] = ()  # the first row is the header
    bullets: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgreementInputs:
    cluster: str
    profile_path: str
    backend: str  # the backend's title ("Kubernetes", "SSH (bare metal)" ...), as its descriptor gives it
    nodes: tuple[str, ...]
    gpus_per_node: int
    provider: Mapping[str, str]
    agreement: Mapping[str, Any]  # the profile's agreement: section (billing, exclusions, ...)
    policy: SeverityPolicy
    rules: RecurrenceRules
    baseline: Mapping[str, Any] | None  # the latest baseline document
    baseline_name: str | None = None
    baseline_sha256: str | None = None
    simulated: bool = False
    coverage_stated: bool = False  # the profile states coverage: (else 24x7 by default)
    notes: tuple[str, ...] = field(default_factory=tuple)
    parties: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # each party's signing keys (`parties:`)
    baseline_signatures: str = ""  # who signed the handover baseline, as the trust gate verified it


def _or(value: Any) -> str:
    return TO_AGREE if value in (None, "", [], {}) else str(value)


def _facts(a: AgreementInputs) -> Section:
    b = a.baseline or {}
    cond = b.get("conditions") or {}
    spec = cond.get("node_spec") or {}
    prov = b.get("provenance") or {}
    rows = [
        ("fact", "agreed"),
        ("billing method", _or(a.agreement.get("billing"))),
        ("provider cluster id", _or(a.provider.get("cluster_id"))),
        ("data center", _or(a.provider.get("data_center"))),
        (f"{a.backend} version", _or(cond.get("kubernetes_version"))),
        (
            "worker node spec",
            (
                f"{spec.get('gpus_per_node', a.gpus_per_node)} x {_or(spec.get('gpu_product'))}, driver "
                f"{_or(spec.get('driver_version'))}, CUDA {_or(spec.get('cuda_version'))}, {_or(spec.get('os_image'))}"
            )
            if spec
            else TO_AGREE,
        ),
        ("node quantity", f"{len(a.nodes)} ({a.nodes[0]} .. {a.nodes[-1]})" if a.nodes else TO_AGREE),
        ("handover date", _or(prov.get("amended_utc") or prov.get("recorded_utc"))),
        ("handover baseline", f"{a.baseline_name} sha256 {a.baseline_sha256}" if a.baseline_sha256 else TO_AGREE),
    ]
    paragraphs = ("SIMULATED: made from the recovery-acceptance simulator's cluster.",) if a.simulated else ()
    return Section("Cluster", paragraphs, tuple(rows))


def _clock_of(policy: SeverityPolicy, clock: str | None) -> str:
    if clock is None:
        return TO_AGREE
    said = []
    for level in LEVELS:
        found = policy.levels.get(level)
        seconds = getattr(found, f"{clock}_s", None) if found else None
        if seconds is not None:
            said.append(f"{level} {format_duration(seconds)}")
    return f"{clock}: " + ", ".join(said) if said else f"{clock}: {TO_AGREE}"


def _responsibility(a: AgreementInputs) -> Section:
    stated = a.agreement.get("responsibility") or {}
    rows: list[tuple[str, ...]] = [("step", "owner", "evidence that closes it", "clock")]
    for key, step, evidence, clock in STEPS:
        own = stated.get(key) or {}
        rows.append(
            (
                step,
                _or(own.get("owner")),
                str(own.get("evidence") or evidence or TO_AGREE),
                str(own.get("clock") or _clock_of(a.policy, clock)),
            )
        )
    return Section(
        "Responsibility", ("One row per step of an incident, first message to training again.",), tuple(rows)
    )


def _criteria(a: AgreementInputs) -> Section:
    m = Margins(**(a.baseline or {}).get("margins", {})) if a.baseline else None
    r = a.rules
    judged = {
        0: "the cluster, node set and software versions are the baseline's; any difference is NOT COMPARABLE",
        1: (
            "every GPU of the returned node passes every DCGM test that passed at handover; "
            "skipped now but run then fails"
        ),
        2: (
            f"out-of-place busbw at every size >= {format_size(m.busbw_min_size)} at least "
            f"{1 - m.busbw_tolerance:.0%} of the baseline, #wrong 0, run under the baseline's conditions"
            if m
            else f"busbw margin: {TO_AGREE} (no baseline)"
        ),
        3: (
            f"smoke step-time median at most +{m.step_time_tolerance:.0%} of the baseline's (bootstrap CI of the ratio)"
            if m
            else f"step-time margin: {TO_AGREE} (no baseline)"
        ),
        4: (
            f"resumed step = checkpoint step + 1, no NaN/Inf; loss robust z below {m.loss_spike_z:g} (spike) and "
            f"{m.loss_shift_z:g} (shift)"
            if m
            else f"loss margins: {TO_AGREE} (no baseline)"
        ),
        5: (
            (f"no recurrence for {format_duration(m.probation_s)} after the acceptance passed: " if m else "")
            + "; ".join(f"{k.removeprefix('rule.')} {v}" for k, v in r.describe().items())
        ),
    }
    rows: list[tuple[str, ...]] = [("#", "criterion", "judged as")]
    for c in CRITERIA:
        if c.number is not None:
            rows.append((str(c.number), c.title, judged[c.number]))
    return Section(
        "Recovery criteria", ("Exactly as the gate judges them (the suite's own table and margins).",), tuple(rows)
    )


def _severity(a: AgreementInputs) -> Section:
    p = a.policy
    rows: list[tuple[str, ...]] = [("level", "meaning", "respond", "restore", "resolve", "who joins", "moves up")]
    for level in LEVELS:
        found = p.levels.get(level)
        if found is None:
            rows.append((level, LEVEL_TITLES[level], TO_AGREE, TO_AGREE, TO_AGREE, TO_AGREE, TO_AGREE))
            continue
        index = LEVELS.index(level)
        up = (
            f"to {LEVELS[index - 1]} after {format_duration(found.escalate_after_s)}"
            if found.escalate_after_s and index > 0
            else ("most severe" if index == 0 else TO_AGREE)
        )
        rows.append(
            (
                level,
                LEVEL_TITLES[level],
                *(
                    format_duration(s) if s is not None else TO_AGREE
                    for s in (found.respond_s, found.restore_s, found.resolve_s)
                ),
                ", ".join(found.joins) or TO_AGREE,
                up,
            )
        )
    degraded = f"Degraded: {p.degraded.describe()}."
    clocks = f"Clocks run in coverage hours: {p.coverage.describe()}; they start when the incident bundle is made."
    return Section("Severity levels", (degraded, clocks), tuple(rows))


def _coverage(a: AgreementInputs) -> Section:
    c: Coverage = a.policy.coverage
    g = a.agreement
    bullets = [
        f"coverage hours: {c.describe()}"
        + ("" if c.always else f" (holidays: {', '.join(map(str, c.holidays)) or 'none'})")
        + ("" if a.coverage_stated else f" (the profile states no coverage: the default; {TO_AGREE})"),
        "exclusions: " + ("; ".join(map(str, g.get("exclusions") or ())) or TO_AGREE),
        f"partial-capacity running: {_or(g.get('partial_capacity'))}",
        f"spares: {_or(g.get('spares'))}",
    ]
    return Section("Coverage, exclusions, partial capacity and spares", bullets=tuple(bullets))


def _lost_time(a: AgreementInputs) -> Section:
    formula = (
        "lost training time = work since the last checkpoint + detection + diagnosis and repair + revalidation "
        "+ restart and checkpoint load, in hours and in GPU-hours (x nodes x GPUs per node); work since the "
        "checkpoint and the restart are the customer's, the other terms the provider's."
    )
    stated = a.agreement.get("lost_time") or {}
    absent = [t for t in LOST_TIME_TERMS if t not in stated]
    if absent:
        return Section("Lost training time", (formula, f"Worked figure: {TO_AGREE} ({', '.join(absent)} not stated)."))
    s = {t: parse_duration(stated[t], allow_zero=True) for t in LOST_TIME_TERMS}
    lt = lost_time(
        checkpoint_every_s=s["checkpoint_every"],
        failed_after_s=None,
        nodes=len(a.nodes),
        gpus_per_node=a.gpus_per_node,
        detection_s=s["detection"],
        repair_s=s["repair"],
        revalidation_s=s["revalidation"],
        restart_s=s["restart"],
    )
    rows: list[tuple[str, ...]] = [("term", "owner", "hours", "GPU-hours")]
    rows += [(t.name, t.owner, f"{t.hours:.3f}", f"{lt.gpu_hours_of(t):.1f}") for t in lt.terms]
    rows.append(("total", "", f"{lt.hours:.3f}", f"{lt.gpu_hours:.1f}"))
    worked = (
        f"Worked figure for {len(a.nodes)} nodes x {a.gpus_per_node} GPUs, the failure at the average point of the "
        f"checkpoint interval ({format_duration(s['checkpoint_every'])} / 2):"
    )
    return Section("Lost training time", (formula, worked), tuple(rows))


def _parties(a: AgreementInputs) -> Section:
    rows: list[tuple[str, ...]] = [("party", "signs with (allowed_signers principal or public key)")]
    rows += [(party, ", ".join(a.parties.get(party, ())) or TO_AGREE) for party in ("provider", "customer")]
    signed = a.baseline_signatures or (TO_AGREE if a.baseline_name else f"{TO_AGREE} (no baseline)")
    paragraphs = (
        f"Handover baseline: {signed}.",
        "Each party signs this document with stock OpenSSH (`acceptance agreement NAME --out DIR --sign-key KEY`, "
        "then `acceptance countersign DIR`); `ssh-keygen -Y verify` checks each signature.",
    )
    return Section("Parties and signatures", paragraphs, tuple(rows))


def sections(a: AgreementInputs) -> list[Section]:
    return [
        _facts(a), _parties(a), _responsibility(a), _criteria(a), _severity(a), _coverage(a), _lost_time(a),
    ]  # fmt: skip


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(a: AgreementInputs) -> str:
    out = [
        f"# Recovery agreement: cluster {a.cluster}",
        "",
        f"From `{a.profile_path}`"
        + (f" and baseline `{a.baseline_name}`." if a.baseline_name else "; no baseline yet."),
        "",
    ]
    out += [f"> {n}" for n in a.notes]
    for s in sections(a):
        out += [f"## {s.title}", ""]
        for p in s.paragraphs:
            out += [p, ""]
        if s.table:
            head, *rows = s.table
            out.append("| " + " | ".join(map(_cell, head)) + " |")
            out.append("|" + "---|" * len(head))
            out += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
            out.append("")
        if s.bullets:
            out += [f"- {b}" for b in s.bullets] + [""]
    return "\n".join(out).rstrip() + "\n"


_CSS = (
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#111}"
    "table{border-collapse:collapse;width:100%;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #999;padding:0.3em 0.5em;text-align:left;vertical-align:top}"
    "th{background:#eee}.agree{color:#a00;font-weight:bold}"
    "@media print{body{margin:0;max-width:none}h2{break-after:avoid}table{break-inside:auto}tr{break-inside:avoid}}"
)


def _h(text: str) -> str:
    escaped = html.escape(text)
    return escaped.replace(TO_AGREE, f'<span class="agree">{TO_AGREE}</span>')


def html_page(a: AgreementInputs) -> str:
    title = f"Recovery agreement: cluster {a.cluster}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>From <code>{html.escape(a.profile_path)}</code>"
        + (
            f" and baseline <code>{html.escape(a.baseline_name)}</code>.</p>"
            if a.baseline_name
            else "; no baseline yet.</p>"
        ),
    ]
    out += [f"<blockquote>{_h(n)}</blockquote>" for n in a.notes]
    for s in sections(a):
        out.append(f"<h2>{html.escape(s.title)}</h2>")
        out += [f"<p>{_h(p)}</p>" for p in s.paragraphs]
        if s.table:
            head, *rows = s.table
            out.append("<table><thead><tr>" + "".join(f"<th>{_h(c)}</th>" for c in head) + "</tr></thead><tbody>")
            out += ["<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row) + "</tr>" for row in rows]
            out.append("</tbody></table>")
        if s.bullets:
            out.append("<ul>" + "".join(f"<li>{_h(b)}</li>" for b in s.bullets) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def to_agree(a: AgreementInputs) -> list[str]:
    """Every place the document says "to agree" (section: the row or line), for the command's summary."""
    out = []
    for s in sections(a):
        for row in s.table[1:]:
            if any(TO_AGREE in c for c in row):
                out.append(f"{s.title}: {row[0]}")
        out += [f"{s.title}: {b.split(':')[0]}" for b in (*s.bullets, *s.paragraphs) if TO_AGREE in b]
    return out
