"""Session end: copy the junit in, write the HTML and MANIFEST.json, sign.

Call once, on the pytest controller, after pytest's junitxml plugin has written
its file (LogXML.pytest_sessionfinish), so the signature covers the final bytes.
Nothing here raises for a foreseeable problem: the result lists what went wrong,
and the run's exit status is never changed by reporting.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acceptance.errors import AcceptanceError
from acceptance.report.data import ReportData, dumps
from acceptance.report.folder import ReportFolder
from acceptance.report.html import render_html
from acceptance.report.manifest import MANIFEST_NAME, build_manifest, write_manifest
from acceptance.report.secrets import FolderScan, redact_values, scan_folder, scrub_text
from acceptance.report.sign import NAMESPACE, SignOptions, SignOutcome, sign_files, signature_path

HTML_NAME = "report.html"
DATA_NAME = "report-data.json"


@dataclass(frozen=True)
class FinalizeResult:
    folder: Path
    junit: Path | None
    html: Path | None
    manifest: Path | None
    signing: SignOutcome
    problems: tuple[str, ...] = ()
    refused: str | None = None  # why the folder was not signed: it still holds credential-looking values

    def lines(self) -> list[str]:
        """What to print in the terminal summary."""
        out = [f"report folder: {self.folder}"]
        if self.html is not None:
            out.append(f"HTML report: {self.html}")
        out.append(self.signing.describe())
        if self.signing.signed:
            out.append(f"check it with: acceptance verify {self.folder}")
        out.extend(f"report problem: {p}" for p in self.problems)
        return out


def _scrub_in_place(path: Path, secrets: Mapping[str, str]) -> list[str]:
    """Scrub a file written outside the report folder (the junit); the names of secret values found."""
    raw = path.read_text(encoding="utf-8")
    clean, found = redact_values(raw, secrets)
    clean = scrub_text(clean)
    if clean != raw:
        path.write_text(clean, encoding="utf-8")
    return found


def _signing_record(outcome: SignOutcome, scan: FolderScan | None = None) -> dict[str, object]:
    allowed = [u.describe() for u in scan.allowed] if scan is not None else []
    record: dict[str, object] = {"unredacted_allowed": allowed} if allowed else {}
    if outcome.disabled:
        return {"signed": False, "reason": "signing was turned off with --no-sign", **record}
    if outcome.problem:
        return {"signed": False, "reason": outcome.problem, **record}
    return {
        "signed": True,
        "namespace": NAMESPACE,
        "signer": outcome.signer,
        "fingerprint": outcome.fingerprint,
        **record,
    }


def finalize(
    folder: ReportFolder,
    junit_path: Path | None,
    data: ReportData,
    sign: SignOptions,
    *,
    now_utc: datetime | None = None,
    secrets: Mapping[str, str] | None = None,
    allow_unredacted: Sequence[str] = (),
) -> FinalizeResult:
    """Complete the report folder; see the module docstring for when to call it.

    `secrets` (name → value, the profile's credentials) are searched for in every file and
    redacted before anything is signed; each find is named in the problems. A folder that then
    still holds a credential-looking value is not signed (`refused` says where and what kind)
    unless `allow_unredacted` names its file (relative to the folder); what was let through is
    recorded in the manifest's signing record.
    """
    problems: list[str] = []
    now = (now_utc or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds")
    junit_copy: Path | None = None
    junit_outcome = SignOutcome(problem="not attempted")
    # 1. The junit file: scrub where pytest wrote it, copy it in.
    try:
        if junit_path is not None and junit_path.is_file():
            found = _scrub_in_place(junit_path, secrets or {})
            if found:
                problems.append(f"secret found in {junit_path.name}: the value of {', '.join(found)} (redacted)")
            junit_copy = folder.path / junit_path.name
            if junit_path.resolve() != junit_copy.resolve():
                shutil.copyfile(junit_path, junit_copy)
        elif junit_path is not None:
            problems.append(f"junit file {junit_path} was not written; the report has no junit")
    except (OSError, AcceptanceError) as exc:
        problems.append(f"junit file: {exc}")
    # 2. The scan before signing: known values redacted, credential-looking values refuse the signature.
    scan = FolderScan()
    try:
        scrubbed = dict(folder.scrubbed)
        if junit_copy is not None and junit_copy.is_file():  # scrubbed in place above
            scrubbed[junit_copy.name] = hashlib.sha256(junit_copy.read_bytes()).hexdigest()
        scan = scan_folder(folder.path, secrets or {}, allow_unredacted, scrubbed=scrubbed)
    except OSError as exc:
        problems.append(f"report folder {folder.path}: cannot be scanned for credentials ({exc})")
    problems += [f"secret found in {f}" for f in scan.redacted]
    problems += [f"credential-looking value left in {u.describe()}" for u in scan.remaining]
    refused = scan.refusal()
    # 3. Sign the junit where pytest wrote it, copy the signature in.
    try:
        if refused is not None:
            junit_outcome = SignOutcome(problem=refused)
        elif junit_copy is not None and junit_path is not None:
            junit_outcome = sign_files([junit_path], sign)
            if junit_path.resolve() != junit_copy.resolve() and signature_path(junit_path).is_file():
                shutil.copyfile(signature_path(junit_path), signature_path(junit_copy))
        else:
            junit_outcome = sign_files([], sign)  # only to learn whether signing can work
    except (OSError, subprocess.SubprocessError, AcceptanceError) as exc:
        problems.append(f"junit file: {exc}")
    signing_line = SignOutcome(
        fingerprint=junit_outcome.fingerprint,
        signer=junit_outcome.signer,
        problem=junit_outcome.problem,
        disabled=junit_outcome.disabled,
    ).describe()
    can_sign = not junit_outcome.disabled and junit_outcome.problem is None
    # 2. Data and HTML, then 3. the manifest over everything, then 4. its signature.
    html_path: Path | None = None
    manifest_path: Path | None = None
    outcome = junit_outcome
    try:
        folder.add_text(DATA_NAME, dumps(data) + "\n")
        files = [*folder.files(), MANIFEST_NAME]
        if can_sign:
            files.append(MANIFEST_NAME + ".sig")
        html = render_html(data, signing=signing_line, signed=can_sign, files=[f for f in files if f != "report.html"])
        html_path = folder.add_text(HTML_NAME, html)
        manifest = build_manifest(
            folder.path, created_utc=now, signing=_signing_record(junit_outcome, scan), provenance=data.provenance
        )
        manifest_path = write_manifest(folder.path, manifest)
        if can_sign:
            manifest_outcome = sign_files([manifest_path], sign)
            outcome = SignOutcome(
                (*junit_outcome.signatures, *manifest_outcome.signatures),
                manifest_outcome.fingerprint,
                manifest_outcome.signer,
                manifest_outcome.problem,
            )
    except (OSError, subprocess.SubprocessError, AcceptanceError, ValueError) as exc:
        problems.append(f"report folder {folder.path}: {exc}")
    return FinalizeResult(folder.path, junit_copy, html_path, manifest_path, outcome, tuple(problems), refused)
