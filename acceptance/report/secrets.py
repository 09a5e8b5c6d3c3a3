"""Remove credentials from text and data before they are written into a report.

Reports are attached to tickets and read by both sides of a dispute; a kubeconfig,
an environment dump or a submitted manifest must never carry a token, a password,
a client key or a private key into them. Scrubbing is conservative: the key name
stays (so a reader sees that a secret was there), the value becomes ``[REDACTED]``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.report.credentials import (
    REDACTED,
    find_credentials,
    is_plain_value,
    is_secret_name,
    may_hold_credentials,
    redact,
)

__all__ = [
    "REDACTED",
    "FolderScan",
    "Unredacted",
    "is_secret_name",
    "redact_values",
    "scan_folder",
    "scan_text",
    "scrub_obj",
    "scrub_text",
]

_SECRET_KEY_LINE = re.compile(
    r"""(?i)^(?P<indent>[ \t]*(?:-[ \t]+)?)(?P<key>["']?(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)["']?[ \t]*:)(?P<value>.*)$"""
)
_BLOCK_SCALAR = re.compile(r":[ \t]*[|>]")
_PEM_PRIVATE = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END \1-----|\Z)",
    re.DOTALL,
)


def _scrub_yaml_lines(text: str) -> str:
    """Redact `name: value` lines, including block scalars (`name: |` and its indented lines)."""
    out: list[str] = []
    skip_deeper_than: int | None = None
    for raw in text.splitlines(keepends=True):
        line = raw
        if skip_deeper_than is not None:
            stripped = line.strip()
            if not stripped or len(line) - len(line.lstrip()) > skip_deeper_than:
                continue
            skip_deeper_than = None
        match = _SECRET_KEY_LINE.match(line.rstrip("\r\n"))
        if match and is_secret_name(match.group("name")):
            value = match.group("value").strip()
            if value.startswith(("|", ">")):
                skip_deeper_than = len(match.group("indent"))
            if value and not is_plain_value(value.split("#", 1)[0]) and not value.startswith(("{", "[")):
                newline = line[len(line.rstrip("\r\n")) :]
                line = f"{match.group('indent')}{match.group('key')} {REDACTED}{newline}"
        out.append(line)
    return "".join(out)


def scrub_text(text: str) -> str:
    """Return `text` with every credential we recognise replaced by ``[REDACTED]``."""
    if not may_hold_credentials(text):
        return text
    text = _PEM_PRIVATE.sub(lambda m: f"-----BEGIN {m.group(1)}----- {REDACTED} -----END {m.group(1)}-----", text)
    if _BLOCK_SCALAR.search(text):  # single-line keys are the span rules' work; only `name: |` blocks need lines
        text = _scrub_yaml_lines(text)
    return redact(text, find_credentials(text))


_SHORTEST_FIND = 4  # `pwd=x` is the shortest text a rule can find anything in


def _argv_flag(item: Any) -> bool:
    """`--hf-token` (the value follows as the next item); `--hf-token=x` is scrubbed as text."""
    return isinstance(item, str) and item.startswith("-") and "=" not in item and is_secret_name(item.lstrip("-"))


def scrub_obj(obj: Any) -> Any:
    """A copy of JSON-like data with secret-named values redacted and every string scrubbed.

    A ``{name: X, value: V}`` pair (a Kubernetes env entry) is redacted by X, the entry's name; in a
    list (an argv), the item after a secret-named flag (``["--hf-token", V]``) is redacted. A mapping
    under a secret's name (``HF_TOKEN: {valueFrom: {secretKeyRef: ...}}``) is a reference, kept and scrubbed.
    """
    if isinstance(obj, Mapping):
        name = obj.get("name")
        if isinstance(name, str) and is_secret_name(name) and isinstance(obj.get("value"), str | int):
            return {key: REDACTED if key == "value" else scrub_obj(value) for key, value in obj.items()}
        return {
            key: (
                REDACTED
                if isinstance(key, str)
                and is_secret_name(key)
                and isinstance(value, str | int | float)
                and not isinstance(value, bool)
                and not (isinstance(value, str) and is_plain_value(value))
                else scrub_obj(value)
            )
            for key, value in obj.items()
        }
    if isinstance(obj, list | tuple):
        out = [scrub_obj(item) for item in obj]
        for i in range(1, len(obj)):
            item = obj[i]
            if (
                _argv_flag(obj[i - 1])
                and isinstance(item, str)
                and not item.startswith("-")
                and not is_plain_value(item)
            ):
                out[i] = REDACTED
        return out
    if isinstance(obj, str):
        # too short for `name=value` or a provider's token; a short value under a secret's name or after a
        # secret-named flag is redacted above, by the key or the list
        return scrub_text(obj) if len(obj) > _SHORTEST_FIND else obj
    return obj


