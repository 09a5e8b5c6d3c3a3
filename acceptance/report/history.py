"""What earlier runs left under the reports folder: signed acceptance reports and incident bundles.

- `latest_accepted`: the newest report folder of a cluster whose junit passed and whose signature
  and manifest verify (the last accepted state, for a bundle's change log);
- `ticket_reports`: the acceptance report folders of a ticket (for lost-time, measured);
- `bundle_for_ticket`: the newest incident bundle of a ticket (for the restore and resolve clocks).

A folder that cannot be read is skipped with the reason kept, never an exception.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from acceptance.errors import ParseError
from acceptance.incident.clocks import parse_utc
from acceptance.report.manifest import MANIFEST_NAME, read_manifest

BUNDLE_JSON = "bundle.json"


@dataclass(frozen=True)
class ReportSummary:
    folder: Path
    cluster: str
    ticket: str | None
    start_utc: datetime | None
    end_utc: datetime | None
    passed: bool
    tests: int
    provenance: Mapping[str, Any]
    signed: bool
    verified: bool | None = None
    smoke: Mapping[str, Any] = field(default_factory=dict)  # image, command, env of the smoke run's manifest


def _utc(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_utc(text)
    except ParseError:
        return None


def _junit(folder: Path) -> tuple[int, bool]:
    """(tests, passed) of the junit file of a report folder; (0, False) when there is none."""
    for path in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            continue
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        if not suites:
            continue
        tests = sum(int(s.get("tests", 0)) for s in suites)
        bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        return tests, tests > 0 and bad == 0
    return 0, False


def _smoke(folder: Path) -> dict[str, Any]:
    """The smoke run's container (image, command, env) from the report's submitted manifests."""
    for path in sorted((folder / "manifests").glob("*smoke*.yaml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, OSError, UnicodeDecodeError):
            continue
        for doc in docs:
            for container in _containers(doc):
                env = {str(e.get("name")): str(e.get("value", "")) for e in container.get("env") or () if "value" in e}
                command = [*(container.get("command") or ()), *(container.get("args") or ())]
                return {"image": container.get("image"), "command": " ".join(map(str, command)), "env": env}
    return {}


def _containers(doc: Any) -> Iterator[Mapping[str, Any]]:
    """Every container spec anywhere in a manifest (Job, MPIJob launcher and workers)."""
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            if key == "containers" and isinstance(value, list):
                yield from (c for c in value if isinstance(c, Mapping))
            else:
                yield from _containers(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from _containers(item)


def report_summary(folder: Path) -> ReportSummary | None:
    """A report folder's summary, None for a folder that is not an acceptance report (or is a bundle)."""
    if (folder / BUNDLE_JSON).is_file() or not (folder / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = read_manifest(folder / MANIFEST_NAME)
    except (ParseError, OSError):
        return None
    prov = manifest.get("provenance") or {}
    tests, passed = _junit(folder)
    signed = bool((manifest.get("signing") or {}).get("signed")) and (folder / (MANIFEST_NAME + ".sig")).is_file()
    return ReportSummary(
        folder=folder,
        cluster=str(prov.get("cluster", "")),
        ticket=prov.get("ticket") or None,
        start_utc=_utc(prov.get("start_utc")),
        end_utc=_utc(prov.get("end_utc")),
        passed=passed,
        tests=tests,
        provenance=prov,
        signed=signed,
        smoke=_smoke(folder),
    )


def _folders(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted({p.parent for p in root.rglob(MANIFEST_NAME)}, key=lambda p: p.name, reverse=True)


def latest_accepted(root: Path, cluster: str) -> tuple[ReportSummary | None, list[str]]:
    """The newest passing, signed and verified report of `cluster` under `root`, and why others were passed over."""
    from acceptance.report.verify import verify

    skipped: list[str] = []
    for folder in _folders(root / cluster):
        summary = report_summary(folder)
        if summary is None or summary.cluster != cluster:
            continue
        if not summary.passed:
            skipped.append(f"{folder}: not a passing acceptance run")
            continue
        if not summary.signed:
            skipped.append(f"{folder}: not signed")
            continue
        result = verify(folder)
        if not result.ok:
            skipped.append(f"{folder}: does not verify ({'; '.join(c.detail for c in result.checks if not c.ok)})")
            continue
        return replace(summary, verified=True), skipped
    return None, skipped


def ticket_reports(root: Path, ticket: str) -> list[ReportSummary]:
    """Every acceptance report folder of `ticket` under `root`, oldest first."""
    found = [s for f in _folders(root) if (s := report_summary(f)) is not None and s.ticket == ticket]
    return sorted(found, key=lambda s: s.start_utc or datetime.min)


def bundle_for_ticket(root: Path, ticket: str) -> tuple[Path, dict[str, Any]] | None:
    """The newest incident bundle of `ticket` under `root`: (its folder, its bundle.json document)."""
    best: tuple[Path, dict[str, Any]] | None = None
    if not root.is_dir():
        return None
    for path in root.rglob(BUNDLE_JSON):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if not isinstance(doc, dict) or doc.get("ticket") != ticket:
            continue
        if best is None or str(doc.get("created_utc", "")) > str(best[1].get("created_utc", "")):
            best = (path.parent, doc)
    return best
