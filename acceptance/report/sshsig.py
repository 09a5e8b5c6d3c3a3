"""Read an SSHSIG signature (the format of `ssh-keygen -Y sign`) without verifying it.

Used to explain a signature: which key made it (its SHA256 fingerprint, as
`ssh-keygen -l` prints it) and for which namespace. Verification itself is left to
OpenSSH. Format: PROTOCOL.sshsig in the OpenSSH sources.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from acceptance.errors import ParseError

ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"
MAGIC = b"SSHSIG"


@dataclass(frozen=True)
class SignatureInfo:
    """What an SSHSIG blob says about itself."""

    version: int
    key_type: str
    public_key: bytes
    namespace: str
    hash_algorithm: str

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.public_key).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _read_string(blob: bytes, offset: int, source: str) -> tuple[bytes, int]:
    if offset + 4 > len(blob):
        raise ParseError(source, 0, "", "an SSHSIG blob (truncated before a length field)")
    (length,) = struct.unpack(">I", blob[offset : offset + 4])
    end = offset + 4 + length
    if end > len(blob):
        raise ParseError(source, 0, "", "an SSHSIG blob (a field runs past the end)")
    return blob[offset + 4 : end], end


def parse_signature(text: str, source: str = "<signature>") -> SignatureInfo:
    """Decode an armored SSHSIG signature; raise ParseError naming `source` if it is not one."""
    lines = [line.strip() for line in text.strip().splitlines()]
    if not lines or lines[0] != ARMOR_BEGIN:
        found = lines[0] if lines else ""
        raise ParseError(source, 1, found, ARMOR_BEGIN)
    if lines[-1] != ARMOR_END:
        raise ParseError(source, len(lines), lines[-1], ARMOR_END)
    try:
        blob = base64.b64decode("".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ParseError(source, 2, lines[1] if len(lines) > 2 else "", "base64 signature data") from exc
    if blob[:6] != MAGIC or len(blob) < 10:
        raise ParseError(source, 2, "", "an SSHSIG blob starting with the magic 'SSHSIG'")
    (version,) = struct.unpack(">I", blob[6:10])
    public_key, offset = _read_string(blob, 10, source)
    namespace, offset = _read_string(blob, offset, source)
    _reserved, offset = _read_string(blob, offset, source)
    hash_algorithm, offset = _read_string(blob, offset, source)
    key_type, _ = _read_string(public_key, 0, source)
    return SignatureInfo(
        version=version,
        key_type=key_type.decode("ascii", "replace"),
        public_key=public_key,
        namespace=namespace.decode("utf-8", "replace"),
        hash_algorithm=hash_algorithm.decode("ascii", "replace"),
    )
