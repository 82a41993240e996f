"""How restores of a protected database have gone: pure functions over its restore runs.

A run is one restore job of one of the database's backups (a drill, or a restore someone launched), or a drill
that could not restore anything (its backup was gone). From the runs come, per database:

- each run's duration (the whole job: server start, restore, verification) and throughput (the backup's bytes
  over the seconds of the phases that moved them: prepare and restore, and the copy-back and crash recovery of
  a physical backup);
- a regression flag on a run much slower than the database's recent median for the same method (below);
- a status per day for the status strip;
- the estimated restore time of the latest backup: its size over the median throughput of the recent runs of
  the method that would restore it, plus their median fixed cost (server start and verification), compared
  with the target restore time (RTO).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, tzinfo
from statistics import median
from typing import Literal

from app.models import JobPhase

# A run is a regression when, for its size, it took at least REGRESSION_FACTOR times as long as the median of
# the same method's previous runs on this database (its throughput is at most the median / 1.5), and at least
# REGRESSION_MIN_EXTRA_S longer in absolute terms, so second-long restores of small backups, whose time is mostly
# noise on a shared machine, do not raise the flag. The median needs REGRESSION_MIN_BASELINE earlier successful
# runs, and looks at the REGRESSION_BASELINE_RUNS most recent ones.
REGRESSION_FACTOR = 1.5
REGRESSION_MIN_EXTRA_S = 5.0
REGRESSION_MIN_BASELINE = 3
REGRESSION_BASELINE_RUNS = 10

# The estimate uses the ESTIMATE_RUNS most recent successful runs of the method.
ESTIMATE_RUNS = 5

PHYSICAL_FORMATS = frozenset({"mariabackup", "xtrabackup"})

DayState = Literal["ok", "slow", "failed", "none"]
RtoState = Literal["within", "over", "unknown"]


@dataclass(frozen=True, order=True)
class Method:
    """How a backup was restored: the runner, and the backup's format and compression."""

    runner: str
    format: str
    compression: str | None = None

    @property
    def label(self) -> str:
        return f"{self.runner} · {self.format}" + (f" ({self.compression})" if self.compression else "")


def restoring_method(format_name: str, compression: str | None) -> Method:
    """The method a drill restores a backup with: the runner `auto` picks (jobs.service.choose_runner)."""
    return Method(format_name if format_name in PHYSICAL_FORMATS else "loader", format_name, compression)


@dataclass(frozen=True)
class RunRecord:
    """One restore of the database, as the job store has it."""

    job_id: int | None
    drill: bool
    status: str  # the job's status; a drill that made no job is "failed"
    method: Method
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    phase_times: dict[str, list[str | None]]
    backup_bytes: int | None
    verdict: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class RunPoint:
    """A run with what was measured of it."""

    run: RunRecord
    at: datetime  # when it ended (or was made, for a drill that never ran)
    duration_s: float | None
    restore_s: float | None
    bytes_per_s: float | None
    baseline_bytes_per_s: float | None = None
    regression: bool = False

    @property
    def succeeded(self) -> bool:
        return self.run.status == "succeeded"

    @property
    def failed(self) -> bool:
        return self.run.status == "failed" or self.run.verdict == "does_not_restore"


def _phase_seconds(times: list[str | None] | None) -> float | None:
    if not times or len(times) != 2 or not times[0] or not times[1]:
        return None
    return (datetime.fromisoformat(times[1]) - datetime.fromisoformat(times[0])).total_seconds()


def data_phases(method: Method) -> tuple[str, ...]:
    """The phases that move the backup's bytes: a physical backup's files are moved into place and recovered while
    its server starts; a logical restore's sandbox start is a fixed cost."""
    if method.format in PHYSICAL_FORMATS:
        return (JobPhase.PREPARING, JobPhase.STARTING_SERVER)
    return (JobPhase.PREPARING, JobPhase.RESTORING)


def restore_seconds(phase_times: dict[str, list[str | None]], method: Method) -> float | None:
    """Seconds of the data phases; None until one of them has finished."""
    seconds = [_phase_seconds(phase_times.get(phase)) for phase in data_phases(method)]
    measured = [s for s in seconds if s is not None]
    return sum(measured) if measured else None


def measure(run: RunRecord) -> RunPoint:
    duration = None
    if run.started_at is not None and run.finished_at is not None:
        duration = max(0.0, (run.finished_at - run.started_at).total_seconds())
    restore = restore_seconds(run.phase_times, run.method) if run.status == "succeeded" else None
    rate = run.backup_bytes / restore if restore and run.backup_bytes else None
    return RunPoint(run, run.finished_at or run.created_at, duration, restore, rate)


