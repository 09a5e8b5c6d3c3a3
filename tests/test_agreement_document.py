"""The agreement as a document (issue 27, part 1): made from the profile, the baseline and the suite's own objects."""

from __future__ import annotations

import dataclasses
import hashlib
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar

import pytest

from acceptance.agreement import document
from acceptance.baseline import BaselineStore
from acceptance.cli import main
from acceptance.cmd.agreement import document_inputs
from acceptance.criteria import CRITERIA
from acceptance.incident.lost_time import lost_time
from acceptance.profile import load_profile_file

ROOT = Path(__file__).resolve().parents[1]
SIM = ROOT / "baselines" / "sim" / "cluster.yaml"


def bare_sim_text() -> str:
    """The shipped sim profile without what it states of the wider agreement (coverage, agreement, two resolves)."""
    text = SIM.read_text()
    start, end = text.index("# The wider agreement"), text.index("# Criterion 5, probation")
    text = text[:start] + text[end:]
    for line in ("      resolve: 48h\n      joins: [provider on-call engineer]\n", "      resolve: 72h\n"):
        assert line in text
        text = text.replace(line, line.removeprefix("      resolve: 48h\n").removeprefix("      resolve: 72h\n"), 1)
    return text


def sim_inputs(tmp_path: Path) -> document.AgreementInputs:
    """The sim profile as if it stated nothing of the wider agreement: what is absent is "to agree"."""
    folder = tmp_path / "bare"
    folder.mkdir(exist_ok=True)
    (folder / "cluster.yaml").write_text(bare_sim_text())
    return document_inputs(load_profile_file(folder / "cluster.yaml"), BaselineStore(SIM.parent).latest())


def test_the_sim_agreement_has_every_section_and_the_facts_of_its_baseline(tmp_path: Path) -> None:
    text = document.markdown(sim_inputs(tmp_path))
    for title in (
        "## Cluster",
        "## Responsibility",
        "## Recovery criteria",
        "## Severity levels",
        "## Coverage, exclusions, partial capacity and spares",
        "## Lost training time",
    ):
        assert title in text
    latest = BaselineStore(SIM.parent).latest()
    assert f"sha256 {hashlib.sha256(latest.path.read_bytes()).hexdigest()}" in text
    assert "| data center | sim-dc-1 |" in text
    assert "| node quantity | 16 (sim-node-01 .. sim-node-16) |" in text
    assert "| billing method | to agree |" in text  # the sim profile states none: never invented
    assert "8 x NVIDIA H200, driver" in text


def test_the_criteria_are_the_suite_s_own_table_and_the_baseline_s_margins(tmp_path: Path) -> None:
    a = sim_inputs(tmp_path)
    text = document.markdown(a)
    for c in CRITERIA:
        if c.number is not None:
            assert f"| {c.number} | {c.title} |" in text
    assert "at least 95% of the baseline" in text
    assert "pcie_replays_per_min 8" in text
    assert a.baseline is not None
    stricter = {**a.baseline, "margins": {**a.baseline["margins"], "busbw_tolerance": 0.02}}
    assert "at least 98% of the baseline" in document.markdown(dataclasses.replace(a, baseline=stricter))


def test_severity_levels_with_their_clocks_and_the_definition_of_degraded(tmp_path: Path) -> None:
    text = document.markdown(sim_inputs(tmp_path))
    assert "| down | the job is down across the cluster | 15m | 4h | 2d |" in text
    assert (
        "| degraded | the job runs with degraded throughput | 30m | 8h | to agree | provider on-call engineer "
        "| to down after 4h |" in text
    )
    assert "Degraded: step time +10% or more for 15m (agreed in the profile)." in text


def _profile(tmp_path: Path, extra: str) -> Path:
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "cluster.yaml").write_text(bare_sim_text() + extra)
    return folder / "cluster.yaml"


STATED = """
coverage: {hours: "Mon-Fri 08:00-18:00", tz: Europe/Berlin, holidays: [2026-12-25]}
agreement:
  billing: reserved, per GPU-hour
  exclusions: [customer code faults, scheduled maintenance announced 5 days ahead]
  partial_capacity: the job continues on 15 nodes; the missing node is not billed
  spares: one hot spare node per 16
  responsibility:
    detect: {owner: shared}
    isolate: {owner: provider, evidence: node cordoned and drained}
    checkpoint_policy: {owner: customer, evidence: a checkpoint every hour, clock: none}
  lost_time: {checkpoint_every: 60m, detection: 5m, repair: 2h, revalidation: 30m, restart: 10m}
"""


