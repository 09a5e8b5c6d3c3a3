"""Check a signed report: one signed file, a report folder and its MANIFEST.json, or an incident bundle
(its folder, whose bundle.json must also match its schema, or its ``.tar.gz``).

Signatures are checked by stock OpenSSH (`ssh-keygen -Y verify` against an
allowed-signers file, or `-Y check-novalidate` against the key embedded in the
signature when no trust list is given); hashes by us. Every failure names the file
and says what is wrong with it and which key signed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError, Unreadable
from acceptance.report.manifest import MANIFEST_NAME, check_files, read_manifest
from acceptance.report.parties import (
    PARTIES,
    Parties,
    Signature,
    agreement_line,
    attribute,
    check_attribution,
    party_signature_path,
    signature_files,
)
from acceptance.report.sign import NAMESPACE, SIG_SUFFIX, signature_path
from acceptance.report.sshsig import SignatureInfo, parse_signature


@dataclass(frozen=True)
class Check:
    """One thing checked: a signature or the manifest's hashes."""

    subject: str
    ok: bool
    detail: str
    principal: str | None = None  # who allowed_signers says made a good signature


@dataclass(frozen=True)
class VerifyResult:
    checks: tuple[Check, ...] = ()
    unreadable: str | None = None
    trusted: bool = False

    @property
    def ok(self) -> bool:
        return self.unreadable is None and bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def exit_status(self) -> int:
        """0 verified against a trust list, 1 failed, 2 unreadable, 3 consistent but the signer UNTRUSTED.

        Without a trust list a signature only proves that the files match *some* key: a report
        re-signed with any key would pass, so that is never a plain success.
        """
        if self.unreadable is not None:
            return 2
        if not self.ok:
            return 1
        return 0 if self.trusted else 3

    def lines(self) -> list[str]:
        out = [f"{'OK  ' if c.ok else 'FAIL'} {c.subject}: {c.detail}" for c in self.checks]
        if self.unreadable is not None:
            out.append(f"ERROR {self.unreadable}")
        if self.ok and not self.trusted:
            signers = sorted({m.group(1) for c in self.checks if (m := _SIGNER.search(c.detail))})
            out.append(
                f"UNTRUSTED signer {', '.join(signers) or '(unknown)'}: the signatures match, but the key was not "
                "checked against a trust list; pass --allowed-signers FILE (both parties' keys)"
            )
            out.append("consistent, signer UNTRUSTED")
            return out
        out.append("verified" if self.ok else ("unreadable" if self.unreadable else "verification FAILED"))
        return out


_SIGNER = re.compile(r"by \S+ key (SHA256:\S+)")


#: the files of a rendered agreement (`acceptance agreement NAME --out DIR`), each signed by both parties
AGREEMENT_NAMES = ("agreement.md", "agreement.html")


def _ssh_keygen(argv: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("ssh-keygen") is None:
        raise Unreadable("ssh-keygen not found (install OpenSSH's client: apt-get install openssh-client)")
    return subprocess.run(["ssh-keygen", *argv], input=data, capture_output=True, timeout=60, check=False)


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stderr + done.stdout).decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


