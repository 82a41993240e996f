"""The Celery app of the worker processes. Tasks take a job id only; the job store holds all state."""

import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

import redis
from celery import Celery
from celery.signals import beat_init, worker_process_init, worker_ready

from app.core.config import get_settings
from app.core.db import get_engine, get_sessionmaker
from app.core.liveness import TTL_S, announce_beat, announce_worker

settings = get_settings()
app = Celery("restorescope", broker=settings.redis_url, include=["worker.tasks"])
app.conf.update(
    # Acknowledge on receipt: a multi-hour restore must never be handed to a second worker when the Redis
    # visibility timeout runs out. A worker that dies mid-job is caught by the heartbeat sweep instead.
    task_acks_late=False,
    worker_prefetch_multiplier=1,
    broker_transport_options={"visibility_timeout": settings.broker_visibility_timeout_s},
    broker_connection_retry_on_startup=True,
    task_serializer="json",
    accept_content=["json"],
    task_ignore_result=True,
    # Celery beat's only entry: the scheduler's tick (worker/scheduler.py). It expires after one interval, so
    # ticks that waited behind busy workers are dropped rather than run in a burst.
    # Beat's own record of when it last sent each entry, with the app's other state.
    beat_schedule_filename=str(settings.data_dir / "celerybeat-schedule"),
    beat_schedule={
        "scheduler-tick": {
            "task": "scheduler.tick",
            "schedule": settings.drill_tick_s,
            "options": {"expires": max(settings.drill_tick_s, 1.0)},
        }
    },
)

log = logging.getLogger("restorescope.worker")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@worker_process_init.connect
def _fresh_database_pool(**_kwargs: Any) -> None:
    # Connections inherited through fork would be shared by two processes: start with a new pool.
    get_engine.cache_clear()
    get_sessionmaker.cache_clear()


def _announce_forever(name: str, announce: Callable[[redis.Redis, str], None] = announce_worker) -> None:
    client = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    while True:
        try:
            announce(client, name)
        except redis.RedisError as error:
            log.warning("cannot announce worker liveness: %s", error)
        threading.Event().wait(TTL_S / 3)


@worker_ready.connect
def _on_worker_ready(**_kwargs: Any) -> None:
    from worker.sandbox.server import reap_orphans

    removed = reap_orphans(settings.resolved_work_root, log.warning)
    if removed:
        log.warning("removed sandboxes left by dead workers: %s", [str(p) for p in removed])
    threading.Thread(target=_announce_forever, args=(worker_name(),), daemon=True, name="liveness").start()


@beat_init.connect
def _on_beat_init(**_kwargs: Any) -> None:
    # The health check says whether drills can be scheduled at all.
    threading.Thread(
        target=_announce_forever, args=(worker_name(), announce_beat), daemon=True, name="beat-liveness"
    ).start()
