"""Line by line: strip paste prefixes, rank prefixes and glog headers, classify error lines, join NCCL's
multi-line messages and hard-wrapped records.

State that spans lines (an NCCL message's continuation, a ``terminate called`` line whose class follows,
a record cut at the line's end) is kept per rank, so that two ranks' interleaved lines are read as each
rank's lines alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from acceptance.tools import logtime
from acceptance.tools.pasteprefix import strip_prefix
from acceptance.tools.torchlogs import patterns as p
from acceptance.tools.torchlogs.model import ErrorLine, RankHost

_PY_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)): (\S.*)$")
_MS = re.compile(r"ran for \d+ milliseconds")
_LONE_CLASS = re.compile(r"^([\w:]+)'\s*$")
_CLASSES = re.compile(r"instance of '([\w:]+)'")
# Words one of which every error message the patterns know contains (a cheap test before the regexes).
_WORDS = (
    "atchdog",
    "NCCL error",
    "CUDA error",
    "Some NCCL operations",
    "data inconsistency",
    "Stack trace of the",
    "Timeout at NCCL work",
)
_ABORT = "called after throwing an instance of"


@dataclass
class Line:
    """One physical line (or a hard-wrapped line joined again) after the prefixes it carried were taken off."""

    number: int
    raw: str
    text: str
    rank: int | None
    time: datetime | None
    yearless: bool = False  # its time stamp carries no year (the reader's year was used, or none was known)


def split_line(number: int, raw: str, year: int | None, stripped: str | None = None) -> Line:
    """`raw` read (`stripped`: `raw` after `strip_prefix`, when the caller has it already)."""
    text = strip_prefix(raw) if stripped is None else stripped
    if text[:1] not in "[" and ("[rank" in text or ".cpp:" in text or ".cc:" in text or "NCCL " in text):
        glued = p.GLUED.search(text)  # a known shape glued behind other text (a tqdm bar, another process)
        if glued is not None and glued.start() > 0 and not p.NCCL_LINE.match(text):
            text = text[glued.start() :]
    rank: int | None = None
    match = p.RANK_PREFIX.match(text) if text[:1] == "[" else None
    if match:
        rank = int(match.group(1) or match.group(2))
        text = strip_prefix(text[match.end() :])
    time = None
    yearless = False
    header = p.GLOG_HEADER.match(text) if text[:1] == "[" else None
    if header:
        if header.group(2):
            yearless = True
            time = logtime.parse_glog(header.group(1) + header.group(2), year)
        text = text[header.end() :]
    return Line(number, raw, text, rank, time, yearless)


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


def demangle(name: str) -> str:
    """``N3c1016DistBackendErrorE`` → ``c10::DistBackendError`` (Itanium nested names); other text unchanged."""
    if not (name.startswith("N") and name.endswith("E")):
        return name
    parts, i, body = [], 0, name[1:-1]
    while i < len(body):
        digits = re.match(r"\d+", body[i:])
        if digits is None:
            return name
        i += len(digits.group(0))
        size = int(digits.group(0))
        parts.append(body[i : i + size])
        i += size
    return "::".join(parts) if parts and all(parts) else name


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
        fields = {"seq": int(timeout.group(1)), "op": timeout.group(2), "timeout_ms": _int(timeout.group(5)),
                  "elapsed_ms": _int(timeout.group(6))}  # fmt: skip
        return "watchdog-timeout", text[timeout.start() :], rank, fields
    status = p.STATUS.search(text)
    if status:
        seq = next(g for g in (status.group(1), status.group(4), status.group(7)) if g is not None)
        return "watchdog-status", text[status.start() :], rank, {"seq": int(seq)}
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


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


@dataclass
class _Stream:
    """What one rank's (or the unprefixed) lines have open across line ends."""

    open: int | None = None  # index of the error a continuation line extends
    after_last_error: bool = False
    pending_class: int | None = None


