"""The agreement: ``baselines/<cluster>/cluster.yaml``.

A profile says how to reach a cluster (backend ``kube``, ``ssh``, ``slurm`` or ``sim``) and what
both sides agreed: node set, GPUs per node, DCGM level, the nccl-tests commands,
margins, the smoke job, the provider's identifiers of the cluster (``provider:``) and the
severity levels with their clocks (``severity:``, read by `acceptance.incident.severity`), counted in
the agreed coverage hours (``coverage:``, `acceptance.agreement.coverage`; 24x7 when absent).
Every problem found while loading names the file, the line,
the path inside the document, what was found and what was expected.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptance import schemas
from acceptance.agreement.coverage import Coverage, CoverageError
from acceptance.agreement.coverage import parse as parse_coverage
from acceptance.clusters.backends import backend_named
from acceptance.clusters.base import EnvValue
from acceptance.clusters.ssh.settings import SshSettings, ssh_settings
from acceptance.errors import ParseError, ProfileError, UsageError
from acceptance.links import NodeLinks
from acceptance.margins import Margins
from acceptance.report.parties import Parties
from acceptance.report.parties import problems as party_problems
from acceptance.units import parse_duration
from acceptance.yamlsrc import Document, format_path, load_yaml

PROFILE_FILE = "cluster.yaml"
#: a Kubernetes node name (RFC 1123 subdomain, lower case); host names may use upper case too
_NODE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: the longest duration a profile may state (a timeout, the probation window)
MAX_DURATION_S = 365 * 86400.0


@dataclass(frozen=True)
class NcclTestSpec:
    """One nccl-tests command of the agreement."""

    name: str
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SmokeSpec:
    """The customer's real job, run briefly after a repair (criterion 3 and 4)."""

    command: tuple[str, ...]
    pre_incident_command: tuple[str, ...] | None
    env: Mapping[str, EnvValue]
    format: str | None
    restore_step: int | None
    warmup_steps: int | None
    timeout_s: float


@dataclass(frozen=True)
class SimSettings:
    scenario: Path
    seed: int
    time_scale: float


@dataclass(frozen=True)
class SlurmSettings:
    """How backend ``slurm`` reaches the scheduler (``slurm:``): locally, or on `login` over SSH.

    `launch` is how nccl-tests and the smoke job start inside their allocation: ``srun`` (with ``--mpi=``
    `mpi`) or ``mpirun`` (Open MPI, which finds the allocation itself). `run_dir` holds the jobs' output
    files; it must be visible from the login node (a shared file system, as Slurm sites have).
    """

    partition: str | None = None
    account: str | None = None
    reservation: str | None = None  # the maintenance reservation the acceptance runs in, when there is one
    login: str | None = None
    launch: str = "srun"
    mpi: str = "pmi2"
    run_dir: str = "/tmp/recovery-acceptance-slurm"
    env: Mapping[str, str] = field(default_factory=dict)
    command_timeout_s: float = 60.0
    time_slack_s: float = 300.0  # added to a workload's deadline for its --time (start-up, the step's end)
    pending_timeout_s: float = 600.0  # a job still PENDING this long fails with the scheduler's reason


@dataclass(frozen=True)
class TopologySettings:
    """Where the fabric's leaves and spines come from: node labels, or a listing (SSH hosts)."""

    leaf_label: str | None = None
    spine_label: str | None = None
    leaves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    spines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class LocalizeSettings:
    """Naming the bad node when a fabric item fails (``localize:`` in the profile)."""

    enabled: bool = True
    deadline_s: float = 1800.0
    round_timeout_s: float = 600.0
    max_rounds: int = 4
    sweep_sizes: int = 3
    topology: TopologySettings = field(default_factory=TopologySettings)


