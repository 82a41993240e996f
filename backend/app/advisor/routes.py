from typing import Annotated

from fastapi import APIRouter, Query, status

from app.advisor import service
from app.advisor.schemas import AdvicePublic, ComparePublic
from app.api.deps import OperatorUser, SessionDep, SettingsDep
from app.core.queue import enqueue_job
from app.jobs.progress import to_public
from app.jobs.schemas import JobDetail
from app.models.base import utcnow

router = APIRouter(tags=["advisor"])


@router.get("/jobs/{job_id}/advice", operation_id="advisor-read_advice")
def read_advice(session: SessionDep, settings: SettingsDep, job_id: int) -> AdvicePublic:
    """What held a finished run back, and the changes that should speed it up, most to gain first."""
    return AdvicePublic.model_validate(service.read_advice(session, settings, job_id))


@router.post(
    "/jobs/{job_id}/advice/{rule}/rerun",
    status_code=status.HTTP_201_CREATED,
    operation_id="advisor-rerun_with_suggestion",
)
def rerun_with_suggestion(
    session: SessionDep, settings: SettingsDep, user: OperatorUser, job_id: int, rule: str
) -> JobDetail:
    """Queue a child of the job with one suggestion's change; its speedup over the job is recorded when it ends
    (operator)."""
    child = service.rerun_with_suggestion(session, settings, job_id, rule, user)
    session.commit()
    enqueue_job(child.kind, child.id)
    return JobDetail(**to_public(child, utcnow()).model_dump(), verification=[])


@router.get("/compare", operation_id="advisor-compare_runs")
def compare_runs(
    session: SessionDep,
    settings: SettingsDep,
    a: Annotated[int, Query(description="The first run (usually the parent)")],
    b: Annotated[int, Query(description="The second run (usually the re-run)")],
) -> ComparePublic:
    """Two runs side by side: phase times, throughput, differing settings, per-operation statistics."""
    return ComparePublic.model_validate(service.compare_runs(session, settings, a, b))
