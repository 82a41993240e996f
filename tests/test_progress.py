"""Rates, percent and ETA from a job's counters."""

from datetime import UTC, datetime, timedelta

import pytest

from app.jobs.progress import duration_s, percent, rates
from app.models import Job, JobStatus

START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _job(bytes_done: int, bytes_total: int | None, rows: int, elapsed_s: float | None, status: str = "running") -> Job:
    job = Job(bytes_done=bytes_done, bytes_total=bytes_total, rows_done=rows, status=status, started_at=START)
    job.phase_times = {} if elapsed_s is None else {"restoring": [START.isoformat(), None]}
    job.progress_at = None if elapsed_s is None else START + timedelta(seconds=elapsed_s)
    return job


@pytest.mark.parametrize(
    ("job", "expected_percent", "expected_rates"),
    [
        (_job(50_000_000, 100_000_000, 1000, 10), 50.0, (5.0, 100.0, 10.0)),
        (_job(100_000_000, 100_000_000, 1000, 20, JobStatus.SUCCEEDED), 100.0, (5.0, 50.0, None)),
        (_job(0, 100, 0, None), 0.0, (None, None, None)),
        (_job(10, None, 0, 1), None, (1e-05, 0.0, None)),
        (_job(10, 100, 0, 0), 10.0, (None, None, None)),
        # A compressed dump can end a little past its own size in the counters: never above 100 %.
        (_job(120, 100, 0, 1), 100.0, (0.00012, 0.0, 0.0)),
    ],
)
def test_rates(job: Job, expected_percent: float | None, expected_rates: tuple[float | None, ...]) -> None:
    assert percent(job) == expected_percent
    assert rates(job) == pytest.approx(expected_rates)


def test_duration_runs_until_now_while_running() -> None:
    job = _job(0, 1, 0, None)
    assert duration_s(job, START + timedelta(seconds=90)) == 90
    job.finished_at = START + timedelta(seconds=30)
    assert duration_s(job, START + timedelta(seconds=90)) == 30