@dataclass(frozen=True)
class Profile:
    """A validated cluster profile."""

    name: str
    path: Path
    backend: str
    description: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    gpu_product: str | None
    dcgm_level: int
    dcgm_timeout_s: float
    dcgm_warning_policy: str
    dcgm_host_engine: str
    nccl_tests: tuple[NcclTestSpec, ...]
    nccl_timeout_s: float
    margins: Margins
    smoke: SmokeSpec | None
    logs: Mapping[str, Any]
    kube: Mapping[str, Any]
    ssh: SshSettings | None
    sim: SimSettings | None
    allowed_signers: Path | None = None
    provider: Mapping[str, str] = field(default_factory=dict)
    severity: Mapping[str, Any] = field(default_factory=dict)
    coverage: Coverage = field(default_factory=Coverage)  # when the severity clocks run (default 24x7)
    agreement: Mapping[str, Any] = field(default_factory=dict)  # billing, responsibility, exclusions, ...
    coverage_stated: bool = False  # the profile says coverage: itself (absent: 24x7 by default)
    localize: LocalizeSettings = field(default_factory=LocalizeSettings)
    recurrence: Mapping[str, Any] = field(default_factory=dict)  # criterion 5's rules and job sources
    prometheus: Mapping[str, Any] = field(default_factory=dict)  # where criterion 5 reads metrics
    links: NodeLinks | None = None  # what one node's links carry (`nodes.links`): bounds a plausible busbw
    run_deadline_s: float | None = None  # ``run.deadline``; None: every workload deadline added up (RunContext)
    parties: Parties = field(default_factory=Parties)  # the provider's and the customer's signing keys
    slurm: SlurmSettings | None = None  # backend ``slurm``: how the scheduler is reached

    @property
    def require_both(self) -> bool:
        """``agreement.require: both``: a baseline must be signed by both parties before a run uses it."""
        return self.agreement.get("require") == "both"

    def nccl_test(self, name: str) -> NcclTestSpec:
        for test in self.nccl_tests:
            if test.name == name:
                return test
        raise UsageError(f"{self.path}: no nccl test named {name!r} (have: {', '.join(self.test_names)})")

    def secret_values(self) -> dict[str, str]:
        """Credentials written in clear in the profile: env entries with a secret's name and the values of
        secret-named flags in the commands (``--hf-token VALUE``): name → value.

        A report is searched for these before it is signed. The recommended way keeps them
        out of the profile: ``NAME: {valueFrom: {secretKeyRef: {name: ..., key: ...}}}``.
        """
        from acceptance.report.secrets import is_secret_name

        envs: list[Mapping[str, Any]] = [self.kube.get("env") or {}, *(t.env for t in self.nccl_tests)]
        if self.ssh is not None:
            envs.append(self.ssh.env)
        if self.slurm is not None:
            envs.append(self.slurm.env)
        if self.smoke is not None:
            envs.append(self.smoke.env)
        found = {
            name: str(value)
            for env in envs
            for name, value in env.items()
            if is_secret_name(name) and isinstance(value, str | int) and str(value)
        }
        argvs = [t.args for t in self.nccl_tests]
        if self.smoke is not None:
            argvs += [self.smoke.command, self.smoke.pre_incident_command or ()]
        for argv in argvs:  # `--hf-token VALUE` and `--hf-token=VALUE` in a command line
            for flag, value in zip(argv, [*argv[1:], ""], strict=True):
                name, eq, inline = flag.partition("=")
                if flag.startswith("-") and is_secret_name(name.lstrip("-")):
                    picked = inline if eq else value
                    if picked and not picked.startswith("-"):
                        found[name.lstrip("-")] = picked
        return found

    @property
    def test_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.nccl_tests)

    def check_returned_nodes(self, nodes: Sequence[str], source: str = "--returned-node") -> None:
        """A returned node must belong to the agreement's node set."""
        unknown = [n for n in nodes if n not in self.nodes]
        if unknown:
            shown = ", ".join(self.nodes[:6]) + (", ..." if len(self.nodes) > 6 else "")
            raise UsageError(f"{source}: {', '.join(unknown)} is not in the node set of {self.path} (nodes: {shown})")


# The agreements of the simulated clusters ship inside the package, so an installed package runs
# `--cluster=sim` from any directory; a profile of the same name under the user's baselines folder wins.
SHIPPED_DIR = Path(__file__).resolve().parent / "sim" / "agreements"


def shipped_names() -> list[str]:
    return sorted(p.parent.name for p in SHIPPED_DIR.glob(f"*/{PROFILE_FILE}"))


def profile_path(name: str, baselines_dir: Path) -> Path:
    """``<baselines_dir>/<name>/cluster.yaml``, or the shipped agreement of that name when the user has no
    folder of that name (a folder of their own, even without a profile, is never silently replaced)."""
    local = baselines_dir / name / PROFILE_FILE
    shipped = SHIPPED_DIR / name / PROFILE_FILE
    if not local.parent.exists() and name and "/" not in name and shipped.is_file():
        return shipped
    return local


def refuse_writing_shipped(folder: Path, what: str) -> None:
    """The agreements shipped inside the package are read-only: a new baseline goes to the user's own folder."""
    if folder.absolute().parent == SHIPPED_DIR:
        raise UsageError(
            f"{what}: {folder} is the agreement shipped with the package and is read-only; copy it into your "
            f"baselines folder first (cp -r {folder} baselines/{folder.name}), add your signing key's public half to "
            f"baselines/{folder.name}/allowed_signers, then run again from the folder holding baselines/"
        )


