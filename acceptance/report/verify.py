"""Check a signed report: one signed file, or a report folder and its MANIFEST.json.

Signatures are checked by stock OpenSSH (`ssh-keygen -Y verify` against an
allowed-signers file, or `-Y check-novalidate` against the key embedded in the
signature when no trust list is given); hashes by us. Every failure names the file
and says what is wrong with it and which key signed.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from acceptance.errors import ParseError
from acceptance.report.manifest import MANIFEST_NAME, check_files, read_manifest
from acceptance.report.sign import NAMESPACE, SIG_SUFFIX, signature_path
from acceptance.report.sshsig import SignatureInfo, parse_signature


@dataclass(frozen=True)
class Check:
    """One thing checked: a signature or the manifest's hashes."""

    subject: str
    ok: bool
    detail: str


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
        """0 verified, 1 verification failed, 2 unreadable input."""
        if self.unreadable is not None:
            return 2
        return 0 if self.ok else 1

    def lines(self) -> list[str]:
        out = [f"{'OK  ' if c.ok else 'FAIL'} {c.subject}: {c.detail}" for c in self.checks]
        if self.unreadable is not None:
            out.append(f"ERROR {self.unreadable}")
        if self.checks and not self.trusted and self.unreadable is None:
            out.append(
                "note: signers were NOT checked against a trust list; pass --allowed-signers FILE "
                "to check that the key belongs to someone you trust"
            )
        out.append("verified" if self.ok else ("unreadable" if self.unreadable else "verification FAILED"))
        return out


class _Unreadable(Exception):
    pass


def _ssh_keygen(argv: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("ssh-keygen") is None:
        raise _Unreadable("ssh-keygen not found (install OpenSSH's client: apt-get install openssh-client)")
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
    path: Path, allowed_signers: Path | None = None, identity: str | None = None, label: str | None = None
) -> Check:
    """Check `path` against `path.sig`; raises _Unreadable for input that cannot be read."""
    name = label or path.name
    sig = signature_path(path)
    if not path.is_file():
        raise _Unreadable(f"{path}: no such file")
    if not sig.is_file():
        return Check(name, False, f"not signed: {sig.name} is missing")
    try:
        info: SignatureInfo = parse_signature(sig.read_text(encoding="utf-8", errors="replace"), str(sig))
    except ParseError as exc:
        raise _Unreadable(str(exc)) from exc
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
        raise _Unreadable(f"{allowed_signers}: is a directory, not an allowed signers file")
    if not allowed_signers.is_file():
        raise _Unreadable(f"{allowed_signers}: allowed signers file not found")
    identities = [identity] if identity else _principals(sig, allowed_signers)
    if not identities:
        return Check(name, False, f"signed by {who}, which is not in {allowed_signers}")
    for principal in identities:
        argv = ["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(sig)]
        done = _ssh_keygen(argv, data)
        if done.returncode == 0:
            return Check(name, True, f"good signature by {principal} with {who}")
    novalidate = _ssh_keygen(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], data)
    if novalidate.returncode != 0:
        return Check(name, False, f"content does not match the signature by {who}: the file changed after signing")
    wanted = ", ".join(identities)
    return Check(name, False, f"signed by {who}, which {allowed_signers} does not allow for {wanted} ({_said(done)})")


def _verify_folder(folder: Path, allowed_signers: Path | None, identity: str | None) -> VerifyResult:
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        return VerifyResult(unreadable=f"{folder}: no {MANIFEST_NAME} (not a report folder)")
    try:
        manifest = read_manifest(manifest_path)
    except ParseError as exc:
        return VerifyResult(unreadable=str(exc))
    checks = [check_signature(manifest_path, allowed_signers, identity)]
    if not checks[0].ok and not signature_path(manifest_path).is_file():
        reason = (manifest.get("signing") or {}).get("reason")
        if reason:
            checks[0] = Check(checks[0].subject, False, f"{checks[0].detail}; the report says: {reason}")
    problems = check_files(folder, manifest)
    checks.extend(Check(rel, False, problem) for rel, problem in problems)
    if not problems:
        checks.append(Check(MANIFEST_NAME, True, f"all {len(manifest['files'])} listed files match their sha256"))
    for entry in manifest["files"]:
        rel = str(entry["path"])
        if rel.endswith(SIG_SUFFIX) and rel.removesuffix(SIG_SUFFIX) != MANIFEST_NAME:
            target = folder / rel.removesuffix(SIG_SUFFIX)
            if target.is_file():
                label = rel.removesuffix(SIG_SUFFIX)
                try:
                    checks.append(check_signature(target, allowed_signers, identity, label=label))
                except _Unreadable as exc:  # the manifest check above already names the change
                    checks.append(Check(label, False, f"signature unreadable: {exc}"))
    return VerifyResult(tuple(checks), trusted=allowed_signers is not None)


def verify(path: Path, allowed_signers: Path | None = None, identity: str | None = None) -> VerifyResult:
    """Verify one signed file (FILE beside FILE.sig) or a report folder (or its MANIFEST.json)."""
    if allowed_signers is not None and allowed_signers.is_dir():
        return VerifyResult(unreadable=f"{allowed_signers}: is a directory, not an allowed signers file")
    try:
        if path.is_dir():
            return _verify_folder(path, allowed_signers, identity)
        if path.name.endswith(SIG_SUFFIX) and not path.name.endswith(SIG_SUFFIX * 2):
            path = path.with_name(path.name.removesuffix(SIG_SUFFIX))
        if path.name == MANIFEST_NAME:
            return _verify_folder(path.parent, allowed_signers, identity)
        if not path.exists():
            return VerifyResult(unreadable=f"{path}: no such file or folder")
        check = check_signature(path, allowed_signers, identity)
        return VerifyResult((check,), trusted=allowed_signers is not None)
    except _Unreadable as exc:
        return VerifyResult(unreadable=str(exc))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return VerifyResult(unreadable=f"{path}: {exc}")
    except RecursionError:
        return VerifyResult(unreadable=f"{path}: nests too deeply to read")
