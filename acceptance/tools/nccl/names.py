"""Names shared by the nccl-tests builder, parser and verdict: collectives, types, sizes, versions."""

from __future__ import annotations

import re

from acceptance.units import format_size

#: collectives whose busbw/algbw factor and buffer layout are known (nccl-tests' own seven)
COLLECTIVES: tuple[str, ...] = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "broadcast",
    "reduce",
    "sendrecv",
)

#: element size in bytes of every type name nccl-tests prints (NCCL 1 names included)
TYPE_SIZES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "half": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "float": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
}

REDOPS: tuple[str, ...] = ("sum", "prod", "min", "max", "avg", "mulsum")

_PROGRAM = re.compile(r"(?:^|/)([A-Za-z0-9_]+?)_perf(?:_mpi)?(?:\.exe)?$")


def collective_of(program: str) -> str | None:
    """`/opt/nccl-tests/build/all_reduce_perf_mpi` → `all_reduce`; None when not an nccl-tests binary."""
    match = _PROGRAM.search(program.strip())
    return match.group(1) if match else None


def normalize_collective(name: str) -> str:
    """Accept `all_reduce`, `all_reduce_perf`, `allreduce`, `AllReduce`; return the canonical name."""
    text = name.strip()
    found = collective_of(text)
    if found:
        text = found
    squashed = text.lower().replace("_", "").replace("-", "")
    for known in COLLECTIVES:
        if known.replace("_", "") == squashed:
            return known
    return text


def decode_nccl_code(code: int) -> str:
    """NCCL_VERSION_CODE → `2.29.2` (≥ 2.9: major*10000+minor*100+patch, older: major*1000+…)."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def fmt_bytes(n: int) -> str:
    """Exact binary units when the size is a multiple (`1 GiB`, `64 KiB`), else plain bytes."""
    return format_size(n)