@dataclass
class Joiner:
    """Hard-wrapped lines put back together, per rank.

    A line is held when a watchdog record starts on it but does not end on it, or when it is exactly
    `width` long (the paste's wrap width). The next line of the same rank continues it when that line starts
    no record of its own; then the two are one line. A held line that nothing continues is read as it is and
    reported in `notes`, as is a line one short of `width` followed by a line that could continue it.
    """

    year: int | None
    width: int | None = None
    notes: list[str] = field(default_factory=list)
    held: dict[int | None, tuple[Line, str]] = field(default_factory=dict)  # per rank: (line, why)
    _short: dict[int | None, Line] = field(default_factory=dict)

    def feed(self, line: Line) -> Iterator[Line]:
        if not self.held and not self._short:  # nearly every line: nothing is waiting for a continuation
            if not self._hold(line):
                if self.width and len(line.raw.rstrip("\r\n")) == self.width - 1:
                    self._short[line.rank] = line
                yield line
            return
        key = line.rank
        if key not in self.held and key is None:  # a wrap's continuation carries no rank prefix of its own
            key = next((k for k, (first, _) in self.held.items() if first.number == line.number - 1), None)
        held = self.held.pop(key, None)
        short = self._short.pop(line.rank, None)
        text = line.text
        continues = bool(text.strip()) and not p.STARTS.match(text) and not p.GLOG_HEADER.match(text)
        if held is not None:
            first, why = held
            if continues:
                line = replace(first, raw=first.raw + strip_prefix(line.raw), text=first.text + text)
            else:
                if why == "cut":
                    self.notes.append(
                        f"line {first.number}: the watchdog record is cut at the line's end and line {line.number} "
                        "does not continue it; read as far as it goes"
                    )
                yield first
        elif short is not None and continues:
            self.notes.append(
                f"line {short.number}: {self.width and self.width - 1} characters, one short of the wrap width "
                f"{self.width}, and line {line.number} may continue it; not joined"
            )
        if self._hold(line):
            return
        if self.width and len(line.raw.rstrip("\r\n")) == self.width - 1:
            self._short[line.rank] = line
        yield line

    def _hold(self, line: Line) -> bool:
        text = line.text
        if "WorkNCCL(" in text and not p.TIMEOUT_END.search(text):
            self.held[line.rank] = (line, "cut")
            return True
        if self.width and len(line.raw.rstrip("\r\n")) == self.width:
            self.held[line.rank] = (line, "width")
            return True
        return False

    def finish(self) -> Iterator[Line]:
        for first, why in self.held.values():
            if why == "cut":
                self.notes.append(f"line {first.number}: the watchdog record is cut at the end of the log")
            yield first
        self.held.clear()


def wrap_width(lines: list[str]) -> int | None:
    """The width a paste was hard-wrapped at: the longest line length, when it is 80 or more, at least two
    lines have it, and every one of them is followed by a line that starts no record of its own (the rest of
    it); None otherwise (two ranks printing the same longest message is no wrap)."""
    longest = max(map(len, lines), default=0)
    if longest < 80:
        return None
    at = [i for i, line in enumerate(lines) if len(line) == longest]
    if len(at) < 2:
        return None
    for i in at:
        if i + 1 >= len(lines):
            return None
        nxt = strip_prefix(lines[i + 1])
        rank = p.RANK_PREFIX.match(nxt)
        nxt = nxt[rank.end() :] if rank else nxt
        if not nxt.strip() or p.STARTS.match(nxt) or p.GLOG_HEADER.match(nxt):
            return None
    return longest


