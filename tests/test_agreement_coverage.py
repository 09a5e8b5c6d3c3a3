"""Clocks in coverage hours: deadlines count only covered time, in the agreed time zone (issue 27, part 2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from acceptance.agreement.coverage import Coverage, CoverageError, deadline, parse
from acceptance.errors import ProfileError
from acceptance.incident import clocks
from acceptance.incident.severity import SeverityPolicy, severity

BERLIN = ZoneInfo("Europe/Berlin")
OFFICE = {"hours": "Mon-Fri 08:00-18:00", "tz": "Europe/Berlin"}
H = 3600.0


def berlin(*args: int) -> datetime:
    """A Berlin wall-clock time as naive UTC (the incident side's convention)."""
    return datetime(*args, tzinfo=BERLIN).astimezone(UTC).replace(tzinfo=None)  # type: ignore[misc]


def test_friday_17_berlin_plus_4h_business_hours_ends_monday_11() -> None:
    end = deadline(berlin(2026, 11, 27, 17, 0), 4 * H, parse(OFFICE))
    assert end.at_utc == berlin(2026, 11, 30, 11, 0)
    assert end.calendar == "Mon-Fri 08:00-18:00 Europe/Berlin"
    assert not end.start_outside_coverage


def test_across_the_march_dst_change_monday_11_is_summer_time() -> None:
    # Berlin moves to CEST on Sunday 2026-03-29: Friday 17:00 is 16:00 UTC, Monday 11:00 is 09:00 UTC
    end = deadline(berlin(2026, 3, 27, 17, 0), 4 * H, parse(OFFICE))
    assert end.at_utc == datetime(2026, 3, 30, 9, 0)
    assert end.at_utc == berlin(2026, 3, 30, 11, 0)


def test_across_the_october_dst_change_monday_11_is_winter_time() -> None:
    # back to CET on Sunday 2026-10-25: Friday 17:00 is 15:00 UTC, Monday 11:00 is 10:00 UTC
    end = deadline(berlin(2026, 10, 23, 17, 0), 4 * H, parse(OFFICE))
    assert end.at_utc == datetime(2026, 10, 26, 10, 0)


def test_every_day_all_day_in_berlin_loses_no_hour_on_the_dst_days() -> None:
    always_local = parse({"hours": "Mon-Sun 00:00-24:00", "tz": "Europe/Berlin"})
    for start in (berlin(2026, 3, 28, 12, 0), berlin(2026, 10, 24, 12, 0)):
        assert deadline(start, 48 * H, always_local).at_utc == start + timedelta(hours=48)


def test_a_holiday_is_not_covered() -> None:
    # Thursday 2026-12-24 17:00: 1 h that day, Friday 25 is a holiday, 3 h on Monday 28
    with_holiday = parse({**OFFICE, "holidays": ["2026-12-25"]})
    assert deadline(berlin(2026, 12, 24, 17, 0), 4 * H, with_holiday).at_utc == berlin(2026, 12, 28, 11, 0)
    assert deadline(berlin(2026, 12, 24, 17, 0), 4 * H, parse(OFFICE)).at_utc == berlin(2026, 12, 25, 11, 0)
    assert with_holiday.describe() == "Mon-Fri 08:00-18:00 Europe/Berlin, 1 holiday"


def test_holidays_as_yaml_dates_are_read() -> None:
    from datetime import date

    two = parse({**OFFICE, "holidays": [date(2026, 12, 25), date(2026, 12, 26)]})
    assert two.describe() == "Mon-Fri 08:00-18:00 Europe/Berlin, 2 holidays"


@pytest.mark.parametrize("raw", [None, "24x7", {"hours": "24x7"}])
def test_24x7_is_plain_addition(raw: object) -> None:
    coverage = parse(raw)
    assert coverage == Coverage()
    start = datetime(2026, 3, 29, 0, 30)
    for seconds in (0.0, 900.0, 4 * H, 49 * H + 7):
        end = deadline(start, seconds, coverage)
        assert end.at_utc == start + timedelta(seconds=seconds)
        assert end.calendar == "24x7"
        assert not end.start_outside_coverage
    aware = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)
    assert deadline(aware, H, coverage).at_utc == aware + timedelta(hours=1)


