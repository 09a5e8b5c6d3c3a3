"""Developer sessions: `nox -s lint typecheck tests`, `nox -s acceptance_sim`, `nox -s bench`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (unit, plugin through pytester, backends end to end)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


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
