"""Lost training time: the seed's example, each term, the resharding comparison on hand-computed cases, bad inputs."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.errors import UsageError
from acceptance.incident.lost_time import Layout, lost_time, reshard
from acceptance.report.manifest import build_manifest, write_manifest

M, H = 60.0, 3600.0
SEED = [
    "lost-time",
    "--checkpoint-every",
    "60m",
    "--failed-after",
    "50m",
    "--nodes",
    "16",
    "--gpus-per-node",
    "8",
    "--detection",
    "5m",
    "--repair",
    "2h",
    "--revalidation",
    "30m",
    "--restart",
    "10m",
]


def seed(**changes: float):
    args = dict(
        checkpoint_every_s=60 * M,
        failed_after_s=50 * M,
        nodes=16,
        gpus_per_node=8,
        detection_s=5 * M,
        repair_s=2 * H,
        revalidation_s=30 * M,
        restart_s=10 * M,
    )
    args.update(changes)
    return lost_time(**args)  # type: ignore[arg-type]


def test_the_seeds_example_106_7_gpu_hours_before_repair_begins() -> None:
    result = seed()
    assert result.before_repair_gpu_hours == pytest.approx(50 / 60 * 128)
    assert f"{result.before_repair_gpu_hours:.1f}" == "106.7"


def test_each_term_its_owner_and_the_totals() -> None:
    result = seed()
    assert [(t.name, t.owner, t.seconds) for t in result.terms] == [
        ("work since the last checkpoint", "customer", 3000.0),
        ("detection", "provider", 300.0),
        ("diagnosis and repair", "provider", 7200.0),
        ("revalidation", "provider", 1800.0),
        ("restart and checkpoint load", "customer", 600.0),
    ]
    assert [round(result.gpu_hours_of(t), 4) for t in result.terms] == [106.6667, 10.6667, 256.0, 64.0, 21.3333]
    assert result.hours == pytest.approx(3 + 35 / 60)
    assert result.gpu_hours == pytest.approx(215 / 60 * 128)
    assert result.by_owner() == pytest.approx({"customer": 1.0, "provider": 2 + 35 / 60})
    assert not any(t.measured for t in result.terms)


def test_unknown_failure_time_is_half_the_interval_on_average() -> None:
    result = seed(failed_after_s=None)
    assert result.terms[0].seconds == 30 * M
    assert "average" in result.terms[0].formula


@pytest.mark.parametrize(
    ("repair_h", "revalidation_h", "restart_h", "wait_h", "reshard_h", "better"),
    [
        (2.0, 0.5, 1 / 6, 2.5 + 1 / 6, 2.5 + 2 / 6 - 0.9375 * (2.5 - 1 / 6), "reshard"),  # long repair
        (1 / 6, 1 / 12, 1 / 6, 0.25 + 1 / 6, 0.25 + 2 / 6 - 0.9375 * (0.25 - 1 / 6), "wait"),  # short repair
        (1 / 30, 1 / 30, 1 / 6, 1 / 15 + 1 / 6, 1 / 15 + 2 / 6, "wait"),  # done before the restart is
    ],
)
def test_resharding_to_15_of_16_nodes_against_hand_computed_cases(
    repair_h, revalidation_h, restart_h, wait_h, reshard_h, better
) -> None:
    result = seed(repair_s=repair_h * H, revalidation_s=revalidation_h * H, restart_s=restart_h * H)
    plan = reshard(result, 15)
    assert plan.fraction == 120 / 128
    assert plan.lost_wait_h == pytest.approx(wait_h)
    assert plan.lost_reshard_h == pytest.approx(reshard_h)
    assert plan.better == better
    assert plan.break_even_repair_h == pytest.approx(restart_h + restart_h / 0.9375)


def test_reshard_with_a_measured_step_time_and_the_baseline_step_time_scaled() -> None:
    plan = reshard(seed(), 15, step_time_full_s=1.2, step_time_reshard_s=1.3)
    assert plan.fraction == pytest.approx(1.2 / 1.3)
    assert plan.fraction_formula.startswith("measured")
    scaled = reshard(seed(), 12, layout=Layout(tp=8, pp=1), step_time_full_s=1.2)
    assert scaled.fraction == 12 / 16
    assert scaled.step_time_reshard_s == pytest.approx(1.6)


def test_reshard_conditions_layout_and_memory() -> None:
    plan = reshard(seed(), 15, layout=Layout(tp=8, pp=2), params=70e9, state_bytes_per_param=16, gpu_memory_bytes=141e9)
    layout, memory, loader = plan.checks
    assert layout[1] is False
    assert "data-parallel size 7 with GPUs left over" in layout[2]
    assert plan.fraction == 7 / 8
    assert memory[1] is True
    assert "65.2 GiB per GPU" in memory[2]
    assert loader[1] is None
    tight = reshard(
        seed(), 14, layout=Layout(tp=8, pp=1), params=70e9, state_bytes_per_param=18, gpu_memory_bytes=141e9
    )
    assert tight.checks[0][1] is True
    assert tight.checks[1][1] is False
    sharded = reshard(
        seed(),
        14,
        layout=Layout(tp=8, pp=1),
        params=70e9,
        state_bytes_per_param=18,
        gpu_memory_bytes=141e9,
        sharded_state=True,
    )
    assert sharded.checks[1][1] is True
    assert reshard(seed(), 15).checks[1][1] is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"failed_after_s": 70 * M}, "later than the checkpoint interval"),
        ({"failed_after_s": -1.0}, "must be a duration >= 0"),
        ({"detection_s": -60.0}, "detection must be a duration >= 0"),
        ({"checkpoint_every_s": 0.0}, "checkpoint interval must be positive"),
        ({"nodes": 0}, "nodes and GPUs per node must be at least 1"),
    ],
)
def test_bad_inputs_are_clear_errors(changes, message) -> None:
    with pytest.raises(UsageError, match=message):
        seed(**changes)


def test_reshard_to_must_be_fewer_nodes() -> None:
    with pytest.raises(UsageError, match="between 1 and 15"):
        reshard(seed(), 16)
    with pytest.raises(UsageError, match="cannot hold one replica"):
        reshard(seed(), 1, layout=Layout(tp=8, pp=2))


def test_cli_text_shows_every_figure_with_its_terms(capsys) -> None:
    assert main([*SEED, "--reshard-to", "15"]) == 0
    out = capsys.readouterr().out
    assert "work since the last checkpoint         50m =   0.833 h x 128 =    106.7 GPU-h  [customer, estimate" in out
    assert "lost work before repair begins: 0.8333 h x 128 GPUs = 106.7 GPU-hours" in out
    assert "total                                3h35m =   3.583 h x 128 =    458.7 GPU-h" in out
    assert "wait:    R + V + S = 2.667 h = 341.3 GPU-h" in out
    assert "→ reshard loses less for this repair estimate" in out
    assert "[unchecked] the data loader state can be restored at the new size" in out


def test_cli_json(capsys) -> None:
    assert main([*SEED, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert round(doc["before_repair_gpu_hours"], 1) == 106.7
    assert doc["gpus"] == 128
    assert [t["owner"] for t in doc["terms"]] == ["customer", "provider", "provider", "provider", "customer"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--failed-after=-5m"], "a negative time cannot be a term of lost time"),
        (["--failed-after", "70m"], "later than the checkpoint interval of 60 min"),
        (["--repair", "soon"], "'soon' is not a duration"),
        (["--nodes", "0"], "expected a whole number >= 1"),
    ],
)
def test_cli_bad_inputs_exit_2_with_the_reason(args, message, capsys) -> None:
    argv = list(SEED)
    for flag_value in [args[i : i + 2] for i in range(0, len(args), 2)]:
        flag = flag_value[0].split("=")[0]
        if flag in argv:
            at = argv.index(flag)
            del argv[at : at + 2]
    try:
        status = main([*argv, *args])
    except SystemExit as exc:  # argparse's own refusal of a bad value: exit 2 with the reason, no traceback
        status = int(exc.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err


def test_cli_missing_terms_are_named(capsys) -> None:
    assert main(["lost-time", "--checkpoint-every", "60m"]) == 2
    err = capsys.readouterr().err
    assert "--detection, --repair, --revalidation, --restart, --nodes, --gpus-per-node" in err


def _report(root: Path, name: str, ticket: str, start: datetime, end: datetime, passed: bool) -> None:
    folder = root / "sim" / name
    folder.mkdir(parents=True)
    failures = 0 if passed else 1
    (folder / "junit.xml").write_text(
        f'<testsuites><testsuite name="pytest" tests="5" failures="{failures}" errors="0"></testsuite></testsuites>'
    )
    prov = {
        "cluster": "sim",
        "ticket": ticket,
        "start_utc": start.isoformat() + "+00:00",
        "end_utc": end.isoformat() + "+00:00",
    }
    write_manifest(
        folder, build_manifest(folder, created_utc=end.isoformat(), signing={"signed": False}, provenance=prov)
    )


def test_measured_from_a_bundle_and_the_tickets_acceptance_runs(tmp_path, capsys) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    created = datetime(2026, 11, 23, 19, 30)
    doc = {
        "created_utc": created.isoformat() + "Z",
        "ticket": "INC-9",
        "window": {"first_bad_utc": "2026-11-23T18:53:58Z"},
        "steps": {
            "last_checkpoint_utc": "2026-11-23T18:51:55Z",
            "checkpoint_interval_steps": 200,
            "median_before_s": 1.2,
        },
        "ranks": {"world_size": 128, "by_node": {f"n{i}": "" for i in range(16)}},
    }
    (bundle / "bundle.json").write_text(json.dumps(doc))
    reports = tmp_path / "reports"
    _report(
        reports,
        "20261123T220000Z",
        "INC-9",
        created + timedelta(hours=2, minutes=30),
        created + timedelta(hours=3),
        passed=False,
    )
    _report(
        reports,
        "20261123T231500Z",
        "INC-9",
        created + timedelta(hours=3, minutes=45),
        created + timedelta(hours=4, minutes=15),
        passed=True,
    )
    _report(reports, "20261120T000000Z", "INC-1", created - timedelta(days=3), created - timedelta(days=3), True)
    assert (
        main(["lost-time", "--bundle", str(bundle), "--reports-dir", str(reports), "--restart", "10m", "--json"]) == 0
    )
    terms = {t["name"]: t for t in json.loads(capsys.readouterr().out)["terms"]}
    assert terms["work since the last checkpoint"]["seconds"] == 123.0
    assert terms["work since the last checkpoint"]["measured"]
    assert terms["detection"]["seconds"] == 36 * M + 2  # 18:53:58 → 19:30:00
    assert terms["diagnosis and repair"]["seconds"] == 2.5 * H  # bundle → the first acceptance run of INC-9
    assert terms["revalidation"]["seconds"] == 1 * H + 45 * M  # first run's start → the passing run's end
    assert terms["restart and checkpoint load"]["measured"] is False
    assert all(terms[n]["measured"] for n in ("detection", "diagnosis and repair", "revalidation"))