def test_start_outside_coverage_counts_from_the_next_opening() -> None:
    # Saturday 10:00: nothing is counted until Monday 08:00
    end = deadline(berlin(2026, 11, 28, 10, 0), 2 * H, parse(OFFICE))
    assert end.at_utc == berlin(2026, 11, 30, 10, 0)
    assert end.start_outside_coverage
    assert end.counted_from_utc == berlin(2026, 11, 30, 8, 0)
    assert "started outside coverage" in end.words()
    # on a weekday evening too; inside coverage it is not
    assert deadline(berlin(2026, 11, 30, 19, 0), H, parse(OFFICE)).at_utc == berlin(2026, 12, 1, 9, 0)
    assert not deadline(berlin(2026, 11, 30, 9, 0), H, parse(OFFICE)).start_outside_coverage


@pytest.mark.parametrize(
    ("raw", "where", "expected"),
    [
        ("9to5", "coverage", "24x7"),
        ({"hours": "Mon-Fri 8-18", "tz": "Europe/Berlin"}, "coverage.hours", "Mon-Fri 08:00-18:00"),
        ({"hours": "Mon-Fri 18:00-08:00", "tz": "Europe/Berlin"}, "coverage.hours", "closing time after"),
        ({"hours": "Mon-Fry 08:00-18:00", "tz": "Europe/Berlin"}, "coverage.hours", "Mon..Sun"),
        ({"hours": "Mon-Fri 08:00-18:00"}, "coverage.tz", "IANA time zone"),
        ({"hours": "Mon-Fri 08:00-18:00", "tz": "Europe/Berlinn"}, "coverage.tz", "tz database"),
        ({"hours": "Mon-Fri 08:00-18:00", "tz": "Europe"}, "coverage.tz", "tz database"),
        ({"hours": "Mon-Fri 08:00-18:00", "tz": "x" * 5000}, "coverage.tz", "tz database"),
        ({**OFFICE, "holidays": ["25.12.2026"]}, "coverage.holidays[0]", "YYYY-MM-DD"),
        ({**OFFICE, "timezone": "x"}, "coverage.timezone", "hours, tz and holidays"),
    ],
)
def test_bad_coverage_says_where_and_what_was_expected(raw: object, where: str, expected: str) -> None:
    with pytest.raises(CoverageError) as caught:
        parse(raw)
    assert str(caught.value).startswith(where + ":")
    assert expected in str(caught.value)


def _profile(folder: Path, coverage: str) -> Path:
    """The shipped sim profile with `coverage` in place of its own `coverage:` line, as a profile of its own."""
    shipped = Path(__file__).resolve().parents[1] / "baselines" / "sim" / "cluster.yaml"
    folder.mkdir(parents=True)
    text = "".join(line for line in shipped.read_text().splitlines(keepends=True) if not line.startswith("coverage:"))
    (folder / "cluster.yaml").write_text(text + coverage)
    return folder / "cluster.yaml"


def test_a_profile_states_its_coverage_and_a_bad_one_names_file_and_line(tmp_path: Path) -> None:
    from acceptance.profile import load_profile_file

    office = 'coverage:\n  hours: "Mon-Fri 08:00-18:00"\n  tz: Europe/Berlin\n  holidays: [2026-12-25]\n'
    good = _profile(tmp_path / "good", office)
    assert load_profile_file(good).coverage.describe() == "Mon-Fri 08:00-18:00 Europe/Berlin, 1 holiday"
    assert load_profile_file(_profile(tmp_path / "absent", "")).coverage == Coverage()
    assert load_profile_file(_profile(tmp_path / "always", "coverage: 24x7\n")).coverage == Coverage()
    bad = _profile(tmp_path / "bad", 'coverage:\n  hours: "weekdays"\n  tz: Europe/Berlin\n')
    with pytest.raises(ProfileError) as caught:
        load_profile_file(bad)
    said = str(caught.value)
    assert str(bad) in said
    assert "coverage.hours" in said
    assert "Mon-Fri 08:00-18:00" in said
    line = bad.read_text().splitlines().index('  hours: "weekdays"') + 1
    assert f":{line}:" in said
    wrong_type = _profile(tmp_path / "list", "coverage: [Mon-Fri]\n")
    with pytest.raises(ProfileError, match="coverage"):
        load_profile_file(wrong_type)


