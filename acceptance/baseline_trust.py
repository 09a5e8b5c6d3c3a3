"""Is this baseline this cluster's agreement, signed by both parties? Signing a new baseline, checking one before use.

A baseline is signed with SSHSIG when it is recorded (the same key handling as reports:
``--sign-key`` or the ssh-agent), beside it as ``handover-<UTC>.json.sig``. Before a run
judges with it, and before anyone amends it, ``trust`` checks three things:

- it is this cluster's: its identity (cluster name, provider cluster id, node set) is the profile's;
- its signature verifies against the profile's ``allowed_signers`` (both parties' keys, OpenSSH's
  format). An unsigned baseline is refused unless the caller says ``--allow-unsigned-baseline``
  (for labs; the report says so); a changed file or a signer the profile does not list is always refused;
- with the profile's ``parties:``, every signature beside it is attributed to the party whose key made it:
  ``<file>.sig`` (the recording party's) and the other party's countersignature ``<file>.<party>.sig``
  (``acceptance baseline countersign``); a countersignature that does not verify, or that is not its
  party's, is refused. The run says which parties signed (``provider-signed only``), and
  ``require_agreement`` stops it under ``agreement.require: both`` unless both did;
- if it is an amendment, the chain behind it holds: every file it amends, back to the recorded
  baseline, is still in the store with the sha256 and signature the amendment names, verifies the
  same way, belongs to this cluster, and has the same conditions and results (an amendment changes
  margins, never measurements).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.baseline import Identity, LoadedBaseline, is_store_name, load, signature_sha256
from acceptance.errors import BaselineError, Unreadable
from acceptance.profile import Profile
from acceptance.report.parties import PARTIES, agreement_line, check_attribution, party_signature_path, signed_line
from acceptance.report.sign import SignOptions, SignOutcome, sign_files, signature_path
from acceptance.report.verify import check_signature, who_signed

#: an amendment chain longer than this is refused rather than walked (a loop guard; real chains are short)
MAX_CHAIN = 1000


@dataclass(frozen=True)
class BaselineTrust:
    """How a loaded baseline is trusted: `signed` by `signer`, or accepted unsigned by request."""

    signed: bool
    line: str  # one line for the report header and the junit suite properties
    signed_by: tuple[str, ...] = ()  # the parties whose signature verified (profile `parties:`)
    agreement: str = ""  # "provider and customer signed", "provider-signed only"; "" when no parties are named

    @property
    def status(self) -> str:
        return "signed" if self.signed else "unsigned"


def sign_baseline(path: Path, options: SignOptions) -> SignOutcome:
    """Sign a newly written baseline (``<file>.sig`` beside it)."""
    return sign_files([path], options)


def trust(loaded: LoadedBaseline, profile: Profile, *, allow_unsigned: bool) -> BaselineTrust:
    """The one gate before a baseline is used: judged with, amended (or countersigned).

    BaselineError, naming the file and why, when it must not be used.
    """
    note = check_identity(loaded, profile)
    first = _signature(loaded, profile.allowed_signers, allow_unsigned=allow_unsigned)
    links, all_signed = _chain(loaded, profile, allow_unsigned=allow_unsigned)
    line = first.line
    if links:
        how = "each link verified" if all_signed else "UNSIGNED links used because --allow-unsigned-baseline was given"
        line += f"; amends {' <- '.join(links)} ({how})"
    if note:
        line += f"; {note}"
    signed_by, agreement = _parties(loaded, profile) if first.signed else ((), "")
    if not first.signed and profile.parties.named:
        agreement = signed_line(())
    return BaselineTrust(first.signed and all_signed, line, signed_by, agreement)


def require_agreement(found: BaselineTrust, profile: Profile, loaded: LoadedBaseline) -> None:
    """``agreement.require: both``: BaselineError unless both parties signed the baseline (checked before a run)."""
    if not profile.require_both or len(found.signed_by) == len(PARTIES):
        return
    missing = [p for p in PARTIES if p not in found.signed_by]
    raise BaselineError(
        f"{loaded.path}: refused: the profile {profile.path} requires both parties' signatures "
        f"(agreement.require: both) and the baseline is {found.agreement or signed_line(())}: nothing was started. "
        f"The {' and the '.join(missing)} countersign it with "
        f"`acceptance baseline countersign {profile.name} --sign-key KEY`"
    )


def _parties(loaded: LoadedBaseline, profile: Profile) -> tuple[tuple[str, ...], str]:
    """Every signature beside the baseline checked and attributed to its party; BaselineError for a bad one."""
    allowed = profile.allowed_signers
    if allowed is None:
        return (), ""
    countersigned = any(party_signature_path(loaded.path, p).is_file() for p in PARTIES)
    if not profile.parties.named and not countersigned:
        return (), ""
    try:
        checks, found = who_signed(loaded.path, allowed, profile.parties)
    except Unreadable as exc:
        raise BaselineError(f"{loaded.path}: a signature cannot be read ({exc})") from None
    bad = [f"{c.subject}: {c.detail}" for c in checks if not c.ok]
    if not profile.parties.named:
        bad.append(
            f"it is countersigned, but the profile {profile.path} names no parties: to say whose signature is whose, "
            "add parties: {provider: [keys], customer: [keys]}"
        )
    bad += check_attribution(found)
    if bad:
        raise BaselineError(f"{loaded.path}: refused: {'; '.join(bad)}")
    signed_by = tuple(p for p in PARTIES if any(s.party == p for s in found))
    return signed_by, agreement_line(found)


def check_identity(loaded: LoadedBaseline, profile: Profile) -> str:
    """Refuse a baseline of another cluster (BaselineError naming both sides); a note for an old-format one, or ""."""
    ours = Identity.of_profile(profile)
    theirs = loaded.baseline.identity
    legacy = theirs is None
    if theirs is None:  # recorded before baselines named their identity: name and node set are all it says
        theirs = Identity(loaded.baseline.cluster, None, loaded.baseline.conditions.nodes)
    differences = theirs.differences(ours, check_provider_id=not legacy)
    if differences:
        said = theirs.describe("not recorded" if legacy else "(none)")
        raise BaselineError(
            f"{loaded.path}: refused: the baseline is another cluster's agreement ({'; '.join(differences)}): "
            f"the baseline names {said}; the profile {profile.path} names {ours.describe()}. "
            "A baseline is recorded on its own cluster: "
            f"`pytest acceptance/ --cluster={profile.name} --record-baseline`"
        )
    if legacy:
        return (
            f"{loaded.path.name} was recorded before baselines named their cluster: its cluster name and node set are "
            "the profile's, its provider cluster id is not recorded; record it with `acceptance baseline amend "
            f"{profile.name} --margins-from-profile --reason TEXT`"
        )
    return ""


def check_signer(options: SignOptions, allowed_signers: Path | None, *, must_sign: bool = False) -> str | None:
    """Why a baseline signed with `options` would be refused by `allowed_signers`, before anything is signed.

    A probe file is signed with the same key and verified the way a run verifies a baseline.
    None when the signature would verify or there is no allowed_signers file to check against;
    when nothing can be signed at all, None too, unless `must_sign` (then: why it cannot sign).
    """
    if not options.enabled:
        return None
    with tempfile.TemporaryDirectory(prefix="acceptance-signer-check-") as tmp:
        probe = Path(tmp) / "handover-probe.json"
        probe.write_text("{}\n", encoding="utf-8")
        outcome = sign_files([probe], options)
        if not outcome.signed:
            return outcome.problem if must_sign else None
        if allowed_signers is None or not allowed_signers.is_file():
            return None
        try:
            check = check_signature(probe, allowed_signers)
        except Unreadable as exc:
            return f"its signature cannot be checked ({exc})"
    if check.ok:
        return None
    return f"{outcome.signer} is not allowed to sign this cluster's baselines: {check.detail}"


def _signature(loaded: LoadedBaseline, allowed_signers: Path | None, *, allow_unsigned: bool) -> BaselineTrust:
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


def _chain(loaded: LoadedBaseline, profile: Profile, *, allow_unsigned: bool) -> tuple[list[str], bool]:
    """The files `loaded` amends, newest first, each checked; whether every one of them is signed."""
    links: list[str] = []
    all_signed = True
    seen = {loaded.path.name}
    current = loaded
    while (step := current.baseline.amendment) is not None:
        before = _predecessor(current, step, seen)
        broken = f"{current.path}: the chain of amendments is broken at {before.path.name}"
        if "from_signature_sha256" in step:  # amendments made before signatures were pinned name only the sha256
            named, found = step["from_signature_sha256"], signature_sha256(before.path)
            if named != found:
                raise BaselineError(
                    f"{broken}: its signature is not the one this amendment names (sha256 "
                    f"{_short(found) if found else '(no signature)'} now, {_short(named) if named else '(unsigned)'} "
                    "when amended): re-signed or replaced since"
                )
        try:
            link = _signature(before, profile.allowed_signers, allow_unsigned=allow_unsigned)
            check_identity(before, profile)
        except BaselineError as exc:
            raise BaselineError(f"{broken}: {exc}") from None
        for part in ("cluster", "conditions", "results"):
            if before.baseline.data.get(part) != current.baseline.data.get(part):
                raise BaselineError(
                    f"{broken}: the amendment's {part} differ from those of the file it amends; an amendment "
                    "changes the agreed margins only, never what was measured"
                )
        all_signed = all_signed and link.signed
        links.append(before.path.name)
        seen.add(before.path.name)
        current = before
    return links, all_signed


def _predecessor(current: LoadedBaseline, step: Mapping[str, Any], seen: set[str]) -> LoadedBaseline:
    name = str(step["from"])
    where = f"{current.path}: the chain of amendments is broken"
    if not is_store_name(name):
        raise BaselineError(f"{where}: it amends {name!r}, which is not a baseline file name of the store")
    if name in seen or len(seen) > MAX_CHAIN:
        raise BaselineError(f"{where}: it amends {name}, which is already in the chain (a loop)")
    path = current.path.parent / name
    if not path.is_file():
        raise BaselineError(
            f"{where}: it amends {name}, which is not in {current.path.parent}; every file of the chain back to the "
            "recorded baseline stays in the store"
        )
    before = load(path)
    if before.sha256 != step["from_sha256"]:
        raise BaselineError(
            f"{where} at {name}: its sha256 is {_short(before.sha256)} now, {_short(step['from_sha256'])} when "
            f"{current.path.name} amended it: changed since"
        )
    return before


def _short(digest: str) -> str:
    return f"{digest[:12]}…"
