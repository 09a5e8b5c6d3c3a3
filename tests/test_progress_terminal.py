"""Live progress in a real pytest run on the emulator: plain lines through a pipe, a rewritten line on a terminal (pty).

The DCGM module alone on the returned node sim-node-07, whose image cache is cold (a 100 GiB DCGM image at
150 MiB/s: about 2.7 s of wall time at the time scale used here, then about 3.6 s of diagnostics), so the run
shows the phases "pulling image" and "running" against the 1h00m deadline. The junit file is the same with
progress on a pipe, on a terminal and off.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.suite_run import SUITE, module_items, sim_cluster_folder

pytestmark = pytest.mark.slow

SCALE = 0.004  # wall seconds per simulated second: 15 simulated minutes of DCGM r3 take 3.6 s
SCENARIO = """\
name: cold-dcgm-16
description: "16 healthy nodes; sim-node-07 came back with an empty image cache and the DCGM image is huge"
nodes: 16
seed: 1
image_pull: {bandwidth: 150MiB, cold_nodes: [sim-node-07], sizes: {dcgm: 100GiB}}
"""
LINE = re.compile(r"dcgm on sim-node-07: (pending|pulling image|running) \| (\d+m\d\ds) of 1h00m")
ENDED = "dcgm on sim-node-07: succeeded in"


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("progress")
    folder = sim_cluster_folder(base)
    (base / "cold-dcgm-16.yaml").write_text(SCENARIO)
    profile = yaml.safe_load((folder / "cluster.yaml").read_text())
    profile["sim"].update(scenario=str(base / "cold-dcgm-16.yaml"), time_scale=SCALE)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return folder.parent


def command(baselines: Path, name: str, every: int, extra: tuple[str, ...] = ()) -> list[str]:
    base = baselines.parent
    return [sys.executable, "-m", "pytest", str(SUITE / "test_gpu_diagnostics.py"), "--cluster=sim",
            f"--baselines-dir={baselines}", f"--report-dir={base / ('report-' + name)}",
            f"--junitxml={base / (name + '.xml')}", "--returned-node=sim-node-07", "--no-sign",
            "--allow-unsigned-baseline", "-p", "no:cacheprovider", f"--progress-every={every}", *extra]  # fmt: skip


def env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "160", "TERM": "xterm"}


def on_a_pipe(baselines: Path, name: str, every: int, extra: tuple[str, ...] = ()) -> str:
    argv = command(baselines, name, every, extra)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env(), cwd=baselines.parent,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def on_a_terminal(baselines: Path, name: str) -> str:
    """The run with a pseudo-terminal as its stdout and stderr: what a person at a terminal would see."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec at once, never return into pytest
        os.chdir(baselines.parent)
        os.execvpe(sys.executable, command(baselines, name, 1), env())
    out = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out.extend(chunk)
    finally:
        if time.monotonic() >= deadline:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    text = out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-3000:]
    return text


def junit(baselines: Path, name: str) -> str:
    """The junit file without what differs between any two runs (times, run id, report folder, host)."""
    text = (baselines.parent / f"{name}.xml").read_text()
    text = re.sub(r' (time|timestamp|hostname)="[^"]*"', "", text)
    text = re.sub(r"ra-\d{14}-[0-9a-f]+", "RUN", text)
    text = re.sub(r'name="(start_utc|end_utc)" value="[^"]*"', r'name="\1"', text)
    return text.replace(str(baselines.parent / f"report-{name}"), "REPORT")


class Background:
    """The run with ``--progress-every=0`` (which shows no progress), started when the module's first test starts
    and run beside that test's own run: its junit is the reference, whatever the pace, and nothing in it is timed."""

    def __init__(self, baselines: Path) -> None:
        self.baselines = baselines
        base = baselines.parent
        self.out, self.err = base / "off.stdout", base / "off.stderr"
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen(command(baselines, "off", every=0), stdout=out, stderr=err, text=True,
                                         env=env(), cwd=base)  # fmt: skip
        self._junit: str | None = None

    def junit(self) -> str:
        """The junit file of the run without progress, once it has ended (exit 0, no progress shown)."""
        if self._junit is None:
            returncode = self.proc.wait(timeout=120)
            stdout, stderr = self.out.read_text(), self.err.read_text()
            assert returncode == 0, stdout[-3000:] + stderr[-3000:]
            assert "dcgm on sim-node-07" not in stdout
            self._junit = junit(self.baselines, "off")
        return self._junit

    def stop(self) -> None:
        if self.proc.poll() is None:  # a test that failed first: no run left behind
            self.proc.kill()
        self.proc.wait(timeout=30)