def _policy(coverage: Coverage) -> SeverityPolicy:
    levels = {"respond": "15m", "restore": "4h", "resolve": "48h", "escalate_after": "2h"}
    raw = {"levels": {"down": levels, "degraded": levels}}
    return SeverityPolicy.from_profile(raw, coverage)


def test_the_bundle_clocks_count_coverage_hours_and_say_which_calendar() -> None:
    opened = berlin(2026, 11, 27, 17, 0)  # Friday 17:00 Berlin
    s = severity(_policy(parse(OFFICE)), "down", "no steps", opened)
    by = {c.name: c for c in s.clocks}
    assert by["restore"].deadline_utc == berlin(2026, 11, 30, 11, 0)
    assert by["respond"].deadline_utc == berlin(2026, 11, 27, 17, 15)
    assert by["restore"].calendar == "Mon-Fri 08:00-18:00 Europe/Berlin"
    up = severity(_policy(parse(OFFICE)), "degraded", "slower", opened)
    assert (up.escalate_to, up.escalate_at_utc) == ("down", berlin(2026, 11, 30, 9, 0))  # 1 h Friday + 1 h Monday


def test_without_coverage_the_bundle_clocks_are_plain_addition() -> None:
    opened = datetime(2026, 11, 27, 16, 0)
    s = severity(_policy(Coverage()), "down", "no steps", opened)
    assert [(c.name, c.deadline_utc, c.calendar) for c in s.clocks] == [
        ("respond", opened + timedelta(minutes=15), "24x7"),
        ("restore", opened + timedelta(hours=4), "24x7"),
        ("resolve", opened + timedelta(hours=48), "24x7"),
    ]


def _bundle_doc(opened: datetime, coverage: Coverage) -> dict[str, object]:
    from acceptance.incident.render import iso

    s = severity(_policy(coverage), "down", "no steps", opened)
    clocks_doc = [
        {
            "name": c.name,
            "target_s": c.target_s,
            "deadline_utc": iso(c.deadline_utc),
            "calendar": c.calendar,
            "start_outside_coverage": c.start_outside_coverage,
        }
        for c in s.clocks
    ]
    return {"created_utc": iso(opened), "ticket": "INC-1", "severity": {"level": "down", "clocks": clocks_doc}}


def test_the_acceptance_run_judges_the_restore_clock_in_coverage_hours() -> None:
    opened = berlin(2026, 11, 27, 17, 0)
    doc = _bundle_doc(opened, parse(OFFICE))
    monday_10 = berlin(2026, 11, 30, 10, 0)  # 65 h of wall-clock time later, 3 h of coverage
    result = clocks.restoration(doc, monday_10)
    assert result.met is True
    assert result.deadline_utc == berlin(2026, 11, 30, 11, 0)
    assert "in coverage hours Mon-Fri 08:00-18:00 Europe/Berlin" in result.line()
    assert ("incident.restore_calendar", "Mon-Fri 08:00-18:00 Europe/Berlin") in result.properties()
    assert clocks.restoration(doc, berlin(2026, 11, 30, 11, 1)).met is False
    # the same bundle made under 24x7 missed its clock by Monday
    plain = clocks.restoration(_bundle_doc(opened, Coverage()), monday_10)
    assert plain.met is False
    assert "coverage hours" not in plain.line()