def flag_regressions(points: Sequence[RunPoint]) -> list[RunPoint]:
    """The points in time order, each successful one with its baseline (the median throughput of the same method's
    previous successful runs) and whether it is a regression (see REGRESSION_FACTOR)."""
    ordered = sorted(points, key=lambda p: (p.at, p.run.job_id or 0))
    history: dict[Method, list[float]] = {}
    flagged = []
    for point in ordered:
        if not point.succeeded or point.bytes_per_s is None or point.restore_s is None:
            flagged.append(point)
            continue
        previous = history.setdefault(point.run.method, [])
        recent = previous[-REGRESSION_BASELINE_RUNS:]
        baseline = median(recent) if len(recent) >= REGRESSION_MIN_BASELINE else None
        regression = False
        if baseline is not None:
            expected_s = point.restore_s * point.bytes_per_s / baseline
            regression = (
                point.bytes_per_s * REGRESSION_FACTOR <= baseline
                and point.restore_s - expected_s >= REGRESSION_MIN_EXTRA_S
            )
        flagged.append(replace(point, baseline_bytes_per_s=baseline, regression=regression))
        previous.append(point.bytes_per_s)
    return flagged


def analyse(runs: Iterable[RunRecord]) -> list[RunPoint]:
    """Every run measured and flagged, oldest first."""
    return flag_regressions([measure(run) for run in runs])


@dataclass(frozen=True)
class Day:
    day: date
    state: DayState
    runs: int = 0
    failed: int = 0
    slow: int = 0
    job_ids: list[int] = field(default_factory=list)


def day_state(points: Sequence[RunPoint]) -> DayState:
    """The worst of the day: a failure, else a regression, else ok; "none" without a finished run (cancelled runs
    say nothing about the backup)."""
    if any(p.failed for p in points):
        return "failed"
    if any(p.regression for p in points):
        return "slow"
    if any(p.succeeded for p in points):
        return "ok"
    return "none"


def status_strip(points: Sequence[RunPoint], *, today: date, days: int, zone: tzinfo) -> list[Day]:
    """One entry per calendar day in `zone`, oldest first, ending with `today`."""
    by_day: dict[date, list[RunPoint]] = {}
    for point in points:
        if point.succeeded or point.failed:
            by_day.setdefault(point.at.astimezone(zone).date(), []).append(point)
    strip = []
    for offset in range(days - 1, -1, -1):
        day = today - timedelta(days=offset)
        found = by_day.get(day, [])
        strip.append(
            Day(
                day=day,
                state=day_state(found),
                runs=len(found),
                failed=sum(1 for p in found if p.failed),
                slow=sum(1 for p in found if p.regression),
                job_ids=[p.run.job_id for p in found if p.run.job_id is not None],
            )
        )
    return strip


@dataclass(frozen=True)
class Estimate:
    seconds: float
    bytes_per_s: float  # median throughput of the runs used
    overhead_s: float  # their median fixed cost: the time outside the data phases
    method: Method  # the method the latest backup would be restored with
    measured_method: Method  # the method of the runs used (another format of the same runner, as a fallback)
    job_ids: list[int]


def estimate_restore(size_bytes: int, method: Method, points: Sequence[RunPoint]) -> Estimate | None:
    """The latest backup's estimated restore time from the most recent successful runs of its method; when the
    database has none, from runs of the same runner on another format or compression. None without either."""
    usable = sorted(
        (p for p in points if p.succeeded and p.bytes_per_s is not None and p.duration_s is not None),
        key=lambda p: p.at,
        reverse=True,
    )
    same = [p for p in usable if p.run.method == method][:ESTIMATE_RUNS]
    chosen = same or [p for p in usable if p.run.method.runner == method.runner][:ESTIMATE_RUNS]
    if not chosen:
        return None
    rate = median(p.bytes_per_s for p in chosen if p.bytes_per_s is not None)
    overhead = median(max(0.0, (p.duration_s or 0.0) - (p.restore_s or 0.0)) for p in chosen)
    return Estimate(
        seconds=size_bytes / rate + overhead,
        bytes_per_s=rate,
        overhead_s=overhead,
        method=method,
        measured_method=chosen[0].run.method if not same else method,
        job_ids=[p.run.job_id for p in chosen if p.run.job_id is not None],
    )


def rto_state(rto_s: float, estimate: Estimate | None) -> RtoState:
    if estimate is None:
        return "unknown"
    return "over" if estimate.seconds > rto_s else "within"
