"""The Celery *client*: the API only sends task names with ids, after its transaction has committed."""

from functools import lru_cache

from celery import Celery

from app.core.config import get_settings


@lru_cache
def get_celery_client() -> Celery:
    return Celery("restorescope-api", broker=get_settings().redis_url)


def enqueue_job(kind: str, job_id: int) -> None:
    get_celery_client().send_task(f"{kind}.run", args=[job_id])
