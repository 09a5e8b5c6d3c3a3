"""Sizes and durations as people write them in profiles and on command lines."""

from __future__ import annotations

import math
import re

_SIZE = re.compile(r"^\s*((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[-+]?[0-9]+)?)\s*([KMGT]?)(i?)(B?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_size(value: int | str) -> int:
    """Bytes from ``1048576``, ``"1M"``, ``"1MiB"``, ``"16G"`` or ``"1.5G"``.

    Like nccl-tests' own size parsing, K/M/G/T are powers of 1024 whether or not the
    ``i`` is written. The one parser of sizes in the project (profiles, nccl-tests
    arguments, the simulator).
    """
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"{value!r} is not a size (expected e.g. 1048576, 1M, 1MiB, 16G)")
    number, unit = float(match.group(1)), match.group(2).upper()
    return int(number * 1024 ** _POWERS[unit])


def format_size(size: int) -> str:
    """``1073741824`` → ``"1 GiB"``; exact binary multiples keep their unit, others show bytes.

    The one way sizes are shown in verdicts and reports.
    """
    for unit, power in (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        step = 1024**power
        if size >= step and size % step == 0:
            return f"{size // step} {unit}"
    return f"{size} B"


def parse_duration(value: float | int | str, *, allow_zero: bool = False) -> float:
    """Seconds from ``90``, ``"90s"``, ``"15m"``, ``"24h"``, ``"1h30m"`` or ``"500ms"``.

    The one grammar of durations in the project (profiles, the CLI, Kubernetes settings): a
    number is seconds; a string is one or more number+unit parts (ms, s, m, h, d). A duration
    is positive and finite; zero only where `allow_zero` says it means "none" (a backoff).
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration (expected e.g. 90s, 15m, 24h, 1h30m)")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"{value!r} is not a duration (expected e.g. 90s, 15m, 24h, 1h30m)")
        seconds = sum(float(n) * _SECONDS[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise ValueError(f"a duration must be {'>= 0' if allow_zero else 'positive'} and finite: {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """``5400`` → ``"1h30m"``; below a minute, seconds with up to one decimal."""
    if seconds < 60:
        return f"{seconds:.1f}s".replace(".0s", "s")
    whole = round(seconds)
    out = []
    for unit, step in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= step:
            out.append(f"{whole // step}{unit}")
            whole %= step
    return "".join(out)
