"""The agreement: ``baselines/<cluster>/cluster.yaml``.

A profile says how to reach a cluster (backend ``kube``, ``ssh`` or ``sim``) and what
both sides agreed: node set, GPUs per node, DCGM level, the nccl-tests commands,
margins, the smoke job. Every problem found while loading names the file, the line,
the path inside the document, what was found and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptance import schemas
from acceptance.errors import ParseError, ProfileError, UsageError
from acceptance.margins import Margins
from acceptance.units import parse_duration
from acceptance.yamlsrc import Document, format_path, load_yaml

PROFILE_FILE = "cluster.yaml"


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
    env: Mapping[str, str]
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
class SshSettings:
    """How the hosts of backend ``ssh`` are reached (``ssh:``); unset values come from the ssh config.

    `launcher_*` say how ``mpirun`` on the head node reaches the other nodes; `smoke_launch` how the
    customer's job starts (``mpirun`` around it, ``head``: it is its own launcher, ``per-node``: torchrun-style).
    """

    hosts: Mapping[str, str]
    user: str | None
    port: int | None
    key: Path | None
    known_hosts: Path | None
    head_node: str
    config: Path | None = None
    jump: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    connect_timeout_s: float = 15.0
    command_timeout_s: float = 120.0
    run_dir: str = "/tmp/recovery-acceptance"
    launcher_mpirun: str = "mpirun"
    launcher_args: tuple[str, ...] = ()
    launcher_identity: str | None = None
    smoke_launch: str = "mpirun"
    master_port: int = 29500
    log_node_rank: int = 0


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

    def nccl_test(self, name: str) -> NcclTestSpec:
        for test in self.nccl_tests:
            if test.name == name:
                return test
        raise UsageError(f"{self.path}: no nccl test named {name!r} (have: {', '.join(self.test_names)})")

    @property
    def test_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.nccl_tests)

    def check_returned_nodes(self, nodes: Sequence[str], source: str = "--returned-node") -> None:
        """A returned node must belong to the agreement's node set."""
        unknown = [n for n in nodes if n not in self.nodes]
        if unknown:
            shown = ", ".join(self.nodes[:6]) + (", ..." if len(self.nodes) > 6 else "")
            raise UsageError(f"{source}: {', '.join(unknown)} is not in the node set of {self.path} (nodes: {shown})")


def profile_path(name: str, baselines_dir: Path) -> Path:
    return baselines_dir / name / PROFILE_FILE


def load_profile(name: str, baselines_dir: Path) -> Profile:
    """Load and validate ``<baselines_dir>/<name>/cluster.yaml``."""
    path = profile_path(name, baselines_dir)
    if not path.is_file():
        known = sorted(p.parent.name for p in baselines_dir.glob(f"*/{PROFILE_FILE}"))
        hint = f" (profiles in {baselines_dir}: {', '.join(known)})" if known else ""
        raise ProfileError(f"no profile for cluster {name!r}: {path} does not exist{hint}")
    return load_profile_file(path)


def load_profile_file(path: Path) -> Profile:
    try:
        doc = load_yaml(path)
    except ParseError as exc:
        raise ProfileError(str(exc)) from exc
    if not isinstance(doc.data, dict):
        raise ProfileError(f"{path}:1: (top level): expected a mapping of profile fields, found {doc.data!r}")
    found = [_format(doc, p, f, e) for p, f, e in schemas.problems("profile", doc.data)]
    if found:
        raise ProfileError(_joined(path, found))
    return _build(doc)


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


