"""torchrun's ``ChildFailedError`` summary and the elastic agent's own lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from acceptance.tools import logtime
from acceptance.tools.torchlogs import patterns as p
from acceptance.tools.torchlogs.model import AgentLine, ChildFailure

_FIELDS = ("time", "host", "rank", "exitcode", "error_file", "traceback")


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass
class SummaryReader:
    """A small state machine over ``<script> FAILED`` / ``Failures:`` / ``Root Cause`` / ``[k]:`` entries.

    A paste can start anywhere in the summary: a ``Root Cause (first observed failure):`` block or ``[k]:``
    entries without the ``====`` / ``FAILED`` header above them are still read (a root cause, failed ranks);
    field lines without any heading count only when they show the summary's own ``rank : R (local_rank: L)``
    or ``exitcode : C (pid: P)`` shape.
    """

    year: int | None
    failures: list[ChildFailure] = field(default_factory=list)
    agent: list[AgentLine] = field(default_factory=list)
    _script: str | None = None
    _section: str | None = None  # "failures" | "root"
    _entry: dict[str, str] | None = None
    _entry_line: int = 0
    yearless: int = 0  # agent lines whose glog stamp carries no year

    def _close(self) -> None:
        if self._entry is None:
            return
        e, self._entry = self._entry, None
        if not self._whole(e):
            return
        rank = p.SUMMARY_RANK.match(e.get("rank", ""))
        code = p.SUMMARY_EXIT.match(e.get("exitcode", ""))
        self.failures.append(
            ChildFailure(
                rank=_int(rank.group(1)) if rank else _int(e.get("rank")),
                local_rank=_int(rank.group(2)) if rank else None,
                host=e.get("host") or None,
                exitcode=_int(code.group(1)) if code else _int(e.get("exitcode")),
                pid=_int(code.group(2)) if code else None,
                time=logtime.parse_iso(e.get("time", "")),
                root_cause=self._section == "root",
                script=self._script,
                line=self._entry_line,
            )
        )

    def _time(self, text: str, raw: str) -> datetime | None:
        """The line's own stamp; the collector's stamp that the prefix stripping took off only when it has none."""
        iso = logtime.parse_iso(text)
        if iso is not None:
            return iso
        if logtime.GLOG.search(text):
            self.yearless += 1
            return logtime.parse_glog(text, self.year)
        return logtime.parse_iso(raw)

    def feed(self, number: int, text: str, raw: str = "") -> None:
        """One line: `text` with the paste prefixes taken off (`pasteprefix.strip_prefix`), `raw` as it was."""
        if "Sending process" in text and (sigterm := p.AGENT_SIGTERM.search(text)) is not None:
            self.agent.append(AgentLine("sigterm", _int(sigterm.group(1)), None, None, self._time(text, raw), number))
            return
        if "failed (exitcode" in text and (failed := p.AGENT_FAILED.search(text)) is not None:
            self.agent.append(AgentLine("worker-failed", _int(failed.group(3)), _int(failed.group(1)),
                                        _int(failed.group(2)), self._time(text, raw), number))  # fmt: skip
            return
        stripped = text.strip()
        if not stripped:
            return
        if " FAILED" in stripped and (script := p.SUMMARY_SCRIPT.match(stripped)) is not None:
            self._close()
            self._script, self._section = script.group(1), None
        elif stripped == "Failures:" and (self._script is not None or self._entry is None):
            self._close()
            self._section = "failures"
        elif stripped.startswith("Root Cause (first observed failure)"):
            self._close()
            self._section = "root"
        elif stripped.startswith("====") and self._section == "root":
            self._close()
            self._script = self._section = None
        elif stripped.startswith("----") or stripped.startswith("===="):
            self._close()
        elif stripped[:1] == "[" and p.SUMMARY_ENTRY.match(stripped):  # `[k]:`, with or without a header
            self._close()
            self._entry, self._entry_line = {}, number
        elif stripped.startswith(_FIELDS) and (found := p.SUMMARY_FIELD.match(stripped)) is not None:
            if self._entry is None:  # a paste that starts inside an entry
                self._entry, self._entry_line = {}, number
            self._entry[found.group(1)] = found.group(2).strip()
        elif self._entry is not None and self._script is None and self._section is None:
            self._close()  # an entry without a header ends at the first line of another kind

    def _whole(self, e: dict[str, str]) -> bool:
        """An entry says which process failed: the summary's own rank or exitcode shape (not any `rank: 3`)."""
        if self._script is not None or self._section is not None:
            return True
        return bool(p.SUMMARY_RANK.match(e.get("rank", "")) or p.SUMMARY_EXIT.match(e.get("exitcode", "")))

    def finish(self) -> None:
        self._close()
