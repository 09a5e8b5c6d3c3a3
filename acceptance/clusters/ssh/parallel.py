"""Doing one thing on many hosts at once, with a deadline, interruptible by Ctrl-C.

Daemon threads, not an executor: a thread stuck on a dead host must never keep the
process alive at exit, and the waiting (main) thread wakes often enough for a signal
handler to run.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")
TICK_S = 1.0  # how often `each` hands its outcomes so far to `tick`


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """The value a call returned, or the exception it raised (`done` False: it was still running)."""

    value: R | None
    error: BaseException | None
    done: bool = True


def each(
    fn: Callable[[T], R],
    items: Sequence[T],
    deadline_s: float,
    *,
    limit: int = 32,
    tick: Callable[[Sequence[Outcome[R]]], None] | None = None,
) -> list[Outcome[R]]:
    """`fn(item)` for every item, at most `limit` at a time; one outcome per item, in order.

    `tick`, when given, is called from the calling thread every `TICK_S` seconds with the outcomes so far
    (``done`` False: still running), e.g. to show progress."""
    results: list[Outcome[R]] = [Outcome(None, None, done=False) for _ in items]
    todo: queue.Queue[int] = queue.Queue()
    for i in range(len(items)):
        todo.put(i)
    finished: queue.Queue[tuple[int, Outcome[R]]] = queue.Queue()

    def worker() -> None:
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                finished.put((i, Outcome(fn(items[i]), None)))
            except Exception as exc:
                finished.put((i, Outcome(None, exc)))

    for _ in range(min(limit, len(items))):
        threading.Thread(target=worker, daemon=True, name="ssh-each").start()
    end = time.monotonic() + deadline_s
    left = len(items)
    next_tick = time.monotonic() + TICK_S
    while left and time.monotonic() < end:
        if tick is not None and time.monotonic() >= next_tick:
            next_tick = time.monotonic() + TICK_S
            tick(list(results))
        try:
            i, outcome = finished.get(timeout=min(0.25, max(0.01, end - time.monotonic())))
        except queue.Empty:
            continue
        results[i] = outcome
        left -= 1
    return results


def shielded(fn: Callable[[], R], deadline_s: float) -> R | None:
    """`fn()` run to its end (at most `deadline_s`) even if Ctrl-C or SIGTERM arrive meanwhile.

    For ending a run's processes: a second Ctrl-C while they are being ended must not leave them
    running. The interruption is not lost: the run is already ending because of the first one.
    None when `fn` did not finish in time.
    """
    box: list[Outcome[R]] = []

    def call() -> None:
        try:
            box.append(Outcome(fn(), None))
        except Exception as exc:
            box.append(Outcome(None, exc))

    thread = threading.Thread(target=call, daemon=True, name="ssh-shielded")
    thread.start()
    end = time.monotonic() + deadline_s
    while thread.is_alive() and time.monotonic() < end:
        try:
            thread.join(timeout=0.25)
        except KeyboardInterrupt:
            continue
    if not box:
        return None
    if box[0].error is not None:
        raise box[0].error
    return box[0].value
