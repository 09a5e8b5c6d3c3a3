"""The shapes a job's log arrives in when someone hands it over after an incident.

The bytes a rank printed are seldom what reaches the reader: a ticket quotes them (``> ``),
a chat or a wiki indents them (4 or 8 spaces, a TAB), a progress bar that redraws with ``\\r``
leaves the next line glued behind it (``…| 700/1200 [14:00<10:00,  1.20s/it][rank5]:[E…``), and
the torchrun summary is often pasted from its ``Root Cause (first observed failure):`` entry
down, without the ``ChildFailedError`` header above it. PyTorch's c10 logger dates its lines as
month × 100 + day without zero padding (``E626`` is 26 June, ``E1206`` 6 December), so a job run
in June prints three digits where one run in November prints four.

Each simulated incident log picks one shape per seed (`choose`), so the suite's incident tests
and ``acceptance bundle`` on simulated incidents meet all of them; ``SIM_LOG_SHAPE`` in the job's
environment (``prefix=quote,month=6,tqdm,mid-entry``) names one, for tests that need each shape.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from acceptance.errors import UsageError

#: every line's consistent prefix, by name
PREFIXES = {"none": "", "indent4": "    ", "indent8": "        ", "tab": "\t", "quote": "> "}
#: months the job's clock may fall in (c10 prints 3 digits for January to September)
MONTHS = (3, 6, 11)
ENV = "SIM_LOG_SHAPE"


@dataclass(frozen=True)
class Shape:
    """How one incident log reaches its reader."""

    prefix: str = "none"  # a key of PREFIXES
    month: int = 11  # the month the job ran in
    tqdm: bool = False  # one watchdog line glued behind a progress bar's last redraw
    mid_entry: bool = False  # the lost rank's node's torchrun summary pasted from its Root Cause down

    def describe(self) -> str:
        parts = [f"prefix={self.prefix}", f"month={self.month}"]
        parts += ["tqdm"] * self.tqdm + ["mid-entry"] * self.mid_entry
        return ",".join(parts)


def choose(seed: int, env: Mapping[str, str] | None = None) -> Shape:
    """The shape of the log of the run with `seed`, or the one ``SIM_LOG_SHAPE`` in `env` names."""
    named = (env or {}).get(ENV)
    if named is not None:
        return parse(named)
    r = random.Random(seed)
    return Shape(
        prefix=r.choice(sorted(PREFIXES)),
        month=r.choice(MONTHS),
        tqdm=r.random() < 0.5,
        mid_entry=r.random() < 0.5,
    )


def parse(text: str) -> Shape:
    """``prefix=quote,month=6,tqdm,mid-entry`` (every part optional) → Shape; UsageError naming the form."""
    prefix, month, tqdm, mid_entry = "none", 11, False, False
    for raw in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = raw.partition("=")
        if key == "prefix" and value in PREFIXES:
            prefix = value
        elif key == "month" and value.isdigit() and 1 <= int(value) <= 12:
            month = int(value)
        elif raw == "tqdm":
            tqdm = True
        elif raw == "mid-entry":
            mid_entry = True
        else:
            raise UsageError(
                f"{ENV}={text!r}: {raw!r} is not one of prefix={'|'.join(PREFIXES)}, month=1..12, tqdm, mid-entry"
            )
    return Shape(prefix, month, tqdm, mid_entry)


def c10_date(month: int, day: int) -> str:
    """The date of a c10 log line: month × 100 + day, not zero padded (``626``, ``1206``)."""
    return str(month * 100 + day)


def tqdm_bar(step: int, total: int, seconds_per_step: float) -> str:
    """The last redraw of a data-loading progress bar, as tqdm leaves it without a newline."""
    done = max(0, min(step, total))
    pct = int(100 * done / max(total, 1))
    filled = pct // 10
    bar = "#" * filled + " " * (10 - filled)
    spent, left = int(done * seconds_per_step), int((total - done) * seconds_per_step)
    return (
        f"Prefetching shards: {pct:3d}%|{bar}| {done}/{total} "
        f"[{spent // 60:02d}:{spent % 60:02d}<{left // 60:02d}:{left % 60:02d}, {seconds_per_step:5.2f}s/shard]"
    )


def apply(lines: Sequence[str], shape: Shape) -> list[str]:
    """Every line with the shape's consistent prefix (blank lines too, as a quoting editor leaves them)."""
    prefix = PREFIXES[shape.prefix]
    if not prefix:
        return list(lines)
    return [prefix + line if line or shape.prefix == "quote" else line for line in lines]
