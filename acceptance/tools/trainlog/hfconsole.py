"""Hugging Face Trainer console output: `{'loss': …}` dicts among tqdm progress-bar states.

The dicts carry no step: one is printed every `logging_steps` optimizer steps, so the count
of dicts is not the step. The step is the trainer's global step, read from, in this order:

1. a `step` / `global_step` key of the dict, when it has one;
2. the training bar's counter (`61/120`): the Trainer prints the dict with `tqdm.write`, which
   clears the bar, prints the dict and redraws the bar at the same count, so the bar state right
   after the dict (or else the last one before it) is the global step at that log;
3. `epoch` × steps per epoch (`Total optimization steps` / `Num Epochs` of the run's header);
4. else the previous dict's step plus the last interval between dicts, said in a note.

A counter that does not move past the previous dict's step is not this dict's (a pasted
terminal keeps one bar state for many dicts). Only the training bar counts: its total is the
header's `Total optimization steps`, or the first bar's total; evaluation bars have their own.
The bar's rate is the step time: `1.21s/it` is 1.21 s, `4.00it/s` 0.25 s. It is tqdm's
smoothed rate (an exponential average, smoothing 0.3): after a resume, the bar's first state
jumps to the restored step at once and that jump dominates the average for its next updates,
so no step time is taken while it still weighs more than 1% of the rate.

A log with a training bar that ends after a dict but before the bar's redraw was cut there:
that dict's count is unknown, so it is dropped and listed as an error (the log is incomplete).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from acceptance.tools.trainlog.model import LineError
from acceptance.tools.trainlog.patterns import HF_DICT, HF_KV

TQDM = re.compile(r"(\d+)/(\d+) \[[\d:]+<[\d:?]+,\s*(?:([\d.]+)(s/it|it/s)|\?(?:s/it|it/s))")
HEADER = re.compile(r"(Total optimization steps|Num Epochs) = ([\d,]+)")
SMOOTHING = 0.3
POLLUTION = 0.01  # the weight below which a resume's jump no longer spoils tqdm's rate


class Sink(Protocol):
    """What the console reader hands its records and notes to (the line parser)."""

    notes: list[str]
    errors: list[LineError]

    def emit(self, step: int, fields: dict[str, float], rank: int | None, lineno: int) -> None: ...

    def event(self, kind: str, step: int | None, lineno: int) -> None: ...

    def resumed(self) -> bool:
        """Whether the log has said it resumed from a checkpoint."""
        ...


@dataclass(frozen=True)
class Bar:
    """One state of the training bar: its counter and the step time its rate gives (None: `?it/s`,
    or a rate still dominated by a resume's jump)."""

    n: int
    step_time: float | None


@dataclass(frozen=True)
class Pending:
    """A loss dict waiting for the bar state that tqdm redraws after it."""

    fields: dict[str, float]
    explicit: int | None
    rank: int | None
    lineno: int
    before: Bar | None
    text: str


def _jump_weight(jump: int, k: int) -> float:
    """How much a first update of `jump` extra steps still adds, relatively, to tqdm's averaged
    steps per update `k` updates on (its bias-corrected exponential average)."""
    beta = 1 - SMOOTHING
    return jump * SMOOTHING * beta ** (k - 1) / (1 - beta**k)


class HfConsole:
    """Reads the HF Trainer console lines handed to it in order; `finish` at the end."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.total: int | None = None  # the training bar's total
        self.epochs: float | None = None
        self.header_total: int | None = None
        self.bar: Bar | None = None  # the training bar's last state
        self.pending: Pending | None = None
        self.last: int | None = None  # the step of the last dict
        self.interval = 1
        self.jump = 0  # steps the bar's first move jumped over (a resume)
        self.since_jump = 0  # training-bar states since that jump, itself included
        self.told: set[str] = set()

    # ------------------------------------------------------------------ reading
    def line(self, line: str, rank: int | None, lineno: int) -> None:
        if "=" in line:
            for m in HEADER.finditer(line):
                value = int(m.group(2).replace(",", ""))
                if m.group(1) == "Num Epochs":
                    self.epochs = float(value)
                else:
                    self.header_total = self.total = value
        items: list[tuple[int, re.Match[str], bool]] = [(m.start(), m, True) for m in TQDM.finditer(line)]
        if "{" in line:
            items += [(m.start(), m, False) for m in HF_DICT.finditer(line)]
            items.sort(key=lambda item: item[0])
        for _, m, is_bar in items:
            if is_bar:
                self._bar(m)
            else:
                self._dict(line, m, rank, lineno)

    def finish(self) -> None:
        p = self.pending
        if p is not None and p.explicit is None and self.bar is not None:
            self.pending = None
            self.sink.errors.append(LineError(p.lineno, p.text[:500]))
            self.sink.notes.append(
                f"line {p.lineno}: the log ends after this dict, before the progress bar gives its step: dropped"
            )
        self._settle(None)

    def _bar(self, m: re.Match[str]) -> None:
        n, total = int(m.group(1)), int(m.group(2))
        if self.total is None:
            self.total = total
        if total != self.total:
            return  # an evaluation or data-loading bar
        previous = self.bar.n if self.bar is not None else None
        if previous is not None and n < previous:
            self.jump = 0  # a new training bar (the run restarted)
        if previous == 0 and n > 1 and self.sink.resumed():
            self.jump, self.since_jump = n - 1, 0  # the first move after a resume: to the restored step + 1
        self.since_jump += 1
        step_time: float | None = None
        if m.group(3) is not None:
            rate = float(m.group(3))
            step_time = rate if m.group(4) == "s/it" else (1.0 / rate if rate > 0 else None)
        if self.jump and _jump_weight(self.jump, self.since_jump) > POLLUTION:
            if step_time is not None and "jump" not in self.told:
                self.told.add("jump")
                self.sink.notes.append(
                    f"tqdm's rate after the resume counts the {self.jump} restored steps for its first updates: "
                    "no step time while it does"
                )
            step_time = None
        bar = Bar(n, step_time)
        self.bar = bar
        if self.pending is not None:
            self._settle(bar)

    def _dict(self, line: str, start: re.Match[str], rank: int | None, lineno: int) -> None:
        end = line.find("}", start.end())
        kv = {
            k: float(v.replace("Infinity", "inf"))
            for k, v in HF_KV.findall(line[start.start() : end if end >= 0 else len(line)])
        }
        self._settle(None)
        if "loss" in kv:
            fields = {"loss": kv["loss"]}
            for src, dst in (("learning_rate", "lr"), ("grad_norm", "grad_norm"), ("epoch", "epoch")):
                if src in kv:
                    fields[dst] = kv[src]
            explicit = kv.get("step", kv.get("global_step"))
            text = line[start.start() : end + 1 if end >= 0 else len(line)]
            self.pending = Pending(
                fields, int(explicit) if explicit is not None else None, rank, lineno, self.bar, text.strip()
            )
        elif "eval_loss" in kv:
            self.sink.event("eval", self.last, lineno)
        elif "train_runtime" in kv:
            self.sink.notes.append(f"train_runtime {kv['train_runtime']} s (includes evaluation; not a step time)")

    # ------------------------------------------------------------------ steps
    def _settle(self, after: Bar | None) -> None:
        """Give the pending dict its step (see the module) and hand it on."""
        p = self.pending
        if p is None:
            return
        self.pending = None
        fields = dict(p.fields)
        step = p.explicit
        if step is None:
            bars = [b for b in (after, p.before) if b is not None and (self.last is None or b.n > self.last)]
            if bars:
                best = max(bars, key=lambda b: b.n)
                step = best.n
                if best.step_time is not None:
                    fields["step_time_s"] = best.step_time
                self._tell("bar", "steps are the training bar's counter at each printed dict")
            elif "epoch" in fields and self.epochs and self.header_total:
                per_epoch = self.header_total / self.epochs
                guess = round(fields["epoch"] * per_epoch)
                if self.last is None or guess > self.last:
                    step = guess
                    self._tell("epoch", f"steps from epoch × {per_epoch:g} steps per epoch (the run's header)")
        if step is None:
            step = (self.last or 0) + self.interval
            self.sink.notes.append(
                f"line {p.lineno}: the printed dict says no step and no progress bar or epoch gives it: "
                f"taken as {step} (the previous dict's step + {self.interval})"
            )
        if self.last is not None and step > self.last:
            self.interval = step - self.last
        self.last = step
        self.sink.emit(step, fields, p.rank, p.lineno)

    def _tell(self, key: str, note: str) -> None:
        if key not in self.told:
            self.told.add(key)
            self.sink.notes.append(note)


__all__ = ["HfConsole"]