@dataclass
class Collector:
    """Accumulates error lines and rank facts over a whole log."""

    year: int | None
    errors: list[ErrorLine] = field(default_factory=list)
    ranks: list[RankHost] = field(default_factory=list)
    nccl_versions: list[str] = field(default_factory=list)
    world_size: int | None = None
    torch_version: str | None = None
    yearless: int = 0  # time stamps without a year of their own among the error lines
    _devices: dict[tuple[str, int, int], int] = field(default_factory=dict)
    _mapped: set[tuple[int, str]] = field(default_factory=set)
    _streams: dict[int | None, _Stream] = field(default_factory=dict)

    def _stream(self, rank: int | None) -> _Stream:
        found = self._streams.get(rank)
        if found is None:
            found = self._streams[rank] = _Stream()
        return found

    def _add(self, line: Line, kind: str, text: str, rank: int | None, fields: dict[str, Any],
             host: str | None = None) -> None:  # fmt: skip
        text = text.strip()
        if line.yearless:
            self.yearless += 1
        self.errors.append(ErrorLine(kind=kind, text=text, template=_template(text),
                                     rank=line.rank if line.rank is not None else rank, host=host, time=line.time,
                                     line=line.number, **fields))  # fmt: skip

    def _extend(self, index: int, extra: str) -> None:
        err = self.errors[index]
        text = f"{err.text} / {extra.strip()}".strip()
        self.errors[index] = replace(err, text=text, template=_template(text))

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

    def _nccl_line(self, line: Line, match: re.Match[str], stream: _Stream) -> None:
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
        stream.open = len(self.errors) - 1

    def feed(self, line: Line) -> None:
        text = line.text
        stream = self._stream(line.rank)
        if not text.strip() or (text[:1] in "fE" and p.FRAME.match(text)):
            stream.open = None
            return
        self._facts(text)
        nccl = p.NCCL_LINE.match(text) if " NCCL " in text else None
        if nccl:
            self._nccl_line(line, nccl, stream)
            return
        if stream.open is not None and (p.NCCL_CODE.match(text) or text.startswith("Last error:")
                                        or stream.after_last_error):  # fmt: skip
            if not text.startswith("Last error:"):
                self._extend(stream.open, text)
            stream.after_last_error = text.startswith("Last error:")
            return
        stream.after_last_error = False
        if self._aborts(line, stream):
            return
        what = p.WHAT.match(text)
        found = classify(what.group(1) if what else text)
        if found is None:
            stream.open = None
            return
        kind, message, rank, fields = found
        self._add(line, kind, message, rank, fields)
        stream.open = len(self.errors) - 1 if kind in ("nccl-error", "nccl-warn") else None

    def _aborts(self, line: Line, stream: _Stream) -> bool:
        """``terminate called ...`` (two processes' text can be glued into one line, the class on the next; a
        log tail can cut ``terminate`` off), or Ray's ``Unhandled exception: N3c1016DistBackendErrorE. what(): ...``."""
        text = line.text
        if stream.pending_class is not None:
            lone = _LONE_CLASS.match(text)
            index, stream.pending_class = stream.pending_class, None
            if lone:
                err = self.errors[index]
                message = f"terminate called after throwing an instance of '{lone.group(1)}'"
                self.errors[index] = replace(err, text=message, template=message)
                return True
        unhandled = p.UNHANDLED.search(text) if "Unhandled exception: " in text else None
        if unhandled is not None:
            message = f"terminate called after throwing an instance of '{demangle(unhandled.group(1))}'"
            when = logtime.parse_iso(text[: unhandled.start()])
            self._add(replace(line, time=line.time or when), "abort", message, None, {})
            found = classify(unhandled.group(2))
            if found is not None:
                kind, inner, rank, fields = found
                self._add(replace(line, time=line.time or when), kind, inner, rank, fields)
            stream.open = None
            return True
        count = text.count(_ABORT)
        if not count:
            return False
        classes = _CLASSES.findall(text)
        for i in range(count):
            cls = classes[i - (count - len(classes))] if i >= count - len(classes) else None
            message = f"terminate called after throwing an instance of '{cls or '?'}'"
            self._add(line, "abort", message, None, {})
            if cls is None:
                stream.pending_class = len(self.errors) - 1
        stream.open = None
        return True


def fast_skip(raw: str) -> bool:
    """An NCCL INFO line that states no fact this reader keeps (most of an ``NCCL_DEBUG=INFO`` log)."""
    return " NCCL INFO " in raw and not (
        "comm 0x" in raw
        or "version" in raw
        or "orld" in raw
        or "ORLD" in raw
        or "[rank" in raw
        or "atchdog" in raw
        or "terminate" in raw
        or "rror" in raw
    )
