"""Write an incident bundle: ``bundle.md``, ``bundle.json``, the step series, the raw evidence, signed.

Layout of ``--out DIR`` (default ``reports/<cluster>/incident-<ticket or UTC>/``)::

    bundle.md  bundle.json  bundle.json.sig  steps.csv  steps.png
    evidence/inputs/<n>-<name>         every log and evidence file as given (secrets scrubbed)
    evidence/cluster/*.json            pods, node conditions and events read from the cluster
    MANIFEST.json  MANIFEST.json.sig   sha256 of every file, signed
    ../<DIR>.tar.gz  ../<DIR>.tar.gz.sig

Signed like every report (SSHSIG, namespace ``recovery-acceptance``): ``acceptance verify DIR`` or
``acceptance verify DIR.tar.gz`` checks it. Every text goes through `secrets.scrub_text`.
"""

from __future__ import annotations

import csv
import io
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.incident import render
from acceptance.incident.markdown import markdown as to_markdown
from acceptance.incident.model import Bundle
from acceptance.report.folder import ReportFolder
from acceptance.report.manifest import build_manifest, write_manifest
from acceptance.report.secrets import FolderScan, scan_folder
from acceptance.report.sign import SignOptions, SignOutcome, sign_files
from acceptance.report.verify import bundle_schema_problems

STEPS_CSV = "steps.csv"
STEPS_PLOT = "steps.png"


@dataclass(frozen=True)
class Written:
    folder: Path
    archive: Path | None
    markdown: Path
    document: Path
    signing: SignOutcome
    problems: tuple[str, ...] = ()
    refused: str | None = None  # why nothing was signed: the folder still holds credential-looking values

    def lines(self) -> list[str]:
        out = [f"bundle folder: {self.folder}", f"paste-ready message: {self.markdown}"]
        if self.archive is not None:
            out.append(f"archive: {self.archive}")
        out.append(self.signing.describe())
        if self.signing.signed:
            out.append(f"check it with: acceptance verify {self.folder}")
        out += [f"bundle problem: {p}" for p in self.problems]
        return out


def default_folder(root: Path, cluster: str, ticket: str | None, created: datetime) -> Path:
    """``<root>/<cluster>/incident-<ticket or UTC>``, with ``-2``, ``-3`` ... when taken."""
    stem = f"incident-{ticket}" if ticket else f"incident-{created:%Y%m%dT%H%M%SZ}"
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in stem)
    base = root / cluster / safe
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{safe}-{n}")
    return candidate


def _csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["step", "rank", "utc", "step_time_s"])
    for row in rows:
        utc = row.get("utc")
        when = utc.isoformat() + "Z" if isinstance(utc, datetime) else ""
        rank = "" if row.get("rank") is None else row["rank"]
        writer.writerow([row["step"], rank, when, f"{row['step_time_s']:.6g}"])
    return buffer.getvalue()


def _plot(bundle: Bundle) -> bytes | None:
    """Step time against step, the first bad step marked; None when there are no steps."""
    rows = bundle.steps.rows
    if not rows:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    by_rank: dict[int | None, list[tuple[int, float]]] = {}
    for row in rows:
        by_rank.setdefault(row.get("rank"), []).append((int(row["step"]), float(row["step_time_s"])))
    for rank, points in sorted(by_rank.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, linewidth=0.8 if len(by_rank) == 1 else 0.5, label=None if rank is None else f"rank {rank}")
    w = bundle.window
    if w.first_bad_step is not None:
        ax.axvline(w.first_bad_step, color="#c0392b", linestyle="--", linewidth=1)
        ax.annotate(
            f"first bad step {w.first_bad_step}",
            (w.first_bad_step, ax.get_ylim()[1]),
            fontsize=8,
            color="#c0392b",
            ha="right",
            va="top",
        )
    ax.set_xlabel("step")
    ax.set_ylabel("step time (s)")
    title = f"{bundle.cluster.name}: step time around the incident" + (" (SIMULATED)" if bundle.simulated else "")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)  # type: ignore[no-untyped-call]
    return buffer.getvalue()


def _archive(folder: Path) -> Path:
    target = folder.with_name(folder.name + ".tar.gz")
    with tarfile.open(target, "w:gz", compresslevel=6) as tar:  # gzip's default: 9 is 4x slower for 7 % less
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}", recursive=False)
    return target


