"""The Prometheus text format (0.0.4) and OpenMetrics 1.0, line by line.

Tolerant of what saved scrapes carry around the exposition: indentation (a scrape pasted into
a Markdown list), the shell command that fetched it, ``...`` elisions and blank lines are
skipped and listed as noise. A line that starts like a sample but does not complete one is a
`ParseError` naming the file, the line and what was expected: a half-read scrape is never
reported as a whole one.
"""

from __future__ import annotations

import math
import re

from acceptance.errors import ParseError
from acceptance.tools.prometheus.model import OPENMETRICS, PROMETHEUS, Exposition, Family, Labels, Sample

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^({_NAME})\s*(\{{.*\}})?\s*(\S+)(?:\s+(\S+))?(\s+#.*)?\s*$")
_START = re.compile(rf"^{_NAME}\s*\{{")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_META = re.compile(rf"^#\s*(HELP|TYPE|UNIT)\s+({_NAME})(?:[ \t]+(.*))?$")
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESCAPE = re.compile(r"\\[\\\"n]")
_COMMAND = re.compile(r"^(\$\s+|%\s+|>\s+)?(curl|wget|docker|kubectl|http|sudo)\s")
TYPES = frozenset(
    {"counter", "gauge", "histogram", "summary", "untyped", "unknown", "info", "stateset", "gaugehistogram"}
)
_SPECIAL = {"nan": math.nan, "+inf": math.inf, "inf": math.inf, "-inf": -math.inf}


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], text) if "\\" in text else text


def parse_labels(text: str, source: str, line: int) -> Labels:
    """``{gpu="0", UUID="GPU-..."}`` → ((name, value), ...); a comma may be followed by blanks."""
    body = text[1:-1].strip()
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(body):
        match = _LABEL.match(body, pos)
        if match is None:
            raise ParseError(source, line, text, 'labels as name="value" pairs separated by commas')
        out.append((match.group(1), _unescape(match.group(2))))
        pos = match.end()
    return tuple(out)


def _value(token: str, source: str, line: int, text: str) -> float:
    special = _SPECIAL.get(token.lower())
    if special is not None:
        return special
    try:
        return float(token)
    except ValueError:
        raise ParseError(source, line, text, "a sample value (a number, NaN, +Inf or -Inf)") from None


def _timestamp_ms(token: str, openmetrics: bool, source: str, line: int, text: str) -> int:
    try:
        number = float(token) if openmetrics else int(token)
    except ValueError:
        what = "seconds" if openmetrics else "integer milliseconds"
        raise ParseError(source, line, text, f"a timestamp in {what} after the value") from None
    if not math.isfinite(number):
        raise ParseError(source, line, text, "a finite timestamp")
    return round(number * 1000) if openmetrics else int(number)


def _noise(text: str) -> bool:
    """Lines a saved scrape carries that are not part of the format."""
    return text in ("...", "…") or _COMMAND.match(text) is not None


def parse(text: str, source: str = "<metrics>", *, format: str | None = None) -> Exposition:
    """Parse an exposition; `format` is detected when not given (OpenMetrics when it ends with ``# EOF``)."""
    lines = text.splitlines()
    stripped = [raw.strip() for raw in lines]
    if format is None:
        last = next((s for s in reversed(stripped) if s), "")
        format = OPENMETRICS if last == "# EOF" else PROMETHEUS
    openmetrics = format == OPENMETRICS
    families: dict[str, Family] = {}
    samples: list[Sample] = []
    noise: list[tuple[int, str]] = []
    label_cache: dict[str, Labels] = {}
    eof = False
    for number, line in enumerate(stripped, start=1):
        if not line:
            continue
        if eof:
            raise ParseError(source, number, line, "nothing after '# EOF'")
        if line[0] == "#":
            if line == "# EOF":
                eof = True
                continue
            meta = _META.match(line)
            if meta is None:
                continue  # a comment
            kind, name, rest = meta.group(1), meta.group(2), (meta.group(3) or "").strip()
            family = families.get(name, Family(name))
            if kind == "TYPE":
                if rest not in TYPES:
                    raise ParseError(source, number, line, f"a metric type ({', '.join(sorted(TYPES))})")
                family = Family(name, rest, family.help, family.unit)
            elif kind == "HELP":
                family = Family(name, family.type, _unescape(rest), family.unit)
            else:
                family = Family(name, family.type, family.help, rest)
            families[name] = family
            continue
        match = _SAMPLE.match(line)
        if match is None:
            if _START.match(line):
                raise ParseError(source, number, line, 'a sample: name{label="value",...} value [timestamp]')
            if _noise(line):
                noise.append((number, lines[number - 1]))
                continue
            raise ParseError(source, number, line, "a sample line, a '#' line or an empty line")
        name, label_text, value_text, stamp_text = match.group(1), match.group(2), match.group(3), match.group(4)
        try:
            value = _value(value_text, source, number, line)
        except ParseError:
            if label_text is None and _noise(line):
                noise.append((number, lines[number - 1]))
                continue
            raise
        labels: Labels = ()
        if label_text:
            cached = label_cache.get(label_text)
            if cached is None:
                cached = label_cache[label_text] = parse_labels(label_text, source, number)
            labels = cached
        stamp = _timestamp_ms(stamp_text, openmetrics, source, number, line) if stamp_text else None
        samples.append(Sample(name, labels, value, stamp, number))
    if openmetrics and not eof:
        raise ParseError(source, len(lines), "", "an OpenMetrics exposition ending with '# EOF'")
    return Exposition(source, format, families, tuple(samples), tuple(noise))
