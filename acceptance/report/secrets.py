"""Remove credentials from text and data before they are written into a report.

Reports are attached to tickets and read by both sides of a dispute; a kubeconfig,
an environment dump or a submitted manifest must never carry a token, a password,
a client key or a private key into them. Scrubbing is conservative: the key name
stays (so a reader sees that a secret was there), the value becomes ``[REDACTED]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"

# Names whose values are credentials, in YAML/JSON keys and KEY=VALUE assignments.
_SECRET_NAME = (
    r"(?:[A-Za-z0-9_.-]*(?:token|password|passwd|passphrase|secret|api[_-]?key|apikey|"
    r"secret[_-]?access[_-]?key|access[_-]?key(?:[_-]?id)?|secret[_-]?key|auth[_-]?key|signing[_-]?key|"
    r"private[_-]?key|client-key-data|client_key_data|credentials?|authorization))"
)
_SECRET_KEY_RE = re.compile(_SECRET_NAME + r"\Z", re.IGNORECASE)
# A flag is never a credential (`automountServiceAccountToken: false` must survive in the evidence);
# a number may be (a PIN), so numbers are still redacted.
_NOT_A_SECRET = r"(?:true|false|null|~)(?![^\s,;|\]}])"
_PLAIN_VALUE = re.compile(r"(?i)" + _NOT_A_SECRET + r"\s*(?:#.*)?\Z")

_PEM_PRIVATE = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END \1-----|\Z)",
    re.DOTALL,
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@]+):([^/\s@]+)@")
_JSON_PAIR = re.compile(r'(?i)("' + _SECRET_NAME + r'"\s*:\s*)"(?:[^"\\]|\\.)*"')
_ASSIGNMENT = re.compile(r"(?i)\b(" + _SECRET_NAME + r")=(?!" + _NOT_A_SECRET + r")(\"[^\"]*\"|'[^']*'|\S+)")
_INLINE_PAIR = re.compile(
    r"(?i)(?<![\w-])(" + _SECRET_NAME + r")(\s*:[ \t]*)(?!\[REDACTED\])(?!" + _NOT_A_SECRET + r")([^\s<>\"',;|]+)"
)
_XML_PROPERTY = re.compile(r'(?i)(name="' + _SECRET_NAME + r'"\s+value=")[^"]*(")')
_YAML_KEY = re.compile(
    r"""(?i)^(?P<indent>[ \t]*(?:-[ \t]+)?)(?P<key>["']?""" + _SECRET_NAME + r"""["']?[ \t]*:)(?P<value>.*)$"""
)


def is_secret_name(name: str) -> bool:
    """Whether a mapping key or variable name holds a credential."""
    return bool(_SECRET_KEY_RE.match(name.strip()))


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
        match = _YAML_KEY.match(line.rstrip("\r\n"))
        if match:
            value = match.group("value").strip()
            if value.startswith(("|", ">")):
                skip_deeper_than = len(match.group("indent"))
            if value and REDACTED not in value and not _PLAIN_VALUE.match(value):
                newline = line[len(line.rstrip("\r\n")) :]
                line = f"{match.group('indent')}{match.group('key')} {REDACTED}{newline}"
        out.append(line)
    return "".join(out)


def scrub_text(text: str) -> str:
    """Return `text` with every credential we recognise replaced by ``[REDACTED]``."""
    text = _PEM_PRIVATE.sub(lambda m: f"-----BEGIN {m.group(1)}----- {REDACTED} -----END {m.group(1)}-----", text)
    text = _JSON_PAIR.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)
    text = _scrub_yaml_lines(text)
    text = _INLINE_PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _XML_PROPERTY.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(2)}", text)
    text = _ASSIGNMENT.sub(lambda m: f"{m.group(1)}={REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _JWT.sub(REDACTED, text)
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", text)


def scrub_obj(obj: Any) -> Any:
    """A copy of JSON-like data with secret-named values redacted and every string scrubbed.

    A ``{name: X, value: V}`` pair (a Kubernetes env entry) is redacted by X, the entry's name.
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
                and value not in (None, "")
                and not isinstance(value, bool)
                else scrub_obj(value)
            )
            for key, value in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [scrub_obj(item) for item in obj]
    if isinstance(obj, str):
        return scrub_text(obj)
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


def scan_folder(folder: Path, secrets: Mapping[str, str]) -> list[str]:
    """Redact, in every file under `folder`, the values of `secrets` (name → value); what was found where.

    The last line of defence before signing: whatever wrote a file, a value the profile
    holds as a secret does not leave in a report.
    """
    found: list[str] = []
    wanted = _redactable(secrets)
    if not wanted:
        return found
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        raw = path.read_bytes()
        names = [n for n, v in wanted.items() if v.encode() in raw]
        if not names:
            continue
        for name in names:
            raw = raw.replace(wanted[name].encode(), REDACTED.encode())
        path.write_bytes(raw)
        found.append(f"{path.relative_to(folder).as_posix()}: the value of {', '.join(names)} (redacted)")
    return found
