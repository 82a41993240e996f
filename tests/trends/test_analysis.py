"""Restore trends from run records: throughput, regressions, the status strip, the estimate against the RTO.
Pure, table-driven."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from app.trends.analysis import (
    REGRESSION_FACTOR,
    Method,
    RunPoint,
    RunRecord,
    analyse,
    day_state,
    estimate_restore,
    measure,
    restore_seconds,
    restoring_method,
    rto_state,
    status_strip,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LOADER_SQL = Method("loader", "mysqldump", "gzip")
MYSQL_SQL = Method("mysql", "mysqldump", "gzip")
PHYSICAL = Method("mariabackup", "mariabackup")
GB = 1_000_000_000


def phases(start: datetime, **seconds: float) -> dict[str, list[str | None]]:
    """Phase times as the worker records them: consecutive phases, in the order given."""
    times: dict[str, list[str | None]] = {}
    at = start
    for phase, length in seconds.items():
        times[phase] = [at.isoformat(), (at + timedelta(seconds=length)).isoformat()]
        at += timedelta(seconds=length)
    return times


def run(
    job_id: int,
    *,
    day: float = 0,
    restore_s: float = 100,
    overhead_s: float = 10,
    size: int = GB,
    method: Method = LOADER_SQL,
    status: str = "succeeded",
    verdict: str | None = None,
) -> RunRecord:
    start = T0 + timedelta(days=day)
    physical = method.format == "mariabackup"
    times = (
        phases(start, preparing=restore_s / 2, starting_server=restore_s / 2, verifying=overhead_s)
        if physical
        else phases(start, starting_server=overhead_s / 2, restoring=restore_s, verifying=overhead_s / 2)
    )
    return RunRecord(
        job_id=job_id,
        drill=False,
        status=status,
        method=method,
        created_at=start,
        started_at=start,
        finished_at=start + timedelta(seconds=restore_s + overhead_s),
        phase_times=times,
        backup_bytes=size,
        verdict=verdict,
    )


@pytest.mark.parametrize(
    ("method", "times", "expected"),
    [
        (LOADER_SQL, phases(T0, starting_server=4, restoring=30, verifying=2), 30.0),
        # A physical restore moves its files and recovers while the server starts.
        (PHYSICAL, phases(T0, preparing=10, starting_server=5, verifying=3), 15.0),
        # Not finished yet, or never restored: nothing measured.
        (LOADER_SQL, {"restoring": [T0.isoformat(), None]}, None),
        (LOADER_SQL, phases(T0, starting_server=4), None),
        (LOADER_SQL, {}, None),
    ],
)
def test_restore_seconds_count_the_data_phases(
    method: Method, times: dict[str, list[str | None]], expected: float | None
) -> None:
    assert restore_seconds(times, method) == expected


def test_a_run_is_measured_from_its_job() -> None:
    point = measure(run(1, restore_s=50, overhead_s=10, size=2 * GB))
    assert (point.duration_s, point.restore_s, point.bytes_per_s) == (60.0, 50.0, 40_000_000.0)
    failed = measure(run(2, status="failed"))
    assert failed.restore_s is None and failed.bytes_per_s is None and failed.failed


@pytest.mark.parametrize(
    ("restore_times", "flags"),
    [
        # Three steady runs make the baseline; the fourth takes 1.5x as long for the same size: a regression.
        ([100, 100, 100, 150], [False, False, False, True]),
        # 1.49x is not enough.
        ([100, 100, 100, 149], [False, False, False, False]),
        # Too few earlier runs for a baseline.
        ([100, 100, 300], [False, False, False]),
        # A small backup: 3x as long, but only 2 s more, which is noise on a shared machine.
        ([1, 1, 1, 3], [False, False, False, False]),
        # The median, not the mean: one earlier outlier does not hide the next slow run.
        ([100, 400, 100, 100, 160], [False, False, False, False, True]),
        # Faster is never a regression.
        ([100, 100, 100, 20], [False, False, False, False]),
    ],
)
def test_regressions_against_the_median_of_earlier_runs(restore_times: list[float], flags: list[bool]) -> None:
    points = analyse(run(i, day=i, restore_s=s) for i, s in enumerate(restore_times))
    assert [p.regression for p in points] == flags


def test_the_baseline_is_per_method_and_uses_throughput() -> None:
    records = [
        *(run(i, day=i, restore_s=100) for i in range(3)),
        # The mysql client is always slower than the loader: it has its own baseline, so it is no regression.
        *(run(10 + i, day=3 + i, restore_s=400, method=MYSQL_SQL) for i in range(4)),
        # A backup twice the size in twice the time: same throughput, no regression.
        run(20, day=8, restore_s=200, size=2 * GB),
        # Twice the size in 3.2x the time: a regression.
        run(21, day=9, restore_s=320, size=2 * GB),
    ]
    points = {p.run.job_id: p for p in analyse(records)}
    assert not any(points[i].regression for i in (10, 11, 12, 13, 20))
    assert points[21].regression
    assert points[21].baseline_bytes_per_s == pytest.approx(GB / 100)
    rate, baseline = points[21].bytes_per_s, points[21].baseline_bytes_per_s
    assert rate is not None and baseline is not None and rate * REGRESSION_FACTOR <= baseline


def test_failed_runs_never_enter_the_baseline() -> None:
    records = [run(i, day=i, restore_s=100) for i in range(3)] + [
        run(3, day=3, restore_s=5, status="failed"),
        run(4, day=4, restore_s=160),
    ]
    points = {p.run.job_id: p for p in analyse(records)}
    assert points[4].baseline_bytes_per_s == pytest.approx(GB / 100) and points[4].regression


def point(status: str = "succeeded", *, regression: bool = False, verdict: str | None = None) -> RunPoint:
    return RunPoint(run(1, status=status, verdict=verdict), T0, 1.0, 1.0, 1.0, regression=regression)


@pytest.mark.parametrize(
    ("points", "state"),
    [
        ([], "none"),
        ([point("cancelled")], "none"),
        ([point()], "ok"),
        ([point(), point(regression=True)], "slow"),
        ([point(), point("failed")], "failed"),
        ([point(regression=True), point("failed")], "failed"),
        # Restored, but the verification found the data different: the backup does not restore.
        ([point("failed", verdict="does_not_restore")], "failed"),
    ],
)
def test_the_worst_run_of_a_day_colours_it(points: list[RunPoint], state: str) -> None:
    assert day_state(points) == state


def test_status_strip_days_are_calendar_days_of_the_zone() -> None:
    zone = ZoneInfo("America/New_York")
    records = [
        # 03:00 UTC on 1 March is still 28 February in New York.
        RunRecord(1, True, "succeeded", LOADER_SQL, T0, T0, T0.replace(hour=3), phases(T0, restoring=1), GB),
        RunRecord(2, True, "failed", LOADER_SQL, T0, T0, T0.replace(hour=15), {}, GB),
        # A drill that never made a job counts on the day it failed.
        RunRecord(None, True, "failed", LOADER_SQL, T0 + timedelta(days=2), None, None, {}, None),
    ]
    strip = status_strip(analyse(records), today=date(2026, 3, 4), days=6, zone=zone)
    assert [(d.day.isoformat(), d.state, d.runs, d.failed) for d in strip] == [
        ("2026-02-27", "none", 0, 0),
        ("2026-02-28", "ok", 1, 0),
        ("2026-03-01", "failed", 1, 1),
        ("2026-03-02", "none", 0, 0),
        ("2026-03-03", "failed", 1, 1),
        ("2026-03-04", "none", 0, 0),
    ]
    assert strip[1].job_ids == [1] and strip[4].job_ids == []


def test_estimate_is_size_over_the_median_throughput_plus_the_median_fixed_cost() -> None:
    points = analyse(
        [
            run(1, day=0, restore_s=100, overhead_s=10),  # 10 MB/s
            run(2, day=1, restore_s=50, overhead_s=20),  # 20 MB/s
            run(3, day=2, restore_s=200, overhead_s=12),  # 5 MB/s
        ]
    )
    estimate = estimate_restore(3 * GB, LOADER_SQL, points)
    assert estimate is not None
    assert estimate.bytes_per_s == pytest.approx(10_000_000)
    assert estimate.overhead_s == pytest.approx(12)
    assert estimate.seconds == pytest.approx(300 + 12)
    assert estimate.measured_method == LOADER_SQL and sorted(estimate.job_ids) == [1, 2, 3]


def test_estimate_uses_the_five_most_recent_runs_of_the_method() -> None:
    old_and_slow = [run(i, day=i, restore_s=1000) for i in range(5)]
    recent = [run(10 + i, day=10 + i, restore_s=100) for i in range(5)]
    other_method = [run(20 + i, day=20 + i, restore_s=1, method=MYSQL_SQL) for i in range(5)]
    estimate = estimate_restore(GB, LOADER_SQL, analyse(old_and_slow + recent + other_method))
    assert estimate is not None and estimate.bytes_per_s == pytest.approx(10_000_000)
    assert sorted(estimate.job_ids) == [10, 11, 12, 13, 14]


def test_estimate_falls_back_to_the_same_runner_on_another_format_then_to_nothing() -> None:
    plain = Method("loader", "mysqldump", None)
    points = analyse([run(1, restore_s=100, method=plain), run(2, day=1, restore_s=1, method=MYSQL_SQL)])
    fallback = estimate_restore(GB, LOADER_SQL, points)
    assert fallback is not None and fallback.measured_method == plain and fallback.method == LOADER_SQL
    assert estimate_restore(GB, PHYSICAL, points) is None
    assert estimate_restore(GB, LOADER_SQL, analyse([run(1, status="failed")])) is None


@pytest.mark.parametrize(
    ("rto_s", "restore_s", "state"),
    [(200, 100, "within"), (110, 100, "within"), (109, 100, "over"), (60, 100, "over"), (60, None, "unknown")],
)
def test_rto_state(rto_s: int, restore_s: float | None, state: str) -> None:
    points = analyse([run(1, restore_s=restore_s, overhead_s=10)]) if restore_s is not None else []
    assert rto_state(rto_s, estimate_restore(GB, LOADER_SQL, points)) == state


@pytest.mark.parametrize(
    ("format_name", "compression", "method"),
    [
        ("mysqldump", "zstd", Method("loader", "mysqldump", "zstd")),
        ("mydumper", None, Method("loader", "mydumper", None)),
        ("mariabackup", None, Method("mariabackup", "mariabackup", None)),
    ],
)
def test_a_drill_restores_with_what_auto_picks(format_name: str, compression: str | None, method: Method) -> None:
    assert restoring_method(format_name, compression) == method
    assert method.label.startswith(f"{method.runner} · {format_name}")