def test_what_the_profile_states_is_printed_and_the_worked_figure_is_the_lost_time_formula(tmp_path: Path) -> None:
    profile = load_profile_file(_profile(tmp_path, STATED))
    a = document_inputs(profile, BaselineStore(SIM.parent).latest())
    text = document.markdown(a)
    assert "| billing method | reserved, per GPU-hour |" in text
    assert "| isolate the node | provider | node cordoned and drained | to agree |" in text
    assert "| detect the failure | shared | the signed incident bundle" in text
    assert "| checkpoint policy | customer | a checkpoint every hour | none |" in text
    assert "- exclusions: customer code faults; scheduled maintenance announced 5 days ahead" in text
    assert "- spares: one hot spare node per 16" in text
    assert "- coverage hours: Mon-Fri 08:00-18:00 Europe/Berlin, 1 holiday (holidays: 2026-12-25)" in text
    assert "Clocks run in coverage hours: Mon-Fri 08:00-18:00 Europe/Berlin, 1 holiday" in text
    figure = lost_time(
        checkpoint_every_s=3600,
        failed_after_s=None,
        nodes=16,
        gpus_per_node=8,
        detection_s=300,
        repair_s=7200,
        revalidation_s=1800,
        restart_s=600,
    )
    assert f"| total |  | {figure.hours:.3f} | {figure.gpu_hours:.1f} |" in text
    assert "| total |  | 3.250 | 416.0 |" in text


def test_a_bad_responsibility_owner_names_the_line(tmp_path: Path) -> None:
    from acceptance.errors import ProfileError

    path = _profile(tmp_path, "agreement:\n  responsibility:\n    detect: {owner: nobody}\n")
    with pytest.raises(ProfileError, match=r"agreement\.responsibility\.detect\.owner"):
        load_profile_file(path)


class _Checker(HTMLParser):
    VOID: ClassVar[frozenset[str]] = frozenset({"meta", "br"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag not in self.VOID:
            self.open.append(tag)
        self.tables += tag == "table"

    def handle_endtag(self, tag: str) -> None:
        assert self.open, tag
        assert self.open[-1] == tag, (self.open[-3:], tag)
        self.open.pop()


def test_the_html_is_balanced_printable_and_marks_what_is_to_agree(tmp_path: Path) -> None:
    page = document.html_page(sim_inputs(tmp_path))
    checker = _Checker()
    checker.feed(page)
    assert checker.open == []
    assert checker.tables == 5  # cluster, parties, responsibility, criteria, severity
    assert "@media print" in page
    assert '<span class="agree">to agree</span>' in page
    assert "hw_slowdown|sw_thermal_slowdown" in page  # the table cell keeps the rule, unescaped for HTML


def test_the_command_writes_markdown_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "agreement"
    assert main(["agreement", "sim", "--baselines-dir", str(ROOT / "baselines"), "--out", str(out)]) == 0
    assert (out / "agreement.md").read_text().startswith("# Recovery agreement: cluster sim")
    assert (out / "agreement.html").read_text().startswith("<!DOCTYPE html>")
    said = capsys.readouterr().out
    assert "to agree: 0 item(s)" in said  # the shipped sim profile states the whole agreement
    text = (out / "agreement.md").read_text()
    assert "to agree" not in text
    assert "| billing method | reserved, per GPU-hour of the whole cluster (simulated) |" in text


def test_another_clusters_baseline_never_frames_the_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The document is made only from a baseline the trust gate accepts; another cluster's is named and left out."""
    from tests.suite_run import sim_cluster_folder

    folder = sim_cluster_folder(tmp_path)
    (shipped,) = (ROOT / "baselines" / "sim-ssh").glob("handover-*.json")
    for part in shipped.parent.glob(shipped.name + "*"):
        (folder / part.name).write_bytes(part.read_bytes())
    out = tmp_path / "doc"
    assert main(["agreement", "sim", "--baselines-dir", str(folder.parent), "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert "another cluster's agreement" in said
    text = (out / "agreement.md").read_text()
    assert shipped.name not in text
    assert "no baseline yet" in text
    assert "Handover baseline: to agree (no baseline)." in text
