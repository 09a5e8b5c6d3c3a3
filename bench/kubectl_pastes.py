"""kubectl pastes: how many of the hand-read facts of ../shared/corpus-wave3/kubectl are read, and how fast.

Usage: `python bench/kubectl_pastes.py`. The facts are the table of tests/test_kubectl_pastes.py (one
fact = one node, condition, event, node row, pod row or pod message); a fact read wrong or a record
that is not in the table counts as wrong. Speed: the 12 pastes repeated, and 200,000 lines of
PyTorch/NCCL logs (text that is no kubectl output, which every bundle input is also read as).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptance.tools import kubectl
from tests.shared import CORPUS2, CORPUS3
from tests.test_kubectl_pastes import EXPECTED, facts


def main() -> int:
    folder = CORPUS3 / "kubectl"
    if not folder.is_dir():
        print(f"{folder} is absent")
        return 1
    right = total = wrong = 0
    for name, expected in sorted(EXPECTED.items()):
        got = facts(kubectl.parse((folder / name).read_text(encoding="utf-8"), name))
        n = sum(len(rows) for rows in expected.values())
        ok = sum(1 for kind, rows in expected.items() for r in rows if r in got.get(kind, []))
        bad = sum(1 for kind, rows in got.items() for r in rows if r not in expected.get(kind, []))
        right, total, wrong = right + ok, total + n, wrong + bad
        print(f"{ok:3d}/{n:<3d} wrong {bad:<3d} {name}")
    print(f"facts read: {right}/{total}, wrong or extra records: {wrong}")
    pastes = "\n".join((folder / n).read_text(encoding="utf-8") for n in sorted(EXPECTED)) * 500
    logs = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((CORPUS2 / "pytorch-nccl-watchdog").iterdir())
        if p.suffix != ".source"
    )
    logs = logs * max(1, 200_000 // max(1, logs.count("\n")))
    for label, text in (("kubectl pastes", pastes), ("torch/NCCL logs", logs)):
        start = time.perf_counter()
        kubectl.parse(text)
        print(f"{label}: {text.count(chr(10))} lines in {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
