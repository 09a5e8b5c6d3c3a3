"""`SimRunner`: the `ToolRunner` of acceptance/sim/runtime.py over the simulated cluster.

`run(argv, env, node, hosts)` understands:

- ``mpirun [opts] <nccl-tests binary> [args]`` -- one process per hostfile slot (``-np`` caps it,
  ``-N``/``-npernode``/``--map-by ppr:K:node`` cap the processes per host), ranks = processes x
  ``-t`` x ``-g``; hosts come from the emulator (hostfile resolved to nodes), else from
  ``-H host:slots,...`` (host names = node names), else the first nodes of the cluster;
- ``all_reduce_perf ...`` and siblings without mpirun -- one process on `node`;
- ``dcgmi diag -r LEVEL [-j] [-i 0,1,...]`` -- DCGM 4.x JSON or text for `node` (its GPUs, or those listed);
- the training command of `acceptance.sim.model.training` (on the hosts' nodes, else every ready node);
- ``ib_write_bw -d mlx5_K ...`` -- perftest's loopback bandwidth of one NIC of `node` (`perftest`);
- ``dmesg`` and ``nvidia-smi -q`` -- the kernel log and the GPU report of `node` (`hostlogs`);
- ``bash -c "a; b && c"`` -- each command in turn, stopping at the first failure;
  ``echo``/``export``/``set``/``sleep``/``hostname`` and similar shell chores print nothing or the obvious.

A command line the tool would reject prints the reason and exits 2; `run` never raises.

Run-to-run noise: each call gets its own seed from (cluster seed, the command, the node, the
hosts, and how many times this same call was made before), so a repeated call differs
and a whole session replays identically. A flapping link instead counts the multi-node runs
through its node (`faults.FaultSet.fabric`), so it flaps alike whatever the job names are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence

from acceptance.errors import UsageError
from acceptance.sim.model import dcgmmodel, dcgmrender, hostlogs, kubectl, ncclperf, nccltext, perftest
from acceptance.sim.model.cluster import GPU_NAME, GPUS_PER_NODE, SimCluster, Versions, derive_seed, node_spec, rng
from acceptance.sim.model.faults import Fault, FaultSet
from acceptance.sim.model.ncclargs import NcclArgs, parse_mpirun, parse_nccl_args, simulated_collective
from acceptance.sim.model.scenario import Scenario
from acceptance.sim.model.shell import shell_chore, split_shell, strip_prefixes
from acceptance.sim.model.training import is_training, run_training
from acceptance.sim.runtime import Host, NodeSpec, ToolRun

MPI_LAUNCHERS = {"mpirun", "mpiexec", "prterun", "orterun"}
DCGM_LEVELS = {"short": 1, "medium": 2, "long": 3, "xlong": 4}


class SimRunner:
    """Runs commands on the simulated cluster; `nodes()` and `versions` describe it."""

    def __init__(self, cluster: SimCluster, faults: FaultSet | None = None) -> None:
        self.cluster = cluster
        self.faults = faults or FaultSet()
        self.versions: Versions = self.faults.versions(cluster.versions)
        self._counts: dict[int, int] = {}
        self._node_runs: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_scenario(
        cls, scenario: Scenario, faults: Sequence[str | Mapping[str, object] | Fault] = (), seed: int | None = None
    ) -> SimRunner:
        cluster, fault_set = scenario.build(seed, faults)
        return cls(cluster, fault_set)

    def nodes(self) -> Sequence[NodeSpec]:
        return [node_spec(self.cluster, n, ready=self.faults.node_ready(n.name)) for n in self.cluster.nodes]

    def run(self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host]) -> ToolRun:
        key = derive_seed(self.cluster.seed, tuple(argv), node, tuple(hosts))
        with self._lock:
            count = self._counts.get(key, 0)
            self._counts[key] = count + 1
        return self.run_call(argv, env, node, hosts, derive_seed(key, count))

    def run_call(
        self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host], call_seed: int
    ) -> ToolRun:
        """One call with an explicit seed (pure: the same arguments give the same output)."""
        out: list[str] = []
        total, status, errexit = 0.0, 0, False
        env = dict(env)
        for i, (how, command) in enumerate(split_shell(argv)):
            if (how == "&&" and status != 0) or (how == "||" and status == 0):
                continue
            if errexit and how == ";" and status != 0:
                break
            if command[0] == "set":
                errexit = errexit or any(a.startswith("-") and "e" in a for a in command[1:])
            try:
                result = self._one(command, env, node, hosts, derive_seed(call_seed, i))
            except UsageError as exc:  # what the tool would say about a bad command line; never raise
                result = ToolRun(f"{os.path.basename(command[0])}: {exc}\n", 2, 0.0)
            out.append(result.stdout)
            total += result.duration_s
            status = result.exit_code
        return ToolRun("".join(out), status, total)

    # --- dispatch ---------------------------------------------------------------------------

    def _one(self, argv: list[str], env: dict[str, str], node: str, hosts: Sequence[Host], seed: int) -> ToolRun:
        argv = strip_prefixes(argv, env)
        if not argv:
            return ToolRun("", 0, 0.0)
        prog = os.path.basename(argv[0])
        if prog == "dmesg" or (prog == "nvidia-smi" and {"-q", "--query", "-a"} & set(argv[1:])):
            render = hostlogs.dmesg if prog == "dmesg" else hostlogs.nvidia_smi_q
            return ToolRun(*render(self.cluster, self.faults, node, self.versions), 0.2)
        if prog == "kubectl":
            return self._kubectl(argv, env, seed)
        chore = shell_chore(argv, env, node)
        if chore is not None:
            return ToolRun(chore, 0, 0.0)
        if prog in MPI_LAUNCHERS:
            launch = parse_mpirun(argv)
            job_env = dict(env)
            for k, value in launch.env:
                job_env[k] = env.get(k, "") if value is None else value
            job_hosts = list(hosts) or [Host(h, h, s) for h, s in launch.hosts]
            for h in job_hosts:
                self.cluster.node(h.node)
            program = list(launch.program)
            if launch.per_node:
                job_hosts = [Host(h.hostname, h.node, min(h.slots, launch.per_node)) for h in job_hosts]
            return self._program(program, job_env, node, job_hosts, launch.np, seed=seed, mpirun=True)
        return self._program(argv, env, node, [], None, seed=seed, mpirun=False)

    def _kubectl(self, argv: list[str], env: Mapping[str, str], seed: int) -> ToolRun:
        """``kubectl describe node NODE`` and ``kubectl get events``, as an operator pastes them."""
        words = [a for a in argv[1:] if not a.startswith("-") and a != "wide"]
        if words[:2] in (["describe", "node"], ["describe", "nodes"]) and len(words) == 3:
            shape = kubectl.choose(rng(seed, "kubectl").getrandbits(32), env)
            return ToolRun(kubectl.describe_node(self.cluster, self.faults, words[2], shape), 0, 0.3)
        if words[:2] == ["get", "events"]:
            return ToolRun(kubectl.get_events(self.cluster, self.faults, argv), 0, 0.3)
        return ToolRun(f"simulated kubectl: only 'describe node NODE' and 'get events' ({' '.join(argv)})\n", 1, 0.0)

    def _program(
        self,
        argv: list[str],
        env: Mapping[str, str],
        node: str,
        hosts: list[Host],
        np: int | None,
        *,
        seed: int,
        mpirun: bool,
    ) -> ToolRun:
        prog = os.path.basename(argv[0])
        if simulated_collective(prog):
            return self._nccl(argv, env, node, hosts, np, seed=seed, mpirun=mpirun)
        if prog == "dcgmi":
            return self._dcgm(argv, node, seed)
        if prog == "ib_write_bw":
            return ToolRun(*perftest.ib_write_bw(argv, self.cluster, self.faults, node, rng(seed, "perftest")))
        if is_training(argv):
            nodes = list(dict.fromkeys(h.node for h in hosts)) or [
                n.name for n in self.cluster.nodes if self.faults.node_ready(n.name)
            ]
            names = {h.node: h.hostname for h in hosts}
            launcher = "mpirun" if mpirun else "torchrun" if os.path.basename(argv[0]) == "torchrun" else "python"
            text, code, seconds = run_training(argv, self.cluster, self.faults, nodes, seed, env=env, hosts=names,
                                               launcher=launcher)  # fmt: skip
            return ToolRun(text, code, seconds)
        return ToolRun(f"bash: {argv[0]}: command not found\n", 127, 0.0)

    # --- nccl-tests ---------------------------------------------------------------------------

    def _placement(
        self,
        args: NcclArgs,
        node: str,
        hosts: list[Host],
        np: int | None,
        *,
        seed: int,
        env: Mapping[str, str],
    ) -> list[nccltext.Proc]:
        ngpus, nthreads = args.ngpus, args.nthreads
        r = rng(seed, "pids")
        if not hosts:
            hostname = env.get("HOSTNAME", node)
            return [nccltext.Proc(hostname, node, r.randrange(30, 99999), 0, tuple(range(ngpus * nthreads)))]
        if np is None:
            np = sum(h.slots for h in hosts)
        procs: list[nccltext.Proc] = []
        rank = 0
        per = ngpus * nthreads
        for h in hosts:
            pid = r.randrange(40, 3_000_000)  # a node's processes start together: nearby pids
            for local in range(h.slots):
                if len(procs) >= np:
                    break
                devices = tuple(local * per + j for j in range(per))
                procs.append(nccltext.Proc(h.hostname, h.node, pid, rank, devices))
                pid += 1 + (r.random() < 0.15)
                rank += per
        if len(procs) < np:
            raise UsageError(f"mpirun: -np {np} asks for more slots than the hosts have ({len(procs)})")
        return procs

    def _nccl(
        self,
        argv: list[str],
        env: Mapping[str, str],
        node: str,
        hosts: list[Host],
        np: int | None,
        *,
        seed: int,
        mpirun: bool,
    ) -> ToolRun:
        args = parse_nccl_args(argv)
        if mpirun and not hosts:
            count = np or GPUS_PER_NODE
            per_node = GPUS_PER_NODE // max(args.ngpus * args.nthreads, 1) or 1
            nodes = self.cluster.nodes[: max(1, -(-count // per_node))]
            hosts = [Host(n.name, n.name, per_node) for n in nodes]
        procs = self._placement(args, node, hosts, np, seed=seed, env=env)
        nranks = sum(len(p.devices) for p in procs)
        job_nodes = list(dict.fromkeys(p.node for p in procs))
        v = self.versions
        busids = [g.busid for g in self.cluster.node(job_nodes[0]).gpus]
        lines = nccltext.header(args, v.nccl_tests, v.nccl_code, self.cluster.seed)
        lines += nccltext.rank_lines(procs, GPU_NAME, busids)
        r = rng(seed, "nccl")
        down = [n for n in job_nodes if not self.faults.node_ready(n)]
        if down:
            text = f"ssh: connect to host {down[0]} port 22: No route to host\n"
            return ToolRun(text + "ORTE was unable to reliably start one or more daemons.\n", 1, 30.0)
        too_many = [p for p in procs if max(p.devices) >= GPUS_PER_NODE]
        if too_many:
            p = too_many[0]
            lines += [f"{p.hostname}: Test CUDA failure common.cu:1008 'invalid device ordinal'",
                      f" .. {p.hostname} pid {p.pid}: Test failure common.cu:1100"]  # fmt: skip
            return ToolRun("\n".join(lines) + "\n", nccltext.TEST_CUDA_ERROR, 3.0)
        debug = env.get("NCCL_DEBUG", "").upper()
        fatal = self.faults.fatal(job_nodes)
        if fatal is not None and fatal.node is not None and fatal.param("mode") == "hang":
            return ToolRun("\n".join(lines) + "\n", 137, 4 * 3600.0)
        if fatal is not None and fatal.node is not None:
            fail, code = nccltext.xid_failure(procs, fatal.node, fatal.index, mpirun, r)
            return ToolRun("\n".join(lines + fail) + "\n", code, 5.0 + 0.002 * nranks)
        ranks_per_node = max(nranks // len(job_nodes), 1)
        fabric = self.faults.fabric(
            self.cluster,
            job_nodes,
            args.collective,
            r,
            ranks_per_node=ranks_per_node,
            flap_roll=self._flap_roll(job_nodes),
        )
        cap = ncclperf.memory_cap(args)
        rows = ncclperf.simulate_rows(
            args,
            nodes=len(job_nodes),
            ranks_per_node=ranks_per_node,
            env=env,
            fabric=fabric,
            r=r,
            max_bytes=args.max_bytes if cap is None else cap,
        )
        extra: list[str] = []
        cuda = f"{v.cuda_code // 1000}.{v.cuda_code % 1000 // 10}"
        if debug == "INFO":
            extra = nccltext.info_lines(
                procs,
                nranks=nranks,
                nnodes=len(job_nodes),
                nccl=v.nccl,
                cuda_code=v.cuda_code,
                seed=seed,
                rails_down={n: self.faults.rails_down(n) for n in job_nodes},
            )
        elif debug in ("WARN", "VERSION"):
            extra = [f"NCCL version {v.nccl}+cuda{cuda}"]
        lines += nccltext.table(args, rows, nranks, cap, extra)
        return ToolRun("\n".join(lines) + "\n", 0, ncclperf.run_seconds(args, rows, nranks))

    def _flap_roll(self, job_nodes: Sequence[str]) -> Callable[[Fault], float] | None:
        """Counts multi-node runs per node; a flapping link's draw for the k-th run through it."""
        if len(job_nodes) < 2:
            return None
        with self._lock:
            before = {n: self._node_runs.get(n, 0) for n in job_nodes}
            for n in job_nodes:
                self._node_runs[n] = before[n] + 1

        def roll(fault: Fault) -> float:
            return rng(self.cluster.seed, "flap", str(fault), before.get(fault.node or "", 0)).random()

        return roll

    # --- DCGM -------------------------------------------------------------------------------------

    def _dcgm(self, argv: list[str], node: str, seed: int) -> ToolRun:
        if len(argv) < 2 or argv[1] != "diag":
            return ToolRun("Usage: dcgmi diag -r <level> [-j]\n", 255, 0.0)
        level_text, as_json = "1", False
        gpu_ids: list[int] | None = None
        i = 2
        while i < len(argv):
            a = argv[i]
            has_value = i + 1 < len(argv)
            if a in ("-r", "--run") and has_value:
                level_text = argv[i + 1]
            elif a in ("-i", "--gpuList") and has_value:
                items = argv[i + 1].split(",")
                if not all(x.strip().isdigit() for x in items):
                    return ToolRun(f"Error: Invalid GPU list {argv[i + 1]!r}.\n", 255, 0.0)
                gpu_ids = [int(x) for x in items]
            elif a in ("-j", "--json"):
                as_json = True
                i += 1
                continue
            elif a not in ("-g", "--group", "-p", "--parameters", "--iterations") or not has_value:
                i += 1
                continue
            i += 2
        level = DCGM_LEVELS.get(level_text, int(level_text) if level_text.isdigit() else 0)
        if level not in dcgmmodel.LEVEL_TESTS:
            return ToolRun(f"Error: Invalid run level {level_text}.\n", 255, 0.0)
        try:
            run = dcgmmodel.run_diag(
                self.cluster.node(node),
                level,
                faults=self.faults.faults,
                dcgm_version=self.versions.dcgm,
                driver=self.versions.driver,
                r=rng(seed, "dcgm"),
                gpu_ids=gpu_ids,
            )
        except UsageError as exc:
            return ToolRun(f"Error: {exc}\n", 255, 0.0)
        text = dcgmrender.render_json(run) if as_json else dcgmrender.render_text(run)
        return ToolRun(text, run.exit_code, run.duration_s)
