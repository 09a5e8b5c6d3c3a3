"""`acceptance bundle` over the real logs of ../shared/corpus-wave2: their NCCL error lines, ranks and hosts;
and over bad or partial logs: a bundle that says what is missing, never a traceback."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.cli import main
from tests.incident_logs import bundle_argv
from tests.shared import CORPUS2, needs_shared

W = CORPUS2 / "pytorch-nccl-watchdog"
L = CORPUS2 / "launcher-mpirun-srun"
K = CORPUS2 / "nvidia-smi-dmesg"


def bundle(tmp: Path, *args: str) -> dict:
    out = tmp / "b"
    assert main(bundle_argv("--reports-dir", str(tmp / "reports"), "--out", str(out), *args)) == 0
    return json.loads((out / "bundle.json").read_text())


def _errors(doc: dict) -> list[tuple[str, list[int], list[str]]]:
    return [(e["kind"], e["ranks"], e["nodes"]) for e in doc["nccl"]["errors"]]


@needs_shared
def test_watchdog_timeouts_on_both_ranks_of_the_deepspeed_job(tmp_path) -> None:
    doc = bundle(
        tmp_path, "--job-logs", str(W / "torch-watchdog-timeout-broadcast-2rank-deepspeed-sigkill-handler-rc-6.log")
    )
    assert _errors(doc) == [("watchdog-timeout", [0, 1], []), ("watchdog-status", [0, 1], []), ("abort", [], [])]
    timeout = doc["nccl"]["errors"][0]
    assert (timeout["op"], timeout["seq"], timeout["timeout_ms"]) == ("BROADCAST", 1, 600000)
    assert (timeout["first_utc"], timeout["last_utc"]) == ("2025-12-18T20:27:21.426415Z", "2025-12-18T20:27:21.486311Z")
    assert {o["rank"]: o["count"] for o in timeout["occurrences"]} == {0: 3, 1: 3}
    assert doc["window"]["how"] == "errors-only"
    assert doc["window"]["first_bad_utc"] == timeout["first_utc"]
    assert [e["exit_code"] for e in doc["nccl"]["launcher"]] == [-6]
    assert "NCCL_DEBUG=INFO" in doc["nccl"]["hint"]


@needs_shared
def test_ncclremoteerror_with_its_ib_completion_error_rank_and_host(tmp_path) -> None:
    doc = bundle(
        tmp_path,
        "--job-logs",
        str(W / "torch-1.x-nccl-watchdog-ncclRemoteError-ib-completion-error-elastic-sigterm.log"),
    )
    [err] = [e for e in doc["nccl"]["errors"] if e["kind"] == "nccl-error"]
    assert err["ranks"] == [16]
    assert err["occurrences"][0]["host"] == "node-1"
    assert err["occurrences"][0]["count"] == 2
    assert "NET/IB : Got completion from peer 10.42.0.2<47534> with error 5, opcode 48" in err["text"]
    assert doc["ranks"]["entries"] == [{"rank": 16, "host": "node-1", "node": None, "sources": ["nccl-info"]}]
    assert doc["ranks"]["world_size"] == 32
    assert doc["nccl"]["nccl_versions"] == ["2.19.3"]
    assert doc["nccl"]["hint"] is None  # NCCL spoke for itself
    assert [a["node"] for a in doc["cluster"]["affected"]] == ["node-1"]
    assert "field 3: 1 of 32 ranks mapped to a host" in doc["missing"]


@needs_shared
def test_cuda_errors_and_the_node_failure_slurm_names(tmp_path) -> None:
    doc = bundle(
        tmp_path,
        "--job-logs",
        str(W / "torch-1.12-watchdog-cudaerror-unknown-interleaved-terminate-srun-node-failure.log"),
    )
    kinds = {e["kind"]: e for e in doc["nccl"]["errors"]}
    assert kinds["cuda-error"]["occurrences"][0]["count"] == 3
    assert kinds["abort"]["occurrences"][0]["count"] == 3
    assert [a["node"] for a in doc["cluster"]["affected"]] == ["jean-zay-iam49"]
    assert doc["cluster"]["affected"][0]["reasons"][0]["detail"] == "srun: error: Node failure on jean-zay-iam49"


@needs_shared
def test_torchrun_summaries_give_ranks_hosts_and_the_python_exception_first(tmp_path) -> None:
    doc = bundle(
        tmp_path,
        "--job-logs",
        str(W / "torchrun-2.6-childfailederror-3-ranks-interleaved-tracebacks-stampede3.log"),
        str(W / "torchrun-2.6-childfailederror-no-other-failures-rank0-prefixed-traceback-stampede3.log"),
    )
    host = "c561-007.stampede3.tacc.utexas.edu"
    assert doc["ranks"]["by_node"] == {host: "0, 2-3"}
    assert [(e["kind"], e["ranks"]) for e in doc["nccl"]["errors"]] == [("exception", []), ("exception", [0])]
    assert doc["severity"]["level"] == "down"
    assert "check the job itself before the cluster" in doc["severity"]["reason"]
    assert [i["kinds"] for i in doc["inputs"]] == [["pytorch-nccl"], ["pytorch-nccl"]]


@needs_shared
def test_launcher_errors_name_their_hosts(tmp_path) -> None:
    doc = bundle(tmp_path, "--job-logs", *(str(p) for p in sorted(L.glob("*.txt"))))
    affected = {a["node"] for a in doc["cluster"]["affected"]}
    assert affected == {"algo-2", "neutron-nvidia", "jean-zay-iam33"}
    assert {e["rank"] for e in doc["nccl"]["launcher"] if e["kind"] == "rank-exited"} == {1}
    assert doc["ranks"]["entries"] == [{"rank": 1, "host": "neutron-nvidia", "node": None, "sources": ["mpirun"]}]


@needs_shared
def test_kernel_logs_of_a_host_given_as_evidence(tmp_path) -> None:
    doc = bundle(
        tmp_path,
        "--job-logs",
        str(W / "torch-1.12-watchdog-cudaerror-unknown-interleaved-terminate-srun-node-failure.log"),
        "--evidence",
        f"jean-zay-iam49={K / 'dmesg-xid79-fallen-off-bus-serial-crash-dump-continuation-lines.txt'}",
    )
    [node] = doc["node_evidence"]
    assert node["node"] == "jean-zay-iam49"
    assert [(x["xid"], x["pci"], x["serial"]) for x in node["xids"]] == [(79, "0000:5d:00", "1653923026510")]


def test_bad_and_partial_inputs_give_a_bundle_that_says_what_is_missing(tmp_path, capsys) -> None:
    empty, binary, prose, cut = (tmp_path / n for n in ("empty.log", "core.bin", "notes.txt", "cut.log"))
    empty.write_text("")
    binary.write_bytes(bytes(range(256)) * 8)
    prose.write_text("the job was slow yesterday, please check\n")
    cut.write_text(
        "[rank3]:[E1123 18:53:58.5348 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=42, OpType=ALLRED"
    )  # truncated mid-line
    doc = bundle(tmp_path, "--job-logs", str(empty), str(binary), str(prose), str(cut))
    missing = "\n".join(doc["missing"])
    assert f"{empty}: empty" in missing
    assert f"{prose}: nothing recognised" in missing
    assert f"{binary}: not UTF-8 throughout" in missing
    for field in ("field 2: no window", "field 3: no rank", "field 5: no step-time series"):
        assert field in missing
    assert doc["severity"]["level"] is None
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err


def test_a_path_that_does_not_exist_is_a_usage_error(tmp_path, capsys) -> None:
    status = main(bundle_argv("--job-logs", str(tmp_path / "nope.log"), "--out", str(tmp_path / "b")))
    assert status == 2
    assert (
        capsys.readouterr().err.strip() == f"acceptance: error: --job-logs {tmp_path / 'nope.log'}: "
        f"{tmp_path / 'nope.log'} does not exist"
    )


def test_job_selector_needs_kubernetes_and_logs_are_needed(tmp_path, capsys) -> None:
    base = bundle_argv()
    assert main([*base, "--job", "app=train"]) == 2
    said = capsys.readouterr().err
    assert "--job reads a job from the cluster (Kubernetes pods by label, a Slurm job by id); cluster sim uses " in said
    assert main(base) == 2
    assert "give the job's logs" in capsys.readouterr().err


def test_an_existing_bundle_folder_is_never_overwritten(tmp_path, capsys) -> None:
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "keep").write_text("mine")
    status = main(bundle_argv("--job-logs", str(log), "--out", str(tmp_path / "b")))
    assert status == 2
    assert "is not empty (a bundle is never overwritten)" in capsys.readouterr().err
    assert (tmp_path / "b" / "keep").read_text() == "mine"


@pytest.mark.parametrize("value", ["+25:00x", "2h"])
def test_bad_log_offset_is_a_usage_error(tmp_path, value, capsys) -> None:
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    assert main(bundle_argv("--job-logs", str(log), "--log-utc-offset", value)) == 2
    assert "expected the logs' offset from UTC" in capsys.readouterr().err


C3 = CORPUS2.parent / "corpus-wave3" / "watchdog"


@needs_shared
def test_c10_stamps_without_a_year_take_the_file_s_year_and_the_bundle_says_so(tmp_path) -> None:
    """``E519 04:35:55`` (19 May, month not zero-padded) in a log with no full date: the year is the file's
    modification time's, and ``log_clock`` says so; without the file time nothing would date the window."""
    log = tmp_path / "worker.log"
    log.write_bytes(
        (C3 / "ray-easyr1-workerdict-prefix-tqdm-loading-shards-seqnum1-last-completed-minus1-E519.log").read_bytes()
    )
    when = datetime(2025, 5, 19, 5, 0, tzinfo=UTC).timestamp()
    os.utime(log, (when, when))
    doc = bundle(tmp_path, "--job-logs", str(log))
    assert doc["window"]["first_bad_utc"] == "2025-05-19T04:35:55.111951Z"
    assert doc["log_clock"] == (
        f"UTC; time stamps without a year (c10d, glog): 2025 from the file's modification time ({log})"
    )
    assert doc["nccl"]["errors"][0]["ranks"] == [4]


