"""PyTorch distributed / NCCL failure logs: watchdog timeouts, NCCL errors, torchrun summaries.

Formats: PyTorch 2.x c10d lines with the
``[rankN]:`` prefix and glog headers; PyTorch 1.x ``[E ProcessGroupNCCL.cpp:N]`` lines with the
rank inside the text; NCCL's ``host:pid:tid [dev] NCCL INFO|WARN`` lines; the multi-line
``NCCL error ... / ncclRemoteError: ... / Last error: / NET/IB : ...`` messages; ``terminate
called ...`` / ``what():`` blocks (two processes' text may be glued into one line); the
torch.distributed.elastic agent lines and torchrun's ``ChildFailedError`` summary.

The façade of `acceptance.tools.torchlogs`. Pure: text in, records out; never raises for text
it does not recognise (`TorchLog.recognised` is False then). Times are naive, in the log's own
clock; lines without a year (c10d / glog stamps) take `year`, else the year of the first full date in the
text, else stay undated; `TorchLog.yearless` counts the error lines whose time had no year of its own.

Paste damage is undone first: indentation, quote marks, output-line numbers, Ray and collector prefixes
(`acceptance.tools.pasteprefix`), a known shape glued behind other text (a tqdm bar), hard-wrapped lines (joined when
the next line continues a cut watchdog record or the paste's wrap width is certain; otherwise reported in
`TorchLog.notes`).
"""

from __future__ import annotations

from acceptance.tools import logtime
from acceptance.tools.pasteprefix import strip_prefix
from acceptance.tools.torchlogs.lines import Collector, Joiner, classify, fast_skip, split_line, wrap_width
from acceptance.tools.torchlogs.model import KINDS, AgentLine, ChildFailure, ErrorLine, RankHost, TorchLog
from acceptance.tools.torchlogs.steps import StepStamp, step_times
from acceptance.tools.torchlogs.summary import SummaryReader

__all__ = [
    "KINDS",
    "AgentLine",
    "ChildFailure",
    "ErrorLine",
    "RankHost",
    "StepStamp",
    "TorchLog",
    "classify",
    "parse",
    "step_times",
]


def parse(text: str, source: str = "<text>", *, year: int | None = None) -> TorchLog:
    """Every error line, rank → host fact and torchrun failure of one log."""
    year = year if year is not None else logtime.first_year(text)
    collector = Collector(year)
    summary = SummaryReader(year)
    lines = text.splitlines()
    joiner = Joiner(year, wrap_width(lines))
    held = joiner.held  # the lines a hard wrap holds: while there are any, no line is skipped unread
    for number, raw in enumerate(lines, 1):
        if not held and fast_skip(raw):
            continue
        stripped = strip_prefix(raw)
        summary.feed(number, stripped, raw)
        for line in joiner.feed(split_line(number, raw, year, stripped)):
            collector.feed(line)
    for line in joiner.finish():
        collector.feed(line)
    summary.finish()
    ranks = list(collector.ranks)
    seen = {(r.rank, r.host) for r in ranks if r.source == "torchrun"}
    for failure in summary.failures:
        if failure.rank is not None and failure.host and (failure.rank, failure.host) not in seen:
            seen.add((failure.rank, failure.host))
            ranks.append(RankHost(failure.rank, failure.host, "torchrun", failure.line, local_rank=failure.local_rank,
                                  pid=failure.pid))  # fmt: skip
    return TorchLog(
        source=source,
        errors=tuple(collector.errors),
        ranks=tuple(ranks),
        failures=tuple(summary.failures),
        agent=tuple(summary.agent),
        world_size=collector.world_size,
        nccl_versions=tuple(collector.nccl_versions),
        torch_version=collector.torch_version,
        year=year,
        lines=len(lines),
        notes=tuple(joiner.notes),
        yearless=collector.yearless + summary.yearless,
    )
