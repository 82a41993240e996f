"""The advisor on real runs through the real stack: a restore through the mysql client on server defaults, and a
prepare with a small --use-memory, each advised from what its trace and the server measured, then re-run with the
top suggestion. Nothing here depends on how fast this machine is: the re-runs are checked for what they applied
and for a measured speedup, whatever its value."""

from pathlib import Path
from typing import Any

import pytest

from tests.stack import Stack

pytestmark = pytest.mark.integration


def _advice(stack: Stack, job_id: int) -> dict[str, Any]:
    response = stack.http.get(f"/jobs/{job_id}/advice")
    assert response.status_code == 200, response.text
    advice: dict[str, Any] = response.json()
    return advice


def _rerun(stack: Stack, job_id: int, rule: str) -> dict[str, Any]:
    response = stack.http.post(f"/jobs/{job_id}/advice/{rule}/rerun")
    assert response.status_code == 201, response.text
    child: dict[str, Any] = response.json()
    return child


def _lanes(stack: Stack, job_id: int) -> dict[int, dict[str, Any]]:
    return {lane["tid"]: lane for lane in stack.http.get(f"/jobs/{job_id}/trace").json()["lanes"]}


def test_a_single_stream_restore_on_server_defaults_is_told_to_load_in_parallel_and_rerun_with_it(
    live_worker: Stack, big_dump: Path
) -> None:
    job = live_worker.restore(
        "big/shop.sql", runner="mysql", target={"kind": "sandbox", "preset": "server-defaults"}, capture="auto"
    )
    done = live_worker.wait_until_done(job["id"], timeout_s=300)
    assert done["status"] == "succeeded", done["error"]
    assert done["run_facts"]["threads"] == 1 and done["run_facts"]["host"]["cpus"] >= 1

    advice = _advice(live_worker, job["id"])
    assert advice["state"] == "ready" and advice["phase"] == "restoring"
    assert advice["headline"].startswith("CPU: the 1 loading thread wanted")
    cpus = done["run_facts"]["host"]["cpus"]
    if cpus < 2:
        pytest.skip("one CPU: there is no core for a second loading thread")
    top = advice["suggestions"][0]
    assert top["rule"] == "parallel_load" and not top["minor"], advice["suggestions"]
    assert top["change"]["settings"] == [
        {"option": "runner", "value": "loader", "previous": "mysql"},
        {"option": "threads", "value": cpus, "previous": 1},
    ]
    # It points at the server thread that ran the mysql client's connection, over the restore.
    lanes = _lanes(live_worker, job["id"])
    assert top["where"]["lanes"] and all(tid in lanes for tid in top["where"]["lanes"])
    assert any("(mysql)" in lanes[tid]["role"] for tid in top["where"]["lanes"]), [
        lanes[t]["role"] for t in top["where"]["lanes"]
    ]
    (window,) = top["where"]["ranges"]
    assert (window["t0_us"], window["t1_us"]) == (advice["t0_us"], advice["t1_us"])
    # Server tuning was checked too, and the evidence says what it is worth here.
    assert all(s["rule"] != "doublewrite" or s["minor"] for s in advice["suggestions"])

    child = _rerun(live_worker, job["id"], "parallel_load")
    assert child["parent_id"] == job["id"]
    assert (child["parameters"]["runner"], child["parameters"]["threads"]) == ("loader", cpus)
    child_done = live_worker.wait_until_done(child["id"], timeout_s=300)
    assert child_done["status"] == "succeeded", child_done["error"]
    assert child_done["run_facts"]["runner"] == "loader" and child_done["run_facts"]["threads"] == cpus

    # The suggestion keeps the measured speedup of the re-run over its parent, good or bad.
    (rerun,) = _advice(live_worker, job["id"])["suggestions"][0]["reruns"]
    assert rerun["child_job_id"] == child["id"] and rerun["speedup"] > 0
    assert rerun["verdict"] in ("helped", "no_effect", "slower")
    assert rerun["speedup"] == pytest.approx(rerun["parent_seconds"] / rerun["child_seconds"], rel=1e-3)
    assert _advice(live_worker, child["id"])["applied_from"]["rule"] == "parallel_load"

    comparison = live_worker.http.get("/compare", params={"a": job["id"], "b": child["id"]}).json()
    assert comparison["a"]["has_trace"] and comparison["b"]["has_trace"]
    assert {"option": "runner", "a": "mysql", "b": "loader"} in comparison["settings"]
    assert {row["kind"] for row in comparison["kinds"]} >= {"write", "fsync"}
    assert comparison["applied"]["rule"] == "parallel_load"


def test_a_prepare_with_a_small_use_memory_is_told_to_use_more_and_rerun_with_it(
    live_worker: Stack, physical_backup: Path
) -> None:
    job = live_worker.restore("physical/shop", use_memory="8M")
    done = live_worker.wait_until_done(job["id"], timeout_s=300)
    assert done["status"] == "succeeded", done["error"]
    batches = done["run_facts"]["prepare"]["batches"]
    assert batches > 1 and done["run_facts"]["prepare"]["use_memory"] == "8M"

    advice = _advice(live_worker, job["id"])
    assert advice["state"] == "ready" and advice["phase"] == "preparing"
    top = advice["suggestions"][0]
    assert top["rule"] == "prepare_batches", advice["suggestions"]
    (setting,) = top["change"]["settings"]
    assert setting["option"] == "use_memory" and setting["previous"] == "8M"
    assert f"{batches} batches" in top["seen"]
    # The prepare's own threads are on the timeline, and the suggestion points at them.
    lanes = _lanes(live_worker, job["id"])
    assert {lanes[tid]["process"] for tid in top["where"]["lanes"]} <= {"mariabackup", "mariadb-backup"}
    # The prepare was sampled: the headline reads its threads' CPU.
    assert "the prepare's busiest thread (" in advice["headline"], advice["headline"]

    child = _rerun(live_worker, job["id"], "prepare_batches")
    assert child["parameters"]["use_memory"] == setting["value"] and child["parent_id"] == job["id"]
    child_done = live_worker.wait_until_done(child["id"], timeout_s=300)
    assert child_done["status"] == "succeeded", child_done["error"]
    assert child_done["run_facts"]["prepare"]["batches"] < batches
    (rerun,) = _advice(live_worker, job["id"])["suggestions"][0]["reruns"]
    assert rerun["speedup"] > 0 and rerun["phase"] == "preparing"