def _principals(sig: Path, allowed_signers: Path) -> list[str]:
    done = _ssh_keygen(["-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)], b"")
    if done.returncode != 0:
        return []
    return [line.strip() for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()]


def check_signature(
    path: Path,
    allowed_signers: Path | None = None,
    identity: str | None = None,
    label: str | None = None,
    sig: Path | None = None,
) -> Check:
    """Check `path` against `sig` (default `path.sig`); raises Unreadable for input that cannot be read."""
    name = label or path.name
    sig = sig or signature_path(path)
    if not path.is_file():
        raise Unreadable(f"{path}: no such file")
    if not sig.is_file():
        return Check(name, False, f"not signed: {sig.name} is missing")
    try:
        info: SignatureInfo = parse_signature(sig.read_text(encoding="utf-8", errors="replace"), str(sig))
    except ParseError as exc:
        raise Unreadable(str(exc)) from exc
    who = f"{info.key_type} key {info.fingerprint}"
    if info.namespace != NAMESPACE:
        return Check(name, False, f"signed by {who} for namespace {info.namespace!r}, expected {NAMESPACE!r}")
    data = path.read_bytes()
    if allowed_signers is None:
        done = _ssh_keygen(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], data)
        if done.returncode == 0:
            return Check(name, True, f"good signature by {who} (signer not checked against a trust list)")
        return Check(name, False, f"content does not match the signature by {who}: the file changed after signing")
    if allowed_signers.is_dir():
        raise Unreadable(f"{allowed_signers}: is a directory, not an allowed signers file")
    if not allowed_signers.is_file():
        raise Unreadable(f"{allowed_signers}: allowed signers file not found")
    identities = [identity] if identity else _principals(sig, allowed_signers)
    if not identities:
        return Check(name, False, f"signed by {who}, which is not in {allowed_signers}")
    for principal in identities:
        argv = ["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)]
        done = _ssh_keygen(argv, data)
        if done.returncode == 0:
            return Check(name, True, f"good signature by {principal} with {who}", principal)
    novalidate = _ssh_keygen(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], data)
    if novalidate.returncode != 0:
        return Check(name, False, f"content does not match the signature by {who}: the file changed after signing")
    wanted = ", ".join(identities)
    return Check(name, False, f"signed by {who}, which {allowed_signers} does not allow for {wanted} ({_said(done)})")


def who_signed(
    path: Path, allowed_signers: Path | None, parties: Parties, label: str | None = None
) -> tuple[list[Check], list[Signature]]:
    """Every signature beside `path` (``<file>.sig`` and each party's ``<file>.<party>.sig``) checked, and
    the good ones attributed to the party whose key made them; raises Unreadable like check_signature."""
    name = label or path.name
    checks: list[Check] = []
    found: list[Signature] = []
    sigs = signature_files(path) or [signature_path(path)]  # none at all: the check says it is not signed
    for sig in sigs:
        subject = name if sig == signature_path(path) else f"{name} ({sig.name})"
        check = check_signature(path, allowed_signers, label=subject, sig=sig)
        checks.append(check)
        if check.ok:
            try:
                found.append(attribute(sig, check.principal, parties))
            except ParseError as exc:
                raise Unreadable(str(exc)) from exc
    return checks, found


def _signed_checks(
    path: Path, allowed_signers: Path | None, identity: str | None, parties: Parties | None, label: str | None = None
) -> list[Check]:
    """The checks of one signed file: its signature, and with parties or countersignatures, who signed what."""
    countersigned = any(party_signature_path(path, p).is_file() for p in PARTIES)
    if parties is None and not countersigned:
        return [check_signature(path, allowed_signers, identity, label=label)]
    checks, found = who_signed(path, allowed_signers, parties or Parties(), label)
    if identity is not None:
        checks[0] = check_signature(path, allowed_signers, identity, label=label)
    if not all(c.ok for c in checks):
        return checks
    name = label or path.name
    if parties is None or not parties.named:
        who = ", ".join(s.principal or s.fingerprint for s in found)
        return [*checks, Check(name, True, f"signed by {who} (parties not named: pass --cluster NAME)")]
    wrong = check_attribution(found)
    if wrong:
        return [*checks, Check(name, False, "; ".join(wrong))]
    listed = " and ".join(s.describe() for s in found)
    return [*checks, Check(name, True, f"signed by {listed}: {agreement_line(found)}")]


def _verify_folder(
    folder: Path, allowed_signers: Path | None, identity: str | None, parties: Parties | None = None
) -> VerifyResult:
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        return VerifyResult(unreadable=f"{folder}: no {MANIFEST_NAME} (not a report folder)")
    try:
        manifest = read_manifest(manifest_path)
    except ParseError as exc:
        return VerifyResult(unreadable=str(exc))
    checks = _signed_checks(manifest_path, allowed_signers, identity, parties)
    if not checks[0].ok and not signature_path(manifest_path).is_file():
        reason = (manifest.get("signing") or {}).get("reason")
        if reason:
            checks[0] = Check(checks[0].subject, False, f"{checks[0].detail}; the report says: {reason}")
    problems = check_files(folder, manifest)
    checks.extend(Check(rel, False, problem) for rel, problem in problems)
    if not problems:
        checks.append(Check(MANIFEST_NAME, True, f"all {len(manifest['files'])} listed files match their sha256"))
    checks.extend(_bundle_check(folder))
    allowed = (manifest.get("signing") or {}).get("unredacted_allowed") or []
    if allowed:  # a false positive let through: verification holds, the reader is told where
        shown = "; ".join(str(a) for a in allowed[:5]) + ("; ..." if len(allowed) > 5 else "")
        checks.append(Check(MANIFEST_NAME, True, f"signed with {len(allowed)} credential-looking value(s) let "
                                                 f"through with --allow-unredacted: {shown}"))  # fmt: skip
    for entry in manifest["files"]:
        rel = str(entry["path"])
        if rel.endswith(SIG_SUFFIX) and rel.removesuffix(SIG_SUFFIX) != MANIFEST_NAME:
            target = folder / rel.removesuffix(SIG_SUFFIX)
            if target.is_file():
                label = rel.removesuffix(SIG_SUFFIX)
                try:
                    checks.append(check_signature(target, allowed_signers, identity, label=label))
                except Unreadable as exc:  # the manifest check above already names the change
                    checks.append(Check(label, False, f"signature unreadable: {exc}"))
    return VerifyResult(tuple(checks), trusted=allowed_signers is not None)


def bundle_schema_problems(document: Any) -> list[str]:
    """Where a ``bundle.json`` document breaks bundle.schema.json, in words (empty: it matches)."""
    from acceptance import schemas  # jsonschema is loaded only when a bundle is checked

    return [
        f"{'.'.join(map(str, p)) or '(top)'}: found {f}, expected {e}"
        for p, f, e in schemas.problems("bundle", document)
    ]


def _bundle_check(folder: Path) -> list[Check]:
    """An incident bundle's ``bundle.json`` must also match its schema (a folder without one: no check)."""
    document = folder / "bundle.json"
    if not document.is_file():
        return []
    try:
        doc = json.loads(document.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [Check("bundle.json", False, f"not readable as JSON: {exc}")]
    found = bundle_schema_problems(doc)
    if found:
        return [Check("bundle.json", False, "does not match bundle.schema.json: " + "; ".join(found[:3]))]
    return [Check("bundle.json", True, "matches bundle.schema.json")]


def _verify_archive(path: Path, allowed_signers: Path | None, identity: str | None) -> VerifyResult:
    """A bundle's ``.tar.gz``: its own signature, then the folder inside it as a folder."""
    checks = [check_signature(path, allowed_signers, identity)]
    with tempfile.TemporaryDirectory(prefix="acceptance-verify-") as tmp:
        try:
            with tarfile.open(path, "r:gz") as tar:
                members = tar.getmembers()
                bad = [m.name for m in members if not (m.isfile() or m.isdir()) or m.name.startswith("/")
                       or ".." in Path(m.name).parts]  # fmt: skip
                if bad:
                    return VerifyResult(tuple(checks), unreadable=f"{path}: unsafe archive members {bad[:3]}")
                tar.extractall(tmp, members=members, filter="data")  # members checked above, too
        except (tarfile.TarError, OSError, EOFError) as exc:
            return VerifyResult(tuple(checks), unreadable=f"{path}: not a readable .tar.gz ({exc})")
        tops = [p for p in Path(tmp).iterdir() if p.is_dir()]
        if len(tops) != 1:
            return VerifyResult(tuple(checks), unreadable=f"{path}: expected one folder inside the archive")
        inner = _verify_folder(tops[0], allowed_signers, identity)
        checks += [Check(f"{path.name}:{c.subject}", c.ok, c.detail) for c in inner.checks]
        if inner.unreadable:
            return VerifyResult(tuple(checks), unreadable=inner.unreadable, trusted=allowed_signers is not None)
    return VerifyResult(tuple(checks), trusted=allowed_signers is not None)


def verify(
    path: Path, allowed_signers: Path | None = None, identity: str | None = None, parties: Parties | None = None
) -> VerifyResult:
    """Verify one signed file (FILE beside FILE.sig), a report or bundle folder (or its MANIFEST.json),
    or a bundle's ``.tar.gz`` (its signature and the folder inside)."""
    if allowed_signers is not None and allowed_signers.is_dir():
        return VerifyResult(unreadable=f"{allowed_signers}: is a directory, not an allowed signers file")
    try:
        if path.is_dir() and not (path / MANIFEST_NAME).is_file() and (path / AGREEMENT_NAMES[0]).is_file():
            checks = [c for name in AGREEMENT_NAMES if (path / name).is_file()
                      for c in _signed_checks(path / name, allowed_signers, identity, parties)]  # fmt: skip
            return VerifyResult(tuple(checks), trusted=allowed_signers is not None)
        if path.is_dir():
            return _verify_folder(path, allowed_signers, identity, parties)
        if path.name.endswith(".tar.gz") and path.is_file():
            return _verify_archive(path, allowed_signers, identity)
        if path.name.endswith(SIG_SUFFIX) and not path.name.endswith(SIG_SUFFIX * 2):
            path = path.with_name(path.name.removesuffix(SIG_SUFFIX))
            for party in PARTIES:  # FILE.customer.sig: the countersignature of FILE
                if path.name.endswith(f".{party}") and path.with_name(path.name.removesuffix(f".{party}")).is_file():
                    path = path.with_name(path.name.removesuffix(f".{party}"))
        if path.name == MANIFEST_NAME:
            return _verify_folder(path.parent, allowed_signers, identity, parties)
        if not path.exists():
            return VerifyResult(unreadable=f"{path}: no such file or folder")
        checks = _signed_checks(path, allowed_signers, identity, parties)
        return VerifyResult(tuple(checks), trusted=allowed_signers is not None)
    except Unreadable as exc:
        return VerifyResult(unreadable=str(exc))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return VerifyResult(unreadable=f"{path}: {exc}")
    except RecursionError:
        return VerifyResult(unreadable=f"{path}: nests too deeply to read")
