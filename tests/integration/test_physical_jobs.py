"""Restore jobs of physical backups through the real stack: API -> Redis -> Celery worker -> mariabackup --prepare
on a copy -> mariabackup --move-back into a new sandbox -> the sandbox started and checked table by table. The
backup is a real `mariabackup --backup` of a sandbox that was being written to, so the prepare has redo to apply."""

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import FIXED_ROWS, MYISAM_ROWS, T_BATCH_ROWS, T_START_ROWS, server_processes
from tests.stack import Stack

pytestmark = pytest.mark.integration


def _damaged_copy(backup: Path) -> Path:
    """The backup with the last records of its redo log cut off (a copy interrupted near its end)."""
    damaged = backup.parent / "shop-damaged"
    if not damaged.exists():
        shutil.copytree(backup, damaged)
        checkpoints = (damaged / "xtrabackup_checkpoints").read_text()
        lsn = {
            line.split("=")[0].strip(): int(line.split("=")[1]) for line in checkpoints.splitlines() if "lsn" in line
        }
        with (damaged / "ib_logfile0").open("r+b") as redo:
            redo.truncate(lsn["last_lsn"] - lsn["to_lsn"])
    return damaged


def _trace(stack: Stack, job_id: int) -> dict[str, Any]:
    response = stack.http.get(f"/jobs/{job_id}/trace")
    assert response.status_code == 200, response.text
    trace: dict[str, Any] = response.json()
    return trace


def test_a_physical_restore_prepares_a_copy_starts_a_sandbox_on_it_and_checks_every_table(
    live_worker: Stack, physical_backup: Path, work_root: Path
) -> None:
    job = live_worker.restore("physical/shop", use_memory="8M", read_io_threads=2, write_io_threads=2)
    assert job["parameters"]["runner"] == "mariabackup"  # auto, for a physical backup
    done = live_worker.wait_until_done(job["id"])

    # The job succeeded at 100%, through the physical restore's phases, and the backup restores.
    assert done["status"] == "succeeded", done["error"]
    assert done["percent"] == 100.0 and done["bytes_done"] == done["bytes_total"] > 0
    assert {"preparing", "starting_server", "verifying"} <= set(done["phase_times"]), done["phase_times"]
    assert done["backup_verdict"] == "restores"
    # Every table was checked (CHECK TABLE and its rows): the exact counts of the tables not written during the
    # backup, and a consistent count of the one that was (its starting rows plus whole INSERTs).
    verified = {v["table"]: v for v in done["verification"] if v["database"] == "shop"}
    assert set(verified) == {"t", "fixed", "counters"}, done["verification"]
    assert all(v["ok"] and v["check"] == "check_table" for v in verified.values()), verified
    assert (verified["fixed"]["actual"], verified["counters"]["actual"]) == (FIXED_ROWS, MYISAM_ROWS)
    assert (verified["t"]["actual"] - T_START_ROWS) % T_BATCH_ROWS == 0 and verified["t"]["actual"] >= T_START_ROWS
    assert done["rows_done"] >= FIXED_ROWS + MYISAM_ROWS + T_START_ROWS
    # The log tells the prepare's facts, and that 8M of memory took several recovery batches.
    logs = live_worker.log_messages(job["id"])
    text = "\n".join(logs)
    assert "preparing: applying the redo log up to LSN " in text, text
    prepared = next(line for line in logs if line.startswith("prepared: "))
    assert " recovery batches with --use-memory 8M" in prepared, prepared
    assert any(line.startswith("recovery needed ") and "more --use-memory would do it in one" in line for line in logs)
    # The IO timeline has mariabackup's own lanes next to the restored server's threads.
    trace = _trace(live_worker, job["id"])
    assert trace["status"] == "complete" and trace["operations"] > 0
    processes = {lane["process"] for lane in trace["lanes"]}
    assert processes & {"mariabackup", "mariadb-backup"}, processes
    assert "mariadbd" in processes, processes
    # Nothing is left: neither the sandbox nor the prepared copy, and no server process.
    assert not Path(done["sandbox_dir"]).exists() and server_processes(done["sandbox_dir"]) == []
    assert not list(work_root.glob(f"job-{job['id']}*"))


