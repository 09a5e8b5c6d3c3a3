"""Who signed what: the agreement's two parties and their signatures beside a file.

The profile names the parties and their keys (``parties: {provider: [..], customer: [..]}``), each
key as a principal of the ``allowed_signers`` file or as an OpenSSH public key (``ssh-ed25519 AAAA..``).
A file carries one signature per party, each a stock ``ssh-keygen -Y sign`` signature:

- ``<file>.sig``: the signature of the party that made the file (recorded the baseline, ran the
  report, rendered the agreement), as before parties were named;
- ``<file>.<party>.sig``: the other party's countersignature (``<file>.customer.sig``).

Each verifies with ``ssh-keygen -Y verify -f allowed_signers -I PRINCIPAL -n recovery-acceptance -s SIG < FILE``.
A signature is attributed to the party whose listed key made it, never by its file name alone: a
countersignature file named for one party but made with the other's key is refused.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from acceptance.errors import ParseError
from acceptance.report.sign import SIG_SUFFIX, signature_path
from acceptance.report.sshsig import parse_signature

PARTIES = ("provider", "customer")


def party_signature_path(path: Path, party: str) -> Path:
    """``<file>.<party>.sig``: where `party` countersigns `path`."""
    return path.with_name(f"{path.name}.{party}{SIG_SUFFIX}")


def signature_files(path: Path) -> list[Path]:
    """The signatures beside `path` that exist: ``<file>.sig`` first, then each party's countersignature."""
    found = [signature_path(path), *(party_signature_path(path, p) for p in PARTIES)]
    return [sig for sig in found if sig.is_file()]


def is_countersignature(name: str, of: str) -> bool:
    """Whether the file name `name` is a countersignature of the file named `of`."""
    return any(name == f"{of}.{party}{SIG_SUFFIX}" for party in PARTIES)


def other(party: str) -> str:
    return PARTIES[1] if party == PARTIES[0] else PARTIES[0]


def _key_blob(entry: str) -> bytes | None:
    """The key blob of an OpenSSH public key line (``TYPE BASE64 [comment]``), None for a principal."""
    fields = entry.split()
    if len(fields) < 2 or not (fields[0].startswith(("ssh-", "ecdsa-", "sk-"))):
        return None
    try:
        return base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True)
class Parties:
    """Each party's keys, as principals of allowed_signers or as public keys; empty: parties not named."""

    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def named(self) -> bool:
        return bool(self.keys)

    def party_of(self, principal: str | None, public_key: bytes) -> str | None:
        """The party one of whose keys made a signature (by `principal` or by key), or None."""
        for party in PARTIES:
            for entry in self.keys.get(party, ()):
                blob = _key_blob(entry)
                if (blob is not None and blob == public_key) or (blob is None and entry == principal):
                    return party
        return None

    def describe(self, party: str) -> str:
        return f"{party} ({', '.join(self.keys.get(party, ())) or 'no keys'})"


def problems(raw: Mapping[str, Sequence[str]]) -> list[tuple[str, int, str, str]]:
    """A key listed for both parties (beyond the schema): (party, index, entry, the other party listing it)."""
    seen: dict[str, str] = {}
    out = []
    for party in PARTIES:
        for i, entry in enumerate(raw.get(party, ())):
            blob = _key_blob(entry)
            key = base64.b64encode(blob).decode() if blob is not None else entry
            if key in seen and seen[key] != party:
                out.append((party, i, entry, seen[key]))
            seen.setdefault(key, party)
    return out


@dataclass(frozen=True)
class Signature:
    """One verified signature of a file and the party it is attributed to."""

    sig: Path
    party: str | None
    principal: str | None
    fingerprint: str

    def describe(self) -> str:
        who = self.principal or self.fingerprint
        return f"{self.party or 'no party'} ({who}, {self.sig.name})"


def attribute(sig: Path, principal: str | None, parties: Parties) -> Signature:
    """Which party made `sig` (already verified); ParseError when it is not an SSHSIG signature."""
    info = parse_signature(sig.read_text(encoding="utf-8", errors="replace"), str(sig))
    return Signature(sig, parties.party_of(principal, info.public_key), principal, info.fingerprint)


def signed_line(signed_by: Sequence[str]) -> str:
    """``provider and customer signed``, ``provider-signed only``, or that no party signed."""
    named = [p for p in PARTIES if p in signed_by]
    if len(named) == len(PARTIES):
        return " and ".join(PARTIES) + " signed"
    if named:
        return f"{named[0]}-signed only"
    return "signed by neither party"


def misfiled(signature: Signature) -> str | None:
    """Why a countersignature file is not its party's (``<file>.customer.sig`` made with a provider key), or None."""
    for party in PARTIES:
        if signature.sig.name.endswith(f".{party}{SIG_SUFFIX}") and signature.party != party:
            made = f"the {signature.party}'s key" if signature.party else "a key neither party lists"
            return f"{signature.sig.name} is named for the {party} but was made with {made} ({signature.fingerprint})"
    return None


def check_attribution(signatures: Sequence[Signature]) -> list[str]:
    """Problems with who signed: a countersignature not made by its party's key, a party that signed twice.

    ``<file>.sig`` made with a key allowed_signers lists but neither party names is no problem here: it is
    a signature of neither party, which `agreement_line` says.
    """
    out = [why for s in signatures if (why := misfiled(s))]
    parties = [s.party for s in signatures if s.party]
    out += [f"the {p} signed twice" for p in PARTIES if parties.count(p) > 1]
    return out


def agreement_line(signatures: Sequence[Signature]) -> str:
    """Which parties signed, and any signature made with a key of neither party."""
    line = signed_line([s.party for s in signatures if s.party])
    strangers = [s.principal or s.fingerprint for s in signatures if s.party is None]
    if strangers:
        line += f" ({', '.join(strangers)} signed too, a key of neither party in the profile's parties:)"
    return line


__all__ = [
    "PARTIES",
    "ParseError",
    "Parties",
    "Signature",
    "agreement_line",
    "attribute",
    "check_attribution",
    "is_countersignature",
    "other",
    "party_signature_path",
    "problems",
    "signature_files",
    "signed_line",
]
