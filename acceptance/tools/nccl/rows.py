"""The rows of one run: records, then rows still held as the text nccl-tests printed.

Most rows of a capture are clean (`PLAIN_ROW_LINE`: every column readable, `#wrong` 0 or
N/A, no nan): the feed loop keeps their lines as text, and they become `NcclRow` records only
when someone reads them. `acceptance parse nccl` never does: it writes their JSON straight from
the text (`json_texts`), the same characters `json.dumps(row.to_json())` gives. A row that
needs a judgement (a non-zero `#wrong`, a glued or damaged line) is read as a record at once,
after the text rows before it, so the order is the capture's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from acceptance.jsontext import JsonItems
from acceptance.tools.nccl.layout import plain_rows, plain_rows_json
from acceptance.tools.nccl.records import NcclRow, row_json_text


class NcclRows(Sequence[NcclRow]):
    """`records` followed by the rows of `lines` (clean plain rows, with their line numbers)."""

    __slots__ = ("_lines", "_numbers", "_read", "_records")

    def __init__(self, records: Sequence[NcclRow] = (), lines: Sequence[str] = (), numbers: Sequence[int] = ()):
        if len(lines) != len(numbers):
            raise ValueError(f"{len(lines)} row lines but {len(numbers)} line numbers")
        self._records = tuple(records)
        self._lines = tuple(lines)
        self._numbers = tuple(numbers)
        self._read: tuple[NcclRow, ...] | None = None if self._lines else self._records

    def _rows(self) -> tuple[NcclRow, ...]:
        if self._read is None:  # computed once; the same records for every reader
            self._read = self._records + tuple(plain_rows(list(self._lines), list(self._numbers)))
        return self._read

    def __len__(self) -> int:
        return len(self._records) + len(self._lines)

    @overload
    def __getitem__(self, index: int) -> NcclRow: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[NcclRow, ...]: ...
    def __getitem__(self, index: int | slice) -> NcclRow | tuple[NcclRow, ...]:
        return self._rows()[index]

    def __iter__(self) -> Iterator[NcclRow]:
        return iter(self._rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NcclRows | tuple | list):
            return self._rows() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._rows())

    def __repr__(self) -> str:
        return f"NcclRows({self._rows()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (NcclRows, (self._records, self._lines, self._numbers))

    def json_texts(self) -> JsonItems:
        """Each row's JSON (`json.dumps(row.to_json())`), the text rows' without making their records."""
        return JsonItems([row_json_text(r) for r in self._records] + plain_rows_json(list(self._lines)))
