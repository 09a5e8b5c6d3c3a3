"""Developer sessions: `nox -s fast` after every change, `nox -s lint typecheck tests`, `nox -s acceptance_sim`,
`nox -s bench`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]

nox.options.reuse_existing_virtualenvs = True


# what the fast tier leaves out: the end-to-end tests that start a simulated cluster (`slow`) and the tests
# that need a subprocess suite run, a browser, promtool, a fuzz run, a calibration or real-time waits (`heavy`)
FAST = "not slow and not heavy"


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (unit, plugin through pytester, backends end to end), with the coverage of
    acceptance/ (subprocesses included): the files not fully covered, their missed lines, and the total."""
    session.install("-e", ".[test]")
    coverage = ["--cov=acceptance", "--cov-report=term-missing:skip-covered"]
    session.run("pytest", *coverage, *(session.posargs or ["-n", "2"]))


@nox.session
def fast(session: nox.Session) -> None:
    """The fast tier, after every change (under a minute with -n 2 on two idle cores): every module of
    acceptance/ is exercised by at least one of its tests; `-- -n 2 --cov=acceptance` shows the coverage."""
    session.install("-e", ".[test]")
    session.run("pytest", "-m", FAST, *(session.posargs or ["-n", "2"]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over everything we write."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".", *session.posargs)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy strict on the package."""
    session.install("-e", ".[test]")
    session.run("mypy", *session.posargs)


@nox.session
def acceptance_sim(session: nox.Session) -> None:
    """The acceptance suite on the embedded simulated cluster (healthy, then one injected fault)."""
    session.install("-e", ".[test]")
    session.run("pytest", "acceptance/", "--cluster=sim", *session.posargs)
    session.run("python", ".ci/fault_check.py")


@nox.session
def fuzz(session: nox.Session) -> None:
    """Coverage-guided fuzzing of every parser and loader (atheris): `-- SECONDS` per target, default 300.

    Prints inputs run and executions per second per target; crashes are saved under fuzz-crashes/
    (add each as fixtures/fuzz/TARGET/crash-* once fixed: tests/test_fuzz.py replays them).
    """
    session.install("-e", ".[test]")
    seconds = session.posargs[0] if session.posargs else "300"
    session.run("python", "-m", "tests.fuzz", "all", f"-max_total_time={seconds}", "-seed=0")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: ratios, sizes and timings printed, never asserted in tests. `-- --quick` for a short run."""
    session.install("-e", ".[test]")
    quick = "--quick" in session.posargs
    session.run("python", "bench/parse_nccl.py", *(["--quick"] if quick else []))
    session.run("python", "bench/sim_render.py", "--repeat", "3")
    session.run("python", "bench/shim_client.py", "--calls", "50" if quick else "200")
    session.run("python", "bench/trainlog.py", "--steps", "100000" if quick else "10000000")
    session.run("python", "bench/calibration.py", "--replicas", "200" if quick else "1000")
    session.run("python", "bench/orchestrate.py", "--nodes", *(["256"] if quick else ["256", "512", "1024"]))
    session.run("python", "bench/suite_scale.py", "--nodes", "128" if quick else "1024")
    session.run("python", "bench/report_html.py", "--nodes", *(["16", "128"] if quick else ["16", "128", "1024"]))
    session.run("python", "bench/fault_matrix.py", "--seeds", "6" if quick else "24")
    session.run("python", "bench/incident.py", "--nodes", *(["16", "128"] if quick else ["16", "128", "1024"]))
    session.run("python", "bench/localize.py", *(["--quick"] if quick else []))
    session.run("python", "bench/recurrence.py", "--gpus", *(["16", "128"] if quick else ["16", "128", "1024"]))
    session.run("python", "bench/prepull.py", "--repeat", "1" if quick else "2")
    if not quick:  # the healthy suite over a real sshd and mpirun vs over the emulator (minutes)
        session.run("python", "bench/suite_ssh.py")
        session.run("python", "bench/suite_slurm.py")  # the same on a real slurmctld and slurmd, against both
