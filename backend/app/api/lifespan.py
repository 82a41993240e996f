import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from app.core.config import get_settings
from app.core.db import session_scope
from app.jobs.sweep import fail_dead_jobs

log = logging.getLogger("restorescope.sweep")


def sweep_once() -> None:
    settings = get_settings()
    with session_scope() as session:
        failed = fail_dead_jobs(session, settings.heartbeat_timeout_s)
    if failed:
        log.warning("failed jobs whose worker died: %s", failed)
    # Sandboxes of dead workers on this host; imported here because only a co-located API can reap them.
    from worker.sandbox.server import reap_orphans

    reap_orphans(settings.resolved_work_root, log.warning)


async def _sweep_forever(interval_s: float) -> None:
    while True:
        try:
            await run_in_threadpool(sweep_once)
        except Exception:
            log.exception("sweep failed; trying again in %s s", interval_s)
        await asyncio.sleep(interval_s)


@asynccontextmanager
async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
    interval = get_settings().sweep_interval_s
    task = asyncio.create_task(_sweep_forever(interval)) if interval > 0 else None
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
