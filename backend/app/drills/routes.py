from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import SessionDep
from app.drills import service
from app.protected.schemas import DrillsPublic
from app.protected.service import get_protected

router = APIRouter(prefix="/drills", tags=["drills"])


@router.get("", operation_id="drills-read_drills")
def read_drills(
    session: SessionDep,
    protected_database_id: int | None = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> DrillsPublic:
    """Drills newest first, of every protected database or of one, with their job's outcome."""
    if protected_database_id is not None:
        get_protected(session, protected_database_id)
    data, count = service.list_drills(session, protected_database_id, offset, limit)
    return DrillsPublic(data=data, count=count)
