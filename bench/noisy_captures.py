"""Noise-heavy nccl-tests captures built from real outputs of ../shared/corpus/nccl (issue 19's benchmark).

Nothing is copied into the project: the captures are written to a temporary file when the
benchmark runs, from these corpus files:

* the 540-node Polaris report (2,160 rank lines, 29 rows),
* the 2- and 8-node EFA captures made with NCCL_DEBUG=INFO (about 80 % NCCL INFO lines).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT_540 = "nccl-tests-pre2.17-allreduce-540node-2160rank-a100-polaris-ok.txt"
EFA_2 = "nccl-tests-2.16-2.17-allreduce-2node-efa-rtxpro6000-nccl-debug-info-2.29.2.txt"
EFA_8 = "nccl-tests-2.16-2.17-allreduce-8node-efa-rtxpro6000-nccl-debug-info-2.29.2.txt"


def corpus_dir() -> Path | None:
    shared = Path(os.environ.get("ACCEPTANCE_SHARED_DIR", ROOT.parent / "shared"))
    folder = shared / "corpus" / "nccl"
    return folder if (folder / REPORT_540).is_file() else None


def _read(name: str) -> str:
    folder = corpus_dir()
    assert folder is not None
    return (folder / name).read_text(encoding="utf-8")


def build(kind: str, size: float, path: Path) -> tuple[int, int]:
    """Write a capture of about `size` bytes to `path`; return its line count and NCCL INFO line count.

    interleaved: [INFO block, 540-node report, INFO block, 8-node EFA capture] repeated, where an
    INFO block is the EFA captures' NCCL INFO lines 40 times over (a long NCCL_DEBUG=INFO job log);
    separate: the 2- and 8-node EFA captures, whole, one after the other (one report each);
    ranks: the 540-node report repeated (rank lists dominate; the flat-memory case).
    """
    efa2, efa8, report = _read(EFA_2), _read(EFA_8), _read(REPORT_540)
    info = "".join(line for line in (efa8 + efa2).splitlines(keepends=True) if " NCCL INFO " in line)
    parts = {
        "interleaved": [info * 40, report, info * 40, efa8],
        "separate": [efa2, efa8],
        "ranks": [report],
    }[kind]
    written = lines = info_lines = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size:
            for part in parts:
                out.write(part)
                written += len(part)
                lines += part.count("\n")
                info_lines += part.count(" NCCL INFO ")
    return lines, info_lines
