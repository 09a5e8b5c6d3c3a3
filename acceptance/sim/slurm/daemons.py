"""A real Slurm on loopback for the simulated cluster: munged, slurmctld and one ``slurmd -N NODE`` per node.

Everything lives in one private folder (configuration, state, spool, logs, munge key and socket, GPU device
files). Each daemon runs in the foreground in its own process group, is ended by the kernel when the
harness dies (``setpriv --pdeathsig``), and is listed in a marker file; a later start or `cleanup_stale` ends
what a killed harness left (only processes whose command line names that run's folder). Client commands run
with ``SLURM_CONF`` pointing at the private configuration, so a system Slurm or munge is never used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from acceptance.errors import ClusterError, UsageError
from acceptance.sim.ports import reserve
from acceptance.sim.slurm.config import ClusterSpec, Layout, gres_conf, node_names, slurm_conf
from acceptance.tools import slurm as tools

PACKAGES = {"slurmctld": "/usr/sbin/slurmctld", "slurmd": "/usr/sbin/slurmd", "slurm-client": "sinfo",
            "munge": "/usr/sbin/munged"}  # fmt: skip
MARKERS = Path(tempfile.gettempdir()) / "acceptance-sim-slurm"


def missing() -> list[str]:
    """Debian packages (or conditions) --cluster=sim-slurm needs that this machine lacks."""
    out = [pkg for pkg, tool in PACKAGES.items() if not (Path(tool).is_file() if "/" in tool else shutil.which(tool))]
    if os.geteuid() != 0:
        out.append("root (slurmd starts jobs as their user and munged runs as the munge user)")
    return out


def require() -> None:
    """UsageError naming what to install when the packages are absent."""
    lack = missing()
    if lack:
        raise UsageError(
            "--cluster=sim-slurm needs a real Slurm on this machine: missing "
            + ", ".join(lack)
            + "; install with: apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"
        )


def _with_parent(argv: list[str]) -> list[str]:
    """`argv` ended by the kernel (SIGTERM) when the harness process dies, through util-linux setpriv."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    return False


def steps_of(folder: str) -> list[int]:
    """The job-step processes of the Slurm in `folder` (slurmstepd and what it runs): a slurmstepd renames
    itself (``slurmstepd: [2.batch]``) and outlives a stopped slurmd, so it is found by the ``SLURM_CONF``
    of its environment, which names the run folder's slurm.conf."""
    marker = f"SLURM_CONF={folder.rstrip('/')}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if any(item.startswith(marker) for item in environ.split(b"\0")):
                found.append(int(entry.name))
    return found


def _end_steps(folder: str, grace_s: float = 5.0) -> list[int]:
    """SIGTERM then SIGKILL to every job-step process of the Slurm in `folder`; those still alive after."""
    steps = steps_of(folder)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in steps:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_alive(p) for p in steps):
            time.sleep(0.1)
    return [p for p in steps if _alive(p)]


def _end(pids: Sequence[int], folder: str, grace_s: float = 5.0) -> list[int]:
    """SIGTERM then SIGKILL to the process groups of `pids` whose command line names `folder`; the pids that
    were still alive at the end (none after a SIGKILL unless the kernel is slow)."""
    mine = [p for p in pids if folder.rstrip("/") + "/" in _cmdline(p)]
    for pid in mine:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in mine):
        time.sleep(0.1)
    for pid in mine:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    time.sleep(0.2)
    return [p for p in mine if _alive(p)]


def _markers() -> Path:
    """The folder of run markers, private to this user (created 0700; refused when another user can write it)."""
    MARKERS.mkdir(mode=0o700, exist_ok=True)
    st = MARKERS.stat()
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise ClusterError(f"{MARKERS} is not a private folder of this user: remove it")
    return MARKERS


PREFIX = "acceptance-slurm-"


def _made_here(folder: Path) -> bool:
    """A folder this harness created itself (`tempfile.mkdtemp` with `PREFIX`) and may therefore remove."""
    return folder.is_absolute() and folder.name.startswith(PREFIX) and folder.parent == Path(tempfile.gettempdir())


def _stale_folder(data: dict[str, Any]) -> str | None:
    """The run folder a marker names, when it is one this harness made (absolute, holding its own marker)."""
    folder = Path(str(data.get("folder", "")))
    if not folder.is_absolute() or len(folder.parts) < 3 or not (folder / "daemons.json").is_file():
        return None
    return str(folder)


