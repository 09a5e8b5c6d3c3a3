"""Find credentials in text: by the name they are given, by the shape they are written in, by their form.

Three layers, one list of finds (where in the text, what kind; never the value in a message):

- provider forms, from the maintained plugins of `detect-secrets` (GitHub, AWS, Slack, JWT, private
  keys, URLs with user:password, GitLab, Azure storage, Stripe, ...), plus Hugging Face tokens and
  GitHub tokens of any length, which its plugins do not cover;
- names: any part of an env, key or argument name that says credential (TOKEN, KEY, SECRET,
  PASSWORD, PASSWD, PWD, PAT, CREDENTIAL, AUTH, COOKIE, SESSION, with `_`, `-`, `.` or camelCase
  between the parts), extended by the keyword list of detect-secrets' `KeywordDetector`;
- the shapes a named value is written in: ``NAME=value``, ``name: value``, ``"name": "value"``, a Python
  dict repr ``{'NAME': 'value'}``, Megatron's argument dump ``name ........ value``, ``--flag value`` and
  ``--flag=value``, an argv list in YAML or JSON (``- --flag`` then ``- value``), ``Bearer value``.

No entropy rule is used: tool outputs are full of high-entropy strings that are not secrets (GPU UUIDs,
PCI bus ids, sha256 digests, run ids, certificate authorities), and a credential with neither a name
nor a provider's form is caught by its exact value when the profile holds it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from re import Pattern

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import DENYLIST as KEYWORD_DENYLIST
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class Find:
    """A credential-looking value at `start:end` of a text; `kind` names the rule (never the value)."""

    start: int
    end: int
    kind: str

    def line(self, text: str) -> int:
        return text.count("\n", 0, self.start) + 1


# ---------------------------------------------------------------------------------------------- names

_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Parts that say credential wherever they stand (bare `token:` or `auth:` in a docker config too).
_STRONG = frozenset(
    [
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "secret",
        "secrets",
        "token",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "authorization",
        "auth",
        "oauth",
        "apikey",
        "accesskey",
        "secretkey",
        "privatekey",
        "authkey",
        "authtoken",
    ]
)
# Parts that say credential only after another part (`WANDB_KEY`, `GITHUB_PAT`; a bare `key:` is a label).
_WEAK = frozenset({"key", "pat", "session", "pwd"})
# What may follow a weak part and still name the value itself (`client-key-data`, `STORAGE_KEY_PRIMARY`).
_VALUE_SUFFIX = frozenset({"data", "value", "b64", "base64", "pem", "id", "secret", "content", "primary", "secondary"})
# A last part that names something about the credential, not the credential (`secretName`, `secretKeyRef`,
# `HF_TOKEN_FILE`, `tokenPath`): its value is evidence.
_NOT_THE_VALUE = frozenset(
    [
        "name",
        "names",
        "ref",
        "path",
        "file",
        "dir",
        "type",
        "kind",
        "length",
        "len",
        "count",
        "size",
        "ttl",
        "timeout",
        "expiry",
        "expires",
        "expiration",
        "mode",
        "format",
        "enabled",
        "required",
        "namespace",
        "source",
        "field",
        "prefix",
        "suffix",
        "version",
        "policy",
        "provider",
        "method",
        "env",
        "uri",
        "url",
        "endpoint",
        "header",
        "location",
        "mount",
        *("seconds", "secs", "ms", "minutes", "hours", "days", "loss", "rate", "limit", "limits", "usage", "budget"),
    ]
)
# A `key` after these is a lookup key, not a credential (`topologyKey`, `sort_key`, `label-key`).
_LOOKUP = frozenset(
    [
        "topology",
        "label",
        "labels",
        "sort",
        "match",
        "hash",
        "partition",
        "cache",
        "lookup",
        "routing",
        "shard",
        "index",
        "field",
        "group",
        "map",
    ]
)
# detect-secrets' keywords, matched as whole parts of a name (`db_pass`, `apikey`), never inside one: a pod's
# random suffix (`...-launcher-bpwdb`) or a word that merely contains a keyword is not a credential's name
_KEYWORD = re.compile(r"(?:^|_)(?:" + "|".join(f"(?:{word})" for word in KEYWORD_DENYLIST) + r")(?:_|$)")


def name_parts(name: str) -> list[str]:
    """`REDIS_PASSWORD_PRIMARY` → redis, password, primary; `automountServiceAccountToken` → ..., token."""
    return [part.lower() for part in _PART.findall(name)]


@lru_cache(maxsize=8192)  # a pure function of the name; a report asks it of the same keys again and again
def is_secret_name(name: str) -> bool:
    """Whether a mapping key, variable or argument name holds a credential."""
    parts = name_parts(name.strip().lstrip("-"))
    if not parts or parts[-1] in _NOT_THE_VALUE or "public" in parts or "pub" in parts:
        return False
    for i, part in enumerate(parts):
        if part in _STRONG:
            return True
        if part in _WEAK and i > 0 and parts[i - 1] not in _LOOKUP and all(p in _VALUE_SUFFIX for p in parts[i + 1 :]):
            return True
    return len(parts) > 1 and bool(_KEYWORD.search("_".join(parts)))


# ---------------------------------------------------------------------------------------------- values

# A flag is never a credential (`automountServiceAccountToken: false`, Megatron's `hf_token .... None`),
# nor a measurement (`3.1525`; an integer may be a PIN); a reference to one is not one either
# (`--hf-token $HF_TOKEN`, `{{ .Values.token }}`, `<token>`).
_NOT_A_VALUE = re.compile(
    r"(?i)(?:true|false|null|none|~|\[REDACTED\].*|\$.*|\{\{.*|<[^<>]*>|\*+|[\"']{2}|-?\d+\.\d+(?:e[+-]?\d+)?)\Z"
)


def is_plain_value(value: str) -> bool:
    """A value that is not a credential whatever its name: a flag, null, a reference, already redacted."""
    value = value.strip()
    return not value or bool(_NOT_A_VALUE.match(value)) or REDACTED in value


_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_UNQUOTED = r"[^\s\"'<>,;|)}\]]+"
_VALUE = r"(?P<v>\"[^\"\n]*\"|'[^'\n]*'|" + _UNQUOTED + ")"

# NAME=value, --name=value (env dumps, argv, shell lines).
_ASSIGNMENT = re.compile(r"(?<![\w.-])-{0,2}(?P<n>" + _NAME + r")=" + _VALUE)
# "name": "value", 'name': 'value' (JSON, a Python dict repr), "name": 1234.
_QUOTED_PAIR = re.compile(
    r"(?P<q>[\"'])(?P<n>[^\"'\s:]{1,80})(?P=q)\s*:\s*(?P<v>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|-?\d[\d.]*)"
)
# name: value (YAML, headers, log lines); the key at a line's start or after a separator.
_COLON_PAIR = re.compile(r"(?<![\w.\"'-])(?P<n>" + _NAME + r")[ \t]*:[ \t]*(?P<v>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;|}\]]+)")
# Megatron's argument dump: `  hf_token ........................ hf_abc`.
_DOTTED = re.compile(r"(?m)^[ \t]*(?P<n>" + _NAME + r")[ \t]+\.{3,}[ \t]+(?P<v>\S[^\n]*?)[ \t]*$")
# --flag value (two tokens, on one line); the value is not itself a flag.
_FLAG_VALUE = re.compile(
    r"(?<![\w-])--?(?P<n>[A-Za-z][A-Za-z0-9_.-]*)[ \t]+(?P<v>\"[^\"\n]*\"|'[^'\n]*'|(?!-)[^\s\"']+)"
)
# An argv list: YAML `- --flag` then `- value`, JSON/Python `"--flag", "value"`.
_YAML_ARGV = re.compile(
    r"(?m)^(?P<i>[ \t]*)-[ \t]+[\"']?--?(?P<n>[A-Za-z][\w.-]*)[\"']?[ \t]*\r?\n(?P=i)-[ \t]+(?P<v>[^\n]*?)[ \t]*$"
)
_LIST_ARGV = re.compile(r"(?P<q>[\"'])--?(?P<n>[A-Za-z][\w.-]*)(?P=q)\s*,\s*(?P<v>\"[^\"\n]*\"|'[^'\n]*')")
_XML_PROPERTY = re.compile(r'name="(?P<n>[^"]{1,80})"\s+value="(?P<v>[^"]*)"')
_YAML_KEY = re.compile(
    r"(?m)^[ \t]*(?:-[ \t]+)?[\"']?(?P<n>" + _NAME + r")[\"']?[ \t]*:[ \t]+(?P<v>[^\s#][^\n]*?)[ \t]*$"
)

_NAMED: tuple[tuple[Pattern[str], str], ...] = (
    (_ASSIGNMENT, "a secret-named assignment {n}=…"),
    (_QUOTED_PAIR, "a secret-named entry '{n}': …"),
    (_YAML_KEY, "a secret-named key {n}: …"),
    (_COLON_PAIR, "a secret-named key {n}: …"),
    (_DOTTED, "a secret-named argument in an argument dump ({n} ....)"),
    (_FLAG_VALUE, "a secret-named argument --{n} …"),
    (_YAML_ARGV, "a secret-named argument --{n} … (argv list)"),
    (_LIST_ARGV, "a secret-named argument --{n} … (argv list)"),
    (_XML_PROPERTY, "a secret-named property {n}"),
)

_AUTH_HEADER = re.compile(r"(?i)\b(?:bearer|basic)[ \t]+(?P<v>(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,})")
_PEM_BODY = re.compile(r"-----BEGIN (?P<k>[A-Z0-9 ]*PRIVATE KEY)-----(?P<v>(?:(?!-----END).)+)", re.DOTALL)
_URL_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<v>(?!\[REDACTED\])[^/\s@]+)@")
# Token forms detect-secrets' plugins miss: Hugging Face, GitHub tokens of any length, fine-grained PATs.
_EXTRA_FORMS: tuple[tuple[Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{20,}"), "Hugging Face token"),
    (re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9_]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "GitHub Token"),
    (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{12,}(?![A-Za-z0-9])"), "AWS Access Key"),
)
_PLUGINS: tuple[type[RegexBasedDetector], ...] = (
    AWSKeyDetector,
    AzureStorageKeyDetector,
    BasicAuthDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    JwtTokenDetector,
    NpmDetector,
    OpenAIDetector,
    PrivateKeyDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
)
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/=.]*")


def _provider_forms() -> tuple[tuple[Pattern[str], str], ...]:
    forms: list[tuple[Pattern[str], str]] = []
    for plugin in _PLUGINS:
        denylist: list[Pattern[str]] = list(plugin.denylist)  # type: ignore[call-overload]
        forms += [(regex, f"{plugin.secret_type} (detect-secrets {plugin.__name__})") for regex in denylist]
    return (*forms, *_EXTRA_FORMS)


_FORMS = _provider_forms()
# Every name rule and provider form needs one of these (in the lower-cased text): a line with none of
# them is not searched. Finding them is one literal search per hint, not every rule at every position.
_HINTS = (
    *("passw", "passp", "passc", "_pass", "pass_", "-pass", "pwd", "secret", "token", "key", "creden", "auth"),
    *("cookie", "session", "contrase", "_pat", "-pat", ".pat", "bearer", "basic", "://", "putty", "aws", "xox"),
    *("eyj", "hf_", "gr1348941", "sk-", "pypi-", "sg.", "sq0csp", "k_live"),
)
# Families with a common literal prefix: one regex pass each, in the text as written.
_CASED_HINTS = (
    re.compile(r"Pat(?![a-z])"),  # camelCase `githubPat`, not `mountPath`
    re.compile(r"Pass(?<=[A-Za-z0-9]Pass)"),  # camelCase `dbPass`, not DCGM's "Pass"
    re.compile(r"gh[pousr]_"),
    re.compile(r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-"),
    re.compile(r"A(?:KIA|SIA|BIA|CCA|3T)"),
)
_ANY_HINT = re.compile("|".join(re.escape(hint) for hint in _HINTS))
_HINT_REGEXES = tuple(re.compile(re.escape(hint)) for hint in _HINTS)
# Hints that share a literal: one search for it spares the searches of all of them in a text without it.
_SHARED = tuple(re.compile(shared) for shared in ("pass", "pat"))
_SHARING = {regex: next((s for s in _SHARED if s.pattern in regex.pattern), None) for regex in _HINT_REGEXES}
_ANY_CASED_HINT = re.compile("|".join(regex.pattern for regex in _CASED_HINTS))


_LONG_LINE = 4096  # a longer line (a one-line junit, an HTML page) is searched around each hint only
_BEFORE, _AFTER = 512, 2048  # the window around a hint, widened to the nearest delimiter on each side
_DELIMITER = re.compile(r"[\s\"'<>]")


def _window(text: str, at: int, line_start: int, line_end: int) -> tuple[int, int]:
    """Around a hint in a long line: from the delimiter before `at - _BEFORE` to the one after `at + _AFTER`,
    so that no name or value is cut."""
    start = max(line_start, at - _BEFORE)
    if start > line_start:
        start = max(line_start, *(text.rfind(ch, line_start, start) + 1 for ch in " \t\"'<>"))
    end = min(line_end, at + _AFTER)
    if end < line_end:
        found = _DELIMITER.search(text, end, line_end)
        end = found.start() if found else line_end
    return start, end


def _hit_block(text: str, at: int) -> tuple[tuple[int, int], int]:
    """The stretch to search for a hint at `at`, and where to look for the next hit of the same hint."""
    line_start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end == -1 else line_end
    if line_end - line_start > _LONG_LINE:
        return _window(text, at, line_start, line_end), at + 1
    after = text.find("\n", line_end + 1) if line_end < len(text) else -1  # and the line after it (argv lists)
    after = len(text) if after == -1 or after - line_end > _LONG_LINE else after
    return (line_start, after), line_end + 1


def may_hold_credentials(text: str) -> bool:
    """False when `text` holds no hint at all: no rule can find anything in it (most strings of a document)."""
    if len(text) >= 4096:
        return True  # the hint search below costs as much as the full one
    return bool(_ANY_HINT.search(text.lower()) or _ANY_CASED_HINT.search(text) or "PRIVATE" in text)


def _blocks(text: str) -> list[tuple[int, int]]:
    """The stretches of `text` worth searching: each line holding a hint and the line after it (around the
    hint in a long line)."""
    if not may_hold_credentials(text):
        return []
    low = text.lower()
    found: list[tuple[int, int]] = []
    absent = {shared for shared in _SHARED if shared.search(low) is None}
    for regex in _HINT_REGEXES:  # a literal's regex search is faster than str.find on long texts
        if _SHARING[regex] in absent:
            continue
        hit = regex.search(low)
        while hit is not None:
            block, resume = _hit_block(text, hit.start())
            found.append(block)
            hit = regex.search(low, resume)
    for regex in _CASED_HINTS:
        found += [_hit_block(text, match.start())[0] for match in regex.finditer(text)]
    blocks: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if blocks and start <= blocks[-1][1] + 1:
            blocks[-1] = (blocks[-1][0], max(end, blocks[-1][1]))
        else:
            blocks.append((start, end))
    return blocks


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    start, end = match.span("v")
    value = match.group("v")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return start + 1, end - 1
    return start, end


def _named(text: str, start: int, end: int) -> Iterator[Find]:
    for regex, kind in _NAMED:
        for match in regex.finditer(text, start, end):
            name = match.group("n")
            if not is_secret_name(name):
                continue
            begin, stop = _value_span(match)
            value = text[begin:stop]
            if text.startswith(REDACTED, begin) or value.lower() in ("bearer", "basic"):
                continue
            if regex is _COLON_PAIR and value.isalpha() and value.islower() and not name.isupper():
                continue  # prose: "may require authorization: server message"; YAML keys start a line
            if begin < stop and not is_plain_value(value):
                yield Find(begin, stop, kind.format(n=name))


def _pem(text: str) -> Iterator[Find]:
    if "PRIVATE KEY-----" not in text:
        return
    for match in _PEM_BODY.finditer(text):
        body = match.group("v")
        if body.strip() and REDACTED not in body:
            yield Find(*match.span("v"), f"a PEM {match.group('k')} block")


def _forms(text: str, start: int, end: int) -> Iterator[Find]:
    for match in _AUTH_HEADER.finditer(text, start, end):
        if not match.group("v").isalpha() or not match.group("v").islower():  # "basic connectivity test" is prose
            yield Find(*match.span("v"), "an Authorization header's credential")
    for match in _URL_USERINFO.finditer(text, start, end):
        yield Find(*match.span("v"), "a URL with user:password")
    for regex, kind in _FORMS:
        for match in regex.finditer(text, start, end):
            if "PRIVATE KEY" in match.group(0) or "PuTTY" in match.group(0):
                continue  # the PEM rule covers the block, and knows when it was already redacted
            group = match.lastindex if match.lastindex else 0
            begin, stop = match.span(group)
            # a plugin's regex may stop short of the token's end (JWT's signature): redact to the end
            tail = _TOKEN_CHARS.match(text, stop)
            stop = tail.end() if tail else stop
            if begin < stop and REDACTED not in text[begin:stop]:
                yield Find(begin, stop, kind)


def _candidates(text: str) -> Iterator[Find]:
    """The name and form rules over the hinted lines only, joined into one text (one regex pass each)."""
    blocks = _blocks(text)
    if not blocks:
        return
    joined = "\n".join(text[start:end] for start, end in blocks)
    at: list[int] = []  # where each block starts in `joined`
    pos = 0
    for start, end in blocks:
        at.append(pos)
        pos += end - start + 1
    for find in (*_named(joined, 0, len(joined)), *_forms(joined, 0, len(joined))):
        i = bisect_right(at, find.start) - 1
        start, end = blocks[i]
        begin = start + find.start - at[i]
        yield Find(begin, min(start + find.end - at[i], end), find.kind)


def find_credentials(text: str) -> list[Find]:
    """Every credential-looking value in `text`, in order; overlapping finds merged (the first kind kept)."""
    finds = sorted([*_pem(text), *_candidates(text)], key=lambda f: (f.start, -f.end))
    merged: list[Find] = []
    for find in finds:
        if merged and find.start < merged[-1].end:
            last = merged[-1]
            if find.end > last.end:
                merged[-1] = Find(last.start, find.end, last.kind)
            continue
        merged.append(find)
    return merged


def redact(text: str, finds: list[Find]) -> str:
    """`text` with each find's span replaced by ``[REDACTED]``."""
    out: list[str] = []
    at = 0
    for find in finds:
        out += [text[at : find.start], REDACTED]
        at = find.end
    out.append(text[at:])
    return "".join(out)
