"""Criterion 5's cluster signals on Slurm: what happened to the returned nodes during the window, not only now.

Sources, each said in a ``Coverage`` event: the nodes' state now (``scontrol -o show node``: drained, down,
not responding, timed by the reason's stamp); with slurmdbd (``AccountingStorageType=accounting_storage/
slurmdbd``) its node events (``sacctmgr show event``: every down or drain with its reason, who set it and
how long it lasted) and the jobs that ran on the nodes and ended NODE_FAIL, BOOT_FAIL, TIMEOUT, FAILED or
OUT_OF_MEMORY (``sacct``); and slurmctld's own log (``SlurmctldLogFile`` of ``scontrol show config``, when it
can be read where the commands run): drains, not responding, back to service, jobs requeued or killed
because their node failed. Slurm prints local times without a zone: they are read in the zone of the host
the commands run on (``date +%z``), which a site runs in the controller's zone.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone

from acceptance.clusters.base import NODE_NOT_READY, NODE_PROBLEM, ClusterEvent
from acceptance.clusters.slurm.reservations import Runs
from acceptance.errors import ParseError
from acceptance.tools import slurm as tools

NODE_READY = "NodeReady"  # a node back in service (Normal: recorded, never a recurrence)
# Job end states of jobs that ran on a returned node: a node's fault (counted), or the job's (recorded as a
# warning whose reason a profile may add to recurrence.node_event_reasons).
NODE_STATES = ("NODE_FAIL", "BOOT_FAIL")
JOB_STATES = ("TIMEOUT", "FAILED", "OUT_OF_MEMORY")
JOB_FIELDS = ("JobID", "JobName", "State", "ExitCode", "NodeList", "End")
LOG_LINES = 5000
_STAMP = "%Y-%m-%dT%H:%M:%S"
_SPLIT = "@@recovery-acceptance-signals@@"
_UNREADABLE = "@unreadable"
_PATTERN = "update_node: node|not responding|now responding|returned to service|failure of node|on failed node"


def _config(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _zone(text: str) -> timezone:
    """``+0100`` (``date +%z``) as a zone; UTC when it cannot be read."""
    value = text.strip()
    if len(value) == 5 and value[0] in "+-" and value[1:].isdigit():
        sign = 1 if value[0] == "+" else -1
        return timezone(sign * timedelta(hours=int(value[1:3]), minutes=int(value[3:])))
    return UTC


def _when(text: str | None, zone: timezone) -> datetime | None:
    """A Slurm local time (``2026-12-02T17:11:35[.249]``) as an aware time."""
    try:
        return datetime.fromisoformat(text or "").replace(tzinfo=zone)
    except ValueError:
        return None


def change_event(change: tools.NodeChange, zone: timezone, source: str) -> ClusterEvent | None:
    """A recorded node change as criterion 5 reads it (None when its time cannot be read)."""
    when = _when(change.time, zone)
    if when is None:
        return None
    obj = f"Node/{change.node}"
    if change.kind == "up":
        return ClusterEvent(when, obj, NODE_READY, f"Slurm: {change.text or change.state} ({source})")
    if change.kind == "job_node_fail":
        return ClusterEvent(when, obj, NODE_PROBLEM, f"Slurm: {change.reason} ({source})", "Warning")
    said = f"Slurm state {change.state}" + (f": Reason={change.reason}" if change.reason else "")
    said += f" (set by {change.user})" if change.user else ""
    said += f", until {change.until}" if change.until else ""
    return ClusterEvent(when, obj, NODE_NOT_READY, f"{said} ({source})", "Warning")


def job_events(rows: Sequence[tools.AcctRow], nodes: Sequence[str], zone: timezone) -> list[ClusterEvent]:
    """sacct rows of jobs and steps that ended badly on `nodes`: NODE_FAIL/BOOT_FAIL are the node's fault
    (`NODE_PROBLEM`); TIMEOUT, FAILED, OUT_OF_MEMORY are recorded as ``SlurmJob<State>`` warnings."""
    out = []
    wanted = set(nodes)
    for row in rows:
        if row.state not in NODE_STATES + JOB_STATES:
            continue
        when = _when(row.get("End"), zone)
        job = row.job_id + (f".{row.step}" if row.step else "")
        code = f", exit {row.exit_code}:{row.signal}" if row.exit_code is not None else ""
        node_list = row.get("NodeList")
        on = [n for n in (tools.hostlist(node_list) if node_list and node_list != "None assigned" else ())
              if n in wanted]  # fmt: skip
        reason = NODE_PROBLEM if row.state in NODE_STATES else "SlurmJob" + row.state.title().replace("_", "")
        for node in on:
            out.append(ClusterEvent(when, f"Node/{node}", reason, f"Slurm: job {job} ({row.get('JobName')}) ended "
                                    f"{row.state}{code} on {node_list} (sacct)", "Warning"))  # fmt: skip
    return out


def _now_events(known: Mapping[str, tools.Node], nodes: Sequence[str], zone: timezone, since: datetime,
                now: datetime, reason_of: Callable[[tools.Node], str]) -> list[ClusterEvent]:  # fmt: skip
    """The nodes not usable now, timed by their reason's stamp (when the state was set) where Slurm gives one
    within the window, else now (a node not usable now is never taken for one that was fine)."""
    out = []
    for name in nodes:
        node = known.get(name)
        if node is None:
            out.append(ClusterEvent(now, f"Node/{name}", NODE_NOT_READY, "Slurm does not list the node", "Warning"))
        elif not node.state.usable:
            when = _when(node.reason_time, zone)
            when = when if when is not None and since <= when <= now else now
            out.append(ClusterEvent(when, f"Node/{name}", NODE_NOT_READY, reason_of(node) + " (now)", "Warning"))
    return out


class Signals:
    """One reading of the nodes' history (`read`), through the backend's command runner."""

    def __init__(self, run: Runs, show_nodes: Callable[[], Mapping[str, tools.Node]],
                 reason_of: Callable[[tools.Node], str]) -> None:  # fmt: skip
        self.run = run
        self.show_nodes = show_nodes
        self.reason_of = reason_of
        self.coverage: list[str] = []

    def read(self, nodes: Sequence[str], since: datetime) -> list[ClusterEvent]:
        now = datetime.now(UTC)
        wanted = list(dict.fromkeys(nodes))
        head = self.run(f"date +%z; echo {_SPLIT}; scontrol show config")
        zone_text, _, config_text = head.stdout.partition(f"{_SPLIT}\n")
        zone = _zone(zone_text)
        config = _config(config_text) if head.ok else {}
        start = since.astimezone(zone).strftime(_STAMP)
        out = _now_events(self.show_nodes(), wanted, zone, since, now, self.reason_of)
        self.coverage = ["the nodes' Slurm state now (scontrol -o show node)"]
        storage = config.get("AccountingStorageType", "")
        if storage.endswith("/slurmdbd"):
            out += self._dbd(wanted, start, zone)
        else:
            self.coverage.append(f"no slurmdbd (AccountingStorageType={storage or 'unknown'}): no sacctmgr node "
                                 "events, no sacct job states")  # fmt: skip
        out += self._log(config.get("SlurmctldLogFile", ""), wanted, zone)
        out = [e for e in out if e.time is None or e.time >= since]
        said = "Slurm node history read from: " + "; ".join(self.coverage)
        out.append(ClusterEvent(now, "cluster", "Coverage", said))
        return sorted(out, key=lambda e: e.time or since)

    def _dbd(self, nodes: Sequence[str], start: str, zone: timezone) -> list[ClusterEvent]:
        out: list[ClusterEvent] = []
        events = self.run(tools.event_query(nodes, start))
        if events.ok:
            changes, _ = tools.parse_events(events.stdout)
            out += [e for c in changes if c.node in nodes and (e := change_event(c, zone, "sacctmgr event"))]
            self.coverage.append(f"slurmdbd node events since {start} (sacctmgr show event)")
        else:
            self.coverage.append(f"slurmdbd node events NOT read: {events.said(200)}")
        argv = ["sacct", "--allusers", "--parsable2", "--noheader", f"--nodelist={','.join(nodes)}",
                f"--starttime={start}", "--endtime=now", f"--state={','.join(NODE_STATES + JOB_STATES)}",
                f"--format={','.join(JOB_FIELDS)}"]  # fmt: skip
        jobs = self.run(argv)
        try:
            rows = tools.parse_sacct(jobs.stdout, "sacct", JOB_FIELDS)[0] if jobs.ok and jobs.stdout.strip() else ()
        except ParseError as exc:
            self.coverage.append(f"sacct job states NOT read: {exc}")
            return out
        if jobs.ok:
            self.coverage.append(f"the job states of the nodes' jobs since {start} (sacct)")
            out += job_events(rows, nodes, zone)
        else:
            self.coverage.append(f"sacct job states NOT read: {jobs.said(200)}")
        return out

    def _log(self, path: str, nodes: Sequence[str], zone: timezone) -> list[ClusterEvent]:
        if not path or path == "(null)":
            self.coverage.append("slurmctld's log NOT read (SlurmctldLogFile not set: syslog or nowhere)")
            return []
        q = shlex.quote(path)
        answer = self.run(f"test -r {q} || {{ echo {_UNREADABLE}; exit 0; }}; head -n 1 {q}; echo {_SPLIT}; "
                          f"grep -E {shlex.quote(_PATTERN)} {q} | tail -n {LOG_LINES}; exit 0")  # fmt: skip
        if not answer.ok or answer.stdout.startswith(_UNREADABLE):
            why = answer.said(200) if not answer.ok else "not readable by this user on this host"
            self.coverage.append(f"slurmctld's log {path} NOT read ({why}): state changes between now and the "
                                 "window's start are unknown")  # fmt: skip
            return []
        first, _, body = answer.stdout.partition(f"{_SPLIT}\n")
        lines, _ = tools.parse_log(body)
        starts = tools.parse_log(first)[0]
        reach = f" (it starts at {starts[0].time})" if starts else ""
        self.coverage.append(f"slurmctld's log {path}{reach}")
        wanted = set(nodes)
        changes = [c for c in tools.node_changes(lines) if c.node in wanted]
        return [e for c in changes if (e := change_event(c, zone, "slurmctld log")) is not None]