def open_folder(folder: Path) -> ReportFolder:
    """The bundle's folder, created; one that exists and holds files is a usage error (never overwritten)."""
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"--out {folder}: the folder exists and is not empty (a bundle is never overwritten)")
    return ReportFolder.at(folder)


def add_input(out: ReportFolder, n: int, name: str, text: str) -> Path:
    """The `n`-th input's copy, scrubbed of credentials: ``evidence/inputs/<nn>-<name>``."""
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in Path(name).name)[:80] or "input"
    return out.add_text(f"evidence/inputs/{n:02d}-{safe}", text)


def write_bundle(
    bundle: Bundle,
    folder: Path,
    texts: Sequence[tuple[str, str]],
    cluster_files: Mapping[str, Any],
    sign: SignOptions,
    *,
    secrets: Mapping[str, str] | None = None,
    allow_unredacted: Sequence[str] = (),
    opened: ReportFolder | None = None,
) -> Written:
    """Write the bundle folder, its manifest and archive, signed; `texts` are (name, raw text) of the inputs.

    Every text is scrubbed as it is written; then the folder is scanned (`secrets.scan_folder`): the
    profile's known `secrets` values are redacted, and a folder that still holds a credential-looking
    value is neither signed nor archived unless `allow_unredacted` names the file (relative to the folder).
    `opened`: the folder from `open_folder`, where the inputs were already copied with `add_input` as they
    were read (so that no input's text is held longer than its reading); `texts` then holds none.
    """
    out = opened if opened is not None else open_folder(folder)
    problems: list[str] = []
    plot = _plot(bundle)
    files = {"steps_csv": STEPS_CSV if bundle.steps.rows else None, "steps_plot": STEPS_PLOT if plot else None}
    document = render.to_json(bundle, files)
    found = bundle_schema_problems(document)
    if found:
        problems.append("bundle.json does not match its schema: " + "; ".join(found[:3]))
    for n, (name, text) in enumerate(texts, 1):
        add_input(out, n, name, text)
    for name, obj in cluster_files.items():
        out.add_json(f"evidence/cluster/{name}.json", obj)
    if bundle.steps.rows:
        out.add_text(STEPS_CSV, _csv(bundle.steps.rows))
    if plot is not None:
        (folder / STEPS_PLOT).write_bytes(plot)
    document_path = out.add_json("bundle.json", document)
    markdown = out.add_text("bundle.md", to_markdown(bundle, files))
    scan = FolderScan()
    try:
        scan = scan_folder(folder, secrets or {}, allow_unredacted, scrubbed=out.scrubbed)
    except OSError as exc:
        problems.append(f"the bundle folder cannot be scanned for credentials ({exc})")
    problems += [f"secret found in {f}" for f in scan.redacted]
    problems += [f"credential-looking value left in {u.describe()}" for u in scan.remaining]
    refused = scan.refusal()
    outcome = SignOutcome(problem=refused) if refused else sign_files([document_path], sign)
    can_sign = outcome.signed
    signing: dict[str, object] = (
        {"signed": True, "signer": outcome.signer, "fingerprint": outcome.fingerprint}
        if can_sign
        else {"signed": False, "reason": outcome.describe().removeprefix("unsigned: ")}
    )
    if scan.allowed:
        signing["unredacted_allowed"] = [u.describe() for u in scan.allowed]
    provenance = {
        "kind": "incident-bundle",
        "cluster": bundle.cluster.name,
        "ticket": bundle.ticket or "",
        "created_utc": render.iso(bundle.created_utc),
        "harness_version": bundle.harness_version,
        "simulated": bundle.simulated,
    }
    manifest = write_manifest(
        folder,
        build_manifest(
            folder, created_utc=render.iso(bundle.created_utc) or "", signing=signing, provenance=provenance
        ),
    )
    if can_sign:
        more = sign_files([manifest], sign)
        outcome = SignOutcome((*outcome.signatures, *more.signatures), more.fingerprint, more.signer, more.problem)
    archive: Path | None = None
    try:
        if refused is None:  # an archive is what gets attached: none is made of a folder that holds a credential
            archive = _archive(folder)
            if can_sign:
                sign_files([archive], sign)
    except OSError as exc:
        problems.append(f"archive: {exc}")
    return Written(folder, archive, markdown, document_path, outcome, tuple(problems), refused)
