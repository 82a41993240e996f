"""Thin tasks: each takes a job id, and the job's own module does the work."""

from worker import restore
from worker.celery_app import app


@app.task(name="restore.run")
def run_restore(job_id: int) -> None:
    restore.run(job_id)
