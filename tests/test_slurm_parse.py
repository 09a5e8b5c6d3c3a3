"""tools/slurm against the real outputs of corpus-wave3/slurm (facts read by hand from each file) and against
outputs a real Slurm 22.05.8 produced on loopback (fixtures/slurm)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acceptance.errors import ParseError
from acceptance.tools import slurm
from tests.shared import CORPUS3, FIXTURES, wave3_files

SLURM_FILES = wave3_files("slurm")
_SACCT_FORMAT = (
    "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,Timelimit,Elapsed,TotalCPU,"
    "CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,AllocTRES,TRESUsageInMax,TRESUsageInTot,"
    "TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,"
    "MaxDiskReadTask,MaxDiskWriteNode,MaxDiskWriteTask,Comment"
)
SACCT_FIELDS = tuple(_SACCT_FORMAT.split(","))  # the --format argument of the .source


def corpus(name: str) -> str:
    """A corpus file as bytes decoded (no universal-newline translation: tqdm's \\r stay inside their line)."""
    path = CORPUS3 / "slurm" / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path.read_bytes().decode("utf-8")


def fixture(name: str) -> str:
    return (FIXTURES / "slurm" / name).read_bytes().decode("utf-8")


# ---- facts of every corpus file -------------------------------------------------------------------------------


def facts_scontrol_hopper(text: str) -> object:
    found = slurm.parse_nodes(text, "hopper")
    nodes = found.by_name()
    return (
        sorted(nodes),
        nodes["n23g0007"].reason, nodes["n23g0007"].reason_user, nodes["n23g0007"].reason_time,
        nodes["n23g0007"].fields["Comment"],
        str(nodes["n23g0002"].state), nodes["n23g0002"].gres, nodes["n23g0002"].partitions,
        str(nodes["n23g0003"].state), nodes["n23g0003"].reason, nodes["n23g0003"].reason_user,
        nodes["n23g0003"].reason_time, nodes["n23g0003"].gres,
        [p.line for p in found.problems],
    )  # fmt: skip


def test_scontrol_hopper_comment_prefixed_down_drain_not_responding() -> None:
    assert facts_scontrol_hopper(corpus(
        "scontrol-show-node-hopper-gres-down-drain-not-responding-german-reason-hash-comment-prefixed.txt")) == (
        ["n23g0002", "n23g0003", "n23g0007"],
        "Not responding", "slurmadm", "2024-12-05T16:14:59", "BadPerformance. Testing.",
        "MIXED", (slurm.Gres("gpu", "hopper", 4, "0-7"),), ("c23g", "c23g_low"),
        "DOWN+DRAIN+NOT_RESPONDING", "gets too hot", "mw445520", "2024-12-03T17:06:40",
        (slurm.Gres("gpu", "hopper", 4, None),),
        # prose lines 1, 5, 8, 26; the orphaned Reason=/Comment= fragments 6-7; n23g0007's elided State (line 2)
        [1, 2, 5, 6, 7, 8, 26],
    )  # fmt: skip
    node = slurm.parse_nodes(corpus(
        "scontrol-show-node-hopper-gres-down-drain-not-responding-german-reason-hash-comment-prefixed.txt")
    ).by_name()["n23g0003"]  # fmt: skip
    assert node.state.down
    assert node.state.drained
    assert node.state.not_responding
    assert not node.state.usable
    assert node.fields["BootTime"] == "None"
    assert node.fields["FreeMem"] == "N/A"
    assert "Version" not in node.fields


def test_scontrol_german_reason_with_equals_and_angle_brackets() -> None:
    line = corpus("scontrol-show-node-hopper-gres-down-drain-not-responding-german-reason-hash-comment-prefixed.txt")
    reason = line.splitlines()[5].split("... ", 1)[1]  # line 6, a fragment in the paste
    node = slurm.parse_nodes(f"NodeName=x State=IDLE+DRAIN {reason} Comment=RMA; NEC-Ticket #3615").nodes[0]
    assert node.reason == "Ueberhitzung! CPU: 42 <= 92_CPULIMIT GPU: 83 > 82_GPULIMIT; NEC-Ticket #4942"
    assert (node.reason_user, node.reason_time) == ("root", "2025-11-05T12:26:23")
    assert node.fields["Comment"] == "RMA; NEC-Ticket #3615"


def facts_scontrol_idle_drain(text: str) -> object:
    found = slurm.parse_nodes(text)
    (node,) = found.nodes
    return (node.name, node.state.base, node.state.flags, node.reason, node.reason_user, node.reason_time,
            node.gres, node.partitions, node.fields["OS"], found.problems)  # fmt: skip


def test_scontrol_idle_drain_gres_count_lower_24_05() -> None:
    assert facts_scontrol_idle_drain(
        corpus("scontrol-show-node-idle-drain-gres-gpu-count-reported-lower-0-lt-1-trailing-spaces-24.05.txt")
    ) == (
        "yigou-dev-102-68", "IDLE", ("DRAIN",), "gres/gpu count reported lower than configured (0 < 1)", "slurm",
        "2024-12-19T11:03:34", (slurm.Gres("gpu", "nvidia-rtx-3090", 1),), ("compute100",),
        "Linux 5.10.0-153.12.0.92.oe2203sp2.x86_64 #1 SMP Wed Jun 28 23:04:48 CST 2023", (),
    )  # fmt: skip


def facts_sinfo_default(text: str) -> object:
    table = slurm.parse_sinfo(text)
    nodes = {n.name: n for n in slurm.nodes(table)}
    return (
        table.columns,
        [(r.get("PARTITION"), r.get("TIMELIMIT"), r.get("NODES"), r.get("STATE")) for r in table.rows],
        len(nodes), str(nodes["d001"].state), str(nodes["f005"].state), str(nodes["c003"].state),
        str(nodes["c006"].state), nodes["e001"].partitions, table.problems,
    )  # fmt: skip


def test_sinfo_default_drng_at_fail_star_maint() -> None:
    facts = facts_sinfo_default(
        corpus("sinfo-default-drng-at-fail-star-maint-timelimit-truncated-14-00-00-0-arjuna.txt")
    )
    assert facts == (
        ("PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"),
        [("cpu", "7-00:00:00", "55", "drng@"), ("cpu", "7-00:00:00", "1", "fail*"),
         ("gpu", "14-00:00:0", "12", "drng@"), ("gpu", "14-00:00:0", "5", "maint"),
         ("gpu", "14-00:00:0", "3", "fail*"), ("gpu", "14-00:00:0", "7", "mix"),
         ("debug*", "10:00", "2", "idle"), ("idle", "7-00:00:00", "2", "idle"),
         ("highmem", "7-00:00:00", "2", "mix")],
        # 55 + 1 cpu nodes, 12 + 5 + 3 + 7 gpu nodes, e001-e004
        55 + 1 + 12 + 5 + 3 + 7 + 4,
        "DRAINING+DRAIN+REBOOT_REQUESTED", "FAIL+NOT_RESPONDING", "MAINT", "MIXED", ("debug", "idle"), (),
    )  # fmt: skip


def facts_sinfo_R(text: str) -> object:
    table = slurm.parse_sinfo(text)
    nodes = {n.name: n for n in slurm.nodes(table)}
    return (
        table.command, len(table.rows), table.rows[3].cells, table.rows[0].line,
        (nodes["gpu046"].reason, nodes["gpu046"].reason_user, nodes["gpu046"].reason_time),
        (nodes["cpu319"].reason, nodes["cpu319"].reason_user), len(nodes),
    )  # fmt: skip


def test_sinfo_R_truncated_reasons_behind_a_prompt() -> None:
    name = "sinfo-R-reason-truncated-20-chars-gres-gpu-core-mismatch-with-shell-prompt-baobab.txt"
    assert facts_sinfo_R(corpus(name)) == (
        "sinfo -R", 10,
        {"REASON": "gres/gpu GRES core s", "USER": "slurm", "TIMESTAMP": "2025-04-03T15:48:07", "NODELIST": "gpu030"},
        3, ("gres/gpu GRES core s", "slurm", "2025-04-03T15:48:07"), ("issue-6543", "root"),
        # cpu242 cpu319 cpu246 gpu030 gpu002 gpu004-009 gpu010 gpu011 + 5+6+11+4 + 3+3+3+1
        3 + 1 + 1 + 6 + 1 + 1 + 26 + 10,
    )  # fmt: skip


def facts_sinfo_format(text: str) -> object:
    table = slurm.parse_sinfo(text)
    return table.command, table.columns, [dict(r.cells) for r in table.rows], [n.name for n in slurm.nodes(table)]


def test_sinfo_list_reasons_Format_padded() -> None:
    name = "sinfo-list-reasons-Format-reason40-nodelist-padded-low-realmemory-with-prompt.txt"
    assert facts_sinfo_format(corpus(name)) == (
        "sinfo --list-reasons --Format=reason:40,nodelist", ("REASON", "NODELIST"),
        [{"REASON": "Low RealMemory", "NODELIST": "compute[001-003]"}], ["compute001", "compute002", "compute003"],
    )  # fmt: skip


def facts_squeue(text: str) -> object:
    return [(j.job_id, j.reason, j.nodes) for j in slurm.jobs(slurm.parse_squeue(text, "%i|%E;%R;%C"))]


def test_squeue_custom_format_mixed_separators() -> None:
    facts = facts_squeue(corpus("squeue-noheader-custom-format-pipe-semicolon-reason-nodes-down-drained.txt"))
    assert len(facts) == 10
    assert facts[0] == ("7219441", "Dependency", "")
    assert facts[5] == ("8322514_33", "", "gelifes3")
    reason = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
    assert facts[6] == ("8326038", reason, "")
    table = slurm.parse_squeue(
        corpus("squeue-noheader-custom-format-pipe-semicolon-reason-nodes-down-drained.txt"), "%i|%E;%R;%C"
    )
    assert [r.get("CPUS") for r in table.rows] == ["384", "256", "256", "128", "1", "8", "1", "256", "8", "8"]
    assert table.rows[0].get("DEPENDENCY") == "afterany:7219440(unfulfilled)"


def facts_sacct_snowman(text: str) -> object:
    rows, problems = slurm.parse_sacct(text, fields=SACCT_FIELDS, delimiter="☃")
    by_line = {r.line: r for r in rows}
    states: dict[str, int] = {}
    for r in rows:
        if r.step is None:
            states[r.state] = states.get(r.state, 0) + 1
    return (
        len(rows), problems,
        [(by_line[n].job_id, by_line[n].state, by_line[n].cancelled_by) for n in (1, 2, 3, 5, 8, 9, 199, 209)],
        (by_line[79].state, by_line[79].get("NodeList"), by_line[79].get("Start")),
        [by_line[n].state for n in (33, 42, 61, 73, 191, 202, 212)],
        [(by_line[n].state, by_line[n].get("Start")) for n in (205, 206, 207)],
        sorted({r.step for r in rows if r.step}), by_line[33].get("Elapsed"),
        "NODE_FAIL" in states and "TIMEOUT" in states,
    )  # fmt: skip


def test_sacct_parsable_snowman_delimiter() -> None:
    facts = facts_sacct_snowman(
        corpus("sacct-parsable-noheader-snowman-delimiter-37-fields-node-fail-timeout-cancelled-by.txt")
    )
    assert facts[0] == 242
    assert facts[1] == ()
    assert facts[2] == [
        ("4034541", "CANCELLED", "10304007"), ("4046412", "CANCELLED", "10304007"),
        ("4047445", "CANCELLED", "10290820"), ("5931946", "CANCELLED", "10312373"),
        ("5933918", "CANCELLED", "33677923"), ("7965768", "CANCELLED", "10314909"),
        ("8162707", "CANCELLED", "10309238"), ("8150389", "CANCELLED", "33128806"),
    ]  # fmt: skip
    assert facts[3] == ("NODE_FAIL", "None assigned", "None")
    assert facts[4] == ["TIMEOUT"] * 7
    assert facts[5] == [("PENDING", "Unknown")] * 3
    assert {"batch", "extern", "0"} <= set(facts[6])
    assert facts[7] == "3-00:00:25"
    assert facts[8]


def test_sacct_steps_of_a_timeout_job_say_otherwise() -> None:
    rows, _ = slurm.parse_sacct(
        corpus("sacct-parsable-noheader-snowman-delimiter-37-fields-node-fail-timeout-cancelled-by.txt"),
        fields=SACCT_FIELDS, delimiter="☃",
    )  # fmt: skip
    job = next(r for r in rows if r.line == 33)
    steps = {r.step: r.state for r in rows if r.job_id == job.job_id and r.step}
    assert job.step is None
    assert job.state == "TIMEOUT"
    assert steps
    assert all(state in ("FAILED", "CANCELLED", "COMPLETED") for state in steps.values())


def facts_sacct_default(text: str) -> object:
    rows, problems = slurm.parse_sacct(text)
    return [(r.job_id, r.step, r.get("JobName"), r.get("Partition"), r.get("Account"), r.get("AllocCPUS"), r.state,
             r.exit_code, r.signal) for r in rows], problems  # fmt: skip


def test_sacct_default_ruled_table_behind_a_prompt() -> None:
    assert facts_sacct_default(corpus("sacct-default-columns-dashes-trailing-space-pending-with-prompt.txt")) == (
        [("3", None, "test", "compute", "", "2", "PENDING", 0, 0)],
        (),
    )


def facts_sacct_long(text: str) -> object:
    rows, _ = slurm.parse_sacct(text)
    return [(r.job_id, r.step, r.get("JobName"), r.state, r.exit_code, r.get("Elapsed"), r.get("ReqMem"),
             r.get("MaxRSS"), r.get("AllocTRES")) for r in rows]  # fmt: skip


def test_sacct_long_truncated_values_kept_as_printed() -> None:
    assert facts_sacct_long(corpus("sacct-l-long-56-columns-plus-truncation-steps-ba-ex-4Gc.txt")) == [
        ("11751427", None, "collect", "COMPLETED", 0, "01:34:11", "4Gc", "", "billing=1+"),
        ("11751427", "ba+", "batch", "COMPLETED", 0, "01:34:11", "4Gc", "3467496K", "cpu=1,mem+"),
        ("11751427", "ex+", "extern", "COMPLETED", 0, "01:34:11", "4Gc", "0", "billing=1+"),
    ]  # fmt: skip


def facts_events(text: str) -> object:
    return [(e.kind, e.line, e.job_id, e.step, e.node, e.time, e.cause) for e in slurm.step_events(text)]


def test_srun_node_failure_then_step_cancelled_on_another_node() -> None:
    name = "srun-node-failure-step-cancelled-due-to-node-failure-after-m4-iteration-line-jean-zay.log"
    assert facts_events(corpus(name)) == [
        ("node_failure", 5, None, None, "jean-zay-iam37", None, "NODE FAILURE"),
        ("step_aborted", 6, None, None, None, None, None),
        ("cancelled", 7, "1943824", "0", "jean-zay-iam17", "2023-03-06T03:17:51", "NODE FAILURE"),
    ]  # fmt: skip


def test_job_time_limit_glued_to_a_progress_bar() -> None:
    # the 24th "\n"-separated line (grep -n agrees; the .source says 22)
    assert facts_events(corpus("job-stderr-tqdm-carriage-returns-slurmstepd-time-limit-glued-to-bar.e")) == [
        ("cancelled", 24, "42221", None, "clr1247", "2022-04-14T16:20:46", "TIME LIMIT"),
    ]


def facts_slurmd_log(text: str) -> object:
    lines, problems = slurm.parse_log(text)
    return facts_events(text), [(x.line, x.step, x.level) for x in lines], problems


def test_slurmd_log_cancelled_then_stepd_terminated() -> None:
    events, lines, problems = facts_slurmd_log(
        corpus("slurmd-log-step-cancelled-stepd-terminated-not-ending-with-signals-anonymised-uid.log"))  # fmt: skip
    assert events == [
        ("cancelled", 3, "63532", "0", "cn106", "2020-12-14T09:43:55", None),
        ("stepd_terminated", 5, "63532", "0", "cn106", "2020-12-14T09:44:56", "JOB NOT ENDING WITH SIGNALS"),
    ]
    assert lines == [(2, None, None), (3, "63532.0", "error"), (4, "63532.extern", None), (5, "63532.0", "error"),
                     (6, "63532.0", None)]  # fmt: skip
    assert problems == ()


def facts_slurmctld_log(text: str) -> object:
    lines, problems = slurm.parse_log(text)
    return len(lines), {x.level for x in lines}, lines[0].time, lines[-1].text, problems


def test_slurmctld_log_indented() -> None:
    assert facts_slurmctld_log(corpus("slurmctld-log-startup-errors-4-space-markdown-indent.log")) == (
        12, {"error"}, "2016-08-03T21:09:34.264",
        "Could not open job state file /var/spool/sicp_state: No such file or directory", (),
    )  # fmt: skip


def facts_journal(text: str) -> object:
    lines, problems = slurm.parse_log(text)
    return ([(x.line, x.time, x.ident) for x in lines][:3], lines[2].level, lines[2].text, len(lines),
            [p.line for p in problems])  # fmt: skip


def test_journal_dutch_month_and_systemctl_header_reported() -> None:
    assert facts_journal(corpus("journalctl-slurmctld-failed-dutch-locale-mrt-di-systemd-status.txt")) == (
        [(9, "mrt 22 13:19:07", "systemd"), (10, "mrt 22 13:19:07", "systemd"), (11, "mrt 22 13:19:07", "slurmctld")],
        "error", "chdir(/cluster/var/slurm): No such file or directory", 10, [1, 2, 3, 4, 5, 6, 7],
    )  # fmt: skip


FACTS = {
    "scontrol-show-node-hopper-gres-down-drain-not-responding-german-reason-hash-comment-prefixed.txt": (
        facts_scontrol_hopper
    ),
    "scontrol-show-node-idle-drain-gres-gpu-count-reported-lower-0-lt-1-trailing-spaces-24.05.txt": (
        facts_scontrol_idle_drain
    ),
    "sinfo-default-drng-at-fail-star-maint-timelimit-truncated-14-00-00-0-arjuna.txt": facts_sinfo_default,
    "sinfo-R-reason-truncated-20-chars-gres-gpu-core-mismatch-with-shell-prompt-baobab.txt": facts_sinfo_R,
    "sinfo-list-reasons-Format-reason40-nodelist-padded-low-realmemory-with-prompt.txt": facts_sinfo_format,
    "squeue-noheader-custom-format-pipe-semicolon-reason-nodes-down-drained.txt": facts_squeue,
    "sacct-parsable-noheader-snowman-delimiter-37-fields-node-fail-timeout-cancelled-by.txt": facts_sacct_snowman,
    "sacct-default-columns-dashes-trailing-space-pending-with-prompt.txt": facts_sacct_default,
    "sacct-l-long-56-columns-plus-truncation-steps-ba-ex-4Gc.txt": facts_sacct_long,
    "srun-node-failure-step-cancelled-due-to-node-failure-after-m4-iteration-line-jean-zay.log": facts_events,
    "job-stderr-tqdm-carriage-returns-slurmstepd-time-limit-glued-to-bar.e": facts_events,
    "slurmd-log-step-cancelled-stepd-terminated-not-ending-with-signals-anonymised-uid.log": facts_slurmd_log,
    "slurmctld-log-startup-errors-4-space-markdown-indent.log": facts_slurmctld_log,
    "journalctl-slurmctld-failed-dutch-locale-mrt-di-systemd-status.txt": facts_journal,
}  # fmt: skip


def test_every_corpus_file_has_facts() -> None:
    if not SLURM_FILES:
        pytest.skip("../shared is absent")
    assert sorted(p.name for p in SLURM_FILES) == sorted(FACTS)


def _reshape(text: str, prefix: str, crlf: bool) -> str:
    lines = text.split("\n")
    end = lines.pop() if lines and lines[-1] == "" else None
    out = [prefix + line for line in lines]
    joined = ("\r\n" if crlf else "\n").join(out)
    return joined + (("\r\n" if crlf else "\n") if end is not None else "")


@pytest.mark.parametrize("prefix", ["", "    ", "> ", "\t", "# "])
@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("path", SLURM_FILES, ids=lambda p: p.name[:40])
def test_prefix_or_crlf_changes_no_fact(path: Path, prefix: str, crlf: bool) -> None:
    text = path.read_bytes().decode("utf-8")
    facts = FACTS[path.name]
    assert facts(_reshape(text, prefix, crlf)) == facts(text)


# ---- outputs of the real daemons ----------------------------------------------------------------------------


def test_real_scontrol_drain_both_forms_agree() -> None:
    multi = slurm.parse_nodes(fixture("scontrol-show-node-drain-draining-22.05.8.txt")).by_name()
    one = slurm.parse_nodes(fixture("scontrol-o-show-node-drain-draining-22.05.8.txt")).by_name()
    assert {n: v.to_json() | {"line": 0} for n, v in multi.items()} == {
        n: v.to_json() | {"line": 0} for n, v in one.items()
    }
    node = multi["sim-node-02"]
    assert (str(node.state), node.state.drained, node.reason, node.reason_user) == (
        "MIXED+DRAIN", True, "acceptance fault: node-drain@sim-node-02", "root")  # fmt: skip
    assert node.gpus == 8
    assert node.gres == (slurm.Gres("gpu", "h200", 8),)
    assert node.partitions == ("sim",)
    assert str(multi["sim-node-01"].state) == "ALLOCATED"
    assert multi["sim-node-01"].state.usable


def test_real_scontrol_slurmd_down() -> None:
    for name in (
        "scontrol-show-node-down-not-responding-22.05.8.txt",
        "scontrol-o-show-node-not-responding-22.05.8.txt",
    ):
        (node,) = slurm.parse_nodes(fixture(name)).nodes
        assert node.state.base == "DOWN"
        assert node.state.not_responding
        assert not node.state.usable
        assert (node.reason, node.reason_user) == ("Not responding", "root")


def test_real_sinfo_node_rows() -> None:
    table = slurm.parse_sinfo(fixture("sinfo-N-h-o-NTEG-22.05.8.txt"), fmt="%N|%T|%E|%G")
    nodes = {n.name: n for n in slurm.nodes(table)}
    assert str(nodes["sim-node-02"].state) == "DRAINING+DRAIN"
    assert nodes["sim-node-02"].state.drained
    assert nodes["sim-node-02"].reason == "acceptance fault: node-drain@sim-node-02"
    assert nodes["sim-node-01"].reason is None
    assert nodes["sim-node-01"].gpus == 8
    text = fixture("sinfo-N-h-o-NTEG-not-responding-22.05.8.txt")
    down = {n.name: n for n in slurm.nodes(slurm.parse_sinfo(text, fmt="%N|%T|%E|%G"))}
    assert str(down["sim-node-02"].state) == "DOWN+NOT_RESPONDING"
    assert down["sim-node-01"].state.usable


def test_real_sinfo_tables() -> None:
    drained = slurm.parse_sinfo(fixture("sinfo-R-22.05.8.txt"))
    assert [dict(r.cells) for r in drained.rows] == [
        {
            "REASON": "acceptance fault: no",
            "USER": "root",
            "TIMESTAMP": "2026-12-02T13:37:26",
            "NODELIST": "sim-node-02",
        }
    ]
    default = {n.name: n for n in slurm.nodes(slurm.parse_sinfo(fixture("sinfo-default-down-22.05.8.txt")))}
    assert str(default["sim-node-02"].state) == "DOWN+NOT_RESPONDING"
    assert default["sim-node-02"].partitions == ("sim",)


def test_real_squeue_text_and_json_agree() -> None:
    text = slurm.jobs(slurm.parse_squeue(fixture("squeue-h-o-pipe-running-22.05.8.txt"), "%i|%j|%T|%k|%u|%N|%R"))
    data = slurm.parse_squeue_json(fixture("squeue-json-running-22.05.8.json"))
    mine = [(j.job_id, j.name, j.state, j.comment, j.nodes) for j in data if j.comment == "r1234"]
    assert mine == [(j.job_id, j.name, j.state, j.comment, j.nodes) for j in text] == [
        ("2", "ra-r1234", "RUNNING", "r1234", "sim-node-01"),
        ("3", "ra-r1234", "RUNNING", "r1234", "sim-node-[01-02]"),
    ]  # fmt: skip


# ---- bad input ----------------------------------------------------------------------------------------------


def test_unrecognised_text_raises_with_line() -> None:
    with pytest.raises(ParseError, match=r"x.txt:2: expected scontrol show node output"):
        slurm.parse_nodes("\nhello world\n", "x.txt")
    with pytest.raises(ParseError, match="a sinfo header"):
        slurm.parse_sinfo("nothing here\n", "y")
    with pytest.raises(ParseError, match="node state"):
        slurm.parse_nodes("NodeName=a State=idle-ish?\n")
    with pytest.raises(ParseError, match="squeue --json"):
        slurm.parse_squeue_json("{not json")
    with pytest.raises(ParseError, match="ExitCode"):
        slurm.parse_sacct("JobID|State|ExitCode\n1|FAILED|x\n")


def test_a_row_that_does_not_fit_is_a_problem_not_dropped() -> None:
    rows, problems = slurm.parse_sacct(
        "1|COMPLETED|0:0\n2|FAILED\n3|TIMEOUT|0:15\n", fields=("JobID", "State", "ExitCode")
    )
    assert [r.job_id for r in rows] == ["1", "3"]
    assert rows[1].signal == 15
    assert [(p.line, p.text) for p in problems] == [(2, "2|FAILED")]
    table = slurm.parse_sinfo("n1|idle|none|gpu:h200:8\ngarbage\n", fmt="%N|%T|%E|%G")
    assert [p.line for p in table.problems] == [2]


def test_node_query_reads_reason_user_and_time() -> None:
    argv = slurm.node_query(("sim-node-01",))
    assert argv[:3] == ["sinfo", "--noheader", "--Node"]
    assert argv[-1] == "sim-node-01"
    text = "sim-node-03|drained|root|2026-12-02T13:37:26|gpu:h200:8(S:0-1)|sim*|bad | reason with a pipe\n"
    (node,) = slurm.nodes(slurm.parse_sinfo(text, fmt=slurm.NODE_FORMAT))
    assert (node.reason, node.reason_user, node.reason_time, node.partitions) == (
        "bad | reason with a pipe", "root", "2026-12-02T13:37:26", ("sim",))  # fmt: skip
    assert node.gres == (slurm.Gres("gpu", "h200", 8, "0-1"),)
    assert node.state.drained


def test_hostlist_and_state_words() -> None:
    assert slurm.hostlist("gpu[013-015,021],e001") == ("gpu013", "gpu014", "gpu015", "gpu021", "e001")
    assert slurm.hostlist("sim-node-[09-11]") == ("sim-node-09", "sim-node-10", "sim-node-11")
    state = slurm.node_state("DOWN*+DRAIN")
    assert state is not None
    assert state.flags == ("DRAIN", "NOT_RESPONDING")
    assert state.down
    assert slurm.node_state("Nodes") is None
    assert re.fullmatch("\\w+", str(slurm.node_state("idle")))


def test_real_srun_scancel_and_task_exit_lines() -> None:
    # with one slurmd per node name, slurmstepd signs its lines "slurmstepd-NODE: error: ..."
    cancelled = facts_events(fixture("srun-stderr-scancel-step-cancelled-22.05.8.txt"))
    assert cancelled[0][:2] == ("step_aborted", 1)
    assert cancelled[1] == ("cancelled", 2, "1", "0", "sim-node-01", "2026-12-02T13:47:53", None)
    exits = slurm.step_events(fixture("srun-stderr-task-exit-code-22.05.8.txt"))
    assert [(e.kind, e.node, e.exit_code) for e in exits] == [("task_exit", "sim-node-01", 3),
                                                               ("task_exit", "sim-node-02", 3)]  # fmt: skip
    terminated = slurm.step_events(fixture("srun-stderr-scancel-step-cancelled-22.05.8.txt"))[2:]
    assert [(e.node, e.cause) for e in terminated] == [("sim-node-01", "Terminated"), ("sim-node-02", "Terminated")]


def test_real_slurmctld_log_fresh_state() -> None:
    lines, problems = slurm.parse_log(fixture("slurmctld-log-fresh-state-22.05.8.log"))
    assert problems == ()
    assert lines[0].text == "slurmctld version 22.05.8 started on cluster sim-slurm"
    errors = [x.text for x in lines if x.level == "error"]
    assert (
        "Could not open node state file /tmp/acceptance-slurm-XXXX/state/node_state: No such file or directory"
        in errors
    )
    assert any("can not load PMIx library" in e for e in errors)
