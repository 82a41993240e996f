from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.api.deps import SessionDep
from app.drills.service import schedule_of
from app.models.base import utcnow
from app.trends import analysis
from app.trends.schemas import DatabaseTrend, DayPublic, RunPublic, TrendsPublic
from app.trends.service import MB, Assessment, assess_all, in_window, runs_csv, strip_of

router = APIRouter(prefix="/trends", tags=["trends"])

STRIP_DAYS = 30
Days = Annotated[int, Query(ge=1, le=365, description="How many days back runs are shown")]

REGRESSION_RULE = (
    f"a run is a regression when, for its size, it took at least {analysis.REGRESSION_FACTOR:g}x as long as the "
    f"median of the same method's previous {analysis.REGRESSION_BASELINE_RUNS} successful runs on this database "
    f"(at least {analysis.REGRESSION_MIN_BASELINE} of them), and at least {analysis.REGRESSION_MIN_EXTRA_S:g} s "
    "longer"
)


def _run(point: analysis.RunPoint) -> RunPublic:
    run = point.run
    return RunPublic(
        job_id=run.job_id,
        drill=run.drill,
        status=run.status,
        backup_verdict=run.verdict,
        method=run.method.label,
        runner=run.method.runner,
        at=point.at,
        started_at=run.started_at,
        duration_s=point.duration_s,
        restore_s=point.restore_s,
        mb_per_s=point.bytes_per_s / MB if point.bytes_per_s else None,
        baseline_mb_per_s=point.baseline_bytes_per_s / MB if point.baseline_bytes_per_s else None,
        regression=point.regression,
        error=run.error,
    )


def _trend(assessment: Assessment, now: datetime, days: int) -> DatabaseTrend:
    protected = assessment.protected
    schedule = schedule_of(protected)
    window = in_window(assessment.points, now, days)
    return DatabaseTrend(
        protected_database_id=protected.id,
        name=protected.name,
        database=protected.database,
        rto_s=protected.rto_s,
        timezone=schedule.zone.key if schedule is not None else "UTC",
        status=assessment.status,
        days=[
            DayPublic(date=d.day, state=d.state, runs=d.runs, failed=d.failed, slow=d.slow, job_ids=d.job_ids)
            for d in strip_of(assessment, now, STRIP_DAYS)
        ],
        runs=[_run(p) for p in window],
        regressions=sum(1 for p in window if p.regression),
    )


@router.get("", operation_id="trends-read_trends")
def read_trends(session: SessionDep, days: Days = 30) -> TrendsPublic:
    """Per protected database: restore runs over time by method, a status per day, the latest backup's estimated
    restore time against the RTO, regressions and the drills' state."""
    now = utcnow()
    return TrendsPublic(
        generated_at=now,
        days=days,
        regression_rule=REGRESSION_RULE,
        databases=[_trend(a, now, days) for a in assess_all(session, now)],
    )


@router.get(
    "/runs.csv",
    operation_id="trends-export_runs",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}, "description": "One line per run"}},
)
def export_runs(session: SessionDep, days: Days = 30) -> Response:
    """The runs of every protected database in the window as CSV, with their measurements and flags."""
    now = utcnow()
    body = runs_csv(assess_all(session, now), now, days)
    filename = f"restorescope-runs-{now:%Y%m%d}-{days}d.csv"
    return Response(body, media_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{filename}"'})
