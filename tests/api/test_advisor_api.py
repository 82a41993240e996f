"""The advisor's API as a client sees it, on runs written into the job store (the real runs are in
tests/integration/test_advisor.py): the advice, a re-run with a suggestion, its score, and the comparison."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.advisor.service import record_outcome
from app.core.db import session_scope
from app.models import Job, JobKind, JobPhase, JobStatus
from tests.api.conftest import error_message

START = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
HOST = {"cpus": 2, "memory_bytes": 24 << 30, "disk_device": "vda", "disk_rotational": False}


@pytest.fixture
def physical_backup(backup_root: Path) -> Iterator[Path]:
    folder = backup_root / "advisor-api" / "physical"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "xtrabackup_checkpoints").write_text("backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 100\n")
    (folder / "mariadb_backup_checkpoints").write_text("backup_type = full-backuped\n")
    yield folder
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def _physical_job(
    backup: Path,
    *,
    status: str = JobStatus.SUCCEEDED,
    batches: int = 109,
    use_memory: str | None = "16M",
    prepare_s: float = 20.0,
) -> int:
    """A finished physical restore whose prepare ran `batches` recovery batches over `prepare_s` seconds."""
    end = START + timedelta(seconds=prepare_s)
    with session_scope() as session:
        job = Job(
            kind=JobKind.RESTORE,
            status=status,
            phase=JobPhase.DONE if status != JobStatus.RUNNING else JobPhase.PREPARING,
            parameters={
                "backup_path": str(backup.resolve()),
                "backup_format": "mariabackup",
                "target": {"kind": "sandbox", "preset": "server-defaults", "options": {}, "keep": False},
                "database": None,
                "verify": True,
                "checksum_source_id": None,
                "capture": "none",
                "runner": "mariabackup",
                "threads": None,
                "chunk_size": 64 << 20,
                "use_memory": use_memory,
                "read_io_threads": None,
                "write_io_threads": None,
            },
            phase_times={JobPhase.PREPARING: [START.isoformat(), end.isoformat()]},
            started_at=START,
            finished_at=end + timedelta(seconds=5) if status != JobStatus.RUNNING else None,
            run_facts={
                "host": HOST,
                "prepare": {
                    "batches": batches,
                    "use_memory": use_memory,
                    "redo_bytes": 900_000_000,
                    "prepare_seconds": prepare_s - 2,
                    "copy_seconds": 2.0,
                    "already_prepared": False,
                },
            },
        )
        session.add(job)
        session.flush()
        return job.id


def _finish(job_id: int, *, prepare_s: float, status: str = JobStatus.SUCCEEDED) -> None:
    """What the worker does when the re-run ends: the job's times, then the suggestion's score."""
    with session_scope() as session:
        job = session.get(Job, job_id)
        assert job is not None
        end = START + timedelta(seconds=prepare_s)
        job.status, job.phase, job.started_at, job.finished_at = status, JobPhase.DONE, START, end
        job.phase_times = {JobPhase.PREPARING: [START.isoformat(), end.isoformat()]}
        session.flush()
        record_outcome(session, job_id)


def _advice(client: TestClient, job_id: int) -> dict[str, Any]:
    response = client.get(f"/api/v1/jobs/{job_id}/advice")
    assert response.status_code == 200, response.text
    advice: dict[str, Any] = response.json()
    return advice


def test_a_prepare_in_many_batches_is_advised_more_memory_rerun_scored_and_compared(
    client: TestClient, physical_backup: Path
) -> None:
    parent = _physical_job(physical_backup)
    advice = _advice(client, parent)
    assert advice["state"] == "ready" and advice["phase"] == "preparing" and advice["phase_s"] == 20.0
    top = advice["suggestions"][0]
    assert top["rule"] == "prepare_batches" and not top["minor"]
    assert "109 batches" in top["seen"] and top["numbers"][0] == {"label": "recovery batches", "value": "109"}
    assert top["change"] == {
        "settings": [{"option": "use_memory", "value": "512M", "previous": "16M"}],
        "rerun": True,
        "note": None,
    }
    assert top["record"]["applied"] == 0 and top["reruns"] == []

    response = client.post(f"/api/v1/jobs/{parent}/advice/prepare_batches/rerun")
    assert response.status_code == 201, response.text
    child = response.json()
    assert child["parent_id"] == parent and child["status"] == "queued" and child["started_by"] == "test-admin"
    assert child["parameters"]["use_memory"] == "512M" and child["parameters"]["runner"] == "mariabackup"
    logs = client.get(f"/api/v1/jobs/{child['id']}/logs").json()["data"]
    assert any("re-run of job" in line["message"] and "use_memory 16M -> 512M" in line["message"] for line in logs)

    # While the re-run is queued, the suggestion says it is being measured.
    rerun = _advice(client, parent)["suggestions"][0]["reruns"][0]
    assert (rerun["child_job_id"], rerun["verdict"], rerun["speedup"]) == (child["id"], "measuring", None)
    assert _advice(client, child["id"])["state"] == "pending"

    # It ran in half the time: the suggestion keeps a 2x score, on the parent's advice and on the child's.
    _finish(child["id"], prepare_s=10.0)
    top = _advice(client, parent)["suggestions"][0]
    (rerun,) = top["reruns"]
    assert (rerun["verdict"], rerun["speedup"], rerun["parent_seconds"], rerun["child_seconds"]) == (
        "helped",
        2.0,
        20.0,
        10.0,
    )
    assert top["record"]["applied"] == 1 and top["record"]["helped"] == 1 and top["record"]["median_speedup"] == 2.0
    applied_from = _advice(client, child["id"])["applied_from"]
    assert applied_from["rule"] == "prepare_batches" and applied_from["speedup"] == 2.0

    comparison = client.get("/api/v1/compare", params={"a": parent, "b": child["id"]}).json()
    assert comparison["speedup"] == 2.0
    assert (comparison["a"]["phase_s"], comparison["b"]["phase_s"]) == (20.0, 10.0)
    assert {"option": "use_memory", "a": "16M", "b": "512M"} in comparison["settings"]
    assert comparison["applied"]["child_job_id"] == child["id"]
    assert comparison["kinds"] == [] and comparison["a"]["has_trace"] is False


def test_advice_that_did_not_help_is_shown_as_such(client: TestClient, physical_backup: Path) -> None:
    parent = _physical_job(physical_backup)
    first = client.post(f"/api/v1/jobs/{parent}/advice/prepare_batches/rerun").json()
    second = client.post(f"/api/v1/jobs/{parent}/advice/prepare_batches/rerun").json()
    _finish(first["id"], prepare_s=20.5)
    _finish(second["id"], prepare_s=25.0, status=JobStatus.SUCCEEDED)
    reruns = {r["child_job_id"]: r for r in _advice(client, parent)["suggestions"][0]["reruns"]}
    assert reruns[first["id"]]["verdict"] == "no_effect"
    assert reruns[second["id"]]["verdict"] == "slower" and reruns[second["id"]]["speedup"] < 1
    third = client.post(f"/api/v1/jobs/{parent}/advice/prepare_batches/rerun").json()
    _finish(third["id"], prepare_s=5.0, status=JobStatus.FAILED)
    record = _advice(client, parent)["suggestions"][0]["record"]
    assert (record["applied"], record["measured"], record["helped"]) == (3, 2, 0)
    assert record["recent"][0]["verdict"] == "failed"


def test_a_prepare_in_one_batch_gets_no_memory_advice(client: TestClient, physical_backup: Path) -> None:
    advice = _advice(client, _physical_job(physical_backup, batches=1, use_memory="2G"))
    assert advice["state"] == "ready"
    assert [s["rule"] for s in advice["suggestions"]] == []
    assert advice["headline"].startswith("The 20 s preparing phase has no CPU samples")


def test_a_running_job_is_advised_once_it_has_ended(client: TestClient, physical_backup: Path) -> None:
    running = _physical_job(physical_backup, status=JobStatus.RUNNING)
    advice = _advice(client, running)
    assert advice["state"] == "pending" and advice["note"] == "The advisor reads the run once it has ended."
    response = client.post(f"/api/v1/jobs/{running}/advice/prepare_batches/rerun")
    assert response.status_code == 409
    assert "still running" in error_message(response.json())


def test_unknown_jobs_and_suggestions(client: TestClient, physical_backup: Path) -> None:
    assert client.get("/api/v1/jobs/999999/advice").status_code == 404
    job = _physical_job(physical_backup)
    response = client.post(f"/api/v1/jobs/{job}/advice/doublewrite/rerun")
    assert response.status_code == 404
    assert error_message(response.json()) == (
        f"job {job} has no suggestion 'doublewrite' (its suggestions: prepare_batches)"
    )
    assert client.get("/api/v1/compare", params={"a": job, "b": 999999}).status_code == 404


def test_a_job_that_never_reached_its_phase_has_nothing_to_read(client: TestClient, physical_backup: Path) -> None:
    job = _physical_job(physical_backup, status=JobStatus.FAILED)
    with session_scope() as session:
        row = session.get(Job, job)
        assert row is not None
        row.phase_times = {JobPhase.STARTING_SERVER: [START.isoformat(), START.isoformat()]}
    advice = _advice(client, job)
    assert advice["state"] == "unavailable" and "ended before" in advice["note"]
