"""Thin tasks: each takes a job id, and the job's own module does the work."""

from worker import backup, restore, scheduler
from worker.celery_app import app


@app.task(name="restore.run")
def run_restore(job_id: int) -> None:
    restore.run(job_id)


@app.task(name="backup.run")
def run_backup(job_id: int) -> None:
    backup.run(job_id)


@app.task(name="scheduler.tick")
def run_scheduler_tick() -> None:
    scheduler.tick()
