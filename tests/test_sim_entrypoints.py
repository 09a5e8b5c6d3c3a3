"""The simulators' small entry points, in process: the shims' rank rendezvous and `python -m acceptance.sim.slurm`.

The end-to-end tests (tests/test_suite_ssh.py, tests/test_slurm_sim.py) run them behind a real sshd and real
Slurm daemons; these check what they decide on their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.errors import UsageError
from acceptance.sim.slurm import __main__ as slurm_main
from acceptance.sim.ssh import client


def _rendezvous(folder: Path, hosts: list[str]) -> str:
    folder.mkdir()
    for rank, host in enumerate(hosts):
        (folder / str(rank)).write_text(host + "\n")
    return str(folder)


def test_rank_0_sees_the_hosts_in_rank_order_with_their_slots_and_clears_the_rendezvous(tmp_path: Path) -> None:
    folder = _rendezvous(tmp_path / "mpi", ["n1", "n1", "n2", "n2", "n2"])
    assert client._gather(folder, 5, None) == [["n1", "n1", 2], ["n2", "n2", 3]]
    assert not Path(folder).exists()
    torchrun = _rendezvous(tmp_path / "torchrun", ["n1", "n2"])
    assert client._gather(torchrun, 2, 8) == [["n1", "n1", 8], ["n2", "n2", 8]]


def test_a_rank_that_never_wrote_its_host_is_a_failed_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(client, "GATHER_TIMEOUT_S", 0.0)
    folder = _rendezvous(tmp_path / "mpi", ["n1"])
    with pytest.raises(SystemExit) as ended:
        client._gather(folder, 2, None)
    assert ended.value.code == 1
    assert f"simulated job: rank 1 of 2 never started (rendezvous {folder})" in capsys.readouterr().err


def test_a_simulated_slurm_that_cannot_start_is_one_error_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = []

    def refuse(nodes: int, gpus_per_node: int) -> None:
        asked.append((nodes, gpus_per_node))
        raise UsageError("slurmctld is not installed")

    monkeypatch.setattr(slurm_main.SimSlurm, "start", refuse)
    assert slurm_main.main(["--nodes", "4", "--gpus", "2"]) == 2
    assert asked == [(4, 2)]
    assert capsys.readouterr().err == "error: slurmctld is not installed\n"
