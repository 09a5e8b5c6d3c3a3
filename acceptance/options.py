"""The plugin's options: one group, each with an ini twin and an environment variable.

Precedence, shown in the report header: command line > environment > ini > default.
`RunOptions.of(config)` resolves them once per run into one frozen object kept in the
config's stash; a pytest-xdist worker takes the controller's, handed over in its workerinput.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

if TYPE_CHECKING:
    from acceptance.clusters import SimFaults

ENV_PREFIX = "ACCEPTANCE_"
MISSING_CLUSTER = (
    "the acceptance suite needs a cluster: `pytest acceptance/ --cluster=sim` runs it on the embedded "
    "simulated cluster; `--cluster=NAME` tests the cluster of baselines/NAME/cluster.yaml"
)


@dataclass(frozen=True)
class Option:
    flag: str
    dest: str
    help: str
    kind: str = "string"  # string | bool | list | path | int | faults (a list of simulator fault specs)
    default: Any = None
    metavar: str | None = None


OPTIONS: tuple[Option, ...] = (
    Option(
        "--cluster",
        "cluster",
        "cluster profile to test: baselines/NAME/cluster.yaml ('sim' = simulated)",
        metavar="NAME",
    ),
    Option(
        "--baselines-dir",
        "baselines_dir",
        "folder of cluster profiles and baselines (default: baselines)",
        kind="path",
        default="baselines",
        metavar="DIR",
    ),
    Option(
        "--record-baseline",
        "record_baseline",
        "record a new handover baseline from this run",
        kind="bool",
        default=False,
    ),
    Option(
        "--force-record",
        "force_record",
        "record even though a check failed; the reason is kept in the baseline's provenance",
        metavar="REASON",
    ),
    Option(
        "--returned-node",
        "returned_nodes",
        "a node returned from repair (repeatable); default: all nodes",
        kind="list",
        default=(),
        metavar="NODE",
    ),
    Option("--ticket", "ticket", "incident ticket this run belongs to (e.g. INC-1234)", metavar="ID"),
    Option(
        "--report-dir",
        "report_dir",
        "report folder (default: reports/<cluster>/<UTC time>)",
        kind="path",
        metavar="DIR",
    ),
    Option(
        "--sign-key",
        "sign_key",
        "SSH private key that signs the report (default: ssh-agent)",
        kind="path",
        metavar="PATH",
    ),
    Option("--no-sign", "no_sign", "write an unsigned report", kind="bool", default=False),
    Option(
        "--allow-unredacted",
        "allow_unredacted",
        "sign the report although this file of it (relative to the report folder; repeatable) holds a value "
        "that looks like a credential (a false positive); the report's manifest says so",
        kind="list",
        default=(),
        metavar="FILE",
    ),
    Option(
        "--allow-unsigned-baseline",
        "allow_unsigned_baseline",
        "judge with a baseline that is not signed by the profile's allowed signers (labs only; the report says so)",
        kind="bool",
        default=False,
    ),
    Option(
        "--sim-fault",
        "sim_faults",
        "inject a fault into the simulated cluster (repeatable), "
        "e.g. nic-degraded@sim-node-07, gpu-xid@sim-node-03:5, bad-restore, xid-recur@sim-node-07:3@6h",
        kind="faults",
        default=(),
        metavar="KIND[@NODE[:INDEX]][@OFFSET]",
    ),
    Option(
        "--smoke-log",
        "smoke_log",
        "judge this training log as the smoke run instead of running the job",
        kind="path",
        metavar="LOG",
    ),
    Option(
        "--pre-incident-log",
        "pre_incident_log",
        "training log from before the incident",
        kind="path",
        metavar="LOG",
    ),
    Option("--restore-step", "restore_step", "checkpoint step the job was restored from", kind="int", metavar="N"),
    Option(
        "--ssh-insecure-accept-new",
        "ssh_insecure_accept_new",
        "SSH clusters: accept host keys known_hosts does not list, WITHOUT verifying them (changed keys are still "
        "refused); the report says so",
        kind="bool",
        default=False,
    ),
    Option(
        "--probation-from",
        "probation_from",
        "criterion 5: the signed report of the passing acceptance whose probation to judge "
        "(default: the newest acceptance report of --ticket under reports/<cluster>/)",
        kind="path",
        metavar="REPORT_DIR",
    ),
    Option(
        "--progress-every",
        "progress_every",
        "seconds between progress lines while workloads run, when the output is not a terminal or under -n "
        "(a terminal shows live lines); 0: no progress",
        kind="int",
        default=30,
        metavar="SECONDS",
    ),
)


def ini_name(option: Option) -> str:
    return "acceptance_" + option.dest


def env_name(option: Option) -> str:
    return ENV_PREFIX + option.dest.upper()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("recovery-acceptance", "recovery acceptance of a GPU cluster")
    for option in OPTIONS:
        if option.kind == "bool":
            group.addoption(option.flag, action="store_true", dest=option.dest, default=None, help=option.help)
            parser.addini(ini_name(option), option.help, type="bool", default=option.default)
        elif option.kind in ("list", "faults"):
            group.addoption(
                option.flag,
                action="append",
                dest=option.dest,
                default=None,
                metavar=option.metavar,
                help=option.help,
            )
            parser.addini(ini_name(option), option.help, type="linelist", default=list(option.default))
        else:
            group.addoption(
                option.flag,
                action="store",
                dest=option.dest,
                default=None,
                metavar=option.metavar,
                help=option.help,
            )
            parser.addini(ini_name(option), option.help, type="string", default=option.default or "")


def targets_suite(config: pytest.Config, suite_dir: Path) -> bool:
    """True when the command line asks pytest to collect the acceptance suite (`suite_dir`) itself."""
    for arg in config.args:
        head = arg.split("::", 1)[0]
        if head == "acceptance" and config.option.pyargs:
            return True
        try:
            path = (config.invocation_params.dir / head).resolve()
        except OSError:
            continue
        if path == suite_dir or suite_dir in path.parents:
            return True
    return False


@dataclass(frozen=True)
class Setting:
    value: Any
    origin: str  # "command line", "environment ACCEPTANCE_X", "ini acceptance_x", "default"


def resolve(config: pytest.Config, option: Option) -> Setting:
    """The option's value and where it came from."""
    raw = config.getoption(option.dest)
    if raw is not None:
        return Setting(_convert(option, raw, f"{option.flag}"), "command line")
    env = os.environ.get(env_name(option))
    if env:
        value: Any = env.split(",") if option.kind in ("list", "faults") else env
        if option.kind == "bool":
            value = env.strip().lower() in {"1", "true", "yes", "on"}
        return Setting(_convert(option, value, f"environment {env_name(option)}"), f"environment {env_name(option)}")
    ini = config.getini(ini_name(option))
    if ini not in (None, "", []) and ini != option.default and not (option.kind in ("list", "faults") and not ini):
        return Setting(_convert(option, ini, f"ini {ini_name(option)}"), f"ini {ini_name(option)}")
    return Setting(_convert(option, option.default, "default"), "default")


