"""Pure arithmetic behind the metrics: durations, bucket counts, throughput, medians."""

from collections.abc import Iterable, Sequence
from datetime import datetime
from statistics import median

from app.models import JobPhase

# Restores and backups take seconds to hours: buckets from 10 s to 12 h.
DURATION_BUCKETS_S: tuple[float, ...] = (10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200)


def cumulative_buckets(values: Iterable[float], bounds: Sequence[float]) -> list[tuple[str, int]]:
    """Prometheus histogram buckets: (le, how many values are <= le), ending with +Inf."""
    ordered = sorted(values)
    buckets = [(_le(bound), sum(1 for v in ordered if v <= bound)) for bound in bounds]
    return [*buckets, ("+Inf", len(ordered))]


def _le(bound: float) -> str:
    return str(float(bound))


def work_phase_seconds(phase_times: dict[str, list[str | None]]) -> float | None:
    """Seconds of the phase that moved the bytes (restoring, else backing up), when it has finished."""
    for phase in (JobPhase.RESTORING, JobPhase.BACKING_UP):
        times = phase_times.get(phase)
        if times and len(times) == 2 and times[0] and times[1]:
            elapsed = (datetime.fromisoformat(times[1]) - datetime.fromisoformat(times[0])).total_seconds()
            return elapsed if elapsed > 0 else None
    return None


def throughput(bytes_total: int | None, phase_times: dict[str, list[str | None]]) -> float | None:
    seconds = work_phase_seconds(phase_times or {})
    if not bytes_total or seconds is None:
        return None
    return bytes_total / seconds


def median_or_none(values: Sequence[float]) -> float | None:
    return median(values) if values else None
