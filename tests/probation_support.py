"""Criterion 5 in tests: simulated production periods served by one real Prometheus, and signed acceptance reports.

Several scenarios live in one TSDB at different times (one window each), so a test module
starts one Prometheus. Acceptance reports are made with the project's own report code
(`report.finalize`: junit signed with ssh-keygen, MANIFEST.json signed), with the pass time a
test needs, so a window can be long elapsed or still open.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from acceptance.profile import load_profile_file
from acceptance.report.data import ReportData
from acceptance.report.finalize import finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.sign import SignOptions
from acceptance.sim import promserver
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.model.production import DEFAULT_FIELDS, Production
from acceptance.sim.probation import sim_cluster, write_period
from tests.suite_run import ROOT, copy_agreement, demo_key, sim_profile_text

JUDGED_FIELDS = (
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
)
assert set(JUDGED_FIELDS) <= set(DEFAULT_FIELDS)


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: tuple[str, ...]
    start: datetime
    length_s: float
    faults: tuple[str, ...] = ()
    fields: tuple[str, ...] = JUDGED_FIELDS


@dataclass(frozen=True)
class Served:
    url: str
    dumps: dict[str, Path]  # scenario -> its own dumps folder (for the offline source)
    logs: dict[str, list[Path]]
    scenarios: dict[str, Scenario]


def sim_profile(folder: Path) -> Path:
    """The shipped sim profile with its agreement (signed baseline, allowed signers) under `folder`."""
    path = folder / "baselines" / "sim" / "cluster.yaml"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sim_profile_text())
        copy_agreement(path.parent)
    return path


def demo_signer(folder: Path) -> Path:
    """The simulator's demo key (in the shipped allowed_signers): it signs the tests' acceptance reports."""
    folder.mkdir(parents=True, exist_ok=True)
    return demo_key(folder)


def backfilled(folder: Path, scenarios: Sequence[Scenario]) -> tuple[Path, dict[str, Path], dict[str, list[Path]]]:
    """Every scenario's period written and backfilled into one TSDB: (tsdb, dumps per scenario, logs)."""
    profile = load_profile_file(sim_profile(folder / "profile"))
    cluster = sim_cluster(profile)
    names = [n.name for n in cluster.nodes]
    dumps, logs, files = {}, {}, []
    for s in scenarios:
        model = Production(
            cluster, s.nodes, s.start, s.length_s, SimFaults.parse(s.faults).check(names).probation, fields=s.fields
        )
        written, logs[s.name] = write_period(model, folder / s.name)
        dumps[s.name] = folder / s.name / "dumps"
        files.extend(written)
    promserver.backfill(files, folder / "tsdb")
    return folder / "tsdb", dumps, logs


@contextmanager
def serve(folder: Path, scenarios: Sequence[Scenario]) -> Iterator[Served]:
    """Every scenario's period backfilled into one TSDB and served by one `prometheus`."""
    tsdb, dumps, logs = backfilled(folder, scenarios)
    server = promserver.PrometheusServer.start(tsdb, "tests")
    try:
        yield Served(server.url, dumps, logs, {s.name: s for s in scenarios})
    finally:
        server.stop()


def keypair(folder: Path) -> tuple[Path, Path]:
    key = folder / "signer"
    folder.mkdir(parents=True, exist_ok=True)
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "oncall@provider", "-f", str(key)], check=True
        )
    allowed = folder / "allowed_signers"
    allowed.write_text(f"oncall@provider {(folder / 'signer.pub').read_text().strip()}\n")
    return key, allowed


def acceptance_report(
    folder: Path,
    key: Path,
    *,
    passed_at: datetime,
    nodes: Sequence[str] = ("sim-node-07",),
    ticket: str = "INC-7",
    cluster: str = "sim",
    failed: bool = False,
) -> Path:
    """A signed report of an acceptance of `ticket` that passed (or not) at `passed_at`, as the plugin writes one."""
    start = passed_at.astimezone(UTC).isoformat(timespec="seconds")
    failure = '<failure message="FAIL: busbw">FAIL</failure>' if failed else ""
    cases = (
        '<testcase classname="acceptance.test_preflight" name="test_cluster_answers" time="0.2" />'
        f'<testcase classname="acceptance.test_gpu_diagnostics" name="test_dcgm_diagnostics[{nodes[0]}]" time="2">'
        f"{failure}</testcase>"
    )
    written = folder.with_name(folder.name + "-pytest")  # where pytest wrote it; the report keeps a signed copy
    written.mkdir(parents=True, exist_ok=True)
    junit = written / "junit.xml"
    junit.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
        f'errors="0" failures="{int(failed)}" skipped="0" tests="2" time="2.2" timestamp="{start}" hostname="t">'
        f'<properties><property name="ticket" value="{ticket}" /></properties>{cases}</testsuite></testsuites>\n'
    )
    provenance = {
        "cluster": cluster,
        "backend": "sim",
        "ticket": ticket,
        "run_id": "ra-test",
        "mode": "judge",
        "returned_nodes": ",".join(nodes),
        "start_utc": start,
        "end_utc": start,
        "simulated": True,
    }
    result = finalize(ReportFolder.at(folder), junit, ReportData(provenance, (), True), SignOptions(key=key))
    assert result.signing.signed, result.signing.describe()
    return folder


def without(tools: Sequence[str], folder: Path) -> str:
    """A PATH of symlinks to everything on /usr/bin and /bin except `tools` (a machine without them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in (Path("/usr/bin"), Path("/bin")):
        for entry in directory.iterdir():
            target = folder / entry.name
            if entry.name not in tools and not target.exists():
                target.symlink_to(entry)
    return str(folder)


__all__ = [
    "ROOT",
    "Scenario",
    "Served",
    "acceptance_report",
    "backfilled",
    "keypair",
    "serve",
    "sim_profile",
    "without",
]
