"""A run's lease on the hosts: a file in its run folder saying until when the run is alive.

Written with the first workload a host starts (`remote.lease_lines` runs before the launch, so
no process of the run is ever without a lease) and renewed on every host the run has used, by
each pytest process of the run that submits or awaits work there, every third of the lease. The run folder (and
the lease with it) goes with the run's cleanup. A run whose lease has run out on every host was
killed or crashed: its processes are leftovers; a live lease means another run is using the
hosts now, and `acceptance cleanup` spares it unless asked (`--include-live`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from acceptance.clusters.ssh import remote
from acceptance.clusters.ssh.hostset import HostSet


class SshLease:
    """Keeps the lease of run `run_id` on the hosts it used while this process works for the run."""

    def __init__(self, hosts: HostSet, run_id: str, seconds: float) -> None:
        self.hosts = hosts
        self.run_id = run_id
        self.seconds = seconds
        self.nodes: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def lines(self) -> str:
        """The sh lines that write (or renew) the lease on one host."""
        return remote.lease_lines(self.hosts.settings.run_dir, self.run_id, self.seconds)

    def hold(self, nodes: Iterable[str]) -> None:
        """Renew on `nodes` too from now on (their launch scripts wrote the first lease)."""
        with self._lock:
            self.nodes.update(nodes)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._renew_until_stopped, name=f"lease-{self.run_id}",
                                                daemon=True)  # fmt: skip
                self._thread.start()

    def renew(self) -> None:
        with self._lock:
            nodes = sorted(self.nodes)
        if nodes:  # a host that does not answer is retried next time; the lease lasts three renewals
            timeout = max(5.0, self.seconds / 3)
            self.hosts.each(nodes, self.hosts.script(self.lines() + "exit 0\n", timeout), timeout + 5)

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            self.renew()

    def release(self) -> None:
        """Stop renewing (the lease file goes with the run's folder at cleanup)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