def test_a_damaged_physical_backup_fails_its_job_and_does_not_restore(
    live_worker: Stack, physical_backup: Path, work_root: Path
) -> None:
    _damaged_copy(physical_backup)
    job = live_worker.restore("physical/shop-damaged", capture="none")
    done = live_worker.wait_until_done(job["id"])

    assert done["status"] == "failed"
    assert "ib_logfile0 is truncated or damaged, and the restored data would lack the last changes" in done["error"]
    assert done["backup_verdict"] == "does_not_restore"
    assert done["phase_times"].keys() & {"preparing"} and "verifying" not in done["phase_times"]
    assert done["sandbox_dir"] and not Path(done["sandbox_dir"]).exists()
    assert not list(work_root.glob(f"job-{job['id']}*")) and server_processes(done["sandbox_dir"]) == []


def test_a_physical_backup_is_refused_for_a_logical_runner_or_a_saved_target(
    live_worker: Stack, physical_backup: Path
) -> None:
    response = live_worker.http.post("/jobs/restore", json={"backup_path": "physical/shop", "runner": "mysql"})
    assert response.status_code == 422, response.text
    assert "choose mariabackup" in response.text
    target = live_worker.http.post("/targets", json={"name": "physical-target", "user": "u", "password": "p"}).json()
    response = live_worker.http.post(
        "/jobs/restore",
        json={"backup_path": "physical/shop", "target": {"kind": "saved", "target_id": target["id"]}},
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][-1] == "target"
    assert "only goes into a new sandbox" in response.text


@pytest.mark.parametrize("capture", ["strace", "fuse"])
def test_a_physical_restore_under_the_other_capture_backends(
    live_worker: Stack, physical_backup: Path, capture: str
) -> None:
    job = live_worker.restore("physical/shop", capture=capture, verify=False)
    done = live_worker.wait_until_done(job["id"])

    assert done["status"] == "succeeded", done["error"]
    # Without verification the tables are only counted, and the backup gets no verdict.
    assert {v["check"] for v in done["verification"]} == {"row_count"} and done["backup_verdict"] is None
    trace = _trace(live_worker, job["id"])
    assert trace["status"] == "complete" and trace["operations"] > 0
    processes = {lane["process"] for lane in trace["lanes"]}
    if capture == "strace":  # strace runs mariabackup itself; FUSE sees the datadir only, once the server runs
        assert "mariabackup" in processes and "mariadbd" in processes, processes


def test_a_kept_physical_sandbox_stays_up_and_its_server_is_on_the_timeline(
    live_worker: Stack, physical_backup: Path
) -> None:
    job = live_worker.restore("physical/shop", capture="ebpf", target={"kind": "sandbox", "keep": True})
    done = live_worker.wait_until_done(job["id"])
    sandbox_dir = Path(done["sandbox_dir"])
    try:
        assert done["status"] == "succeeded", done["error"]
        assert done["sandbox_kept"] and server_processes(str(sandbox_dir)), "the kept server is not running"
        # Its server runs in a session of its own (it outlives the job), yet eBPF recorded its threads, named.
        trace = _trace(live_worker, job["id"])
        server_tids = {lane["tid"] for lane in trace["lanes"] if lane["process"] == "mariadbd"}
        tids = ",".join(str(tid) for tid in sorted(server_tids))
        ibd = live_worker.http.get(
            f"/jobs/{job['id']}/trace/operations", params={"path": ".ibd", "tids": tids, "limit": 10}
        ).json()["items"]
        assert ibd, "no IO of the server on the tables' files"
        assert {lane["process"] for lane in trace["lanes"]} & {"mariabackup", "mariadb-backup"}
    finally:
        for pid in server_processes(str(sandbox_dir)):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(sandbox_dir, ignore_errors=True)
