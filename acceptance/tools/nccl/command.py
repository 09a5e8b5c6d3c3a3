"""`NcclTest`: an nccl-tests invocation as a value, parsed from and rendered to argv.

Options follow nccl-tests' own getopt table (short and long spellings, sizes such
as `16G` parsed like its `parsesize`). The normalized form is part of the baseline's
conditions fingerprint: two spellings of one command compare equal, two different
commands never do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance import units
from acceptance.errors import UsageError
from acceptance.tools.nccl.names import REDOPS, TYPE_SIZES, collective_of

#: canonical name → (short flag, kind); kinds: size, int, op, type, path
OPTIONS: dict[str, tuple[str, str]] = {
    "nthreads": ("t", "int"),
    "ngpus": ("g", "int"),
    "minbytes": ("b", "size"),
    "maxbytes": ("e", "size"),
    "stepbytes": ("i", "size"),
    "stepfactor": ("f", "int"),
    "iters": ("n", "int"),
    "agg_iters": ("m", "int"),
    "warmup_iters": ("w", "int"),
    "run_cycles": ("N", "int"),
    "parallel_init": ("p", "int"),
    "check": ("c", "int"),
    "op": ("o", "op"),
    "datatype": ("d", "type"),
    "root": ("r", "int"),
    "blocking": ("z", "int"),
    "stream_null": ("y", "int"),
    "timeout": ("T", "int"),
    "cudagraph": ("G", "int"),
    "report_cputime": ("C", "int"),
    "report_timestamps": ("S", "int"),
    "output_file": ("J", "path"),
    "average": ("a", "int"),
    "local_register": ("R", "int"),
    "cta_policy": ("x", "int"),
    "device_implementation": ("D", "int"),
    "device_cta_count": ("V", "int"),
    "memory_report": ("M", "int"),
    "per_iter_timing": ("I", "int"),
}
_BY_SHORT = {short: name for name, (short, _) in OPTIONS.items()}
_LONG_ALIASES = {"memory": "memory_report", "agg-iters": "agg_iters"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def parse_size(text: str, flag: str) -> int:
    """`8`, `64K`, `16M`, `16G`, `1.5G` → bytes (binary units, as nccl-tests' parsesize)."""
    try:
        return units.parse_size(text)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected a size such as 8, 64K, 16M or 16G") from None


def _value(name: str, kind: str, text: str, flag: str) -> int | str:
    if kind == "size":
        return parse_size(text, flag)
    if kind == "int":
        try:
            return int(text.strip(), 0)
        except ValueError:
            raise UsageError(f"{flag} {text!r}: expected an integer") from None
    if kind == "op":
        if text not in (*REDOPS, "all"):
            raise UsageError(f"{flag} {text!r}: expected a reduction op, one of {', '.join((*REDOPS, 'all'))}")
        return text
    if kind == "type":
        if text not in (*TYPE_SIZES, "all"):
            raise UsageError(f"{flag} {text!r}: expected a datatype, one of {', '.join((*TYPE_SIZES, 'all'))}")
        return text
    if not text:
        raise UsageError(f"{flag}: expected a file name")
    return text


@dataclass(frozen=True)
class NcclTest:
    """One nccl-tests binary with its options (canonical long names) and its environment."""

    binary: str
    options: tuple[tuple[str, int | str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if collective_of(self.binary) is None:
            raise UsageError(f"{self.binary!r}: expected an nccl-tests binary such as all_reduce_perf")
        for name, _ in self.options:
            if name not in OPTIONS:
                raise UsageError(f"option {name!r}: expected one of {', '.join(OPTIONS)}")
        for key, _ in self.env:
            if not _ENV_NAME.match(key):
                raise UsageError(f"environment variable name {key!r}: expected letters, digits and _")
        object.__setattr__(self, "options", tuple(sorted(dict(self.options).items())))
        object.__setattr__(self, "env", tuple(sorted(dict(self.env).items())))

    @classmethod
    def from_argv(cls, argv: Sequence[str], env: Mapping[str, str] | None = None) -> NcclTest:
        """Parse `[binary, -b, 8, --maxbytes=16G, …]`; UsageError names the bad flag."""
        if not argv:
            raise UsageError("empty command: expected an nccl-tests binary such as all_reduce_perf")
        options: dict[str, int | str] = {}
        i = 1
        while i < len(argv):
            arg = argv[i]
            value: str | None = None
            if arg.startswith("--"):
                body = arg[2:]
                if "=" in body:
                    body, value = body.split("=", 1)
                name = _LONG_ALIASES.get(body, body)
                if name not in OPTIONS:
                    raise UsageError(f"{arg}: unknown nccl-tests option")
                flag = f"--{body}"
            elif arg.startswith("-") and len(arg) >= 2:
                short = arg[1]
                if short not in _BY_SHORT:
                    raise UsageError(f"{arg}: unknown nccl-tests option")
                name, flag = _BY_SHORT[short], f"-{short}"
                if len(arg) > 2:
                    value = arg[2:]
            else:
                raise UsageError(f"{arg!r}: unexpected argument (nccl-tests takes only options)")
            if value is None:
                i += 1
                if i >= len(argv):
                    raise UsageError(f"{flag}: expected a value")
                value = argv[i]
            options[name] = _value(name, OPTIONS[name][1], value, flag)
            i += 1
        return cls(argv[0], tuple(options.items()), tuple((env or {}).items()))

    @property
    def collective(self) -> str:
        found = collective_of(self.binary)
        assert found is not None
        return found

    @property
    def program(self) -> str:
        """The binary's name without directory and without the `_mpi` suffix."""
        return f"{self.collective}_perf"

    def option(self, name: str, default: int | str | None = None) -> int | str | None:
        return dict(self.options).get(name, default)

    def replaced(self, **options: int | str | None) -> NcclTest:
        """The same test with some options changed (None removes one), e.g. a shorter size sweep."""
        merged = dict(self.options)
        for name, value in options.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        return NcclTest(self.binary, tuple(merged.items()), self.env)

    def sizes(self) -> list[int]:
        """The message sizes the sweep asks for (``-b`` to ``-e`` by ``-f`` or ``-i``), at most 4096."""
        low, high = int(self.option("minbytes", 32 << 20) or 0), int(self.option("maxbytes", 32 << 20) or 0)
        factor, step = int(self.option("stepfactor", 0) or 0), int(self.option("stepbytes", 1 << 20) or 0)
        out: list[int] = []
        size = low
        while size <= high and len(out) < 4096:
            out.append(size)
            nxt = size * factor if factor > 1 else size + step
            if nxt <= size:
                break
            size = nxt
        return out

    def argv(self) -> list[str]:
        """Canonical argv: the binary as given, then short flags in a fixed order."""
        out = [self.binary]
        given = dict(self.options)
        for name, (short, _) in OPTIONS.items():
            if name in given:
                out += [f"-{short}", str(given[name])]
        return out

    def normalized(self) -> dict[str, Any]:
        """What identifies the command: collective, program, options, environment."""
        return {
            "collective": self.collective,
            "program": self.program,
            "options": dict(self.options),
            "env": dict(self.env),
        }

    @classmethod
    def from_normalized(cls, doc: Mapping[str, Any]) -> NcclTest:
        return cls(
            str(doc["program"]),
            tuple(dict(doc.get("options", {})).items()),
            tuple(dict(doc.get("env", {})).items()),
        )
