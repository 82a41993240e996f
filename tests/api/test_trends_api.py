"""GET /trends and its CSV export over job rows in the store (the real restores are in
tests/integration/test_drills.py)."""

import csv
import io
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from app.models import Backup
from tests.api.conftest import add_restore

MB = 1_000_000


def test_trends_and_csv_come_from_the_job_rows(client: TestClient, shop_backup: Backup, now: datetime) -> None:
    protected = client.post(
        "/api/v1/protected-databases",
        json={"name": "shop", "database": "shop", "rto_s": 60, "backup_glob": "trends/*"},
    ).json()
    restores = [
        add_restore(shop_backup, days_ago=20, restore_s=10),
        add_restore(shop_backup, days_ago=15, restore_s=10),
        add_restore(shop_backup, days_ago=10, restore_s=12),
        add_restore(shop_backup, days_ago=5, restore_s=30),  # 3x slower for the same backup: a regression
        add_restore(shop_backup, days_ago=2, restore_s=1, status="failed"),
        add_restore(shop_backup, days_ago=40, restore_s=10),  # outside the 30-day window
    ]
    trends = client.get("/api/v1/trends", params={"days": 30}).json()
    assert "at least 1.5x as long as the median" in trends["regression_rule"]
    [shop] = trends["databases"]
    assert shop["name"] == "shop" and shop["rto_s"] == 60 and shop["timezone"] == "UTC"
    assert [r["job_id"] for r in shop["runs"]] == restores[:5]
    size = shop_backup.size_bytes
    by_job = {r["job_id"]: r for r in shop["runs"]}
    first = by_job[restores[0]]
    assert first["duration_s"] == pytest.approx(18) and first["restore_s"] == pytest.approx(10)
    assert first["mb_per_s"] == pytest.approx(size / 10 / MB) and first["method"] == "loader · mysqldump"
    assert [by_job[j]["regression"] for j in restores[:5]] == [False, False, False, True, False]
    assert by_job[restores[3]]["baseline_mb_per_s"] == pytest.approx(size / 10 / MB)
    assert shop["regressions"] == 1

    # The strip: 30 days ending today, coloured by the worst run of each day.
    days = shop["days"]
    assert len(days) == 30 and days[-1]["date"] == now.date().isoformat()
    states = {d["date"]: d["state"] for d in days if d["state"] != "none"}
    on = {ago: (now - timedelta(days=ago)).date().isoformat() for ago in (20, 15, 10, 5, 2)}
    assert states == {on[20]: "ok", on[15]: "ok", on[10]: "ok", on[5]: "slow", on[2]: "failed"}

    # The estimate: the backup's size over the median throughput of the five latest successful runs (the one
    # outside the window counts: estimates look back further than the charts), plus the median fixed 8 s.
    estimate = shop["status"]["estimate"]
    rates = sorted(size / s for s in (10, 10, 12, 30, 10))
    assert estimate["mb_per_s"] == pytest.approx(rates[2] / MB)
    assert estimate["seconds"] == pytest.approx(size / rates[2] + 8)
    assert estimate["overhead_s"] == pytest.approx(8) and estimate["method"] == "loader · mysqldump"
    assert shop["status"]["rto_state"] == "within"
    assert shop["status"]["latest_backup"]["id"] == shop_backup.id

    # A tighter RTO is breached.
    client.patch(f"/api/v1/protected-databases/{protected['id']}", json={"rto_s": 10})
    assert client.get("/api/v1/trends").json()["databases"][0]["status"]["rto_state"] == "over"

    exported = client.get("/api/v1/trends/runs.csv", params={"days": 30})
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert 'attachment; filename="restorescope-runs-' in exported.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [int(r["job_id"]) for r in rows] == restores[:5]
    assert rows[3]["regression"] == "yes" and rows[3]["duration_s"] == "38.000"
    assert float(rows[0]["mb_per_s"]) == pytest.approx(size / 10 / MB, abs=0.001)
    assert rows[4]["status"] == "failed" and rows[4]["error"] == "the sandbox ran out of disk"
    assert rows[4]["mb_per_s"] == "" and rows[0]["protected_database"] == "shop"


def test_cancelled_and_unrelated_restores_are_left_out(client: TestClient, shop_backup: Backup) -> None:
    client.post("/api/v1/protected-databases", json={"name": "crm", "database": "crm", "rto_s": 60})
    add_restore(shop_backup, days_ago=1, restore_s=10)
    add_restore(shop_backup, days_ago=1, restore_s=10, status="cancelled")
    [crm] = client.get("/api/v1/trends").json()["databases"]
    # shop.sql holds shop, not crm.
    assert crm["runs"] == [] and crm["status"]["backups"] == 0 and crm["status"]["rto_state"] == "unknown"
    assert {d["state"] for d in crm["days"]} == {"none"}


@pytest.mark.parametrize("days", [0, 366, -1])
def test_the_window_is_bounded(client: TestClient, days: int) -> None:
    assert client.get("/api/v1/trends", params={"days": days}).status_code == 422
    assert client.get("/api/v1/trends/runs.csv", params={"days": days}).status_code == 422