def cleanup_stale() -> list[str]:
    """End the daemons of every run whose harness process is gone (only processes whose command line names
    that run's folder) and remove the folder; the folders cleaned."""
    cleaned: list[str] = []
    if not MARKERS.is_dir():
        return cleaned
    for marker in sorted(_markers().glob("*.json")):
        try:
            if marker.stat().st_uid != os.geteuid():
                continue
            data = json.loads(marker.read_text())
            owner, pids = int(data["owner"]), [int(p) for p in data["pids"].values()]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            marker.unlink(missing_ok=True)
            continue
        if _alive(owner):
            continue
        folder = _stale_folder(data)
        if folder is not None:
            _end(pids, folder)
            _end_steps(folder)
            if data.get("remove") is True and _made_here(Path(folder)):
                shutil.rmtree(folder, ignore_errors=True)
            cleaned.append(folder)
        marker.unlink(missing_ok=True)
    return cleaned


class SimSlurm:
    """One running simulated Slurm. Use `start` (or ``with SimSlurm.start(...) as slurm``); `stop` always."""

    def __init__(self, spec: ClusterSpec, layout: Layout, ctld_port: int, node_ports: dict[str, int]) -> None:
        self.spec = spec
        self.layout = layout
        self.ctld_port = ctld_port
        self.node_ports = node_ports
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._remove = False  # only a folder this harness made is ever removed

    # ---- start -------------------------------------------------------------------------------------------
    @classmethod
    def start(cls, nodes: int | Sequence[str] = 16, folder: Path | None = None, gpus_per_node: int = 8,
              deadline_s: float = 90.0, keep: bool = False, cpus_per_node: int = 2) -> SimSlurm:  # fmt: skip
        require()
        cleanup_stale()
        names = node_names(nodes) if isinstance(nodes, int) else tuple(nodes)
        root = Path(folder) if folder else Path(tempfile.mkdtemp(prefix=PREFIX))
        root.mkdir(parents=True, exist_ok=True)
        ports = reserve(len(names) + 1)
        self = cls(
            ClusterSpec(names, gpus_per_node, cpus_per_node=cpus_per_node),
            Layout(root.resolve()),
            ports[0],
            dict(zip(names, ports[1:], strict=True)),
        )
        self._remove = folder is None and not keep and _made_here(self.layout.root)
        try:
            self._prepare()
            self._start_munge(deadline_s)
            self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.layout.conf)])
            self._wait(self._client_ok, deadline_s, "slurmctld to answer")
            for node in names:
                self.start_slurmd(node)
            self.wait_nodes(lambda n: n.state.base == "IDLE" and not n.state.flags, deadline_s, "every node IDLE")
        except BaseException:
            self.stop()
            raise
        return self

    def _prepare(self) -> None:
        lay = self.layout
        closed = [p for p in lay.root.parents if not p.stat().st_mode & stat.S_IXOTH]
        if closed:  # munged runs as user munge: it fails later, with "cannot canonicalize ... Permission denied"
            raise UsageError(
                f"the simulated Slurm's folder {lay.root} is below {closed[0]}, which user munge "
                "cannot enter (no search permission for others): set TMPDIR to a folder it can reach"
            )
        os.chmod(lay.root, 0o755)  # munged (user munge) must reach its socket below
        for path in (lay.etc, lay.state, lay.spool, lay.log, lay.run, lay.devices):
            path.mkdir(parents=True, exist_ok=True)
        for node in self.spec.nodes:
            (lay.spool / node).mkdir(exist_ok=True)
            dev = lay.devices / node
            dev.mkdir(exist_ok=True)
            for i in range(self.spec.gpus_per_node):
                path = dev / f"nvidia{i}"
                if not path.exists():
                    os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))  # a character device (same as /dev/null)
        lay.conf.write_text(slurm_conf(self.spec, lay, self.ctld_port, self.node_ports))
        (lay.etc / "gres.conf").write_text(gres_conf(self.spec, lay))
        for sub, mode in (("etc", 0o700), ("run", 0o755), ("log", 0o700)):
            (lay.munge / sub).mkdir(parents=True, exist_ok=True)
            os.chmod(lay.munge / sub, mode)
        os.chmod(lay.munge, 0o755)
        key = lay.munge / "etc" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        for path in [lay.munge, *lay.munge.rglob("*")]:
            shutil.chown(path, "munge", "munge")

    def _start_munge(self, deadline_s: float) -> None:
        m = self.layout.munge
        argv = ["/usr/sbin/munged", "-F", f"--key-file={m}/etc/munge.key", f"--socket={self.layout.munge_socket}",
                f"--log-file={m}/log/munged.log", f"--pid-file={m}/run/munged.pid",
                f"--seed-file={m}/etc/munged.seed"]  # fmt: skip
        self._spawn("munged", argv, user="munge")
        self._wait(self.layout.munge_socket.exists, deadline_s, "munged's socket")

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> None:
        log = open(self.layout.log / f"{name}.out", "ab")  # noqa: SIM115 - kept open by the child only
        try:
            proc = subprocess.Popen(_with_parent(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=self.env(), start_new_session=True,
                                    user=user, group=user, extra_groups=[] if user else None)  # fmt: skip
        finally:
            log.close()
        self.procs[name] = proc
        self._write_marker()

    def _write_marker(self) -> None:
        data = {"owner": os.getpid(), "folder": str(self.layout.root), "remove": self._remove,
                "pids": {name: p.pid for name, p in self.procs.items() if p.poll() is None}}  # fmt: skip
        self.layout.marker.write_text(json.dumps(data, indent=1) + "\n")
        tmp = _markers() / f".{self.layout.root.name}.tmp"
        tmp.write_text(json.dumps(data) + "\n")
        tmp.replace(MARKERS / f"{self.layout.root.name}.json")

    def _wait(self, ready: Callable[[], bool], deadline_s: float, what: str,
              seen: Callable[[], str] | None = None) -> None:  # fmt: skip
        """Poll `ready()` until it holds; ClusterError after `deadline_s`, with what `seen()` says was there."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            # a daemon a fault stopped is no longer in procs: any that exited here is a daemon that failed
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise ClusterError(f"simulated Slurm: {dead[0]} exited while waiting for {what}: {self._tail(dead[0])}")
            if ready():
                return
            time.sleep(0.3)
        found = f": {seen()}" if seen is not None else ""
        logs = "" if self._remove else f" (logs in {self.layout.log})"  # a folder removed at stop is not named
        raise ClusterError(f"simulated Slurm: waited {deadline_s:.0f} s for {what} in vain{found}{logs}")

    def _tail(self, name: str) -> str:
        """The last lines `name` (munged, slurmctld, slurmd-NODE) wrote: in its log file, else on its output."""
        for path in (self.layout.log / f"{name}.log", self.layout.log / f"{name}.out"):
            text = path.read_text(errors="replace").strip() if path.exists() else ""
            if text:
                return " | ".join(text.splitlines()[-3:])
        return "it wrote nothing"

    def _client_ok(self) -> bool:
        return self.run(["scontrol", "ping"], check=False, timeout_s=10).returncode == 0

    # ---- use -----------------------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """The environment for Slurm's client commands against this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.layout.conf)
        return env

    def run(self, argv: Sequence[str], check: bool = True, timeout_s: float = 60.0,
            input: str | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """Run one client command (sinfo, srun, sbatch ...) with this cluster's SLURM_CONF."""
        try:
            done = subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout_s,
                                  input=input, check=False)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(f"{argv[0]} did not finish within {timeout_s:.0f} s") from exc
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def nodes(self) -> dict[str, tools.Node]:
        """Each node's state, reason (with who set it and when) and GPUs, as `sinfo` reports them now."""
        out = self.run(tools.node_query(), timeout_s=20).stdout
        return {n.name: n for n in tools.nodes(tools.parse_sinfo(out, "sinfo", tools.NODE_FORMAT), "sinfo")}

    def show_nodes(self) -> dict[str, tools.Node]:
        """Each node as ``scontrol show node -o`` reports it."""
        out = self.run(["scontrol", "-o", "show", "node"], timeout_s=20).stdout
        return tools.parse_nodes(out, "scontrol show node -o").by_name()

    def wait_nodes(self, ok: Any, deadline_s: float, what: str, names: Sequence[str] | None = None) -> None:
        """Wait until `ok(node)` holds for every node of `names` (all nodes by default)."""
        wanted = tuple(names or self.spec.nodes)

        last: dict[str, tools.Node] = {}

        def ready() -> bool:
            try:
                last.update(self.nodes())
            except ClusterError:
                return False
            return all(n in last and ok(last[n]) for n in wanted)

        def seen() -> str:
            if not last:
                return "sinfo never answered"
            late = [n for n in wanted if n not in last or not ok(last[n])]
            states = ", ".join(f"{n} {last[n].state.raw if n in last else 'not listed'}" for n in late)
            return f"not yet: {states}; slurmd-{late[0]} last said: {self._tail(f'slurmd-{late[0]}')}"

        self._wait(ready, deadline_s, what, seen)

    def jobs(self, run_id: str | None = None) -> tuple[tools.Job, ...]:
        """Jobs in the queue (only those whose comment is `run_id` when given)."""
        out = self.run(["squeue", "--noheader", "--format", tools.JOB_FORMAT], timeout_s=20).stdout
        found = tools.jobs(tools.parse_squeue(out, tools.JOB_FORMAT, "squeue")) if out.strip() else ()
        return tuple(j for j in found if run_id is None or j.comment == run_id)

    # ---- faults ----------------------------------------------------------------------------------------------
    def drain(self, node: str, reason: str) -> None:
        """Fault ``node-drain@NODE``: drained with a reason, as an admin or a health check does."""
        self.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"])

    def reserve(self, name: str, nodes: Sequence[str], flags: str = "MAINT", duration: str = "1-00:00:00",
                start: str = "now") -> None:  # fmt: skip
        """Fault ``node-reserved@NODE``: a reservation (MAINT by default) holds `nodes` from `start` on."""
        self.run(["scontrol", "create", "reservation", f"ReservationName={name}", f"StartTime={start}",
                  f"Duration={duration}", f"Nodes={','.join(nodes)}", "Users=root", f"Flags={flags}"])  # fmt: skip

    def resume(self, node: str) -> None:
        self.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])

    def stop_slurmd(self, node: str) -> None:
        """Fault ``slurmd-down@NODE``: the node's daemon stops; slurmctld marks it NOT_RESPONDING, then DOWN."""
        proc = self.procs.pop(f"slurmd-{node}", None)
        if proc is None:
            raise UsageError(f"no slurmd of {node} is running")
        _end([proc.pid], str(self.layout.root))
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        self._write_marker()

    def start_slurmd(self, node: str) -> None:
        if node not in self.spec.nodes:
            raise UsageError(f"{node} is not a node of this cluster ({self.spec.nodes[0]}..{self.spec.nodes[-1]})")
        self._spawn(f"slurmd-{node}", ["/usr/sbin/slurmd", "-D", "-N", node, "-f", str(self.layout.conf)])

    # ---- stop ------------------------------------------------------------------------------------------------
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def stop(self) -> list[int]:
        """Cancel every job, end every daemon (SIGTERM, then SIGKILL), remove the folder unless kept; the pids
        still alive afterwards (empty when all went)."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(ClusterError):
                self.run(["scancel", "--full", "--quiet", "--user", "root"], check=False, timeout_s=10)
        # every slurmd at once (each one in turn took a quarter second: 4 s for 16 nodes), then the controller,
        # then munged, which the others need to the end
        waves = [[n for n in self.procs if n.startswith("slurmd-")], ["slurmctld"], ["munged"]]
        left: list[int] = []
        for wave in waves:
            procs = [p for p in (self.procs.get(name) for name in wave) if p is not None and p.poll() is None]
            if procs:
                left += _end([p.pid for p in procs], str(self.layout.root))
            for proc in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
        left += _end_steps(str(self.layout.root))  # steps whose slurmd was stopped outlive it
        self.procs.clear()
        (MARKERS / f"{self.layout.root.name}.json").unlink(missing_ok=True)
        self.layout.marker.unlink(missing_ok=True)
        if self._remove and _made_here(self.layout.root):
            shutil.rmtree(self.layout.root, ignore_errors=True)
        return left

    def __enter__(self) -> SimSlurm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(nodes: int | Sequence[str] = 16, **kwargs: Any) -> Iterator[SimSlurm]:
    slurm = SimSlurm.start(nodes, **kwargs)
    try:
        yield slurm
    finally:
        slurm.stop()
