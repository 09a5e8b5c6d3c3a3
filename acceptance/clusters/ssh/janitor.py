"""Finding and ending what runs left on the hosts: processes under a run-id marker and run folders.

A run's age comes from its id (``ra-<UTC start>-xxxx``) when it has one, else from how long its
oldest process or its folder has existed, as the host counts. A run is live while a lease file
of it on any host has time left (by that host's clock, so clock skew between hosts does not
matter): its processes are another run using the hosts now, not leftovers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from acceptance.clusters import base
from acceptance.clusters.ssh.remote import Scan, kill_script


@dataclass(frozen=True)
class Leftover:
    """One thing of an earlier run on one host."""

    node: str
    run_id: str
    what: str  # "process 1234 `dcgmi diag -r 3 -j`" or "folder /tmp/recovery-acceptance/ra-..."
    age_s: float | None

    def __str__(self) -> str:
        age = f", {self.age_s / 60:.0f} min old" if self.age_s is not None else ""
        return f"{self.node}: {self.what} (run {self.run_id}{age})"

    def as_leftover(self, live: Mapping[str, datetime]) -> base.Leftover:
        """The protocol's record: ``node: what`` of run `run_id`, live until its lease ends (if live)."""
        age = f", {self.age_s / 60:.0f} min old" if self.age_s is not None else ""
        return base.Leftover(f"{self.node}: {self.what}{age}", self.run_id, live.get(self.run_id))


def live_runs(scans: Iterable[Scan], now: datetime) -> dict[str, datetime]:
    """Run id → when its lease ends (local time), for the runs a lease file on any host still holds."""
    out: dict[str, datetime] = {}
    for scan in scans:
        for lease in scan.leases:
            if lease.remaining_s > 0:
                until = now + timedelta(seconds=lease.remaining_s)
                out[lease.run_id] = max(until, out.get(lease.run_id, until))
    return out


def run_started(run_id: str) -> datetime | None:
    """The UTC start a run id carries (``ra-20261130003857-ab12``), if any."""
    parts = run_id.split("-")
    if len(parts) >= 2 and len(parts[1]) == 14 and parts[1].isdigit():
        try:
            return datetime.strptime(parts[1], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            return None
    return None


def leftovers_of(node: str, scan: Scan, *, skip_run: str | None, now: datetime) -> list[Leftover]:
    """Everything of runs other than `skip_run` that `scan` found on `node`."""
    ages: dict[str, float] = {}
    for run_id in scan.run_ids():
        started = run_started(run_id)
        if started is not None:
            ages[run_id] = (now - started).total_seconds()
    seen: list[tuple[str, float | None]] = [(p.run_id, p.age_s) for p in scan.processes]
    seen += [(f.run_id, f.age_s) for f in scan.folders]
    by_ages: dict[str, float] = {}
    for run_id, age in seen:
        if run_id not in ages and age is not None:
            by_ages[run_id] = max(age, by_ages.get(run_id, 0.0))
    ages.update(by_ages)
    out = [Leftover(node, p.run_id, f"process {p.pid} `{p.args[:120]}`", ages.get(p.run_id))
           for p in scan.processes if p.run_id != skip_run]  # fmt: skip
    out += [Leftover(node, f.run_id, f"folder {f.path}", ages.get(f.run_id))
            for f in scan.folders if f.run_id != skip_run]  # fmt: skip
    return out


def older_than(items: Iterable[Leftover], seconds: float | None) -> list[Leftover]:
    """The leftovers of runs at least `seconds` old (all when None; a run of unknown age counts as old)."""
    items = list(items)
    if seconds is None:
        return items
    return [i for i in items if i.age_s is None or i.age_s >= seconds]


def removal_script(run_dir: str, run_ids: Iterable[str]) -> str:
    """End the processes of each run and remove its folder, one run after the other."""
    return "".join(kill_script(run_id, run_dir).replace("exit 0\n", "") for run_id in sorted(set(run_ids))) + "exit 0\n"


def left_lines(node: str, text: str) -> list[str]:
    """``left PID ARGS`` lines of a kill script → what is still alive on `node`."""
    return [f"{node}: process {line[5:].strip()}" for line in text.splitlines() if line.startswith("left ")]


def by_node(items: Iterable[Leftover]) -> Mapping[str, set[str]]:
    out: dict[str, set[str]] = {}
    for item in items:
        out.setdefault(item.node, set()).add(item.run_id)
    return out