class Runs:
    """The module's runs that its selected tests judge, all started when its first test starts: on a pipe, on a
    terminal and under xdist, and the one without progress (`off`) that the first two compare with. Each waits on
    the simulated pace (about 6 s of image pull and diagnostics) far more than it works, so side by side they take
    little longer than one (one after the other: 53 s in the middle of a full run, where the CPU was half idle)."""

    def __init__(self, baselines: Path, wanted: set[str]) -> None:
        self.off = Background(baselines) if wanted & {"pipe", "tty"} else None
        self._pool = ThreadPoolExecutor(3, thread_name_prefix="progress-run")
        makers = {"pipe": lambda: on_a_pipe(baselines, "pipe", every=1), "tty": lambda: on_a_terminal(baselines, "tty"),
                  "xdist": lambda: on_a_pipe(baselines, "xdist", every=1, extra=("-n", "2"))}  # fmt: skip
        self._made = {name: self._pool.submit(make) for name, make in makers.items() if name in wanted}

    def shown(self, name: str) -> str:
        """What the run `name` printed, once it ended with exit status 0."""
        return self._made[name].result()

    def off_junit(self) -> str:
        assert self.off is not None
        return self.off.junit()

    def close(self) -> None:
        """Each run is bounded by its own timeout (120 s); the one without progress is killed if still going."""
        self._pool.shutdown(wait=True)
        if self.off is not None:
            self.off.stop()


#: the run each test judges
RUN_OF = {
    "test_plain_lines_on_a_pipe_show_phases_against_the_deadline_and_junit_is_unchanged": "pipe",
    "test_a_terminal_shows_one_line_rewritten_in_place_and_junit_is_unchanged": "tty",
    "test_under_xdist_the_controller_prints_the_workers_progress_as_plain_lines": "xdist",
}


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, baselines: Path) -> Iterator[Runs]:
    made = Runs(baselines, {RUN_OF[item.originalname] for item in module_items(request) if item.originalname in RUN_OF})
    try:
        yield made
    finally:
        made.close()


def test_plain_lines_on_a_pipe_show_phases_against_the_deadline_and_junit_is_unchanged(
    baselines: Path, runs: Runs
) -> None:
    shown = runs.shown("pipe")
    lines = [m for m in (LINE.search(line) for line in shown.splitlines()) if m]
    phases = [m.group(1) for m in lines]
    assert "pulling image" in phases, shown
    assert "running" in phases, shown
    assert phases.index("pulling image") < len(phases) - 1 - phases[::-1].index("running")  # pulled, then ran
    assert [m.group(2) for m in lines] == sorted(m.group(2) for m in lines)  # elapsed only grows
    assert ENDED in shown
    assert "\x1b[" not in shown  # no cursor movement into a log file

    assert junit(baselines, "pipe") == runs.off_junit()


def test_a_terminal_shows_one_line_rewritten_in_place_and_junit_is_unchanged(baselines: Path, runs: Runs) -> None:
    shown = runs.shown("tty")
    first = shown.index("\x1b[2Kdcgm on sim-node-07:")
    last = shown.index(ENDED)
    drawn = shown[first:last]
    assert "\x1b[2Kdcgm on sim-node-07: pulling image | " in drawn
    assert "\x1b[2Kdcgm on sim-node-07: running | " in drawn
    assert "\n" not in drawn  # every update went over the same line: \r, erase, the new text
    assert drawn.count("\r\x1b[2K") >= 3
    assert junit(baselines, "tty") == runs.off_junit()


def test_under_xdist_the_controller_prints_the_workers_progress_as_plain_lines(runs: Runs) -> None:
    """The worker that waits writes the batch's status into the run folder; the controller reads and prints it."""
    shown = runs.shown("xdist")
    phases = [m.group(1) for m in (LINE.search(line) for line in shown.splitlines()) if m]
    assert "running" in phases, shown
    assert ENDED in shown
    assert "\x1b[" not in shown
