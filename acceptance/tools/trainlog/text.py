"""Line-oriented training logs: Megatron-LM, Megatron-DeepSpeed, GPT-NeoX, NeMo 2, torchtitan,
nanoGPT, DeepSpeed engine lines, HF Trainer printed dicts, Megatron straggler lines.

Lines are read one at a time (streaming). Rank prefixes (`[default7]:`, `[rank0]:`, srun's
` 0: `), ANSI colours and markdown `> ` quoting are stripped first; several records on one
physical line (ranks interleaved without newlines) are split at each record start, and a
Megatron record cut by a line break is joined with the following line.

A log that ends inside its last line (no line end: the job or the copy was cut) cannot be
trusted to hold whole numbers (`lr 6.42466` of `6.424660E-05`): that line is kept only when
it visibly ends where the format ends a record (`|`, `}`, `%`, `]`) or, for other lines, does
not end in a digit; otherwise it is dropped and a note says so.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Collection, Iterable

from acceptance.tools.trainlog.hfconsole import HfConsole
from acceptance.tools.trainlog.model import Event, LineError, RankTimer, StepTable, TrainLog
from acceptance.tools.trainlog.patterns import (
    ANSI,
    DS_RECORD,
    DS_STEP,
    DS_TIMER,
    EVAL,
    EVENT_HINT,
    FIELDS,
    HF_DICT,
    KV,
    LOAD,
    MAX_JOIN,
    MEGATRON,
    NANOGPT,
    NEMO2,
    PREFIX,
    RECORD_END,
    RESUME_NOSTEP,
    SAVE,
    SKIP_LINE,
    START,
    START_AT,
    STRAGGLER,
    TITAN,
    TITAN_KV,
)

MAX_NOTES = 20


def _num(text: str) -> float:
    return float(text.strip().split()[0].replace(",", ""))


class TextLogParser:
    """Feeds lines of one text format into a StepTable and collects events and timers."""

    def __init__(self, fmt: str, source: str, keep: Collection[str] | None = None) -> None:
        self.format = fmt
        self.source = source
        self.table = StepTable(keep)
        self.events: list[Event] = []
        self.timers: list[RankTimer] = []
        self.notes: list[str] = []
        self.errors: list[LineError] = []
        self._pending_resume: int | None = None  # index in events of a resume without a step
        self._carry: tuple[str, int | None, int] | None = None
        self._hf = HfConsole(self)
        self._ds_skipped = 0
        self._last_eval: int | None = None
        self._steps_since_resume = 0
        self._ds_overflows = 0  # DeepSpeed overflow lines not yet counted by a `skipped=` counter
        self._unended: tuple[str, int] | None = None  # a line without its line end, held back
        self.ended = False  # whether any line came with its line end (a file, not pre-split lines)
        self._fed = 0
        self._unreadable_lines = 0
        self._bars = 0  # how many `|` separators the last whole record line had

    # ------------------------------------------------------------------ driving
    def run(self, lines: Iterable[str], first_line: int = 1) -> TrainLog:
        for lineno, raw in enumerate(lines, start=first_line):
            self.feed(raw, lineno)
        return self.finish()

    def pending(self) -> bool:
        """Whether a record, a resume or a held-back line waits for the next line (no bulk input now)."""
        return (
            self._carry is not None
            or self._pending_resume is not None
            or self._unended is not None
            or self._hf.pending is not None
        )

    def count_steps(self, n: int) -> None:
        self._steps_since_resume += n

    def finish(self) -> TrainLog:
        if self._unended is not None:
            raw, lineno = self._unended
            self._unended = None
            if (not self.ended and self._fed > 1) or self._whole(raw):
                self._line(raw, lineno)
            else:
                text = ANSI.sub("", raw).strip()
                self.notes.append(f"line {lineno}: the log ends inside this line (no line end): dropped: {text[:100]}")
                self.errors.append(LineError(lineno, text[:500]))
        if self._carry is not None:
            text, rank, lineno = self._carry
            self._carry = None
            try:
                self._record(text, rank, lineno, final=True)
            except (ValueError, OverflowError) as exc:
                self._unreadable(lineno, text, exc)
        self._hf.finish()
        return TrainLog(
            format=self.format,
            source=self.source,
            columns=self.table.columns(),
            events=tuple(self.events),
            timers=tuple(self.timers),
            notes=tuple(self.notes),
            errors=tuple(self.errors),
        )

    def feed(self, raw: str, lineno: int) -> None:
        self._fed += 1
        if self._unended is not None:  # it was not the last line after all
            held, held_line = self._unended
            self._unended = None
            self._line(held, held_line)
        if raw.endswith(("\n", "\r")):
            self.ended = True
            self._line(raw, lineno)
        else:
            self._unended = (raw, lineno)

    def _whole(self, raw: str) -> bool:
        """Whether a last line without its line end visibly ends where its record ends."""
        line = ANSI.sub("", raw).rstrip() if "\x1b" in raw else raw.rstrip()
        if not line.strip():
            return True
        end = RECORD_END.get(self.format)
        if self._carry is not None:  # the rest of a record cut by a line break
            line = self._carry[0] + " " + line.strip()
        if not self._record_start(line):
            return not line[-1].isdigit()
        if end is None or not line.endswith(end):
            return False
        if self.format in ("megatron-lm", "megatron-deepspeed", "gpt-neox", "megatron-straggler"):
            return 0 < self._bars <= line.count("|")  # as many fields as the record before it
        return True

    def _record_start(self, line: str) -> bool:
        fmt = self.format
        if fmt in ("megatron-lm", "megatron-deepspeed", "gpt-neox", "megatron-straggler"):
            return bool(MEGATRON.search(line) or "/Rnk:" in line)
        pattern = {"nemo2": NEMO2, "torchtitan": TITAN, "nanogpt": NANOGPT, "hf-trainer-console": HF_DICT}.get(fmt)
        if pattern is not None:
            return bool(pattern.search(line))
        return fmt == "deepspeed" and bool(DS_RECORD.search(line))

    def _line(self, raw: str, lineno: int) -> None:
        try:
            body = raw.rstrip("\r\n")
            if "\r" in body:  # tqdm's redrawn states, and whatever was printed after one, on one line
                parts = body.split("\r")
                for part in parts[:-1]:
                    if part:
                        self._read_line(part + "\n", lineno)
                self._read_line(parts[-1] + raw[len(body) :], lineno)
            else:
                self._read_line(raw, lineno)
        except (ValueError, OverflowError) as exc:  # a number that does not read in a damaged line
            self._unreadable(lineno, raw, exc)

    def _unreadable(self, lineno: int, raw: str, exc: Exception) -> None:
        """A line whose record cannot be read whole is dropped, and said so (at most MAX_NOTES times)."""
        self._unreadable_lines += 1
        if self._unreadable_lines <= MAX_NOTES:
            self.errors.append(LineError(lineno, raw.strip()[:500]))
            self.notes.append(f"line {lineno}: unreadable record dropped ({exc}): {raw.strip()[:100]}")
        elif self._unreadable_lines == MAX_NOTES + 1:
            self.notes.append(f"line {lineno}: more unreadable records dropped (not listed)")

    def _read_line(self, raw: str, lineno: int) -> None:
        line = raw.rstrip("\r\n")
        if "\x1b" in line:
            line = ANSI.sub("", line)
        rank: int | None = None
        while True:
            m = PREFIX.match(line)
            if not m:
                break
            digits = m.group(1) or m.group(2) or m.group(3)
            rank = int(digits)
            line = line[m.end() :]
        if self._carry is not None:
            text, crank, cline = self._carry
            self._carry = None
            self._record(text + " " + line.strip(), crank, cline, joins=1)
            return
        if not line.strip():
            return
        if EVENT_HINT.search(line):
            self._events(line, lineno)
        if "OVERFLOW" in line and SKIP_LINE.search(line):  # DeepSpeed does not say which step it skipped
            self.events.append(Event("skip", None, lineno, "fp16 overflow: a step skipped (DeepSpeed)"))
            self._ds_overflows += 1
            return
        if "/Rnk:" in line:
            self._timers(line, lineno)
        if "|" in line and raw.endswith(("\n", "\r")):
            self._bars = line.count("|") if MEGATRON.search(line) else self._bars
        self._record(line, rank, lineno)

    # ------------------------------------------------------------------ events
    def _event(self, kind: str, step: int | None, lineno: int, detail: str = "") -> None:
        for previous in reversed(self.events[-4:]):
            if previous.type == kind and previous.step == step and step is not None:
                return  # "saving ..." then "successfully saved ..." of the same checkpoint
        if kind == "resume":
            if self.events and self.events[-1].type == "resume" and self._steps_since_resume == 0:
                return
            self.table.segment += 1
            self._steps_since_resume = 0
        self.events.append(Event(kind, step, lineno, detail))

    def _events(self, line: str, lineno: int) -> None:
        m = LOAD.search(line)
        if m:
            step = int(next(g for g in m.groups() if g is not None))
            if step > 0:  # a step-0 (seed) checkpoint starts a run, it resumes nothing
                self._event("resume", step, lineno, line.strip()[:200])
            return
        m = START_AT.search(line)
        if m:
            first = int(m.group(1))
            if first <= 1:
                self._event("start", first, lineno, line.strip()[:200])
            elif not (self.events and self.events[-1].type == "resume"):
                self._event("resume", first - 1, lineno, line.strip()[:200])
            return
        if START.search(line):
            self._event("start", None, lineno, line.strip()[:200])
            return
        m = SAVE.search(line)
        if m and "Loading" not in line and "Finished saving" not in line:  # torchtitan's done-line repeats the save
            groups = [g for g in m.groups() if g is not None]
            saved = int(groups[0]) if groups else self._save_step_guess()
            self._event("checkpoint_save", saved, lineno, line.strip()[:200])
            return
        m = RESUME_NOSTEP.search(line)
        if m:
            if m.group(1) is not None and int(m.group(1)) > 0:  # the restored checkpoint's name gives its step
                self._event("resume", int(m.group(1)), lineno, line.strip()[:200])
                return
            before = len(self.events)
            self._event("resume", None, lineno, line.strip()[:200])
            if len(self.events) > before:  # a repeated resume line adds no event to point at
                self._pending_resume = before
            return
        m = EVAL.search(line)
        if m:
            step = int(m.group(1) or m.group(2))
            self._last_eval = step
            self._event("eval", step, lineno)

    def _save_step_guess(self) -> int | None:
        if self.format == "nanogpt" and self._last_eval is not None:
            return self._last_eval - 1  # nanoGPT saves before running iteration `eval`
        return self.table.last_step

    def _timers(self, line: str, lineno: int) -> None:
        for m in STRAGGLER.finditer(line):
            self.timers.append(
                RankTimer(
                    metric=m.group(1),
                    unit=m.group(3),
                    min_value=float(m.group(2)),
                    min_rank=int(m.group(4)),
                    max_value=float(m.group(5)),
                    max_rank=int(m.group(6)),
                    step=self.table.last_step,
                    line=lineno,
                )
            )

    # ------------------------------------------------------------------ records
    def _emit(self, step: int, fields: dict[str, float], rank: int | None, lineno: int) -> None:
        if self._pending_resume is not None:
            old = self.events[self._pending_resume]
            self.events[self._pending_resume] = Event(old.type, step - 1, old.line, old.detail)
            self._pending_resume = None
        if not self.table.add(step, fields, rank):
            return
        self._steps_since_resume += 1
        loss = fields.get("loss", 0.0)
        nan_count = fields.get("nan", 0.0)
        if not math.isfinite(loss) or (nan_count and nan_count > 0):
            fields_nan = 1.0
            self.table.merge_last(step, {"nan": fields_nan})
            what = f"loss {loss}" if not math.isfinite(loss) else f"{nan_count:g} NaN iterations"
            self.events.append(Event("nan", step, lineno, what))
        skipped = fields.get("skipped", 0.0)
        if self.format != "deepspeed" and skipped and skipped > 0:
            self.events.append(Event("skip", step, lineno, f"{skipped:g} skipped iterations"))

    def _record(self, line: str, rank: int | None, lineno: int, joins: int = 0, final: bool = False) -> None:
        fmt = self.format
        if fmt in ("megatron-lm", "megatron-deepspeed", "gpt-neox", "megatron-straggler"):
            self._megatron(line, rank, lineno, joins, final)
        elif fmt == "nemo2":
            self._nemo2(line, rank, lineno)
        elif fmt == "torchtitan":
            self._titan(line, rank, lineno)
        elif fmt == "nanogpt":
            for m in NANOGPT.finditer(line):
                self._emit(
                    int(m.group(1)),
                    {"loss": float(m.group(2)), "step_time_s": float(m.group(3)) / 1000.0},
                    rank,
                    lineno,
                )
        elif fmt == "deepspeed":
            self._deepspeed(line, rank, lineno)
        elif fmt == "hf-trainer-console":
            self._hf.line(line, rank, lineno)

    def _megatron(self, line: str, rank: int | None, lineno: int, joins: int, final: bool) -> None:
        starts = list(MEGATRON.finditer(line))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
            body = line[m.end() : end]
            fields: dict[str, float] = {}
            for key, value in KV.findall(body):
                spec = FIELDS.get(key.lower())
                if spec is not None and spec[0] not in fields:  # the first reading: a joined record repeats none
                    try:
                        fields[spec[0]] = float(value) * spec[1]
                    except ValueError:
                        continue
            last = i + 1 == len(starts)
            cut = last and "loss" not in fields and not body.rstrip().endswith("|")
            if cut and not final and joins < MAX_JOIN:
                self._carry = (line[m.start() :], rank, lineno)
                return
            fields.pop("step", None)
            self._emit(int(m.group(1)), fields, rank, lineno)

    def _nemo2(self, line: str, rank: int | None, lineno: int) -> None:
        starts = list(NEMO2.finditer(line))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
            fields: dict[str, float] = {"epoch": float(m.group(1))}
            for part in line[m.end() : end].split("|"):
                key, sep, value = part.partition(":")
                spec = FIELDS.get(key.strip().lower()) if sep else None
                if spec is None:
                    continue
                try:
                    fields[spec[0]] = _num(value) * spec[1]
                except (ValueError, IndexError):
                    continue
            step = int(fields.pop("step", float(m.group(2))))
            self._emit(step, fields, rank, lineno)

    def _titan(self, line: str, rank: int | None, lineno: int) -> None:
        starts = list(TITAN.finditer(line))
        for i, m in enumerate(starts):
            end = starts[i + 1].start() if i + 1 < len(starts) else len(line)
            fields: dict[str, float] = {"loss": float(m.group(2))}
            names = {"tps": "tokens_per_s", "grad_norm": "grad_norm", "tflops": "tflops", "mfu": "mfu"}
            for kv in TITAN_KV.finditer(line, m.end(), end):
                try:
                    fields[names[kv.group(1)]] = float(kv.group(2).replace(",", ""))
                except ValueError:
                    continue
            self._emit(int(m.group(1)), fields, rank, lineno)

    def _deepspeed(self, line: str, rank: int | None, lineno: int) -> None:
        m = DS_STEP.search(line)
        if m:
            step, skipped = int(m.group(1)), int(m.group(2))
            fields: dict[str, float] = {"skipped": float(skipped)}
            with contextlib.suppress(ValueError):
                fields["lr"] = float(m.group(3))
            if skipped > self._ds_skipped:
                new = skipped - self._ds_skipped
                unseen = new - min(new, self._ds_overflows)  # overflows already reported line by line
                self._ds_overflows -= new - unseen
                if unseen:
                    self.events.append(Event("skip", step, lineno, f"{unseen} skipped (fp16 overflow)"))
                self._ds_skipped = skipped
            self.table.upsert(step, fields, rank)
            return
        m = DS_TIMER.search(line)
        if m:
            step = int(m.group(1) or m.group(2))
            rate = m.group(3) or m.group(4)
            self.table.upsert(step, {"samples_per_s": float(rate)}, rank)

    # ------------------------------------------------------------------ the HF console reader's sink
    def emit(self, step: int, fields: dict[str, float], rank: int | None, lineno: int) -> None:
        self._emit(step, fields, rank, lineno)

    def event(self, kind: str, step: int | None, lineno: int) -> None:
        self._event(kind, step, lineno)

    def resumed(self) -> bool:
        return any(e.type == "resume" for e in self.events)


__all__ = ["TextLogParser"]
