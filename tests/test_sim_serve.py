"""`acceptance sim serve` ends on the signals a terminal, a service manager or a test sends it, and leaves
nothing behind: its folder holds a kubeconfig with a token and the server's private key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.heavy  # a subprocess that starts the emulator


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_stops_the_emulator_and_removes_its_kubeconfig_and_key(sig: signal.Signals, tmp_path: Path) -> None:
    env, out = dict(os.environ, TMPDIR=str(tmp_path / "tmp")), tmp_path / "serve.out"
    (tmp_path / "tmp").mkdir()
    with out.open("w") as handle, subprocess.Popen(
        [sys.executable, "-m", "acceptance", "sim", "serve", "--time-scale", "0.001"],
        cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
    ) as proc:  # fmt: skip
        deadline = time.monotonic() + 60
        while "kubeconfig:" not in out.read_text():
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        line = next(x for x in out.read_text().splitlines() if x.startswith("kubeconfig:"))
        kubeconfig = Path(line.split(":", 1)[1].strip())
        assert kubeconfig.parent.parent == tmp_path / "tmp"
        assert {p.name for p in kubeconfig.parent.iterdir()} == {"kubeconfig", "server.crt", "server.key"}
        proc.send_signal(sig)
        proc.wait(timeout=30)
    said = out.read_text()
    assert proc.returncode == 0, said
    assert said.strip().endswith("stopped"), said
    assert list((tmp_path / "tmp").iterdir()) == []
