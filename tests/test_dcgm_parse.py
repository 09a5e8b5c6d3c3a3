"""Parser details of `dcgmi diag` output: names, wrapping, multi-row verdicts, errors, truncation, noise."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acceptance.errors import ParseError
from acceptance.tools.dcgm import DcgmConditions, normalize_test_name, parse
from tests.shared import CORPUS, FIXTURES, SHARED

BORDER = "+---------------------------+------------------------------------------------+"
HEADER = [
    BORDER,
    "| Diagnostic                | Result                                         |",
    "+===========================+================================================+",
]


def row(name: str, value: str) -> str:
    return f"| {name:<25} | {value:<46} |"


def table(*rows: str, meta: bool = True) -> str:
    lines = [*HEADER]
    if meta:
        lines += [
            "|-----  Metadata  ----------+------------------------------------------------|",
            row("DCGM Version", "4.4.1"),
            row("Driver Version Detected", "570.172.08"),
            row("GPU Device IDs Detected", "2335, 2335"),
        ]
    return "\n".join([*lines, *rows, BORDER]) + "\n"


DEPLOY = "|-----  Deployment  --------+------------------------------------------------|"
STRESS = "+-----  Stress  ------------+------------------------------------------------+"


@pytest.mark.parametrize(
    ("shown", "name"),
    [
        ("Targeted Power", "targeted_power"),
        ("Targeted Stress", "targeted_stress"),
        ("Memory Bandwidth", "memory_bandwidth"),
        ("GPU Memory", "memory"),
        ("Context Create", "context_create"),
        ("EUD Test", "eud"),
        ("CPU EUD Test", "cpu_eud"),
        ("Pulse Test", "pulse_test"),
        ("SM Stress", "sm_stress"),
        ("PCIe", "pcie"),
        ("Denylist", "software"),
        ("Blacklist", "software"),
        ("Page Retirement/Row Remap", "software"),
        ("memory_bandwidth", "memory_bandwidth"),
        ("targeted stress", "targeted_stress"),
    ],
)
def test_names_map_onto_dcgm4_plugin_ids(shown: str, name: str) -> None:
    assert normalize_test_name(shown) == name


def test_wrapped_message_is_rejoined_without_added_spaces() -> None:
    """Chunks of 45 are concatenated as printed: a chunk starting with a blank keeps exactly one space."""
    msg = "GPU 1 has uncorrectable memory errors and row remappings are pending, word-split mid-word here"
    chunks = [msg[i : i + 45] for i in range(0, len(msg), 45)]
    rows = [row("targeted_power", "Fail"), row("", "GPU0: Pass"), row("", "GPU1: Fail")]
    rows += [row("Warning: GPU1" if i == 0 else "", c) for i, c in enumerate(chunks)]
    report = parse(table(STRESS, *rows))
    test = report.test("targeted_power")
    assert test is not None
    assert [m.text for m in test.messages] == [msg]
    assert test.messages[0].gpu == 1
    assert test.messages[0].entity == "GPU1"
    assert dict(test.gpus) == {0: "pass", 1: "fail"}


def test_warn_overall_turns_dcgm4_entity_fail_rows_into_warn() -> None:
    """4.x entity rows cannot print Warn: under a Warn test their Fail means warn."""
    report = parse(table(STRESS, row("targeted_power", "Warn"), row("", "GPU0: Pass"), row("", "GPU1: Fail")))
    test = report.test("targeted_power")
    assert test is not None
    assert test.status == "warn"
    assert dict(test.gpus) == {0: "pass", 1: "warn"}
    assert report.status == "pass"


def test_dcgm3_multi_row_verdicts_per_gpu() -> None:
    rows = [
        row("Targeted Stress", "Pass - GPUs: 1, 2, 4   "),
        row("", "Fail - GPU: 0   "),
        row("", "Skip - GPU: 3   "),
    ]
    report = parse(table(STRESS, *rows))
    test = report.test("targeted_stress")
    assert test is not None
    assert test.status == "fail"
    assert dict(test.gpus) == {0: "fail", 1: "pass", 2: "pass", 3: "skip", 4: "pass"}


def test_pass_all_uses_the_gpus_named_elsewhere_or_the_device_id_count() -> None:
    report = parse(table(STRESS, row("Memory Bandwidth", "Pass - All")))
    assert dict(report.gpus) == {0: "pass", 1: "pass"}  # two device ids in the Metadata block


def test_dcgm3_deployment_checks_fold_into_software_with_their_names() -> None:
    rows = [DEPLOY, row("Denylist", "Pass"), row("Persistence Mode", "Fail"), row("Error", "mode is off")]
    report = parse(table(*rows))
    software = report.test("software")
    assert software is not None
    assert software.status == "fail"
    assert [m.text for m in software.messages] == ["Persistence Mode: mode is off"]
    assert software.messages[0].kind == "error"


def test_a_report_printed_twice_counts_once() -> None:
    once = table(STRESS, row("targeted_power", "Pass"), row("", "GPU0: Pass"), row("", "GPU0: Pass"))
    assert parse(once + once) == parse(once)


def test_two_different_tables_keep_the_worst_result() -> None:
    good = table(STRESS, row("targeted_power", "Pass"), row("", "GPU0: Pass"))
    bad = table(STRESS, row("targeted_power", "Fail"), row("", "GPU0: Fail"))
    report = parse("Running iteration 1 of 2...\n" + good + "Running iteration 2 of 2...\n" + bad)
    assert report.status == "fail"
    assert report.gpus == {0: "fail"}


def test_unknown_verdict_is_a_parse_error_with_its_line() -> None:
    text = table(STRESS, row("targeted_power", "Maybe"))
    with pytest.raises(ParseError) as info:
        parse(text, "diag.txt")
    assert info.value.line == 9
    assert info.value.source == "diag.txt"
    assert "Maybe" in info.value.text


@pytest.mark.parametrize("text", ["", "\n\n", "hello world\nno table here\n", "kubectl: pod not found\n"])
def test_not_a_dcgm_output(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


def test_json_after_a_banner_line_and_bad_status() -> None:
    doc = '{"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name": "memtest", '
    doc += '"results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "%s"}], '
    doc += '"test_summary": {"status": "%s"}}]}]}, "metadata": {"version": "4.4.1"}}'
    report = parse("+ dcgmi diag -r 4 -j\n" + doc % ("Pass", "Pass"))
    assert report.status == "pass"
    assert report.test("memtest") is not None
    with pytest.raises(ParseError, match="Pass"):
        parse(doc % ("Maybe", "Pass"))


def test_error_lines_without_a_table_mean_the_diagnostic_did_not_complete() -> None:
    report = parse("Error: Diagnostic could not be run while DCGM is paused.\n")
    assert report.status == "error"
    assert report.errors[0].text == "Error: Diagnostic could not be run while DCGM is paused."


def test_conditions_differences_and_round_trip() -> None:
    now, then = DcgmConditions("4.4.1", 3), DcgmConditions("3.3.9", 3)
    assert now.differences(then) == ["DCGM 4.4.1 now, 3.3.9 at handover"]
    assert DcgmConditions("4.4.1", 2).differences(now) == ["level -r 2 now, -r 3 at handover"]
    assert now.differences(DcgmConditions("4.4.1", 3)) == []
    assert DcgmConditions.from_json(now.to_json()) == now


# ---------------------------------------------------------------- truncation and noise


def _samples() -> list[str]:
    files = sorted((FIXTURES / "dcgm").iterdir())
    if SHARED.is_dir():
        files += sorted((CORPUS / "dcgm").glob("dcgm-4.4.2-r2-*.txt"))
    texts = [p.read_text() for p in files if p.suffix in (".txt", ".json") and "dcgmi-stats" not in p.name]
    return [t for t in texts if parse(t).status == "pass"]


PASSING = _samples()
NOISE = [
    "",
    "root@nvidia-dcgm-exporter-4f599:/$ dcgmi diag -r 3",
    "Successfully ran diagnostic for group.",
    "...",
    "W1130 00:01:02.123456 kubectl.go:12] Warning: client version skew",
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB",
    "    ",
    "Running iteration 1 of 1...",
]


@pytest.mark.heavy
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_truncated_passing_output_never_passes(data: st.DataObject) -> None:
    """Cut anywhere before its end, a passing capture parses to a non-pass or raises ParseError only."""
    text = data.draw(st.sampled_from(PASSING))
    end = len(text.rstrip())
    cut = data.draw(st.integers(min_value=0, max_value=end - 1))
    try:
        report = parse(text[:cut])
    except ParseError:
        return
    assert report.status != "pass" or (report.incomplete is False and cut >= end)


def test_a_complete_table_stays_complete_whatever_box_another_dcgmi_command_prints_after_it() -> None:
    """A job log: the diagnostic's table, then `dcgmi stats` boxes (hand-made fixture, real layouts).

    Cut anywhere inside the diagnostic table it is never a pass; cut anywhere after its closing
    border (inside the stats boxes) it is the same complete, passing diagnostic.
    """
    text = (FIXTURES / "dcgm" / "dcgm-4.4.1-r2-text-2gpu-pass-then-dcgmi-stats-job-table.txt").read_text()
    whole = parse(text)
    assert (whole.status, whole.errors, len(whole.tests)) == ("pass", (), 3)
    closing = text.index("+---------------------------+-------", text.index("| pcie"))
    end_of_table = text.index("\n", closing) + 1
    for cut in range(text.index("| Diagnostic"), len(text), 7):
        try:
            report = parse(text[:cut])
        except ParseError:
            assert cut < end_of_table
            continue
        if cut < end_of_table:
            assert report.status != "pass", cut
        else:
            assert report == whole, cut


def test_a_box_of_another_dcgmi_command_with_the_diagnostic_geometry_is_skipped() -> None:
    """`dcgmi health`-style rows (a name, a bar at column 28, a value that is no verdict) are not a diagnostic."""
    box = (
        "+---------------------------+------------------------------------------------+\n"
        "| Overall Health            | Healthy                                        |\n"
        "+---------------------------+------------------------------------------------+\n"
    )
    text = (FIXTURES / "dcgm" / "dcgm-3.3.9-r3-text-8gpu-pass.txt").read_text()
    assert parse(box + text) == parse(text) == parse(text + box)
    with pytest.raises(ParseError):
        parse(box)


@pytest.mark.heavy
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_noise_lines_around_and_inside_a_text_table_change_nothing(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from([t for t in PASSING if not t.lstrip().startswith("{")]))
    lines = text.splitlines()
    noisy: list[str] = []
    for line in lines:
        if data.draw(st.booleans()):
            noisy.append(data.draw(st.sampled_from(NOISE)))
        noisy.append(line)
    noisy.append(data.draw(st.sampled_from(NOISE)))
    assert parse("\n".join(noisy)) == parse(text)


def test_a_chunk_ending_in_a_blank_still_continues() -> None:
    msg = "x" * 44 + " " + "continued after a chunk that ends with a blank"
    chunks = [msg[i : i + 45] for i in range(0, len(msg), 45)]
    rows = [
        row("Diagnostic", "Fail - All"),
        *(row("Warning" if i == 0 else "", c) for i, c in enumerate(chunks)),
    ]
    test = parse(table(STRESS, *rows)).test("diagnostic")
    assert test is not None
    assert [m.text for m in test.messages] == [msg]


def test_dcgm3_warn_all_return_code_row_is_kept_apart_from_the_warning() -> None:
    rows = [
        row("Diagnostic", "Warn - All"),
        row("Warning", "GPU 0 short warning"),
        row("", "  Code: (000000000012)"),
    ]
    test = parse(table(STRESS, *rows)).test("diagnostic")
    assert test is not None
    assert test.status == "warn"
    assert [(m.kind, m.text) for m in test.messages] == [
        ("warning", "GPU 0 short warning"),
        ("info", "Code: (000000000012)"),
    ]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_noise_before_and_after_a_json_document_changes_nothing(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from([t for t in PASSING if t.lstrip().startswith("{")]))
    before = data.draw(st.lists(st.sampled_from(NOISE), max_size=3))
    after = data.draw(st.lists(st.sampled_from(NOISE), max_size=3))
    assert parse("\n".join([*before, text, *after])) == parse(text)


def test_dcgm4_entity_not_run_prints_an_empty_status_and_counts_as_skip() -> None:
    report = parse(table(STRESS, row("memtest", "Pass"), row("", "GPU0: Pass"), row("", "GPU1:")))
    test = report.test("memtest")
    assert test is not None
    assert dict(test.gpus) == {0: "pass", 1: "skip"}


def test_indented_and_kubectl_timestamped_tables_parse_the_same() -> None:
    text = (FIXTURES / "dcgm" / "dcgm-4.4.1-r3-text-8gpu-xid79-diagnostic-fail-gpu5.txt").read_text()
    indented = "\n".join("    " + line for line in text.splitlines())
    stamped = "\n".join(f"2026-11-30T00:01:{i % 60:02d}.123456789Z {line}" for i, line in enumerate(text.splitlines()))
    assert parse(indented) == parse(text)
    assert parse(stamped) == parse(text)


def test_kubectl_timestamped_json_parses_the_same() -> None:
    text = (FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-h200-pass.json").read_text()
    stamped = "\n".join(f"2026-11-30T00:01:02.000000001Z {line}" for line in text.splitlines())
    assert parse(stamped) == parse(text)


_LINES = st.one_of(
    st.sampled_from([BORDER, *HEADER, DEPLOY, STRESS, row("pcie", "Pass"), row("", "GPU0: Fail"), "Error: x", "{"]),
    st.text(alphabet='|+-= {}[]:,"GPUasFil0123\t', max_size=90),
)


@pytest.mark.heavy
@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, max_size=25))
def test_any_text_parses_or_raises_parse_error_only(lines: list[str]) -> None:
    with contextlib.suppress(ParseError):
        parse("\n".join(lines))


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 300) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.heavy
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_json_value_of_the_wrong_type_is_a_parse_error_never_a_crash(data: st.DataObject) -> None:
    import json

    doc = json.loads((FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-xid79-diagnostic-fail-gpu5.json").read_text())
    node = doc
    while isinstance(node, dict | list) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else list(range(len(node)))))
        if not isinstance(node[key], dict | list) or data.draw(st.booleans()):
            node[key] = data.draw(_JSON_VALUES)
            break
        node = node[key]
    try:
        report = parse(json.dumps(doc))
    except ParseError:
        return
    assert report.status in ("pass", "fail", "error")