def load_profile(name: str, baselines_dir: Path) -> Profile:
    """Load and validate ``<baselines_dir>/<name>/cluster.yaml`` (or the shipped agreement of that name)."""
    path = profile_path(name, baselines_dir)
    if not path.is_file():
        known = sorted(p.parent.name for p in baselines_dir.glob(f"*/{PROFILE_FILE}"))
        hint = f" (profiles in {baselines_dir}: {', '.join(known)})" if known else ""
        hint += f" (shipped with the package: {', '.join(shipped_names())})"
        raise ProfileError(f"no profile for cluster {name!r}: {path} does not exist{hint}")
    return load_profile_file(path)


def load_profile_file(path: Path) -> Profile:
    try:
        doc = load_yaml(path)
    except ParseError as exc:
        raise ProfileError(str(exc)) from exc
    if not isinstance(doc.data, dict):
        raise ProfileError(f"{path}:1: (top level): expected a mapping of profile fields, found {doc.data!r}")
    found = [_format(doc, p, f, e) for p, f, e in _hostile(doc.data)]
    found += [_format(doc, p, f, e) for p, f, e in schemas.problems("profile", doc.data)]
    if found:
        raise ProfileError(_joined(path, found))
    return _build(doc)


def _hostile(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[Sequence[str | int], str, str]]:
    """Values no schema keyword catches: NaN and infinities anywhere, control characters in the
    words that reach a command line, a host file or a Kubernetes object (node names, arguments,
    environment values, addresses)."""
    if isinstance(data, float) and not math.isfinite(data):
        yield path, repr(data), "a finite number"
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str) and _CONTROL.search(key):
                yield (*path, key), repr(key), "a name without control characters"
            yield from _hostile(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _hostile(value, (*path, i))
    elif isinstance(data, str) and _CONTROL.search(data) and _command_word(path):
        yield path, repr(data[:60]), "text without control characters (line ends, NUL, escapes)"


def _command_word(path: tuple[str | int, ...]) -> bool:
    """Whether the value at `path` reaches a command line, a host file or a Kubernetes object."""
    keys = [k for k in path if isinstance(k, str)]
    return bool(keys) and (
        keys[-1] in ("args", "command", "pre_incident_command", "names", "head_node", "user")
        or (len(keys) >= 2 and keys[-2] in ("env", "hosts", "images"))
    )


def _format(doc: Document, path: Sequence[str | int], found: str, expected: str) -> str:
    return f"{doc.path}:{doc.line_of(path)}: {format_path(path)}: found {found}, expected {expected}"


def _joined(path: Path, problems: list[str]) -> str:
    if len(problems) == 1:
        return problems[0]
    return f"{path}: {len(problems)} problems\n" + "\n".join(f"  {p}" for p in problems)


def _strings(values: Sequence[Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


def _env(raw: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (raw or {}).items()}


def workload_env(raw: Mapping[str, Any] | None) -> dict[str, EnvValue]:
    """A workload environment (`kube.env`, `smoke.env`): values as text, secret references as they are."""
    return {str(k): dict(v) if isinstance(v, Mapping) else str(v) for k, v in (raw or {}).items()}


def _build(doc: Document) -> Profile:
    data: dict[str, Any] = doc.data
    problems: list[str] = []

    def bad(path: Sequence[str | int], found: str, expected: str) -> None:
        problems.append(_format(doc, path, found, expected))

    backend = data["backend"]  # one of the schema's; its settings are the section of the same name
    if backend not in data:
        bad([], f"backend {backend!r} without a '{backend}' section", f"a '{backend}' section")
    described = backend_named(backend, sim_section=data.get("sim") is not None)

    names: list[str] = data["nodes"]["names"]
    seen: set[str] = set()
    for i, node in enumerate(names):
        if node in seen:
            bad(["nodes", "names", i], repr(node), "each node named once (duplicate)")
        seen.add(node)
        if not _NODE.fullmatch(node) or len(node) > 253:
            bad(["nodes", "names", i], repr(node[:80]), "a host name (RFC 1123: letters, digits, '-', '.')")
        elif described is not None and described.kubernetes_nodes and node != node.lower():
            bad(["nodes", "names", i], repr(node), "a Kubernetes node name (lower case)")

    def duration(where: list[str | int], value: Any, default: float) -> float:
        try:
            seconds = parse_duration(value if value is not None else default)
        except (ValueError, TypeError) as exc:
            bad(where, repr(value), str(exc))
            return default
        if seconds > MAX_DURATION_S:
            bad(where, repr(value), "a duration of at most 365d")
            return default
        return seconds

    try:
        coverage = parse_coverage(data.get("coverage"))
    except CoverageError as exc:
        bad(list(exc.where), exc.found, exc.expected)
        coverage = Coverage()

    tests: list[NcclTestSpec] = []
    for i, raw in enumerate(data["nccl"]["tests"]):
        args = _strings(raw["args"])
        name = raw.get("name") or os.path.basename(args[0])
        if any(t.name == name for t in tests):
            bad(["nccl", "tests", i, "name"], repr(name), "a name not used by another test (add 'name:')")
        problem = _check_nccl_args(args, _env(raw.get("env")))
        if problem:
            bad(["nccl", "tests", i, "args"], problem[0], problem[1])
        tests.append(NcclTestSpec(name=name, args=args, env=_env(raw.get("env"))))

    try:
        margins = Margins.from_profile(data.get("margins", {}), (data.get("smoke") or {}).get("sequential"))
    except ValueError as exc:
        found, _, expected = str(exc).partition(": expected ")
        where: list[str | int] = ["smoke", "sequential"] if found.startswith("smoke_") else ["margins"]
        bad(where, found, expected or "margins as numbers, sizes and durations")
        margins = Margins()

    raw_ssh = data.get("ssh")
    ssh = None if raw_ssh is None else ssh_settings(raw_ssh, names, lambda v: _relative(doc.path, v), bad)

    sim = None
    raw_sim = data.get("sim")
    if raw_sim is not None:
        sim = SimSettings(
            scenario=_scenario(doc.path, str(raw_sim["scenario"])),
            seed=int(raw_sim.get("seed", 1)),
            time_scale=float(raw_sim.get("time_scale", 0.001)),
        )

    slurm = None
    if data.get("slurm", False) is not False:  # a section, or `slurm:` with nothing under it
        raw_slurm = data["slurm"] or {}
        slurm = SlurmSettings(
            partition=raw_slurm.get("partition"),
            account=raw_slurm.get("account"),
            reservation=raw_slurm.get("reservation"),
            login=raw_slurm.get("login"),
            launch=str(raw_slurm.get("launch", "srun")),
            mpi=str(raw_slurm.get("mpi", "pmi2")),
            run_dir=str(raw_slurm.get("run_dir", "/tmp/recovery-acceptance-slurm")).rstrip("/")
            or "/tmp/recovery-acceptance-slurm",
            env=_env(raw_slurm.get("env")),
            command_timeout_s=duration(["slurm", "command_timeout"], raw_slurm.get("command_timeout"), 60),
            time_slack_s=duration(["slurm", "time_slack"], raw_slurm.get("time_slack"), 300),
            pending_timeout_s=duration(["slurm", "pending_timeout"], raw_slurm.get("pending_timeout"), 600),
        )

    smoke = None
    if "smoke" in data:
        raw_smoke = data["smoke"]
        pre = raw_smoke.get("pre_incident_command")
        smoke = SmokeSpec(
            command=_strings(raw_smoke["command"]),
            pre_incident_command=_strings(pre) if pre else None,
            env=workload_env(raw_smoke.get("env")),
            format=raw_smoke.get("format"),
            restore_step=raw_smoke.get("restore_step"),
            warmup_steps=raw_smoke.get("warmup_steps"),
            timeout_s=duration(["smoke", "timeout"], raw_smoke.get("timeout"), 3600),
        )

    localize = _localize(data.get("localize") or {}, names, bad)
    raw_parties = data.get("parties") or {}
    for party, i, entry, first in party_problems(raw_parties):
        bad(["parties", party, i], repr(entry), f"a key of one party only (the {first} lists it too)")
    if (data.get("agreement") or {}).get("require") == "both" and not raw_parties:
        bad(["agreement", "require"], "'both' without a parties: section",
            "parties: {provider: [keys], customer: [keys]} naming whose signature is whose")  # fmt: skip
    dcgm_timeout_s = duration(["dcgm", "timeout"], data["dcgm"].get("timeout"), 2 * 3600)
    nccl_timeout_s = duration(["nccl", "timeout"], data["nccl"].get("timeout"), 3600)
    raw_deadline = (data.get("run") or {}).get("deadline")
    run_deadline_s = None if raw_deadline is None else duration(["run", "deadline"], raw_deadline, 0.0)
    if problems:
        raise ProfileError(_joined(doc.path, problems))
    return Profile(
        name=data["cluster"],
        path=doc.path,
        backend=backend,
        description=data.get("description", ""),
        nodes=tuple(names),
        gpus_per_node=int(data["nodes"]["gpus_per_node"]),
        gpu_product=data["nodes"].get("gpu_product"),
        dcgm_level=int(data["dcgm"]["level"]),
        dcgm_timeout_s=dcgm_timeout_s,
        dcgm_warning_policy=data["dcgm"].get("fail_on_warning_severity", "isolate"),
        dcgm_host_engine=str(data["dcgm"].get("host_engine", "embedded")),
        nccl_tests=tuple(tests),
        nccl_timeout_s=nccl_timeout_s,
        margins=margins,
        smoke=smoke,
        logs=dict(data.get("logs", {})),
        kube=dict(data.get("kube", {})),
        ssh=ssh,
        sim=sim,
        allowed_signers=_relative(doc.path, data.get("allowed_signers")),
        provider={str(k): str(v) for k, v in (data.get("provider") or {}).items()},
        severity=dict(data.get("severity") or {}),
        coverage=coverage,
        agreement=dict(data.get("agreement") or {}),
        coverage_stated="coverage" in data,
        localize=localize,
        recurrence=dict(data.get("recurrence", {})),
        prometheus=dict(data.get("prometheus", {})),
        links=_links(data["nodes"].get("links")),
        run_deadline_s=run_deadline_s,
        parties=Parties({str(k): tuple(str(e) for e in v) for k, v in raw_parties.items()}),
        slurm=slurm,
    )


def _links(raw: Mapping[str, Any] | None) -> NodeLinks | None:
    """``nodes.links`` (its types and ranges checked by the schema)."""
    if raw is None:
        return None
    nvlink, nics, nic = raw.get("nvlink_gbps_per_gpu"), raw.get("nics"), raw.get("nic_gbps")
    return NodeLinks(
        None if nvlink is None else float(nvlink),
        None if nics is None else int(nics),
        None if nic is None else float(nic),
    )


def _localize(
    raw: Mapping[str, Any], names: Sequence[str], bad: Callable[[Sequence[str | int], str, str], None]
) -> LocalizeSettings:
    """``localize:``; the listed topology must name the profile's nodes, each in one leaf."""
    topo = raw.get("topology") or {}
    leaves = {str(k): tuple(str(n) for n in v) for k, v in (topo.get("leaves") or {}).items()}
    spines = {str(k): tuple(str(n) for n in v) for k, v in (topo.get("spines") or {}).items()}
    if leaves and topo.get("leaf_label"):
        bad(["localize", "topology"], "both leaf_label and leaves", "one of them: node labels, or a listing")
    seen: dict[str, str] = {}
    for leaf, members in leaves.items():
        for node in members:
            if node not in names:
                bad(["localize", "topology", "leaves", leaf], repr(node), "a node of nodes.names")
            elif node in seen:
                bad(["localize", "topology", "leaves", leaf], f"{node} also in {seen[node]}", "each node in one leaf")
            seen[node] = leaf
    if leaves and len(seen) < len(names):
        missing = [n for n in names if n not in seen]
        bad(["localize", "topology", "leaves"], f"no leaf for {', '.join(missing[:5])}", "a leaf for every node")
    for spine, members in spines.items():
        for leaf in members:
            if leaf not in leaves:
                bad(
                    ["localize", "topology", "spines", spine],
                    repr(leaf),
                    "a leaf listed under localize.topology.leaves",
                )
    d = LocalizeSettings()
    return LocalizeSettings(
        enabled=bool(raw.get("enabled", d.enabled)),
        deadline_s=parse_duration(raw.get("deadline", d.deadline_s)),
        round_timeout_s=parse_duration(raw.get("round_timeout", d.round_timeout_s)),
        max_rounds=int(raw.get("max_rounds", d.max_rounds)),
        sweep_sizes=int(raw.get("sweep_sizes", d.sweep_sizes)),
        topology=TopologySettings(topo.get("leaf_label"), topo.get("spine_label"), leaves, spines),
    )


def _scenario(base: Path, value: str) -> Path:
    """A scenario by name (``healthy-16``: one of the simulator's own) or a YAML file relative to the profile."""
    if "/" not in value and not value.endswith((".yaml", ".yml")):
        return Path(value)
    return _relative(base, value) or Path(value)


def _relative(base: Path, value: str | None) -> Path | None:
    """Paths in a profile are absolute, or relative to the folder of the profile file."""
    if value is None:
        return None
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (base.parent / path).resolve()


def _check_nccl_args(args: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, str] | None:
    """(found, expected) when the nccl-tests command does not parse."""
    from acceptance.tools import nccl

    try:
        nccl.NcclTest.from_argv(args, env)
    except UsageError as exc:
        return " ".join(args), str(exc)
    return None