def _convert(option: Option, value: Any, where: str) -> Any:
    if value is None:
        return None
    if option.kind == "bool":
        return bool(value)
    if option.kind == "list":
        items: Sequence[str] = [value] if isinstance(value, str) else list(value)
        return tuple(v.strip() for v in items if v.strip())
    if option.kind == "faults":
        return _faults(value, option, where)
    if option.kind == "path":
        return Path(str(value))
    if option.kind == "int":
        return _int(value, option, where)
    return str(value)


def _faults(value: Any, option: Option, where: str) -> Any:
    """Fault specs, parsed here, once, into the simulator's fault objects (`acceptance.clusters.parse_faults`)."""
    from acceptance.clusters import parse_faults
    from acceptance.errors import UsageError

    items: Sequence[str] = [value] if isinstance(value, str) else list(value)
    try:
        return parse_faults([v.strip() for v in items if v.strip()])
    except UsageError as exc:
        source = "" if where == option.flag else f" (from {where})"
        raise pytest.UsageError(f"{option.flag}{source}: {exc}") from None


def _int(value: Any, option: Option, where: str) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise pytest.UsageError(
            f"{option.flag}: {value!r} from {where} is not a whole number (expected e.g. {option.flag}=1000)"
        ) from None
    if number < 0:
        raise pytest.UsageError(f"{option.flag}: {number} from {where} must not be negative")
    return number


WORKERINPUT_KEY = "acceptance_options"


@dataclass(frozen=True)
class RunOptions:
    """Every option of the plugin, resolved and typed; `origins` names where each non-default value came from."""

    cluster: str | None
    baselines_dir: Path
    record_baseline: bool
    force_record: str | None
    returned_nodes: tuple[str, ...]
    ticket: str | None
    report_dir: Path | None
    sign_key: Path | None
    no_sign: bool
    allow_unredacted: tuple[str, ...]
    allow_unsigned_baseline: bool
    sim_faults: SimFaults  # parsed once, here (`acceptance.clusters.parse_faults`)
    smoke_log: Path | None
    pre_incident_log: Path | None
    restore_step: int | None
    ssh_insecure_accept_new: bool
    probation_from: Path | None
    progress_every: int
    origins: tuple[tuple[str, str], ...] = ()  # (dest, origin) of every value not from the default, in OPTIONS order

    KEY: ClassVar[pytest.StashKey[RunOptions]] = pytest.StashKey()

    @classmethod
    def of(cls, config: pytest.Config) -> RunOptions:
        """This run's options, resolved at the first call (a worker's come from the controller's)."""
        found = config.stash.get(cls.KEY, None)
        if found is None:
            workerinput: Mapping[str, Any] | None = getattr(config, "workerinput", None)
            if workerinput is not None and WORKERINPUT_KEY in workerinput:
                found = cls.from_plain(workerinput[WORKERINPUT_KEY])
            else:
                found = cls.resolve(config)
            config.stash[cls.KEY] = found
        return found

    @classmethod
    def resolve(cls, config: pytest.Config) -> RunOptions:
        """Each option from the command line, the environment, the ini file or its default."""
        settings = {option.dest: resolve(config, option) for option in OPTIONS}
        origins = tuple((dest, s.origin) for dest, s in settings.items() if s.origin != "default")
        return cls(**{dest: s.value for dest, s in settings.items()}, origins=origins)

    def to_plain(self) -> dict[str, Any]:
        """JSON-safe data (what pytest-xdist hands a worker); `from_plain` reads it back."""
        out: dict[str, Any] = {}
        for option in OPTIONS:
            value = getattr(self, option.dest)
            plain = (
                [str(f) for f in value]
                if option.kind == "faults"
                else list(value)
                if isinstance(value, tuple)
                else value
            )
            out[option.dest] = str(plain) if isinstance(plain, Path) else plain
        out["origins"] = [list(pair) for pair in self.origins]
        return out

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> RunOptions:
        values = {option.dest: _convert(option, data[option.dest], "workerinput") for option in OPTIONS}
        return cls(**values, origins=tuple((str(dest), str(origin)) for dest, origin in data["origins"]))

    def changed(self) -> list[str]:
        """``dest=value (origin)`` of every option set other than by its default, but the cluster."""
        return [f"{dest}={getattr(self, dest)!r} ({origin})" for dest, origin in self.origins if dest != "cluster"]
