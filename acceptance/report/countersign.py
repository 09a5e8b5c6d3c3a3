"""The other party's signature beside a file that one party signed: ``<file>.<party>.sig``.

The caller checks first that the file is what it claims to be (a baseline passes
``baseline_trust.trust``, a report or agreement passes ``acceptance verify``); here the key that
countersigns is checked: it must be a key of the party that has not signed yet. The signature is
made with stock ``ssh-keygen -Y sign`` on a copy of the file (so ``<file>.sig`` is never touched) and
lands beside the file only once it verifies against allowed_signers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from acceptance.errors import Unreadable, UsageError
from acceptance.report.parties import PARTIES, Parties, Signature, attribute, other, party_signature_path
from acceptance.report.sign import SignOptions, sign_files, signature_path
from acceptance.report.verify import check_signature, who_signed


@dataclass(frozen=True)
class Countersigned:
    """A countersignature written: which file, where, by which party and key."""

    path: Path
    signature: Path
    party: str
    signer: str

    def line(self) -> str:
        return f"{self.path.name}: countersigned by the {self.party} ({self.signer}), {self.signature.name}"


def key_party(
    sample: Path, options: SignOptions, allowed_signers: Path, parties: Parties, action: str = "countersigned"
) -> tuple[Path, Signature]:
    """Sign a copy of `sample` in a scratch folder; its signature and the party it is attributed to.

    UsageError when the key cannot sign, allowed_signers does not allow it, or it is no party's key.
    The caller removes the returned signature's folder (the signature's parent).
    """
    scratch = Path(tempfile.mkdtemp(prefix="acceptance-countersign-"))
    copy = scratch / sample.name
    shutil.copyfile(sample, copy)
    outcome = sign_files([copy], options)
    try:
        if not outcome.signed:
            raise UsageError(f"{sample.name} was not {action}: {outcome.describe()}")
        check = check_signature(copy, allowed_signers)
        if not check.ok:
            raise UsageError(f"{sample.name} was not {action}: {outcome.signer}: {check.detail}")
        made = attribute(signature_path(copy), check.principal, parties)
    except (UsageError, Unreadable) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise UsageError(str(exc)) from None
    if made.party is None:
        shutil.rmtree(scratch, ignore_errors=True)
        listed = "; ".join(parties.describe(p) for p in PARTIES)
        raise UsageError(
            f"{sample.name} was not {action}: {outcome.signer} ({made.fingerprint}) is a key of neither "
            f"party (the profile's parties: {listed})"
        )
    return copy, made


def countersign(path: Path, options: SignOptions, allowed_signers: Path, parties: Parties) -> Countersigned:
    """Write `path`'s countersignature by the party whose key `options` names; UsageError naming why not."""
    if not parties.named:
        raise UsageError(
            f"{path.name} was not countersigned: the profile names no parties; add "
            "parties: {provider: [keys], customer: [keys]} (principals of allowed_signers or public keys)"
        )
    try:
        checks, found = who_signed(path, allowed_signers, parties)
    except Unreadable as exc:
        raise UsageError(f"{path} was not countersigned: {exc}") from None
    bad = [f"{c.subject}: {c.detail}" for c in checks if not c.ok]
    if bad:
        raise UsageError(f"{path} was not countersigned: it does not verify: {'; '.join(bad)}")
    copy, made = key_party(path, options, allowed_signers, parties)
    party = made.party or ""
    try:
        already = [s for s in found if s.party == party]
        if already:
            raise UsageError(
                f"{path.name} was not countersigned: the {party} already signed it ({already[0].describe()}); "
                f"the countersignature is the {other(party)}'s: sign with a key of the {parties.describe(other(party))}"
            )
        target = party_signature_path(path, party)
        staged = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(signature_path(copy), staged)
        os.replace(staged, target)
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)
    return Countersigned(path, target, party, made.principal or made.fingerprint)
