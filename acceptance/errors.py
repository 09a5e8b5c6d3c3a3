"""The one exception tree of the harness.

Every foreseeable problem is one of these, carrying enough context (file, line,
what was expected) that the CLI and the plugin can print it without a traceback.
"""

from __future__ import annotations


class AcceptanceError(Exception):
    """Base of every error the harness raises on purpose."""


class UsageError(AcceptanceError):
    """The user asked for something that cannot work (bad option, unknown node)."""


class ParseError(AcceptanceError):
    """Text that does not have the expected shape.

    `source` is the file name (or a label such as ``<stdin>``), `line` the 1-based
    line number (0 when the problem is the whole input), `text` the offending line,
    `expected` what would have been accepted.
    """

    def __init__(self, source: str, line: int, text: str, expected: str) -> None:
        self.source = source
        self.line = line
        self.text = text
        self.expected = expected
        where = f"{source}:{line}" if line else source
        shown = text if len(text) <= 120 else text[:117] + "..."
        super().__init__(f"{where}: expected {expected}" + (f", found {shown!r}" if text else ""))


class ProfileError(UsageError):
    """The cluster profile (cluster.yaml) is missing or invalid."""


class BaselineError(AcceptanceError):
    """The handover baseline is missing, unreadable, invalid, or cannot be written."""


class NotComparableError(BaselineError):
    """Today's conditions differ from the baseline's: a comparison would be meaningless."""

    def __init__(self, differences: list[str]) -> None:
        self.differences = list(differences)
        super().__init__("not comparable with the baseline: " + "; ".join(differences))


class ClusterError(AcceptanceError):
    """The cluster could not do what was asked."""


class JobFailed(ClusterError):
    """A workload ran and failed (or could not start), with the reason."""


class WorkloadNotRun(ClusterError):
    """A workload gave nothing to judge: the cluster or its API could not run it, report its end or
    hand over its log (an API error, a deadline, no node to take it). Its criterion is an ERROR, never a FAIL."""


class RunDeadline(ClusterError):
    """The run's own deadline (the profile's ``run.deadline``) has passed: remaining work is not started."""


class JobTimeout(ClusterError):
    """A workload did not reach a final state before its deadline."""


class Unschedulable(ClusterError):
    """The scheduler could not place a workload (its message is kept)."""


class SshError(ClusterError):
    """An SSH connection or command failed."""


class KubeApiError(ClusterError):
    """A Kubernetes API call failed for good: the call, its HTTP status and the server's message (redacted)."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(detail)


class HostKeyRefused(SshError):
    """The server's host key is unknown or has changed; nothing was sent to it."""


class Unreadable(AcceptanceError):
    """A file or signature that cannot be read for a check (missing, not a signature, ssh-keygen absent)."""


class ReportRefused(AcceptanceError):
    """An acceptance report cannot start a probation; `args[0]` says why, `lines` what was checked."""

    def __init__(self, reason: str, lines: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.lines = lines


class QueryFailed(AcceptanceError):
    """A metrics query the source could not answer: the query and what came back, for the verdict's evidence."""

    def __init__(self, query: str, answer: str) -> None:
        self.query = query
        self.answer = answer
        super().__init__(f"query failed: {query} -> {answer}")
