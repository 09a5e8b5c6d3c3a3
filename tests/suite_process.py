"""A pytest run in a process of its own, started from a fork server that has imported what a suite run imports.

A suite run (``python -m pytest acceptance/ --cluster=...``) spends about 2 of its 5 s of CPU importing pytest,
the package, the kubernetes client, pandas and matplotlib. The tests make some 150 of them, so each xdist
worker keeps one fork server (multiprocessing's ``forkserver``) that imported those once, and each run is a
fork of it: a process of its own with its own exit status, working folder, environment, stdout and stderr,
as before. What it does not share with ``python -m pytest`` is the import of those modules at its start, so
a test of what the process does at its start or on a signal runs ``python -m pytest`` itself.

Under coverage (``nox -s tests``) and with ``RA_TESTS_FRESH_PROCESS=1`` every run is ``python -m pytest``.
"""

from __future__ import annotations

import atexit
import multiprocessing

# imported at collection, not at a first run: pytester puts back the sys.modules it found, and a forkserver
# module imported during a test would be dropped, its server left running and another started at the next run
import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

#: imported once by each worker's fork server (tests/suite_preload.py says what and why)
PRELOAD = ["tests.suite_preload"]
#: how long a run that outlived its timeout is given to end after SIGKILL
KILL_GRACE_S = 10.0
#: plugins of the test environment that a user's run of the suite does not have, left out of every run: the
#: one of hypothesis (a test dependency) imports hypothesis at each run's end (0.1 CPU-s a run, measured alone)
NOT_THE_USERS = ("-p", "no:hypothesispytest")


@dataclass(frozen=True)
class Finished:
    """A pytest run that ended: its exit status (negative: the signal that ended it) and what it printed."""

    returncode: int
    stdout: str
    stderr: str
    duration: float


def own_session_env(tmpdir: Path) -> dict[str, str]:
    """The environment for a pytest session of the project's tests started from inside this one: its own TMPDIR,
    none of this session's markers (a session removes its temp folder at its end, and one handed this session's
    removed it under the tests still running) and not this session's worker name or coverage."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTEST_XDIST_WORKER" and not k.startswith(("RA_TESTS_", "COV_CORE_", "COVERAGE_"))}  # fmt: skip
    env["TMPDIR"] = str(tmpdir)
    return env


def fresh_process_wanted(env: Mapping[str, str] = os.environ) -> bool:
    """True where a run must be ``python -m pytest`` itself: asked for, or coverage measuring subprocesses (its
    start-up hook runs in a new interpreter, not in a fork)."""
    if env.get("RA_TESTS_FRESH_PROCESS") == "1":
        return True
    return any(name.startswith(("COV_CORE_", "COVERAGE_PROCESS_")) for name in env)


def run_pytest(args: Sequence[str], cwd: Path, *, env: Mapping[str, str] | None = None,
               timeout: float = 300) -> Finished:  # fmt: skip
    """``python -m pytest ARGS`` (less `NOT_THE_USERS`) in `cwd` with `env` (the current environment by default);
    its output is kept in files of `cwd` (pytest-stdout.txt, pytest-stderr.txt) as well as returned. Raises
    subprocess.TimeoutExpired, as subprocess.run does, after killing a run that outlives `timeout`."""
    env = dict(os.environ if env is None else env)
    args = [*NOT_THE_USERS, *args]
    cwd.mkdir(parents=True, exist_ok=True)
    out, err = cwd / "pytest-stdout.txt", cwd / "pytest-stderr.txt"
    started = time.monotonic()
    if fresh_process_wanted(env):
        argv = [sys.executable, "-m", "pytest", *args]
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                  timeout=timeout, check=False)  # fmt: skip
        code = proc.returncode
    else:
        code = _forked(args, cwd, env, out, err, timeout)
    return Finished(code, _text(out), _text(err), time.monotonic() - started)


def runpytest(pytester: pytest.Pytester, *args: str | os.PathLike[str], timeout: float = 300) -> pytest.RunResult:
    """`pytester.runpytest_subprocess(*args)` from the fork server: run in pytester's folder with a temp folder
    of its own (--basetemp) and pytester's folder first on PYTHONPATH, as that one runs."""
    runs = sum(1 for _ in pytester.path.glob("runpytest-*"))
    basetemp = pytester.path / f"runpytest-{runs}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH", "")]))
    finished = run_pytest([f"--basetemp={basetemp}", *map(str, args)], pytester.path, env=env, timeout=timeout)
    out, err = finished.stdout.splitlines(), finished.stderr.splitlines()
    return pytest.RunResult(finished.returncode, out, err, finished.duration)


def _text(path: Path) -> str:
    """What the run wrote to `path`: nothing where it ended before it could open it."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _forked(args: list[str], cwd: Path, env: dict[str, str], out: Path, err: Path, timeout: float) -> int:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    process = context.Process(target=_child, args=(args, str(cwd), env, str(out), str(err)),
                              name="suite-run", daemon=False)  # fmt: skip
    process.start()
    process.join(timeout)
    if process.exitcode is None:
        process.kill()
        process.join(KILL_GRACE_S)
        raise subprocess.TimeoutExpired([sys.executable, "-m", "pytest", *args], timeout)
    return process.exitcode


def _child(args: list[str], cwd: str, env: dict[str, str], out: str, err: str) -> None:
    """In the forked process: become ``python -m pytest ARGS`` run in `cwd` (sys.path[0] is the working
    folder, as ``-m`` makes it), then end as an interpreter ends: threads joined, then the exit functions."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path[0:0] = [cwd]
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):  # fmt: skip
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = [pytest.__file__, *args]
    try:
        code = pytest.console_main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter does at its end, in this order
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)
