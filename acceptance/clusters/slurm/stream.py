"""`StreamsLogs` on Slurm: a job's output file as it grows, and ``scancel`` to stop the job.

A job's launch (``srun`` or ``mpirun`` inside the batch script) writes its standard output to the
job's ``--output`` file in `run_dir`, which the login node sees. `follow` reads that file from where
it stopped, one short command per poll (the new bytes in base64, so a poll never splits a character
the caller sees, and whether the script has written its exit status yet), and hands out complete
lines. It ends once the script's exit status is there and the file is read to its end, once the job
has left the queue (cancelled, or failed before its script wrote anything) and the file is read to
its end, when the caller stops the job, or at the deadline. `stop` ``scancel``s the job; the `wait`
awaiting it sees the job leave the queue, and `stopped` turns that result into a success that says
why the harness stopped it, its output up to the stop kept.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import shlex
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from acceptance.clusters.base import Handle, WorkloadResult
from acceptance.clusters.slurm import commands
from acceptance.clusters.slurm.transport import Answer
from acceptance.errors import ClusterError

POLL_S = 0.5
QUEUE_EVERY = 4  # polls between two looks at the queue (a job that ends without an exit status)
CHUNK = 1 << 20  # bytes read per poll at most
_ENDED = "@@ra-ended@@"
_DATA = "@@ra-data@@"

Runner = Callable[[str, float], Answer]


@dataclass(frozen=True)
class Poll:
    """One look at a job's output file: the new bytes from the offset asked, and whether its script ended."""

    data: bytes
    ended: bool


def poll_command(output: str, offset: int, chunk: int = CHUNK) -> str:
    """Whether the script wrote ``OUTPUT.rc`` (checked first: then the file is whole), then at most `chunk`
    bytes of the output from byte `offset`, in base64."""
    out, rc = shlex.quote(output), shlex.quote(f"{output}.rc")
    return (f"[ -e {rc} ] && echo {_ENDED}; echo {_DATA}; "
            f"tail -c +{offset + 1} {out} 2>/dev/null | head -c {chunk} | base64 -w0; echo")  # fmt: skip


def parse_poll(stdout: str) -> Poll:
    """`poll_command`'s output; raise ValueError when it is not that."""
    head, sep, body = stdout.partition(f"{_DATA}\n")
    if not sep:
        raise ValueError(f"no {_DATA} line in {stdout[:200]!r}")
    try:
        data = base64.b64decode(body.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not base64 after {_DATA}: {exc}") from None
    return Poll(data, _ENDED in head)


def job_of(handle: Handle) -> tuple[str, str] | None:
    """(job id, output file) of a submitted job's handle; None when it was not submitted."""
    manifest = handle.manifests[0] if handle.manifests else {}
    job_id, output = manifest.get("job_id"), manifest.get("output")
    return (str(job_id), str(output)) if job_id and output else None


class JobStreams:
    """Following and stopping the jobs of one run (`run` runs one shell command where Slurm's commands run)."""

    def __init__(
        self, run: Runner, where: str, *, poll_s: float = POLL_S,
        clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
    ) -> None:  # fmt: skip
        self._run = run
        self.where = where
        self.poll_s = poll_s
        self._clock = clock
        self._sleep = sleep
        self._stops: dict[str, str] = {}  # job id -> why the harness stopped it

    def follow(self, handle: Handle, deadline_s: float) -> Iterator[str]:
        """New complete lines of the job's output as they appear (see the module docstring)."""
        found = job_of(handle)
        if found is None:
            return
        job_id, output = found
        end = self._clock() + deadline_s
        offset, pending, polls = 0, b"", 0
        while self._clock() < end and job_id not in self._stops:
            answer = self._run(poll_command(output, offset), max(5.0, min(60.0, end - self._clock())))
            try:
                got = parse_poll(answer.stdout) if answer.ok else None
            except ValueError:
                got = None
            if got is not None:
                offset += len(got.data)
                pending += got.data
                cut = pending.rfind(b"\n") + 1
                if cut:
                    yield pending[:cut].decode("utf-8", "replace")
                    pending = pending[cut:]
                more = len(got.data) >= CHUNK
                if more:
                    continue
                gone = not got.ended and polls % QUEUE_EVERY == QUEUE_EVERY - 1 and self._left_queue(job_id)
                if got.ended or gone:
                    if gone:  # it may have printed between this poll and the look at the queue
                        last = self._run(poll_command(output, offset), 30.0)
                        with contextlib.suppress(ValueError):  # the wait's result has the whole file
                            pending += parse_poll(last.stdout).data if last.ok else b""
                    if pending and job_id not in self._stops:
                        yield pending.decode("utf-8", "replace")
                    return
            polls += 1
            self._sleep(self.poll_s)

    def _left_queue(self, job_id: str) -> bool:
        """Whether the job is no longer in this user's queue (False when the queue cannot be read)."""
        answer = self._run(shlex.join(["squeue", "--noheader", "--me", "--format=%i"]), 30.0)
        return answer.ok and job_id not in answer.stdout.split()

    def stop(self, handle: Handle, reason: str) -> None:
        """``scancel`` the job; raise ClusterError with the command and its output when that fails."""
        found = job_of(handle)
        if found is None:
            return
        self._stops.setdefault(found[0], reason)
        answer = self._run(shlex.join(commands.scancel_argv([found[0]])), 60.0)
        if not answer.ok:
            raise ClusterError(f"stopping job {found[0]}: scancel failed on {self.where}: {answer.said()}")

    def stopped(self, handle: Handle, result: WorkloadResult) -> WorkloadResult:
        """A job the harness stopped ended because it was: a success with no exit status, saying why."""
        found = job_of(handle)
        why = self._stops.get(found[0]) if found is not None else None
        if why is None or result.status not in ("succeeded", "failed"):
            return result
        return dataclasses.replace(result, status="succeeded", exit_code=None, stopped=why,
                                   reason=f"stopped by the harness: {why}")  # fmt: skip
