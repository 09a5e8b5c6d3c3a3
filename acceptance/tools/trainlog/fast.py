"""Fast path for long Megatron logs when the caller keeps only a few columns.

Lines are taken in chunks joined into one byte buffer (`parse_fast`), or read in blocks of
bytes from a binary file object the caller opened, with text-mode semantics (`parse_binary`,
no line objects at all). Lines of
the most frequent lengths are matched against templates (`trainlog.bulk`: a line's skeleton that the line
parser reads as one plain record) and their fields computed from their digit bytes with
numpy. Every other line (events, rank prefixes, timers, colours, noise, glued or cut records),
and every record with non-zero skipped/NaN counts or a non-finite loss, goes through the line
parser in its place, so records, events and line numbers are identical to the slow path.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable
from typing import BinaryIO

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from acceptance.tools.trainlog.bulk import LINE, UNTRIED, Chunk, Template, build_template, matches
from acceptance.tools.trainlog.model import TrainLog
from acceptance.tools.trainlog.patterns import ANSI, MEGATRON
from acceptance.tools.trainlog.text import TextLogParser

FAST_COLUMNS = frozenset(
    {"step", "step_time_s", "loss", "lr", "consumed_samples", "global_batch_size", "grad_norm", "loss_scale"}
)
CHUNK = 8192  # lines per chunk: about 3 MB of Megatron lines (stays in cache)
MIN_GROUP = 16  # lines of one length worth trying a template on
MAX_TRIES = 24  # templates tried per chunk
MIN_RUN = 8  # shorter runs of bulk lines go through the line parser
_CACHE = 256
_PAD = "\0" * 8
_WINDOW = 512  # StepTable's dedupe window


def usable(fmt: str, keep: Collection[str] | None) -> bool:
    return fmt in ("megatron-lm", "megatron-deepspeed") and keep is not None and set(keep) <= FAST_COLUMNS


class FastParser:
    """The line parser plus the bulk path; feed chunks of lines in order, then `finish`."""

    def __init__(self, fmt: str, source: str, keep: Collection[str]) -> None:
        self.parser = TextLogParser(fmt, source, keep)
        self.fmt = fmt
        self.keep = frozenset(keep)
        self.templates: dict[bytes, Template | None] = {}
        self._buffers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Bulk records not yet in the line parser's dedupe window: (chunk, first, end, segment).
        self._unseen: list[tuple[Chunk, int, int, int]] = []
        # The highest step of this segment that a record could repeat, as of table length and segment.
        self._high: int | None = None
        self._high_at: tuple[int, int] = (-1, -1)

    def _scratch(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._buffers is None or self._buffers[0].size < size:
            size = max(size, 1 << 20)
            self._buffers = (np.empty(size, np.uint8), np.empty(size, np.uint8), np.empty(size, bool))
        return self._buffers

    def _chunk(self, lines: list[str]) -> Chunk | None:
        """Join and index a chunk (one row per line as given, whatever its newlines: a row
        matches a template only if it ends in the template's single newline); None unless ASCII."""
        lines.append(_PAD)  # lets a line be read in whole 8-byte words
        text = "".join(lines)
        lines.pop()
        if not text.isascii():
            return None
        lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
        starts = np.cumsum(lengths) - lengths
        return Chunk(lines, text.encode("ascii"), starts, lengths)

    def _template(self, chunk: Chunk, row: int) -> Template | None:
        skeleton = chunk.skeleton(row)
        if skeleton not in self.templates:
            if len(self.templates) >= _CACHE:
                self.templates.clear()
            self.templates[skeleton] = build_template(skeleton.decode("ascii"), self.fmt, self.keep)
        return self.templates[skeleton]

    def _match(self, chunk: Chunk) -> None:
        """Try templates on the most frequent line lengths among the lines not yet placed."""
        for _ in range(MAX_TRIES):
            left = np.flatnonzero(chunk.template == UNTRIED)
            if len(left) < MIN_GROUP:
                return
            lengths = chunk.lengths[left]
            counts = np.bincount(lengths)
            best = int(np.argmax(counts))
            if counts[best] < MIN_GROUP:
                return
            group = left[lengths == best]
            template = self._template(chunk, int(group[0]))
            if template is None:
                chunk.template[group[0]] = LINE  # not a plain record
                continue
            ok, digits = self._check(chunk, group, template)
            if not ok[0]:
                chunk.template[group[0]] = LINE
                continue
            chunk.take(group[ok], digits if ok.all() else digits[ok], template)

    def _check(self, chunk: Chunk, group: np.ndarray, template: Template) -> tuple[np.ndarray, np.ndarray]:
        """Which lines of `group` match the template, and their digit bytes. Long runs of
        consecutive lines are viewed in place; scattered lines are gathered first."""
        breaks = (np.flatnonzero(np.diff(group) != 1) + 1).tolist()
        if len(breaks) >= len(group) // 64:
            lines = sliding_window_view(chunk.buf, template.width)[chunk.starts[group]]
            _, scratch, flags = self._scratch(lines.size)
            return matches(lines, template, scratch, flags), np.take(lines, template.digits, axis=1)
        oks, digits = [], []
        length = template.length
        _, scratch, flags = self._scratch(len(group) * length)
        for a, b in zip([0, *breaks], [*breaks, len(group)], strict=True):
            start = int(chunk.starts[group[a]])
            block = chunk.buf[start : start + (b - a) * length].reshape(b - a, length)
            oks.append(matches(block, template, scratch, flags))
            digits.append(np.take(block, template.digits, axis=1))
        return np.concatenate(oks), np.concatenate(digits)

    def feed_chunk(self, lines: list[str], first: int) -> None:
        """Feed consecutive lines, the first being line number `first`."""
        chunk = self._chunk(lines)
        if chunk is None:
            for offset, raw in enumerate(lines):
                self._feed(raw, first + offset)
            return
        self._place(chunk, first)

    def feed_ascii(self, data: bytes, first: int) -> int:
        """Feed an ASCII block of whole lines (plus 8 spare bytes at its end), its first line
        being line number `first`; returns how many lines it held."""
        size = len(data) - len(_PAD)
        flags = self._scratch(size)[2]
        ends = np.flatnonzero(np.equal(np.frombuffer(data, np.uint8, size), 10, out=flags[:size]))
        if len(ends) == 0 or ends[-1] != size - 1:
            ends = np.append(ends, size - 1)  # the last line of the file, without a newline
        starts = np.empty(len(ends), dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        self._place(Chunk(None, data, starts, ends - starts + 1), first)
        return len(ends)

    def _place(self, chunk: Chunk, first: int) -> None:
        self._match(chunk)
        previous = 0
        for i in np.flatnonzero(chunk.template < 0).tolist():
            self._run(chunk, previous, i, first)
            self._feed(chunk.line(i), first + i)
            previous = i + 1
        self._run(chunk, previous, len(chunk), first)

    def finish(self) -> TrainLog:
        return self.parser.finish()

    def _feed(self, raw: str, lineno: int) -> None:
        if self._unseen and (MEGATRON.search(raw) or ("\x1b" in raw and MEGATRON.search(ANSI.sub("", raw)))):
            self._seed()  # the line may add a record: the dedupe window must be as the line parser's
        self.parser.feed(raw, lineno)

    def _run(self, chunk: Chunk, a: int, b: int, first: int) -> None:
        while a < b and self.parser.pending():
            self._feed(chunk.line(a), first + a)
            a += 1
        if b - a < MIN_RUN or not self._bulk(chunk, a, b):
            for i in range(a, b):
                self._feed(chunk.line(i), first + i)

    def _bulk(self, chunk: Chunk, a: int, b: int) -> bool:
        """Append lines a..b as records, unless the line parser could drop one as a repeat."""
        table = self.parser.table
        steps = chunk.steps[a:b]
        if not (np.diff(steps) > 0).all():
            return False
        segment = table.segment
        if (len(table), segment) != self._high_at:
            # The line parser added records (or a segment began): the highest step it remembers.
            remembered = [step for step, seg in table._recent if seg == segment]  # its dedupe window
            self._high = max(remembered, default=None)
        if self._high is not None and steps[0] <= self._high:
            seen = [step for step, seg in table._recent if seg == segment]
            for other, start, end, seg in self._unseen:
                if seg == segment:
                    seen.extend(other.steps[max(start, end - _WINDOW) : end].tolist())
            if np.isin(steps[:_WINDOW], np.array(seen, dtype=np.int64)).any():
                return False
        table.extend(steps, {name: col[a:b] for name, col in chunk.columns.items()})
        self.parser.count_steps(b - a)
        self._high = int(steps[-1]) if self._high is None else max(self._high, int(steps[-1]))
        self._high_at = (len(table), segment)
        self._unseen.append((chunk, a, b, segment))
        while sum(end - start for _, start, end, _ in self._unseen[1:]) >= _WINDOW:
            del self._unseen[0]
        return True

    def _seed(self) -> None:
        """Put the last bulk records in the dedupe window, as the line parser would have."""
        recent = self.parser.table._recent
        rows: list[tuple[Chunk, int, int]] = []
        for chunk, start, end, segment in reversed(self._unseen):
            rows.extend((chunk, i, segment) for i in range(end - 1, max(start, end - _WINDOW + len(rows)) - 1, -1))
        self._unseen = []
        rows.reverse()
        for chunk, i, segment in rows:
            tid = int(chunk.template[i])
            fields = tuple((name, float(chunk.columns[name][i])) for name in chunk.orders[tid])
            recent[(int(chunk.steps[i]), segment)] = (fields, {None})
            if len(recent) > _WINDOW:
                recent.popitem(last=False)


def parse_fast(lines: Iterable[str], fmt: str, source: str, keep: Collection[str]) -> TrainLog:
    fast = FastParser(fmt, source, keep)
    it = iter(lines)
    lineno = 1
    while True:
        chunk = list(itertools.islice(it, CHUNK))
        if not chunk:
            break
        fast.feed_chunk(chunk, lineno)
        lineno += len(chunk)
    return fast.finish()


BLOCK = 1 << 21  # bytes read at a time by `parse_binary`


def _text_lines(block: bytes) -> list[str]:
    """A block's lines as a text-mode file gives them (UTF-8 with replacement, universal newlines)."""
    text = block.decode("utf-8", errors="replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    if last:
        out.append(last)
    return out


def parse_binary(raw: BinaryIO, fmt: str, source: str, keep: Collection[str]) -> TrainLog:
    """Parse a log the caller opened in binary mode: the same records as the line parser reading it
    in text mode (UTF-8 with replacement, universal newlines), read in blocks of BLOCK bytes."""
    fast = FastParser(fmt, source, keep)
    lineno = 1
    rest = b""
    while True:
        data = raw.read(BLOCK)
        block = rest + data
        if data:
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                rest = block
                continue
            block, rest = block[:cut], block[cut:]
        if block.isascii() and b"\r" not in block:
            lineno += fast.feed_ascii(block + _PAD.encode("ascii"), lineno)
        elif block:
            lines = _text_lines(block)
            fast.feed_chunk(lines, lineno)
            lineno += len(lines)
        if not data:
            break
    return fast.finish()