MIN_SECRET_LENGTH = 4  # shorter values would redact ordinary words; a credential is never that short


def _redactable(secrets: Mapping[str, str]) -> dict[str, str]:
    """The secrets long enough to search for (name → value)."""
    return {name: value for name, value in secrets.items() if len(value) >= MIN_SECRET_LENGTH}


def redact_values(text: str, secrets: Mapping[str, str]) -> tuple[str, list[str]]:
    """`text` with every known secret value replaced, and the names of those found."""
    found = []
    for name, value in _redactable(secrets).items():
        if value in text:
            text = text.replace(value, REDACTED)
            found.append(name)
    return text, found


@dataclass(frozen=True)
class Unredacted:
    """A credential-looking value still in a file of a folder about to be signed (never the value itself)."""

    path: str
    line: int
    kind: str
    allowed: bool = False

    def describe(self) -> str:
        allowed = " (let through with --allow-unredacted)" if self.allowed else ""
        return f"{self.path}:{self.line}: {self.kind}{allowed}"


@dataclass(frozen=True)
class FolderScan:
    """What the last scan before signing did: known values redacted, credential-looking values left."""

    redacted: tuple[str, ...] = ()
    remaining: tuple[Unredacted, ...] = ()

    @property
    def refused(self) -> tuple[Unredacted, ...]:
        """The finds that keep the folder from being signed (those no --allow-unredacted names)."""
        return tuple(u for u in self.remaining if not u.allowed)

    @property
    def allowed(self) -> tuple[Unredacted, ...]:
        return tuple(u for u in self.remaining if u.allowed)

    def refusal(self) -> str | None:
        """Why the folder is not signed, or None; says where and what, never the value."""
        refused = self.refused
        if not refused:
            return None
        files = sorted({u.path for u in refused})
        shown = "; ".join(u.describe() for u in refused[:5]) + ("; ..." if len(refused) > 5 else "")
        return (
            f"refused to sign: {len(refused)} credential-looking value(s) remain in {len(files)} file(s) ({shown}); "
            "remove them, or name a false positive with --allow-unredacted FILE"
        )


def _allowed(rel: str, path: Path, allow: Sequence[str]) -> bool:
    for item in allow:
        named = Path(item)
        if item.replace("\\", "/").strip("/") == rel or (named.is_absolute() and named.resolve() == path.resolve()):
            return True
    return False


def scan_text(text: str) -> list[tuple[int, str]]:
    """(line, kind) of each credential-looking value in `text`."""
    return [(find.line(text), find.kind) for find in find_credentials(text)]


def scan_folder(
    folder: Path, secrets: Mapping[str, str], allow: Sequence[str] = (), *, scrubbed: Mapping[str, str] | None = None
) -> FolderScan:
    """The last line of defence before signing, over every file under `folder` (and `extra` files).

    The values of `secrets` (name → value, the profile's credentials) are redacted wherever they are,
    whatever wrote the file. Then every text file is searched for values that look like credentials
    (by name, shape or provider form, see `acceptance.report.credentials`); those are not changed but
    listed, and a folder that holds one is not signed unless `allow` names its file (a path relative to
    the folder, or absolute). `scrubbed` (relative path → sha256, `ReportFolder.scrubbed`) names files
    written through `scrub_text`, whose output holds no find: unchanged since, they are not searched again.
    """
    redacted: list[str] = []
    remaining: list[Unredacted] = []
    wanted = _redactable(secrets)
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    for path in paths:
        rel = path.relative_to(folder).as_posix()
        raw = path.read_bytes()
        names = [n for n, v in wanted.items() if v.encode() in raw]
        if names:
            for name in names:
                raw = raw.replace(wanted[name].encode(), REDACTED.encode())
            path.write_bytes(raw)
            redacted.append(f"{rel}: the value of {', '.join(names)} (redacted)")
        elif scrubbed and rel in scrubbed and scrubbed[rel] == hashlib.sha256(raw).hexdigest():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # an image or an archive: only exact values are searched for in bytes
        allowed = _allowed(rel, path, allow)
        remaining += [Unredacted(rel, line, kind, allowed) for line, kind in scan_text(text)]
    return FolderScan(tuple(redacted), tuple(remaining))
