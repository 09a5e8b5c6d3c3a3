"""Is this baseline the agreement both parties signed? Signing a new baseline, checking one before use.

A baseline is signed with SSHSIG when it is recorded (the same key handling as reports:
``--sign-key`` or the ssh-agent), beside it as ``handover-<UTC>.json.sig``. Before a run
judges with it, its signature is checked against the profile's ``allowed_signers`` (both
parties' keys, OpenSSH's format). An unsigned baseline is refused unless the run says
``--allow-unsigned-baseline`` (for labs; the report says so); a changed file or a signer the
profile does not list is always refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from acceptance.baseline import LoadedBaseline
from acceptance.errors import BaselineError
from acceptance.report.sign import SignOptions, SignOutcome, sign_files, signature_path
from acceptance.report.verify import Unreadable, check_signature


@dataclass(frozen=True)
class BaselineTrust:
    """How a loaded baseline is trusted: `signed` by `signer`, or accepted unsigned by request."""

    signed: bool
    line: str  # one line for the report header and the junit suite properties

    @property
    def status(self) -> str:
        return "signed" if self.signed else "unsigned"


def sign_baseline(path: Path, options: SignOptions) -> SignOutcome:
    """Sign a newly written baseline (``<file>.sig`` beside it)."""
    return sign_files([path], options)


def trust(loaded: LoadedBaseline, allowed_signers: Path | None, *, allow_unsigned: bool) -> BaselineTrust:
    """Check `loaded` before a run uses it; BaselineError saying why when it must not be used."""
    name = loaded.path.name
    sig = signature_path(loaded.path)
    if not sig.is_file():
        if allow_unsigned:
            return BaselineTrust(False, f"UNSIGNED baseline {name}, used because --allow-unsigned-baseline was given")
        raise BaselineError(
            f"{loaded.path}: the baseline is not signed ({sig.name} is missing), so nothing shows it is the agreement; "
            "record it again with a signing key, or pass --allow-unsigned-baseline (labs only; the report says so)"
        )
    if allowed_signers is None:
        if allow_unsigned:
            return BaselineTrust(
                False, f"baseline {name} is signed, but the profile names no allowed_signers to check it against; "
                "used because --allow-unsigned-baseline was given",
            )  # fmt: skip
        raise BaselineError(
            f"{loaded.path}: the profile has no allowed_signers (both parties' public keys) to check the baseline's "
            "signature against; add `allowed_signers: FILE` to cluster.yaml"
        )
    if not allowed_signers.is_file():
        raise BaselineError(f"{allowed_signers}: the profile's allowed_signers file does not exist")
    try:
        check = check_signature(loaded.path, allowed_signers)
    except Unreadable as exc:
        raise BaselineError(f"{loaded.path}: its signature cannot be read ({exc})") from None
    if not check.ok:
        raise BaselineError(f"{loaded.path}: refused: {check.detail}")
    return BaselineTrust(True, f"baseline {name} {check.detail} ({allowed_signers.name})")