def _build(doc: Document) -> Profile:
    data: dict[str, Any] = doc.data
    problems: list[str] = []

    def bad(path: Sequence[str | int], found: str, expected: str) -> None:
        problems.append(_format(doc, path, found, expected))

    backend = data["backend"]
    section = {"kube": "kube", "ssh": "ssh", "sim": "sim"}[backend]
    if section not in data:
        bad([], f"backend {backend!r} without a '{section}' section", f"a '{section}' section")

    names: list[str] = data["nodes"]["names"]
    seen: set[str] = set()
    for i, node in enumerate(names):
        if node in seen:
            bad(["nodes", "names", i], repr(node), "each node named once (duplicate)")
        seen.add(node)

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
        margins = Margins.from_profile(data.get("margins", {}))
    except ValueError as exc:
        bad(["margins"], str(exc).split(":", 1)[0], str(exc).split(": ", 1)[-1])
        margins = Margins()

    ssh = None
    if "ssh" in data:
        raw_ssh = data["ssh"]
        missing = [n for n in names if n not in raw_ssh["hosts"]]
        if missing:
            bad(["ssh", "hosts"], f"no address for {', '.join(missing)}", "an address for every node")
        head = raw_ssh.get("head_node", names[0])
        if head not in names:
            bad(["ssh", "head_node"], repr(head), "one of the nodes")
        launcher, smoke_ssh = raw_ssh.get("launcher") or {}, raw_ssh.get("smoke") or {}
        if smoke_ssh.get("log_node_rank", 0) >= len(names):
            bad(["ssh", "smoke", "log_node_rank"], str(smoke_ssh["log_node_rank"]), f"a node rank below {len(names)}")
        ssh = SshSettings(
            hosts=dict(raw_ssh["hosts"]),
            user=raw_ssh.get("user"),
            port=int(raw_ssh["port"]) if "port" in raw_ssh else None,
            key=_relative(doc.path, raw_ssh.get("key")),
            known_hosts=_relative(doc.path, raw_ssh.get("known_hosts")),
            head_node=head,
            config=_relative(doc.path, raw_ssh.get("config")),
            jump=raw_ssh.get("jump"),
            env=_env(raw_ssh.get("env")),
            connect_timeout_s=parse_duration(raw_ssh.get("connect_timeout", 15)),
            command_timeout_s=parse_duration(raw_ssh.get("command_timeout", 120)),
            run_dir=str(raw_ssh.get("run_dir", "/tmp/recovery-acceptance")).rstrip("/") or "/tmp/recovery-acceptance",
            launcher_mpirun=str(launcher.get("mpirun", "mpirun")),
            launcher_args=_strings(launcher.get("args") or ()),
            launcher_identity=launcher.get("identity_file"),
            smoke_launch=str(smoke_ssh.get("launch", "mpirun")),
            master_port=int(smoke_ssh.get("master_port", 29500)),
            log_node_rank=int(smoke_ssh.get("log_node_rank", 0)),
        )

    sim = None
    if "sim" in data:
        raw_sim = data["sim"]
        sim = SimSettings(
            scenario=_relative(doc.path, raw_sim["scenario"]) or Path(raw_sim["scenario"]),
            seed=int(raw_sim.get("seed", 1)),
            time_scale=float(raw_sim.get("time_scale", 0.001)),
        )

    smoke = None
    if "smoke" in data:
        raw_smoke = data["smoke"]
        pre = raw_smoke.get("pre_incident_command")
        smoke = SmokeSpec(
            command=_strings(raw_smoke["command"]),
            pre_incident_command=_strings(pre) if pre else None,
            env=_env(raw_smoke.get("env")),
            format=raw_smoke.get("format"),
            restore_step=raw_smoke.get("restore_step"),
            warmup_steps=raw_smoke.get("warmup_steps"),
            timeout_s=parse_duration(raw_smoke.get("timeout", 3600)),
        )

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
        dcgm_timeout_s=parse_duration(data["dcgm"].get("timeout", 2 * 3600)),
        dcgm_warning_policy=data["dcgm"].get("fail_on_warning_severity", "isolate"),
        dcgm_host_engine=str(data["dcgm"].get("host_engine", "embedded")),
        nccl_tests=tuple(tests),
        nccl_timeout_s=parse_duration(data["nccl"].get("timeout", 3600)),
        margins=margins,
        smoke=smoke,
        logs=dict(data.get("logs", {})),
        kube=dict(data.get("kube", {})),
        ssh=ssh,
        sim=sim,
    )


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
