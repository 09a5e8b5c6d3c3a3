"""Hostile inputs shared by the never-lie experiments and the fuzzers: cuts, damaged rows, noise lines.

Every sample of the corpus (both waves where they hold the tool's output) and every project
fixture is a seed; the damage is what issue 19 found real outputs and hostile inputs do.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from tests.shared import CORPUS, FIXTURES, corpus_files

#: one line of noise of every kind that sits in real captures (FORMATS §1.9 and the wave-2 corpus)
NOISE_LINES = (
    "gpu-9:1234:1240 [3] NCCL INFO Channel 01/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA",
    "",
    "   ",
    "gpu-9:1234:1240 [3] misc/socket.cc:50 NCCL WARN socket recv: connection reset",
    "Authorization required, but no authorization protocol specified",
    "[1,3]<stderr>:Authorization required, but no authorization protocol specified",
    "Warning: Permanently added '[10.128.2.20]:20024' (ED25519) to the list of known hosts.",
    "[1779464407.212356] [gpu-9:8738 :0]    parser.c:2305 UCX  WARN  unused environment variable: UCX_X",
    "    AllReduce |        0         0         1   |             1              1              1",
    "MPICH Slingshot Network Summary: 139 network timeouts",
    "+ mpirun -np 16 --hostfile /etc/mpi/hostfile all_reduce_perf -b 8 -e 8G -f 2 -g 1",
)


def nccl_files() -> list[Path]:
    """Every nccl-tests capture: the corpus, the hand-made fixtures, the simulator's fixtures."""
    return [
        *corpus_files("nccl"),
        *sorted(p for p in (FIXTURES / "nccl").iterdir() if p.suffix in (".txt", ".json")),
        *sorted((FIXTURES / "sim").glob("nccl-*.txt")),
    ]


def dcgm_files() -> list[Path]:
    return [
        *corpus_files("dcgm"),
        *sorted(p for p in (FIXTURES / "dcgm").iterdir() if p.suffix in (".txt", ".json")),
        *sorted((FIXTURES / "sim").glob("dcgm-*")),
    ]


def trainlog_files() -> list[Path]:
    return [
        *corpus_files("trainlogs"),
        *sorted(p for p in (FIXTURES / "trainlogs").iterdir() if p.suffix in (".log", ".csv", ".jsonl", ".json")),
        *sorted((FIXTURES / "sim").glob("megatron-*.log")),
    ]


def read(path: Path) -> str:
    """A capture as the CLI reads it: UTF-8 with replacement, line ends kept as they are."""
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read()


def cuts(text: str, count: int, seed: str) -> list[int]:
    """`count` offsets strictly inside `text` (seeded by the file's name: the same on every run)."""
    if len(text) < 2:
        return []
    rng = random.Random(seed)
    return sorted({rng.randrange(1, len(text)) for _ in range(count)})


_DECIMAL = re.compile(r"\d+\.\d+")


def damaged_rows(row: str) -> dict[str, str]:
    """The ways issue 19 damaged a data row (without its line end): bytes, commas, columns, letters, nan."""
    body = row.rstrip("\r\n")
    tokens = body.split()
    out: dict[str, str] = {
        "prefix": "xx" + body,
        "duplicated size": body.replace(tokens[0], f"{tokens[0]} {tokens[0]}", 1),
    }
    numbers = _DECIMAL.findall(body)
    if numbers:
        value = numbers[len(numbers) // 2]
        at = body.index(value)
        out |= {
            "byte 0xff": body[:at] + value[:2] + "\ufffd" + value[2:] + body[at + len(value) :],
            "comma": body[:at] + value.replace(".", ",") + body[at + len(value) :],
            "letter": body[:at] + value[:1] + "x" + value[2:] + body[at + len(value) :],
            "extra column": body[:at] + value + " " + value + body[at + len(value) :],
            "nan": body[:at] + "nan" + body[at + len(value) :],
            "inf": body[:at] + "inf" + body[at + len(value) :],
        }
    for k in range(len(tokens)):
        out[f"column {k} removed"] = "  ".join(tokens[:k] + tokens[k + 1 :])
    return out


def corpus_present() -> bool:
    return CORPUS.is_dir()
