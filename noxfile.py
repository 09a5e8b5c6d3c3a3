"""Developer sessions: `nox -s lint typecheck tests`, `nox -s acceptance_sim`, `nox -s bench`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (unit, plugin through pytester, backends end to end)."""
    session.install("-e", ".[test]")
    session.run("pytest", *(session.posargs or ["-n", "2"]))


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
    session.run("python", ".ci/fault_check.py", "--fault", "nic-degraded@sim-node-07", "--expect-failing", "test_fabric")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: ratios, sizes and timings printed, never asserted in tests. `-- --quick` for a short run."""
    session.install("-e", ".[test]")
    quick = ["--quick"] if "--quick" in session.posargs else []
    for script in ("parse_nccl.py", "sim_render.py", "trainlog.py", "orchestrate.py"):
        session.run("python", f"bench/{script}", *quick)
