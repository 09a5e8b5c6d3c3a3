"""The training logs criteria 3 and 4 judge: the smoke run of the customer's job and the log it continues.

Logs come from the command line (``--smoke-log``, ``--pre-incident-log``), from paths in the
profile (``logs:``), or from running the profile's ``smoke`` commands on the cluster, once
per run, after the DCGM diagnostics, alone on the GPUs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from acceptance.clusters.base import SmokeWorkload
from acceptance.criteria.scheduler import Batch
from acceptance.criteria.smoke import stream_watch
from acceptance.errors import JobFailed, UsageError, WorkloadNotRun
from acceptance.profile import SmokeSpec
from acceptance.tools import trainlog

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts


class TrainingLogs:
    """The smoke and pre-incident logs of one pytest process (parsed once each)."""

    def __init__(self, run: RunParts) -> None:
        self.run = run
        self._parsed: dict[str, trainlog.TrainLog] = {}
        #: key → why the harness stopped that run early (the smoke run's verdict was decided); absent: ran whole
        self.stopped: dict[str, str] = {}
        #: key → how the cluster started that run's ranks (`WorkloadResult.launch`), where the backend chooses it
        self.launches: dict[str, str] = {}

    @property
    def restore_step(self) -> int | None:
        ctx = self.run.context
        if ctx.logs.restore_step is not None:
            return ctx.logs.restore_step
        return ctx.profile.smoke.restore_step if ctx.profile.smoke else None

    def runs_job(self) -> bool:
        """Whether the smoke log comes from running the profile's job on the cluster (not from a file)."""
        ctx = self.run.context
        return ctx.profile.smoke is not None and (ctx.logs.smoke or self._configured("smoke")) is None

    def smoke(self) -> trainlog.TrainLog:
        """The smoke run's log; JobFailed when the run failed, WorkloadNotRun when it gave nothing to judge."""
        if "smoke" not in self._parsed:
            path = self.run.context.logs.smoke or self._configured("smoke")
            if path is not None:
                self._parsed["smoke"] = self._file(path, "smoke log")
            else:
                self._parsed["smoke"] = self._run("smoke", self._spec().command)
        return self._parsed["smoke"]

    def pre_incident(self) -> trainlog.TrainLog:
        """The log from before the incident; JobFailed when its run failed, WorkloadNotRun as `smoke`."""
        if "pre-incident" not in self._parsed:
            path = self.run.context.logs.pre_incident or self._configured("pre_incident")
            if path is not None:
                self._parsed["pre-incident"] = self._file(path, "pre-incident log")
            else:
                spec = self._spec()
                if spec.pre_incident_command is None:
                    raise UsageError(
                        f"{self.run.context.profile.path}: no pre-incident log: pass --pre-incident-log, "
                        "set logs.pre_incident, or smoke.pre_incident_command"
                    )
                self._parsed["pre-incident"] = self._run("pre-incident", spec.pre_incident_command)
        return self._parsed["pre-incident"]

    def _parse(self, text: str, source: str) -> trainlog.TrainLog:
        p = self.run.context.profile
        fmt = (p.smoke.format if p.smoke else None) or p.logs.get("format")
        return trainlog.parse(text.splitlines(keepends=True), source=source, format=fmt, columns=p.logs.get("columns"))

    def _file(self, path: Path, what: str) -> trainlog.TrainLog:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{what} {path}: cannot read it ({exc.strerror})") from None
        return self._parse(text, str(path))

    def _configured(self, key: str) -> Path | None:
        p = self.run.context.profile
        value = p.logs.get(key)
        return (p.path.parent / value).resolve() if value else None

    def _spec(self) -> SmokeSpec:
        p = self.run.context.profile
        if p.smoke is None:
            raise UsageError(
                f"{p.path}: no smoke job: add a 'smoke' section, or pass --smoke-log and --pre-incident-log"
            )
        return p.smoke

    def _run(self, key: str, argv: tuple[str, ...]) -> trainlog.TrainLog:
        p = self.run.context.profile
        spec = self._spec()
        workload = SmokeWorkload(f"train-{key}", p.nodes, p.gpus_per_node, argv, dict(spec.env), spec.timeout_s)
        self.run.diagnostics.finish_first()
        watch = None
        if key == "smoke":  # read as it runs, when the agreed rule may stop it early (criterion 3)
            watch = stream_watch(self.run.context, self.restore_step, lambda t: self._parse(t, "smoke run (streaming)"))
        batch = Batch(f"train-{key}", "training", {key: workload}, spec.timeout_s, watch=watch)
        result = self.run.scheduler.results(batch)[key]
        if result.stopped:
            self.stopped[key] = result.stopped
        if result.launch:
            self.launches[key] = result.launch
        if not result.ok:
            why = result.reason or f"exit {result.exit_code}"
            tail = result.log_tail.strip().splitlines()[-1:] if result.log_tail else []
            said = f"the {key} run of the job {result.status} ({why}){': ' + tail[0] if tail else ''}"
            if result.status != "failed":  # the API failed, a deadline passed, nothing could take it: not judged
                raise WorkloadNotRun(said)
            raise JobFailed(said)
        return self._parse(result.output, f"{key} run of {argv[-1] if argv else 'the job'}")
