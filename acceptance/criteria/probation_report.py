"""Criterion 5's start: the signed report of the ticket's passing acceptance, found, verified and read.

The window starts when that acceptance passed (the report's end time) and covers the nodes it
returned (its provenance). The report is verified first, with stock OpenSSH through
`acceptance.report.verify` (against the profile's allowed signers when it names them): a
report that fails verification is refused, never taken as a start time. The newest acceptance
of the ticket is the one that counts: when it did not pass, there is no probation to judge.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptance.criteria import of_phase
from acceptance.errors import ReportRefused
from acceptance.report.history import ticket_reports
from acceptance.report.manifest import MANIFEST_NAME
from acceptance.report.verify import verify

ACCEPTANCE_MODULES = tuple(c.module for c in of_phase("acceptance"))


@dataclass(frozen=True)
class AcceptanceReport:
    folder: Path
    cluster: str
    ticket: str
    run_id: str
    passed_at: datetime
    nodes: tuple[str, ...]
    simulated: bool
    checks: tuple[str, ...]
    outcomes: dict[str, int]


def _provenance(folder: Path) -> dict[str, Any]:
    try:
        doc = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportRefused(f"{folder / MANIFEST_NAME}: not readable ({exc})") from None
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    return prov if isinstance(prov, dict) else {}


def junit_of(folder: Path) -> Path:
    """The report's junit file: the signed ``*.xml`` at its top (``--junitxml`` keeps its own name)."""
    signed = [p for p in sorted(folder.glob("*.xml")) if p.with_name(p.name + ".sig").is_file()]
    return signed[0] if signed else folder / "junit.xml"


def _outcomes(folder: Path) -> tuple[dict[str, int], bool]:
    """Outcome counts of the junit file, and whether it holds items of the acceptance criteria."""
    path = junit_of(folder)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ReportRefused(f"{path}: not readable ({exc})") from None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    acceptance = False
    for case in root.iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
            acceptance = acceptance or module in ACCEPTANCE_MODULES
    return counts, acceptance


def find_report(root: Path, cluster: str, ticket: str) -> Path:
    """The newest acceptance report of `ticket` and `cluster` anywhere under `root` (``reports/<cluster>/<UTC>/``,
    or a CI gate's ``reports/<ticket>/``); criterion 5's own reports are not acceptances and are passed over."""
    found = [
        s
        for s in ticket_reports(root, ticket)
        if s.cluster == cluster
        and s.provenance.get("mode", "judge") == "judge"
        and _modules(s.folder) & set(ACCEPTANCE_MODULES)
    ]
    if not found:
        raise ReportRefused(
            f"no acceptance report of ticket {ticket} (cluster {cluster}) under {root} (run the "
            f"acceptance with --ticket={ticket} first, or name its report with --probation-from)"
        )
    return max(found, key=lambda s: (s.end_utc or s.start_utc or datetime.min, s.folder.name)).folder


def _modules(folder: Path) -> set[str]:
    try:
        root = ET.parse(junit_of(folder)).getroot()
    except (OSError, ET.ParseError):
        return set()
    return {case.get("classname", "").rsplit(".", 1)[-1] for case in root.iter("testcase")}


def load_report(folder: Path, cluster: str, ticket: str | None, allowed_signers: Path | None) -> AcceptanceReport:
    """Verify and read an acceptance report; `ReportRefused` says why it cannot start a probation."""
    if not (folder / MANIFEST_NAME).is_file():
        raise ReportRefused(f"{folder}: not a report folder (no {MANIFEST_NAME})")
    result = verify(folder, allowed_signers)
    lines = tuple(result.lines())
    if not result.ok:
        bad = [c for c in result.checks if not c.ok]
        why = f"{bad[0].subject}: {bad[0].detail}" if bad else (result.unreadable or "verification failed")
        raise ReportRefused(f"acceptance report {folder} failed verification ({why})", lines)
    prov = _provenance(folder)
    if prov.get("cluster") != cluster:
        raise ReportRefused(f"acceptance report {folder} is of cluster {prov.get('cluster')!r}, not {cluster!r}", lines)
    if ticket and prov.get("ticket") != ticket:
        raise ReportRefused(
            f"acceptance report {folder} is of ticket {prov.get('ticket') or 'none'!r}, not {ticket!r}", lines
        )
    if prov.get("mode", "judge") != "judge":
        raise ReportRefused(f"{folder} recorded a baseline ({prov.get('mode')}); it is not an acceptance", lines)
    counts, acceptance = _outcomes(folder)
    if counts["failed"]:
        raise ReportRefused(
            f"the acceptance in {folder} did not pass ({counts['failed']} failed items): a probation "
            "starts only when an acceptance passes",
            lines,
        )
    if not acceptance:
        raise ReportRefused(f"{folder} holds no passing item of the acceptance criteria 0-4", lines)
    try:
        passed_at = datetime.fromisoformat(str(prov["end_utc"]))
    except (KeyError, ValueError):
        raise ReportRefused(f"acceptance report {folder} has no end time (end_utc) in its provenance", lines) from None
    nodes = tuple(n for n in str(prov.get("returned_nodes", "")).split(",") if n)
    if not nodes:
        raise ReportRefused(f"acceptance report {folder} names no returned nodes", lines)
    return AcceptanceReport(
        folder,
        cluster,
        str(prov.get("ticket") or ""),
        str(prov.get("run_id", "")),
        passed_at,
        nodes,
        bool(prov.get("simulated")),
        lines,
        counts,
    )
