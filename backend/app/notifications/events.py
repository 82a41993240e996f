"""What is worth telling someone, and how it reads: pure functions.

Events (each with a key that names it once and for all, so it is sent once):
- job_failed     a restore of one of the database's backups, a drill, or a backup job of its source server
                 failed (jobs that ended before the database was protected are not news)
- drill_failed   a drill could not restore anything (no backup, or the latest one vanished)
- drill_overdue  a scheduled drill had not started by its time plus the grace period
- rto_breach     the latest backup's estimated restore time exceeds the RTO
- test           sent by hand, to check the settings
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True)
class Event:
    kind: str
    key: str
    protected_database_id: int
    protected_database: str
    database: str
    summary: str
    occurred_at: datetime
    details: dict[str, Any] = field(default_factory=dict)
    link: str | None = None


def job_failed(
    protected_id: int,
    name: str,
    database: str,
    job_id: int,
    kind: str,
    error: str | None,
    at: datetime,
    link: str | None,
) -> Event:
    what = {"restore": "restore", "backup": "backup"}.get(kind, kind)
    return Event(
        kind="job_failed",
        key=f"job_failed:{protected_id}:{job_id}",
        protected_database_id=protected_id,
        protected_database=name,
        database=database,
        summary=f"{name}: {what} job #{job_id} failed: {_first_line(error) or 'no reason recorded'}",
        occurred_at=at,
        details={"job_id": job_id, "job_kind": kind, "error": error},
        link=link,
    )


def drill_failed(protected_id: int, name: str, database: str, drill_id: int, error: str, at: datetime) -> Event:
    return Event(
        kind="drill_failed",
        key=f"drill_failed:{protected_id}:{drill_id}",
        protected_database_id=protected_id,
        protected_database=name,
        database=database,
        summary=f"{name}: drill #{drill_id} could not restore anything: {_first_line(error)}",
        occurred_at=at,
        details={"drill_id": drill_id, "error": error},
    )


def drill_overdue(
    protected_id: int, name: str, database: str, slot: datetime, grace: timedelta, schedule: str, now: datetime
) -> Event:
    return Event(
        kind="drill_overdue",
        key=f"drill_overdue:{protected_id}:{slot.isoformat()}",
        protected_database_id=protected_id,
        protected_database=name,
        database=database,
        summary=(
            f"{name}: the drill due at {slot:%Y-%m-%d %H:%M} UTC has not started "
            f"{_duration(grace)} later (is the scheduler or every worker down, or busy?)"
        ),
        occurred_at=now,
        details={"scheduled_for": slot.isoformat(), "grace_s": grace.total_seconds(), "schedule": schedule},
    )


def rto_breach(
    protected_id: int,
    name: str,
    database: str,
    *,
    backup_id: int,
    backup_path: str,
    estimate_s: float,
    rto_s: int,
    method: str,
    now: datetime,
) -> Event:
    return Event(
        kind="rto_breach",
        key=f"rto_breach:{protected_id}:{backup_id}:{rto_s}",
        protected_database_id=protected_id,
        protected_database=name,
        database=database,
        summary=(
            f"{name}: restoring the latest backup would take about {_duration(timedelta(seconds=estimate_s))}, "
            f"over the RTO of {_duration(timedelta(seconds=rto_s))}"
        ),
        occurred_at=now,
        details={
            "backup_id": backup_id,
            "backup_path": backup_path,
            "estimate_s": round(estimate_s, 3),
            "rto_s": rto_s,
            "method": method,
        },
    )


def test_event(protected_id: int, name: str, database: str, token: str, now: datetime) -> Event:
    return Event(
        kind="test",
        key=f"test:{protected_id}:{token}",
        protected_database_id=protected_id,
        protected_database=name,
        database=database,
        summary=f"{name}: a test notification from restorescope; nothing is wrong",
        occurred_at=now,
    )


def payload(event: Event) -> dict[str, Any]:
    """The webhook's JSON body (the sender adds delivery id and time)."""
    return {
        "event": event.kind,
        "event_key": event.key,
        "summary": event.summary,
        "occurred_at": event.occurred_at.isoformat(),
        "protected_database": {
            "id": event.protected_database_id,
            "name": event.protected_database,
            "database": event.database,
        },
        "details": event.details,
        "link": event.link,
    }


def email_subject(body: dict[str, Any]) -> str:
    return f"[restorescope] {_first_line(str(body['summary']))[:180]}"


def email_text(body: dict[str, Any]) -> str:
    lines = [str(body["summary"]), ""]
    for name, value in sorted((body.get("details") or {}).items()):
        if value is not None:
            lines.append(f"{name}: {value}")
    if body.get("link"):
        lines += ["", f"Open: {body['link']}"]
    lines += ["", f"Event {body['event']} ({body['event_key']}) at {body['occurred_at']}."]
    return "\n".join(lines) + "\n"


def retry_delay(attempts: int, base_s: float) -> timedelta:
    """After the n-th failed attempt, wait base, 2x base, 4x base..."""
    return timedelta(seconds=base_s * 2 ** max(0, attempts - 1))


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _duration(value: timedelta) -> str:
    seconds = value.total_seconds()
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
