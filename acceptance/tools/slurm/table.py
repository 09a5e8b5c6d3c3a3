"""Splitting Slurm tables: header-aligned columns, sacct's dash ruler, delimiters and ``-o`` format strings."""

from __future__ import annotations

import itertools
import re

from acceptance.tools.slurm.model import Problem, Row

Lines = list[tuple[int, str]]

_FIELD = re.compile(r"%(?P<right>\.)?(?P<minus>-)?(?P<width>\d*)(?:\.\d+)?(?P<letter>[A-Za-z])")


def header_spans(header: str) -> list[tuple[str, int, int]]:
    """(NAME, start, end) of every header token."""
    return [(m.group(0).upper(), m.start(), m.end()) for m in re.finditer(r"\S+", header)]


def aligned(header: str, rows: Lines) -> tuple[list[Row], list[Problem]]:
    """Rows split on the header's columns: between two header tokens the cut is the rightmost blank of the
    row in that gap, so left-aligned cells wider than their header (``%-20.20s``) and right-aligned cells
    wider than theirs (``%.10l``) both stay whole; the last column takes the rest of the line."""
    spans = header_spans(header)
    out: list[Row] = []
    problems: list[Problem] = []
    for number, row in rows:
        cuts = [0]
        bad = False
        for (_, _, end), (_, start, _) in itertools.pairwise(spans):
            gap = [p for p in range(min(end, len(row)), min(start, len(row)) + 1) if p >= len(row) or row[p] == " "]
            if not gap:
                bad = True
                break
            cuts.append(max(gap))
        if bad:
            problems.append(Problem(number, row, "cells aligned under the header " + " ".join(s[0] for s in spans)))
            continue
        cuts.append(len(row))
        cells = {name: row[cuts[i] : cuts[i + 1]].strip() for i, (name, _, _) in enumerate(spans)}
        out.append(Row(cells, number))
    return out, problems


def ruled(header: str, ruler: str, rows: Lines) -> tuple[list[str], list[Row]]:
    """Rows split on the dash runs of a ruler line (``------------ ----------``), as sacct prints it."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"-+", ruler)]
    names = [header[a:b].strip().upper() for a, b in runs]
    out = [Row({n: row[a:b].strip() for n, (a, b) in zip(names, runs, strict=True)}, number) for number, row in rows]
    return names, out


def delimited(fields: list[str], rows: Lines, delimiter: str) -> tuple[list[Row], list[Problem]]:
    """Rows split on a delimiter; a trailing delimiter (sacct ``--parsable``) is allowed; a row with another
    number of cells is a problem (a value that holds the delimiter cannot be split back)."""
    out: list[Row] = []
    problems: list[Problem] = []
    for number, row in rows:
        cells = row.split(delimiter)
        if len(cells) == len(fields) + 1 and cells[-1] == "":
            cells.pop()
        if len(cells) != len(fields):
            problems.append(Problem(number, row, f"{len(fields)} fields separated by {delimiter!r}"))
            continue
        out.append(Row({f: c.strip() for f, c in zip(fields, cells, strict=True)}, number))
    return out, problems


def format_fields(fmt: str, names: dict[str, str]) -> tuple[list[str], re.Pattern[str]]:
    """Header names and a row pattern for a ``-o`` format string: ``%i|%E;%R;%C`` gives
    (JOBID, DEPENDENCY, NODELIST(REASON), CPUS) and a pattern that cuts at the literal separators
    (each cell takes the shortest text, the last one the rest)."""
    fields: list[str] = []
    pattern = "^"
    pos = 0
    matches = list(_FIELD.finditer(fmt))
    for k, match in enumerate(matches):
        pattern += re.escape(fmt[pos : match.start()])
        letter = match.group("letter")
        fields.append(names.get(letter, "%" + letter))
        pattern += "(.*)" if k == len(matches) - 1 else "(.*?)"
        pos = match.end()
    pattern += re.escape(fmt[pos:].rstrip()) + r"\s*$"
    return fields, re.compile(pattern)


def formatted(fields: list[str], pattern: re.Pattern[str], rows: Lines, fmt: str) -> tuple[list[Row], list[Problem]]:
    out: list[Row] = []
    problems: list[Problem] = []
    for number, row in rows:
        match = pattern.match(row)
        if not match:
            problems.append(Problem(number, row, f"a row of the format {fmt!r}"))
            continue
        out.append(Row({f: v.strip() for f, v in zip(fields, match.groups(), strict=True)}, number))
    return out, problems