def test_probation_judges_the_resolve_clock_in_coverage_hours() -> None:
    opened = berlin(2026, 11, 27, 17, 0)  # 48 h of coverage: 1 h Friday + Mon-Thu 4 x 10 h + 7 h on Friday 4
    doc = _bundle_doc(opened, parse(OFFICE))
    assert clocks.resolution(doc, berlin(2026, 12, 4, 14, 59)).met is True
    assert clocks.resolution(doc, berlin(2026, 12, 4, 15, 1)).met is False


def test_a_bundle_made_outside_coverage_says_so() -> None:
    doc = _bundle_doc(berlin(2026, 11, 28, 10, 0), parse(OFFICE))  # Saturday
    result = clocks.restoration(doc, berlin(2026, 11, 30, 9, 0))
    assert result.start_outside_coverage
    assert "outside coverage" in result.line()
    assert ("incident.restore_start_outside_coverage", "true") in result.properties()


def test_bundle_md_names_the_coverage_hours_only_when_there_are_some() -> None:
    from acceptance.incident.markdown import _calendar

    saturday = berlin(2026, 11, 28, 10, 0)
    said = _calendar(severity(_policy(parse(OFFICE)), "down", "no steps", saturday))
    assert said == [
        "- clocks count coverage hours only: Mon-Fri 08:00-18:00 Europe/Berlin; the bundle was made outside "
        "coverage, the clocks count from 2026-11-30 07:00:00 UTC"
    ]
    assert _calendar(severity(_policy(Coverage()), "down", "no steps", saturday)) == []


def test_a_bundle_of_a_profile_with_coverage_counts_its_clocks_in_it(tmp_path: Path) -> None:
    """End to end: `acceptance bundle` on the sim agreement with coverage hours; bundle.json valid and dated in them."""
    import json
    import shutil

    from acceptance import schemas
    from acceptance.cli import main
    from acceptance.incident.clocks import parse_utc
    from tests.incident_logs import write

    root = Path(__file__).resolve().parents[1]
    folder = tmp_path / "baselines" / "sim"
    shutil.copytree(root / "baselines" / "sim", folder)
    profile = folder / "cluster.yaml"
    profile.write_text(profile.read_text() + 'coverage: {hours: "Mon-Fri 08:00-18:00", tz: Europe/Berlin}\n')
    (tmp_path / "logs").mkdir()
    logs = write(tmp_path / "logs")
    out = tmp_path / "bundle"
    args = ["bundle", "--cluster", "sim", "--baselines-dir", str(tmp_path / "baselines")]
    args += ["--reports-dir", str(tmp_path / "reports"), "--out", str(out), "--job-logs", str(logs["xid"])]
    assert main(args) == 0
    doc = json.loads((out / "bundle.json").read_text())
    assert list(schemas.problems("bundle", doc)) == []
    created = parse_utc(doc["created_utc"])
    for clock in doc["severity"]["clocks"]:
        assert clock["calendar"] == "Mon-Fri 08:00-18:00 Europe/Berlin"
        end = deadline(created, clock["target_s"], parse(OFFICE))
        assert parse_utc(clock["deadline_utc"]) == end.at_utc
        assert clock["start_outside_coverage"] is end.start_outside_coverage
    assert "clocks count coverage hours only: Mon-Fri 08:00-18:00 Europe/Berlin" in (out / "bundle.md").read_text()


def test_a_clock_that_cannot_end_in_the_covered_time_is_a_clear_error() -> None:
    one_minute_a_week = parse({"hours": "Sun 00:00-00:01", "tz": "UTC"})
    assert deadline(datetime(2026, 12, 1), 60.0, one_minute_a_week).at_utc == datetime(2026, 12, 6, 0, 1)
    with pytest.raises(ProfileError, match="widen the coverage hours"):
        deadline(datetime(2026, 12, 1), 365 * 24 * H, one_minute_a_week)
