"""Every nccl-tests capture of the corpus parses to what a person reading it sees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from acceptance.cmd.parse_nccl import read_nccl
from acceptance.tools.nccl import NcclCapture
from tests.shared import CORPUS, corpus_files, needs_shared


@dataclass(frozen=True)
class Expect:
    status: str
    # (collective, status, nranks, hosts, rows) per run, in order
    runs: list[tuple[str | None, str, int | None, int, int]]
    check: Callable[[NcclCapture], None] = field(default=lambda c: None)


def _old_superbench(collective: str, avg: float) -> Expect:
    def check(c: NcclCapture) -> None:
        run = c.runs[0]
        assert run.params["collective_from"] == "inferred"
        assert run.avg_busbw == avg
        assert run.hosts == ("localhost",)
        assert all(r.oop is not None and r.oop.wrong is None for r in run.rows)  # N/A: -c 0
        assert run.params["validation"] == 0
        assert run.rows[-1].size == 8589934592

    return Expect("ok", [(collective, "ok", 8, 1, 34)], check)


def _launcher_only(c: NcclCapture) -> None:
    assert c.errors[0].line == 1
    assert c.errors[0].text.startswith("start failed on x3006c0s1b1n0: CXI alloc failed")


def _allgather_size0(c: NcclCapture) -> None:
    run = c.runs[0]
    assert [r.size for r in run.rows[:7]] == [0] * 7
    assert (run.rows[-1].size, run.rows[-1].count) == (1073741824, 8388608)
    assert run.rows[-1].oop
    assert run.rows[-1].oop.busbw == 2.95
    assert run.rows[-1].ip
    assert run.rows[-1].ip.busbw == 2.99
    assert run.rows[-1].ip.wrong == 0
    assert run.avg_busbw == 0.891214
    assert {(r.redop, r.root) for r in run.rows} == {("none", -1)}


def _alltoall_1024(c: NcclCapture) -> None:
    run = c.runs[0]
    assert sum(r.size == 0 for r in run.rows) == 10
    last = run.rows[-1]
    assert last.oop
    assert (last.oop.time_us, last.oop.busbw) == (1268337.0, 0.85)
    assert last.ip
    assert last.ip.wrong is None
    assert run.avg_busbw == 0.407517
    assert c.errors == ()  # the MPICH network-timeout summary is not an error line


def _efa_2node(c: NcclCapture) -> None:
    run = c.runs[0]
    assert (run.nccl_version, run.cuda_version, run.nccl_tests_version) == ("2.29.2", "12.8", None)
    assert run.program == "all_reduce_perf"
    assert run.ranks[1].host == "gpu-st-ml-2"
    assert run.ranks[1].busid == "0000:30:00"
    assert run.ranks[0].gpu == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert run.rows[-1].oop
    assert run.rows[-1].oop.busbw == 12.37
    assert run.avg_busbw == 4.26966


def _efa_8node(c: NcclCapture) -> None:
    run = c.runs[0]
    assert run.avg_busbw == 3.61047
    assert run.rows[-1].oop
    assert run.rows[-1].oop.time_us == 151910.0
    assert run.hosts[-1] == "gpu-st-ml-8"


def _after_header(c: NcclCapture) -> None:
    run = c.runs[0]
    assert (run.nccl_tests_version, run.nccl_version) == ("2.17.6", "2.28.7")
    assert run.errors[0].line == 12
    assert run.errors[0].text == (
        "cnode2-016: Test NCCL failure alltoall.cu:274 'remote process exited or there was a network error / '"
    )
    assert run.avg_busbw is None
    assert run.out_of_bounds is None


def _sci_notation(c: NcclCapture) -> None:
    sendrecv = c.runs[1]
    last = sendrecv.rows[-1]
    assert last.size == 17179869184
    assert last.oop
    assert (last.oop.time_us, last.oop.busbw) == (1.7e7, 1.04)
    assert last.ip
    assert (last.ip.time_us, last.ip.wrong) == (1.6e7, None)
    assert c.runs[0].errors[0].text.startswith("cnode2-002: Test NCCL failure common.cu:401")


def _init_failure(c: NcclCapture) -> None:
    for run in c.runs:
        assert {e.text.split(":")[0].strip(". ").split()[0] for e in run.errors} == {"cnode2-016"}


def _ten_node_1gpu(c: NcclCapture) -> None:
    ar = c.runs[0]
    assert ar.params["max_bytes_effective"] == 26549638485
    assert ar.params["max_bytes"] == 68719476736
    assert ar.ranks[0].pid == 2614280
    assert ar.ranks[2].pid == 19363
    assert ar.rows[-1].oop
    assert ar.rows[-1].oop.busbw == 48.89
    assert c.runs[1].rows[0].size == 33554400
    assert c.runs[1].rows[0].count == 419430


def _eighty_rank(c: NcclCapture) -> None:
    ar = c.run("all_reduce")
    gib = next(r for r in ar.rows if r.size == 1 << 30)
    assert gib.oop
    assert gib.oop.busbw == 344.87
    assert ar.avg_busbw == 265.631
    assert c.run("sendrecv").avg_busbw == 15.1671


def _one_node(c: NcclCapture) -> None:
    assert c.runs[0].rows[-1].oop
    assert c.runs[0].rows[-1].oop.busbw == 482.27
    assert [r.nccl_version for r in c.runs] == ["2.29.2"] * 5


def _smoke(c: NcclCapture) -> None:
    assert all(r.ip and r.ip.wrong is None for r in c.run("sendrecv").rows)
    assert all(r.ip and r.ip.wrong == 0 for r in c.run("all_reduce").rows)
    assert c.runs[0].params["iters"] == 5


def _tagged(c: NcclCapture) -> None:
    run = c.runs[0]
    assert run.program == "all_reduce_perf_mpi"
    assert run.hosts == ("lab",)
    assert run.ranks[0].busid == run.ranks[1].busid == "0000:02:00"
    assert run.rows[0].oop
    assert run.rows[0].oop.time_us == 4366.46
    assert run.nccl_version == "2.29.7"


def _broadcast(c: NcclCapture) -> None:
    run = c.runs[0]
    assert run.params["step_factor"] == 4
    assert {(r.redop, r.root) for r in run.rows} == {("none", 0)}
    assert run.rows[-1].size == 67108864


def _dtype_all(c: NcclCapture) -> None:
    run = c.runs[0]
    assert (run.nccl_version, run.cuda_version) == ("2.30.4", "13.2")
    assert run.params["unalign"] == 0
    assert run.params["ngpus"] == 8
    assert run.params["max_bytes_effective"] == 48247057066
    assert len({r.type for r in run.rows}) == 12
    assert run.rows[0].size == 10737418240
    assert run.rows[2].size == 42949672960
    assert run.rows[-1].type == "f8e5m2"
    assert len({r.key for r in run.rows}) == 36
    assert {r.pid for r in run.ranks} == {8738, 6474}


def _dgx2(c: NcclCapture) -> None:
    ag = c.runs[0]
    assert ag.out_of_bounds == 4
    assert ag.params["collective_from"] == "command"
    assert ag.rows[-1].oop
    assert ag.rows[-1].oop.extras["error"] == 1.0
    assert ag.rows[-1].oop.wrong is None
    assert ag.ranks[0].busid == "0x36"
    assert ag.hosts == ("seville",)
    assert c.runs[1].rows[0].oop
    assert c.runs[1].rows[0].oop.extras["error"] == 2e-07
    assert [r.avg_busbw for r in c.runs] == [30.2993, 42.5578, 41.2456, 41.3386, 20.3609]


def _prterun_8(c: NcclCapture) -> None:
    assert c.runs[0].errors[0].line == 20
    assert c.runs[0].errors[0].host == "sophia-gpu-13"
    box = [e for e in c.runs[0].errors if e.kind == "launcher"]
    assert box[0].text.startswith("prterun detected that one or more processes exited")
    assert box[-1].text.startswith("Process name: [prterun-sophia-gpu-09-2562232@1,15] Exit code:")


def _prterun_1(c: NcclCapture) -> None:
    assert [(e.line, e.kind, e.host) for e in c.runs[0].errors] == [
        (20, "test", "sophia-gpu-04"),
        (21, "test", "sophia-gpu-04"),
        (23, "launcher", None),  # the Open MPI box: its sentence, the line after, the process line
        (24, "launcher", None),
        (26, "launcher", None),
    ]
    assert c.runs[0].errors[1].text == ".. sophia-gpu-04 pid 3613973: Test failure common.cu:891"


def _polaris_540(c: NcclCapture) -> None:
    run = c.runs[0]
    assert run.ranks[-1].rank == 2159
    assert run.avg_busbw == 4.54332
    assert run.rows[-1].oop
    assert run.rows[-1].oop.busbw == 18.73


def _polaris_8(c: NcclCapture) -> None:
    run = c.runs[0]
    assert run.ranks[1].busid == "0x46"
    assert run.avg_busbw == 3.8753
    assert run.params["agg_iters"] == 1
    assert run.params["graph"] == 0


EXPECTED: dict[str, Expect] = {
    "launcher-only-cxi-alloc-failed-no-nccl-output.txt": Expect("failed", [], _launcher_only),
    "nccl-2.21-allgather-8node-32rank-a100-size0-rows.txt": Expect(
        "ok", [("all_gather", "ok", 32, 8, 29)], _allgather_size0
    ),
    "nccl-2.21-alltoall-256node-1024rank-a100-size0-rows-network-timeouts.txt": Expect(
        "ok", [("alltoall", "ok", 1024, 256, 29)], _alltoall_1024
    ),
    "nccl-tests-2.16-2.17-allreduce-2node-efa-rtxpro6000-nccl-debug-info-2.29.2.txt": Expect(
        "ok", [("all_reduce", "ok", 2, 2, 28)], _efa_2node
    ),
    "nccl-tests-2.16-2.17-allreduce-8node-efa-rtxpro6000-nccl-debug-info-2.29.2.txt": Expect(
        "ok", [("all_reduce", "ok", 8, 8, 28)], _efa_8node
    ),
    "nccl-tests-2.17.6-alltoall-2node-network-error-after-header.txt": Expect(
        "failed", [("alltoall", "failed", 2, 2, 0)], _after_header
    ),
    "nccl-tests-2.17.6-alltoall-fail-sendrecv-degraded-sci-notation-time.txt": Expect(
        "failed", [("alltoall", "failed", 8, 2, 0), ("sendrecv", "ok", 8, 2, 10)], _sci_notation
    ),
    "nccl-tests-2.17.6-alltoall-sendrecv-2node-16rank-init-failure-all-ranks.txt": Expect(
        "failed", [("alltoall", "failed", 16, 2, 0), ("sendrecv", "failed", 16, 2, 0)], _init_failure
    ),
    "nccl-tests-2.17.8-5colls-10node-1gpu-per-node-h100-ok.txt": Expect(
        "ok",
        [(c, "ok", 10, 10, 10) for c in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")],
        _ten_node_1gpu,
    ),
    "nccl-tests-2.17.8-5colls-10node-80rank-h100-double-ok.txt": Expect(
        "ok",
        [(c, "ok", 80, 10, 10) for c in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")],
        _eighty_rank,
    ),
    "nccl-tests-2.17.8-5colls-1node-8xh100-nvswitch-baseline-ok.txt": Expect(
        "ok",
        [(c, "ok", 8, 1, 10) for c in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")],
        _one_node,
    ),
    "nccl-tests-2.17.8-allreduce-sendrecv-2node-smoke-inplace-NA.txt": Expect(
        "ok", [("all_reduce", "ok", 2, 2, 5), ("sendrecv", "ok", 2, 2, 5)], _smoke
    ),
    "nccl-tests-2.18.0-allreduce-2rank-mpirun-tag-output-prefix-socket.txt": Expect(
        "ok", [("all_reduce", "ok", 2, 1, 8)], _tagged
    ),
    "nccl-tests-2.18.0-broadcast-2rank-root0-redop-none-factor4.txt": Expect(
        "ok", [("broadcast", "ok", 2, 1, 9)], _broadcast
    ),
    "nccl-tests-2.18.3-allreduce-2node-16rank-h200-datatype-all-fp8-unalign-nccl-2.30.4.txt": Expect(
        "ok", [("all_reduce", "ok", 16, 2, 36)], _dtype_all
    ),
    "nccl-tests-2019-5colls-dgx2-12gpu-1proc-v100-error-column-out-of-bounds-FAILED.txt": Expect(
        "failed",
        [("all_gather", "failed", 12, 1, 31)]
        + [(c, "ok", 12, 1, 31) for c in ("all_reduce", "broadcast", "reduce", "reduce_scatter")],
        _dgx2,
    ),
    "nccl-tests-pre2.17-allreduce-2node-16rank-a100-8ranks-fail-prterun.txt": Expect(
        "failed", [(None, "failed", 16, 2, 0)], _prterun_8
    ),
    "nccl-tests-pre2.17-allreduce-2node-16rank-a100-unhandled-system-error-prterun.txt": Expect(
        "failed", [(None, "failed", 16, 2, 0)], _prterun_1
    ),
    "nccl-tests-pre2.17-allreduce-540node-2160rank-a100-polaris-ok.txt": Expect(
        "ok", [("all_reduce", "ok", 2160, 540, 29)], _polaris_540
    ),
    "nccl-tests-pre2.17-allreduce-8node-32rank-a100-polaris-ok.txt": Expect(
        "ok", [("all_reduce", "ok", 32, 8, 29)], _polaris_8
    ),
    "nccl-tests-v2-old-all_gather-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("all_gather", 58.2651),
    "nccl-tests-v2-old-all_reduce-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("all_reduce", 68.4048),
    "nccl-tests-v2-old-alltoall-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("alltoall", 58.6481),
    "nccl-tests-v2-old-broadcast-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("broadcast", 64.8653),
    "nccl-tests-v2-old-reduce-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("reduce", 65.018),
    "nccl-tests-v2-old-reduce_scatter-8gpu-1proc-a100-c0-superbench.txt": _old_superbench("reduce_scatter", 60.168),
}


@needs_shared
def test_every_corpus_file_has_an_expectation() -> None:
    """A new corpus file must be read by a person and get its line in EXPECTED."""
    assert sorted(p.name for p in corpus_files("nccl")) == sorted(EXPECTED)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_parses_as_read(name: str) -> None:
    expect = EXPECTED[name]
    capture = read_nccl(CORPUS / "nccl" / name)
    assert capture.status == expect.status
    got = [(r.collective, r.status, r.nranks, len(r.hosts), len(r.rows)) for r in capture.runs]
    assert got == expect.runs
    expect.check(capture)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_json_round_trips(name: str) -> None:
    capture = read_nccl(CORPUS / "nccl" / name)
    again = NcclCapture.from_json(capture.to_json())
    assert again == capture
    assert again.to_json() == capture.to_json()


@needs_shared
def test_old_alltoall_blank_redop_is_null() -> None:
    capture = read_nccl(CORPUS / "nccl" / "nccl-tests-v2-old-alltoall-8gpu-1proc-a100-c0-superbench.txt")
    assert {r.redop for r in capture.runs[0].rows} == {None}
    assert {r.root for r in capture.runs[0].rows} == {None}


@needs_shared
def test_frame_has_one_row_per_size_and_float_columns() -> None:
    capture = read_nccl(CORPUS / "nccl" / "nccl-tests-2.17.8-allreduce-sendrecv-2node-smoke-inplace-NA.txt")
    frame = capture.run("sendrecv").frame()
    assert list(frame.columns) == [
        "size",
        "count",
        "type",
        "redop",
        "root",
        "oop_time_us",
        "oop_algbw",
        "oop_busbw",
        "oop_wrong",
        "ip_time_us",
        "ip_algbw",
        "ip_busbw",
        "ip_wrong",
    ]
    assert len(frame) == 5
    assert frame["ip_wrong"].isna().all()
    assert frame.loc[4, "oop_busbw"] == 43.57
