"""`acceptance sim serve` in another process: a Kubernetes API the suite does not own, as a provider's would be."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def served_cluster(folder: Path, *options: str) -> Iterator[Path]:
    """Start the standalone emulated cluster with `options`; yield its kubeconfig; stop it after."""
    out = folder / "serve.out"
    with out.open("w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "acceptance", "sim", "serve", *options],
            stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "kubeconfig:" not in out.read_text():
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, "the emulator did not start"
            time.sleep(0.1)
        line = next(x for x in out.read_text().splitlines() if x.startswith("kubeconfig:"))
        yield Path(line.split(":", 1)[1].strip())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
