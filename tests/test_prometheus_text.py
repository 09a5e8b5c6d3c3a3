"""The Prometheus/OpenMetrics text parser and dcgm-exporter's counters file, on every real sample of the corpus."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from acceptance.errors import ParseError
from acceptance.judge.recurrence_rules import HW_SIGNALS, PRESENCE_METRIC
from acceptance.tools import prometheus
from tests.shared import SHARED, needs_shared

EXPORTER = SHARED / "corpus-wave2" / "dcgm-exporter"
SENTINEL = float(9223372036854775794)


@dataclass(frozen=True)
class Expect:
    samples: int
    families: int
    uuids: int
    noise: tuple[int, ...] = ()  # line numbers skipped as a saved scrape's wrapping
    blank: frozenset[str] = frozenset()  # metrics holding DCGM's blank sentinel
    values: dict[str, float] = field(default_factory=dict)  # metric -> value of its first sample
    labels: tuple[str, ...] = ()  # label names of the first sample, in order


BLANK_146 = frozenset(
    {
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "DCGM_FI_DEV_RETIRED_SBE",
        "DCGM_FI_DEV_RETIRED_DBE",
        "DCGM_FI_DEV_RETIRED_PENDING",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
        "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
        "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    }
)

EXPOSITIONS: dict[str, Expect] = {
    "readme-sample-metrics-standalone-with-sentinel-value.txt": Expect(
        3, 3, 1, noise=(1, 2, 9, 13), blank=frozenset({"DCGM_FI_DEV_MEMORY_TEMP"}),
        values={"DCGM_FI_DEV_SM_CLOCK": 139, "DCGM_FI_DEV_MEM_CLOCK": 405}, labels=("gpu", "UUID"),
    ),
    "readme-sample-metrics-kubernetes-pod-labels.txt": Expect(
        3, 3, 1, noise=(1, 8, 12), blank=frozenset({"DCGM_FI_DEV_MEMORY_TEMP"}),
        values={"DCGM_FI_DEV_SM_CLOCK": 139}, labels=("gpu", "UUID", "container", "namespace", "pod"),
    ),
    "datadog-fixture-metrics-t4-two-captures-extra-labels-empty-help.txt": Expect(
        20, 20, 2,
        values={"DCGM_FI_DEV_POWER_USAGE": 8.969, "DCGM_FI_DEV_POWER_MGMT_LIMIT": 70.0, "DCGM_FI_DEV_FB_FREE": 15109},
        labels=("gpu", "UUID", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_PROCESS_NAME"),
    ),
    "datadog-fixture-metrics-t4-clock-throttle-reasons-bitmask.txt": Expect(
        2, 2, 1, values={"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 1, "DCGM_FI_DEV_FB_USED_PERCENT": 0.000008},
    ),
    "pod-gpu-metrics-exporter-1.4.6-2gpu-tab-indented-sentinels-pod-labels.txt": Expect(
        68, 34, 2, noise=(1,), blank=BLANK_146,
        values={"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 15347724978, "DCGM_FI_DEV_POWER_USAGE": 7.544},
        labels=("gpu", "UUID", "container", "namespace", "pod"),
    ),
}  # fmt: skip

COUNTERS = {  # file -> (fields, enabled)
    "default-counters.csv": (63, 26),
    "dcp-metrics-included.csv": (59, 26),
    "1.x-compatibility-metrics.csv": (41, 22),
}


def test_every_corpus_file_is_covered() -> None:
    if not EXPORTER.is_dir():
        pytest.skip("../shared is absent")
    files = {p.name for p in EXPORTER.iterdir() if p.suffix != ".source"}
    assert files == set(EXPOSITIONS) | set(COUNTERS)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPOSITIONS))
def test_corpus_exposition(name: str) -> None:
    expect = EXPOSITIONS[name]
    found = prometheus.parse((EXPORTER / name).read_text(), name)
    assert found.format == prometheus.PROMETHEUS
    assert len(found.samples) == expect.samples
    assert len(found.families) == expect.families
    assert len({s.label("UUID") for s in found.samples}) == expect.uuids
    assert tuple(n for n, _ in found.noise) == expect.noise
    assert {s.name for s in found.samples if prometheus.dcgm_blank(s.value)} == expect.blank
    first = {}
    for sample in found.samples:
        first.setdefault(sample.name, sample.value)
    for metric, value in expect.values.items():
        assert first[metric] == pytest.approx(value), metric
    if expect.labels:
        assert tuple(k for k, _ in found.samples[0].labels) == expect.labels
    assert all(s.timestamp_ms is None for s in found.samples)


@needs_shared
def test_sentinel_is_not_a_count() -> None:
    found = prometheus.parse((EXPORTER / "readme-sample-metrics-standalone-with-sentinel-value.txt").read_text())
    temp = next(s for s in found.samples if s.name == "DCGM_FI_DEV_MEMORY_TEMP")
    assert temp.value == SENTINEL
    assert prometheus.dcgm_blank(temp.value) == "int64 blank"
    assert prometheus.dcgm_blank(140737488355330.0) == "fp64 blank"
    assert prometheus.dcgm_blank(0.0) is None
    assert prometheus.dcgm_blank(15347724978.0) is None


@needs_shared
def test_two_hosts_in_one_file_are_kept_apart_by_labels() -> None:
    found = prometheus.parse(
        (EXPORTER / "datadog-fixture-metrics-t4-two-captures-extra-labels-empty-help.txt").read_text()
    )
    hosts = {(s.label("Hostname"), s.label("UUID")) for s in found.samples}
    assert hosts == {
        ("424773df46e0", "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"),
        ("551bdf382151", "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"),
    }
    assert found.families["DCGM_FI_DEV_SLOWDOWN_TEMP"].help == ""
    assert found.families["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"].type == "counter"


@needs_shared
@pytest.mark.parametrize("name", sorted(COUNTERS))
def test_corpus_counters_file(name: str) -> None:
    fields = prometheus.parse_counters((EXPORTER / name).read_text(), name)
    assert (len(fields), sum(f.enabled for f in fields)) == COUNTERS[name]


@needs_shared
def test_signal_table_agrees_with_dcgm_exporters_default_counters() -> None:
    """'not collected' is said of exactly the fields the default counters file switches off."""
    fields = prometheus.parse_counters((EXPORTER / "default-counters.csv").read_text())
    on = prometheus.enabled_series(fields)
    listed = {f.field for f in fields}
    assert PRESENCE_METRIC in on
    assert "DCGM_FI_DRIVER_VERSION" not in on  # a label, not a series
    for signal in HW_SIGNALS:
        if signal.metric in listed:
            assert (signal.metric in on) == signal.default_on, signal.metric
        else:
            assert not signal.default_on, signal.metric
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in listed
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in on


def test_openmetrics_timestamps_are_seconds_and_eof_is_required() -> None:
    text = (
        "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
        'DCGM_FI_DEV_XID_ERRORS{gpu="3",UUID="GPU-1",Hostname="sim-node-07"} 79 1764558000.5\n'
        "# EOF\n"
    )
    found = prometheus.parse(text, "dump.om")
    assert found.format == prometheus.OPENMETRICS
    assert found.samples[0].timestamp_ms == 1764558000500
    assert found.samples[0].label_map == {"gpu": "3", "UUID": "GPU-1", "Hostname": "sim-node-07"}
    with pytest.raises(ParseError, match=r"dump\.om:3: expected an OpenMetrics exposition ending with '# EOF'"):
        prometheus.parse(text.replace("# EOF\n", ""), "dump.om", format=prometheus.OPENMETRICS)


def test_prometheus_text_timestamps_are_milliseconds_and_escapes_are_read() -> None:
    found = prometheus.parse('up{job="a\\"b",path="C:\\\\x",msg="l1\\nl2",} 1 1764558000123\nfoo NaN\nbar +Inf\n')
    assert found.samples[0].timestamp_ms == 1764558000123
    assert found.samples[0].label_map == {"job": 'a"b', "path": "C:\\x", "msg": "l1\nl2"}
    assert str(found.samples[1].value) == "nan"
    assert found.samples[2].value == float("inf")


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ('ok 1\nDCGM_FI_DEV_XID_ERRORS{gpu="0" 1\n', 2, "a sample"),
        ("DCGM_FI_DEV_XID_ERRORS{gpu=0} 1\n", 1, 'labels as name="value"'),
        ("DCGM_FI_DEV_XID_ERRORS 12abc\n", 1, "a sample value"),
        ("DCGM_FI_DEV_XID_ERRORS 1 12.5\n", 1, "a timestamp in integer milliseconds"),
        ("# TYPE x countr\n", 1, "a metric type"),
        ("this is not a scrape\n", 1, "a sample line"),
        ("x 1\n# EOF\nx 2\n", 3, "nothing after '# EOF'"),
    ],
)
def test_bad_lines_name_file_line_and_what_was_expected(text: str, line: int, expected: str) -> None:
    with pytest.raises(ParseError) as caught:
        prometheus.parse(text, "scrape.txt")
    assert caught.value.source == "scrape.txt"
    assert caught.value.line == line
    assert expected in caught.value.expected


def test_counters_file_bad_line_is_an_error() -> None:
    with pytest.raises(ParseError, match=r"c\.csv:2: expected DCGM_FIELD, <gauge\|counter\|label>"):
        prometheus.parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_X, weird, y\n", "c.csv")


def test_noise_is_reported_not_parsed() -> None:
    found = prometheus.parse("\t\t$ curl -s localhost:9400/metrics\n\t\tx 1\n...\n")
    assert [n for n, _ in found.noise] == [1, 3]
    assert [(s.name, s.value) for s in found.samples] == [("x", 1.0)]
