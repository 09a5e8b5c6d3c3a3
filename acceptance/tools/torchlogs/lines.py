"""Line by line: strip rank prefixes and glog headers, classify error lines, join NCCL's multi-line messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from acceptance.tools import logtime
from acceptance.tools.torchlogs import patterns as p
from acceptance.tools.torchlogs.model import ErrorLine, RankHost

_PY_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): (\S.*)$")
_MS = re.compile(r"ran for \d+ milliseconds")
# Words one of which every error message the patterns know contains (a cheap test before the regexes).
_WORDS = ("atchdog", "NCCL error", "CUDA error", "Some NCCL operations", "data inconsistency", "Stack trace of the")


@dataclass
class Line:
    """One physical line after the prefixes it carried were taken off."""

    number: int
    raw: str
    text: str
    rank: int | None
    time: datetime | None


def split_line(number: int, raw: str, year: int | None) -> Line:
    text = raw.rstrip("\r\n")
    rank: int | None = None
    match = p.RANK_PREFIX.match(text)
    if match:
        rank = int(match.group(1) or match.group(2))
        text = text[match.end() :]
    time = None
    header = p.GLOG_HEADER.match(text)
    if header:
        if header.group(2):
            time = logtime.parse_glog(header.group(1) + header.group(2), year)
        text = text[header.end() :]
    return Line(number, raw, text, rank, time)


def _strip_text_rank(text: str) -> tuple[str, int | None]:
    rank: int | None = None
    while True:
        match = p.TEXT_RANK.match(text)
        if not match:
            return text, rank
        rank = int(match.group(1)) if rank is None else rank
        text = text[match.end() :]


def _template(text: str) -> str:
    return _MS.sub("ran for N milliseconds", p.TEXT_RANK.sub("", text)).strip()


def classify(message: str) -> tuple[str, str, int | None, dict[str, Any]] | None:
    """(kind, text, rank named in the text, fields) of an error message, or None for any other text."""
    text, rank = _strip_text_rank(message.strip())
    fields: dict[str, Any] = {}
    if not any(word in text for word in _WORDS):
        py = _PY_EXCEPTION.match(text) if ("Error: " in text or "Exception: " in text) else None
        if py and not py.group(1).endswith("ChildFailedError"):
            return "exception", text, rank, fields
        return None
    exc = p.WATCHDOG_EXC.search(text)
    if exc:
        inner, inner_rank = _strip_text_rank(exc.group(1).strip())
        rank = rank if rank is not None else inner_rank
        found = classify(inner)
        if found is not None and found[0] in ("watchdog-timeout", "nccl-error", "cuda-error"):
            return found[0], found[1], rank if rank is not None else found[2], found[3]
        return "watchdog-exception", inner, rank, fields
    timeout = p.TIMEOUT.search(text)
    if timeout:
        fields = {"seq": int(timeout.group(1)), "op": timeout.group(2), "timeout_ms": int(timeout.group(5)),
                  "elapsed_ms": int(timeout.group(6))}  # fmt: skip
        return "watchdog-timeout", text[timeout.start() :], rank, fields
    status = p.STATUS.search(text)
    if status:
        return "watchdog-status", text[status.start() :], rank, {"seq": int(status.group(1))}
    nccl = p.NCCL_ERROR.search(text)
    if nccl and "Some NCCL operations" not in text:
        version = p.NCCL_VERSION.search(text)
        return "nccl-error", text[nccl.start() :], rank, {"nccl_version": version.group(1) if version else None}
    cuda = p.CUDA_ERROR.search(text)
    if cuda:
        return "cuda-error", text[cuda.start() :], rank, fields
    if any(note in text for note in p.NOTES):
        return "note", text, rank, fields
    py = _PY_EXCEPTION.match(text)
    if py and not py.group(1).endswith("ChildFailedError"):
        return "exception", text, rank, fields
    return None


@dataclass
class Collector:
    """Accumulates error lines and rank facts over a whole log."""

    year: int | None
    errors: list[ErrorLine] = field(default_factory=list)
    ranks: list[RankHost] = field(default_factory=list)
    nccl_versions: list[str] = field(default_factory=list)
    world_size: int | None = None
    torch_version: str | None = None
    _devices: dict[tuple[str, int, int], int] = field(default_factory=dict)
    _mapped: set[tuple[int, str]] = field(default_factory=set)
    _open: int | None = None  # index of the error a continuation line extends
    _after_last_error: bool = False
    _pending_class: int | None = None

    def _add(self, line: Line, kind: str, text: str, rank: int | None, fields: dict[str, Any],
             host: str | None = None) -> None:  # fmt: skip
        text = text.strip()
        self.errors.append(ErrorLine(kind=kind, text=text, template=_template(text),
                                     rank=line.rank if line.rank is not None else rank, host=host, time=line.time,
                                     line=line.number, **fields))  # fmt: skip

    def _extend(self, extra: str) -> None:
        assert self._open is not None
        err = self.errors[self._open]
        text = f"{err.text} / {extra.strip()}".strip()
        self.errors[self._open] = replace(err, text=text, template=_template(text))

    def _facts(self, text: str) -> None:
        if "NCCL version" in text:
            for version in p.NCCL_VERSION.findall(text):
                if version not in self.nccl_versions:
                    self.nccl_versions.append(version)
        if self.world_size is None and ("orld size" in text or "ORLD_SIZE" in text or "orld_size" in text):
            world = p.WORLD_SIZE.search(text)
            if world:
                self.world_size = int(next(g for g in world.groups() if g))
        if self.torch_version is None and "orch version" in text:
            torch = p.TORCH_VERSION.search(text)
            if torch:
                self.torch_version = torch.group(1)

    def _nccl_line(self, line: Line, match: re.Match[str]) -> None:
        host, pid, dev, msg = match["host"], int(match["pid"]), int(match["dev"]), match["msg"]
        if match["level"] == "INFO":
            found = p.INIT_RANK.search(msg) or p.NCCL_RANK.search(msg)
            if found:
                rank = int(found.group(1))
                if self.world_size is None:
                    self.world_size = int(found.group(2))
                self._devices[(host, pid, dev)] = rank
                if (rank, host) not in self._mapped:
                    self._mapped.add((rank, host))
                    self.ranks.append(RankHost(rank, host, "nccl-info", line.number, device=dev, pid=pid))
            return
        self._add(line, "nccl-warn", msg.strip(), self._devices.get((host, pid, dev)), {}, host=host)
        self._open = len(self.errors) - 1

    def feed(self, line: Line) -> None:
        text = line.text
        if not text.strip() or p.FRAME.match(text):
            self._open = None
            return
        self._facts(text)
        nccl = p.NCCL_LINE.match(text)
        if nccl:
            self._nccl_line(line, nccl)
            return
        if self._open is not None and (p.NCCL_CODE.match(text) or text.startswith("Last error:")
                                       or self._after_last_error):  # fmt: skip
            if not text.startswith("Last error:"):
                self._extend(text)
            self._after_last_error = text.startswith("Last error:")
            return
        self._after_last_error = False
        if self._aborts(line):
            return
        what = p.WHAT.match(text)
        found = classify(what.group(1) if what else text)
        if found is None:
            self._open = None
            return
        kind, message, rank, fields = found
        self._add(line, kind, message, rank, fields)
        self._open = len(self.errors) - 1 if kind in ("nccl-error", "nccl-warn") else None

    def _aborts(self, line: Line) -> bool:
        """``terminate called ...`` (two processes' text can be glued into one line, the class on the next)."""
        text = line.text
        if self._pending_class is not None:
            lone = re.match(r"^([\w:]+)'\s*$", text)
            index, self._pending_class = self._pending_class, None
            if lone and index is not None:
                err = self.errors[index]
                message = f"terminate called after throwing an instance of '{lone.group(1)}'"
                self.errors[index] = replace(err, text=message, template=message)
                return True
        count = text.count("terminate called after throwing an instance of")
        if not count:
            return False
        classes = re.findall(r"instance of '([\w:]+)'", text)
        for i in range(count):
            cls = classes[i - (count - len(classes))] if i >= count - len(classes) else None
            message = f"terminate called after throwing an instance of '{cls or '?'}'"
            self._add(line, "abort", message, None, {})
            if cls is None:
                self._pending_class = len(self.errors) - 1
        self._open = None
        return True