@needs_shared
def test_c10_stamps_of_a_log_with_full_dates_take_their_year_from_them(tmp_path) -> None:
    name = (
        "torch-2.9-py3.13-log-tail-starts-mid-line-scatter-timeout-watchdog-runloop-childfailed-signal-names-8xh100.log"
    )
    doc = bundle(tmp_path, "--job-logs", str(C3 / name))
    assert doc["log_clock"].startswith(
        "UTC; time stamps without a year (c10d, glog): 2026 from the log's own full dates"
    )
    timeout = next(e for e in doc["nccl"]["errors"] if e["kind"] == "watchdog-timeout")
    assert timeout["first_utc"] == "2026-06-28T09:54:15.886208Z"  # E628 = 28 June


def test_a_december_c10_stamp_in_a_file_last_written_in_january_is_of_the_year_before(tmp_path) -> None:
    log = tmp_path / "rank3.log"
    log.write_text(
        "[rank3]:[E1231 23:59:58.000000001 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 "
        "milliseconds before timing out.\n"
    )
    when = datetime(2027, 1, 1, 0, 5, tzinfo=UTC).timestamp()
    os.utime(log, (when, when))
    doc = bundle(tmp_path, "--job-logs", str(log))
    assert doc["window"]["first_bad_utc"] == "2026-12-31T23:59:58Z"
    assert "2026 from the file's modification time (the year before" in doc["log_clock"]
