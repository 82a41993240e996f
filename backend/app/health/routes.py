import redis
from fastapi import APIRouter
from pydantic import BaseModel, Field
from sqlalchemy import text

from app.api.deps import SessionDep, SettingsDep
from app.core.liveness import alive_beats, alive_workers

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    database: str
    redis: str
    workers: list[str]
    schedulers: list[str] = Field(description="Celery beat processes alive: without one, drills do not run")


@router.get("/health", operation_id="health-read_health")
def read_health(session: SessionDep, settings: SettingsDep) -> Health:
    """Whether the job store, Redis and at least one worker are up."""
    session.execute(text("SELECT 1"))
    try:
        client = redis.Redis.from_url(settings.redis_url, socket_timeout=2)
        with client:
            workers, schedulers = alive_workers(client), alive_beats(client)
        redis_state = "ok"
    except redis.RedisError as error:
        workers, schedulers, redis_state = [], [], f"unreachable: {error}"
    ok = redis_state == "ok" and bool(workers)
    return Health(
        status="ok" if ok else "degraded", database="ok", redis=redis_state, workers=workers, schedulers=schedulers
    )
