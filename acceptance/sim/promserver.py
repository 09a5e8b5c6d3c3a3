"""A real Prometheus on loopback over backfilled data (``promtool tsdb create-blocks-from openmetrics``).

For the simulated probation, the tests and the benchmark. The server is started with its data
folder and a page title naming the run (``ps`` shows whose it is), is bound to 127.0.0.1 on a
free port, must answer ``/-/ready`` within its deadline, is stopped (terminate, then kill) when
closed, and is ended by the kernel if the process that started it dies (``setpriv --pdeathsig``, where
util-linux has it).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import urllib3

from acceptance.errors import ClusterError
from acceptance.sim.ports import reserve

CONFIG = "global:\n  scrape_interval: 15s\n"


def available() -> str | None:
    """None when `promtool` and `prometheus` are installed; else what is missing, in words."""
    missing = [tool for tool in ("promtool", "prometheus") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found (Debian: apt-get install prometheus)" if missing else None


def backfill(dumps: Sequence[Path], data_dir: Path, deadline_s: float = 900.0, parallel: int = 2) -> None:
    """Turn OpenMetrics dumps into TSDB blocks in `data_dir` (one promtool per dump, `parallel` at a time)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + deadline_s
    pending = list(dumps)
    running: list[tuple[Path, subprocess.Popen[bytes]]] = []
    try:
        while pending or running:
            while pending and len(running) < parallel:
                dump = pending.pop(0)
                argv = [
                    "promtool",
                    "tsdb",
                    "create-blocks-from",
                    "openmetrics",
                    "--max-block-duration=54h",
                    str(dump),
                    str(data_dir),
                ]
                running.append((dump, subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
            dump, proc = running[0]
            try:
                _, err = proc.communicate(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise ClusterError(f"promtool did not backfill {dump.name} within {deadline_s:g} s") from None
            running.pop(0)
            if proc.returncode != 0:
                said = err.decode("utf-8", "replace").strip().splitlines()
                raise ClusterError(f"promtool could not backfill {dump}: {said[-1] if said else proc.returncode}")
    finally:
        for _, proc in running:
            proc.kill()
            proc.wait()


def _tied_to_us(argv: list[str]) -> list[str]:
    """`argv` run so that it ends with this process (PR_SET_PDEATHSIG through util-linux's setpriv)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


@dataclass
class PrometheusServer:
    """A `prometheus` process serving `data_dir` on loopback."""

    data_dir: Path
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(
        cls, data_dir: Path, marker: str, deadline_s: float = 60.0, web_config: Path | None = None
    ) -> PrometheusServer:
        """Serve `data_dir`; `web_config` is Prometheus' web configuration (TLS, basic auth): then https."""
        config = data_dir.parent / "prometheus.yml"
        config.write_text(CONFIG, encoding="utf-8")
        log = data_dir.parent / "prometheus.log"
        (port,) = reserve(1)
        argv = [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data_dir}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=3650d",
            f"--web.page-title=recovery-acceptance {marker}",
            "--log.level=warn",
            *([f"--web.config.file={web_config}"] if web_config is not None else []),
        ]
        with log.open("wb") as out:
            process = subprocess.Popen(
                _tied_to_us(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        scheme = "https" if web_config is not None and "tls_server_config" in web_config.read_text() else "http"
        server = cls(data_dir, f"{scheme}://127.0.0.1:{port}", process, log)
        try:
            server._wait_ready(deadline_s)
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_ready(self, deadline_s: float) -> None:
        pool = urllib3.PoolManager(retries=False, cert_reqs="CERT_NONE")  # up is enough: the client checks TLS
        end = time.monotonic() + deadline_s
        try:
            while time.monotonic() < end:
                if self.process.poll() is not None:
                    tail = self.log.read_text(errors="replace").strip().splitlines()[-3:]
                    raise ClusterError(f"prometheus exited with {self.process.returncode}: {' '.join(tail)}")
                with contextlib.suppress(urllib3.exceptions.HTTPError), warnings.catch_warnings():
                    warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
                    if pool.request("GET", self.url + "/-/ready", timeout=2.0).status in (200, 401):
                        return
                time.sleep(0.2)
        finally:
            pool.clear()
        raise ClusterError(f"prometheus at {self.url} was not ready within {deadline_s:g} s (log: {self.log})")

    def stop(self, grace_s: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=grace_s)
