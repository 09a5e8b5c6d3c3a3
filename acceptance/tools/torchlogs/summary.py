"""torchrun's ``ChildFailedError`` summary and the elastic agent's own lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from acceptance.tools import logtime
from acceptance.tools.torchlogs import patterns as p
from acceptance.tools.torchlogs.model import AgentLine, ChildFailure


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


@dataclass
class SummaryReader:
    """A small state machine over ``<script> FAILED`` / ``Failures:`` / ``Root Cause`` / ``[k]:`` entries."""

    year: int | None
    failures: list[ChildFailure] = field(default_factory=list)
    agent: list[AgentLine] = field(default_factory=list)
    _script: str | None = None
    _section: str | None = None  # "failures" | "root"
    _entry: dict[str, str] | None = None
    _entry_line: int = 0

    def _close(self) -> None:
        if self._entry is None:
            return
        e, self._entry = self._entry, None
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

    def _time(self, raw: str) -> datetime | None:
        return logtime.parse_iso(raw) or logtime.parse_glog(raw, self.year)

    def feed(self, number: int, raw: str) -> None:
        text = raw.rstrip("\r\n")
        sigterm = p.AGENT_SIGTERM.search(text)
        if sigterm:
            self.agent.append(AgentLine("sigterm", _int(sigterm.group(1)), None, None, self._time(text), number))
            return
        failed = p.AGENT_FAILED.search(text)
        if failed:
            self.agent.append(AgentLine("worker-failed", _int(failed.group(3)), _int(failed.group(1)),
                                        _int(failed.group(2)), self._time(text), number))  # fmt: skip
            return
        script = p.SUMMARY_SCRIPT.match(text)
        if script:
            self._close()
            self._script, self._section = script.group(1), None
            return
        if self._script is None:
            return
        stripped = text.strip()
        if stripped == "Failures:":
            self._close()
            self._section = "failures"
        elif stripped.startswith("Root Cause"):
            self._close()
            self._section = "root"
        elif stripped.startswith("====") and self._section == "root":
            self._close()
            self._script = self._section = None
        elif stripped.startswith("----"):
            self._close()
        elif self._section and p.SUMMARY_ENTRY.match(text):
            self._close()
            self._entry, self._entry_line = {}, number
        elif self._entry is not None:
            found = p.SUMMARY_FIELD.match(text)
            if found:
                self._entry[found.group(1)] = found.group(2).strip()

    def finish(self) -> None:
        self._close()
