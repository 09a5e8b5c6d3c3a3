"""The ``ssh:`` section of a profile: how the hosts of backend ``ssh`` are reached.

Parsed here, by the backend that uses it (as ``kube:`` is by `acceptance.clusters.kube.settings`), when the
profile loads; every problem is handed to the profile's `bad` (file, line, path, found, expected).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acceptance.units import parse_duration

#: how the profile reports a problem: (path inside the document, what was found, what was expected)
Bad = Callable[[Sequence[str | int], str, str], None]
DEFAULT_RUN_DIR = "/tmp/recovery-acceptance"


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
    lease_s: float = 90.0  # renewed every third of this; a killed run's processes are leftovers after it


def ssh_settings(
    raw: Mapping[str, Any], names: Sequence[str], relative: Callable[[str | None], Path | None], bad: Bad
) -> SshSettings:
    """The section `raw` for the profile's nodes `names`; `relative` resolves a path the way the profile does."""
    missing = [n for n in names if n not in raw["hosts"]]
    if missing:
        bad(["ssh", "hosts"], f"no address for {', '.join(missing)}", "an address for every node")
    head = raw.get("head_node", names[0])
    if head not in names:
        bad(["ssh", "head_node"], repr(head), "one of the nodes")
    launcher, smoke = raw.get("launcher") or {}, raw.get("smoke") or {}
    if smoke.get("log_node_rank", 0) >= len(names):
        bad(["ssh", "smoke", "log_node_rank"], str(smoke["log_node_rank"]), f"a node rank below {len(names)}")
    return SshSettings(
        hosts=dict(raw["hosts"]),
        user=raw.get("user"),
        port=int(raw["port"]) if "port" in raw else None,
        key=relative(raw.get("key")),
        known_hosts=relative(raw.get("known_hosts")),
        head_node=head,
        config=relative(raw.get("config")),
        jump=raw.get("jump"),
        env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
        connect_timeout_s=parse_duration(raw.get("connect_timeout", 15)),
        command_timeout_s=parse_duration(raw.get("command_timeout", 120)),
        run_dir=str(raw.get("run_dir", DEFAULT_RUN_DIR)).rstrip("/") or DEFAULT_RUN_DIR,
        launcher_mpirun=str(launcher.get("mpirun", "mpirun")),
        launcher_args=tuple(str(a) for a in launcher.get("args") or ()),
        launcher_identity=launcher.get("identity_file"),
        smoke_launch=str(smoke.get("launch", "mpirun")),
        master_port=int(smoke.get("master_port", 29500)),
        log_node_rank=int(smoke.get("log_node_rank", 0)),
        lease_s=parse_duration(raw.get("lease", 90)),
    )
