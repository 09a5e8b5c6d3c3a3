"""Node state words of scontrol (``IDLE+DRAIN``, ``DOWN*``) and sinfo (``drng@``, ``fail*``, ``mix``)."""

from __future__ import annotations

import re

from acceptance.tools.slurm.model import Gres, NodeState

# sinfo's short (%t) and long (%T) words and scontrol's bases, mapped onto one upper-case base name.
_BASES = {
    "alloc": "ALLOCATED", "allocated": "ALLOCATED", "comp": "COMPLETING", "completing": "COMPLETING",
    "down": "DOWN", "drain": "DRAINED", "drained": "DRAINED", "drng": "DRAINING", "draining": "DRAINING",
    "fail": "FAIL", "failg": "FAILING", "failing": "FAILING", "futr": "FUTURE", "future": "FUTURE",
    "idle": "IDLE", "maint": "MAINT", "mix": "MIXED", "mixed": "MIXED", "npc": "PERFCTRS", "perfctrs": "PERFCTRS",
    "plnd": "PLANNED", "planned": "PLANNED", "pow_dn": "POWERED_DOWN", "powered_down": "POWERED_DOWN",
    "pow_up": "POWERING_UP", "powering_up": "POWERING_UP", "resv": "RESERVED", "reserved": "RESERVED",
    "unk": "UNKNOWN", "unknown": "UNKNOWN", "inval": "INVAL", "blocked": "BLOCKED", "boot": "REBOOT_ISSUED",
    "reboot": "REBOOT_ISSUED", "reboot^": "REBOOT_ISSUED", "drain~": "DRAINED",
}  # fmt: skip
# sinfo's suffix characters after a state word.
_SUFFIX = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "%": "POWERING_DOWN",
           "!": "POWER_DOWN", "$": "MAINTENANCE", "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED",
           "-": "PLANNED"}  # fmt: skip
_WORD = re.compile(r"^([A-Za-z_]+)([*~#%!$@^-]*)$")
_GRES_ITEM = re.compile(
    r"^(?P<name>[A-Za-z][\w.-]*)(?::(?P<type>[^:(]+))?(?::(?P<count>\d+[KMG]?))?(?:\((?P<extra>[^)]*)\))?$"
)


def node_state(text: str) -> NodeState | None:
    """``IDLE+DRAIN``, ``DOWN*+DRAIN``, ``down*``, ``drng@``, ``mixed``; None when it is not a state."""
    raw = text.strip()
    parts = raw.split("+")
    first = _WORD.match(parts[0])
    if not first or not raw:
        return None
    word, suffix = first.group(1), first.group(2)
    base = _BASES.get(word.lower(), word.upper())
    if not (word.isupper() or word.lower() in _BASES):
        return None
    flags: list[str] = []
    for rest in parts[1:]:
        if not re.fullmatch(r"[A-Z_]+", rest):
            return None
        flags.append(rest)
    for char in suffix:
        flag = _SUFFIX[char]
        if flag not in flags:
            flags.append(flag)
    if base in ("DRAINED", "DRAINING") and "DRAIN" not in flags:
        flags.insert(0, "DRAIN")  # sinfo's word for IDLE+DRAIN / busy+DRAIN; the busy base is not printed
    return NodeState(base, tuple(flags), raw)


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        cur += char
    out.append(cur)
    return [x for x in out if x]


def _count(text: str) -> int:
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}
    return int(text[:-1]) * scale[text[-1]] if text[-1] in scale else int(text)


def gres(text: str) -> tuple[Gres, ...] | None:
    """``gpu:h200:8(S:0-1)``, ``gpu:4``, ``gpu:a100:2,shard:8``; ``(null)`` and empty give (); None if unreadable."""
    value = text.strip()
    if value in ("", "(null)", "N/A"):
        return ()
    out: list[Gres] = []
    for item in _split_top(value):
        match = _GRES_ITEM.match(item)
        if not match:
            return None
        kind, count = match.group("type"), match.group("count")
        if count is None and kind is not None and kind.isdigit():
            kind, count = None, kind
        extra = match.group("extra")
        sockets = extra[2:] if extra and extra.startswith("S:") else None
        out.append(Gres(match.group("name"), kind, _count(count) if count else 1, sockets))
    return tuple(out)


def hostlist(text: str) -> tuple[str, ...]:
    """Expand a Slurm hostlist: ``gpu[013-017,021],e001`` gives gpu013..gpu017, gpu021, e001 (zero padding kept)."""
    out: list[str] = []
    for item in re.findall(r"[^,\[]*(?:\[[^\]]*\][^,\[]*)*", text.strip()):
        if not item:
            continue
        out.extend(_expand(item))
    return tuple(out)


def _expand(item: str) -> list[str]:
    match = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", item)
    if not match:
        return [item]
    head, ranges, tail = match.groups()
    names: list[str] = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        if hi and lo.isdigit() and hi.isdigit():
            width = len(lo)
            names.extend(f"{head}{n:0{width}d}" for n in range(int(lo), int(hi) + 1))
        else:
            names.append(head + part)
    return [name + rest for name in names for rest in _expand(tail)] if tail else names
