"""One exception tree: every error the harness raises on purpose is defined in acceptance/errors.py."""

from __future__ import annotations

import ast

import acceptance.errors as errors
from tests.package_syntax import PACKAGE, modules, nodes

# Not the harness's errors: the Kubernetes API emulator's HTTP answers (a status the emulator sends, never
# raised to a user), and value errors a parser or loader turns into a ParseError/ProfileError naming the line.
OUTSIDE = {
    ("sim/kubeapi/store.py", "ApiError"),
    ("sim/kubeapi/store.py", "Gone"),
    ("tools/nccl/layout.py", "NonFinite"),
    ("agreement/coverage.py", "CoverageError"),
}


def _exception_classes() -> set[tuple[str, str]]:
    defined = {c for c in dir(errors) if isinstance(getattr(errors, c), type)}
    found = set()
    for path in modules():
        for node in nodes(path):
            if isinstance(node, ast.ClassDef) and any(
                base.endswith(("Error", "Exception", "Refused", "Failed", "Unreadable")) or base in defined
                for base in (ast.unparse(b).split(".")[-1] for b in node.bases)
            ):
                found.add((path.relative_to(PACKAGE).as_posix(), node.name))
    return found


def test_every_exception_of_the_harness_is_in_errors_py() -> None:
    stray = {c for c in _exception_classes() if c[0] != "errors.py"} - OUTSIDE
    assert stray == set()


def test_every_error_of_errors_py_is_an_acceptance_error() -> None:
    classes = [getattr(errors, n) for n in dir(errors) if isinstance(getattr(errors, n), type)]
    raised = [c for c in classes if issubclass(c, Exception)]
    assert len(raised) >= 15
    assert all(issubclass(c, errors.AcceptanceError) for c in raised)
