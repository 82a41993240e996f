from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator

from app.jobs.schemas import DATABASE_NAME

MAX_RTO_S = 30 * 24 * 3600
EMAIL = r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$"

RtoState = Literal["within", "over", "unknown"]
DrillStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]


def _check_webhook_url(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("should be an http:// or https:// address, such as https://hooks.example.com/restorescope")
    return value


class ProtectedDatabaseFields(BaseModel):
    """What a protected database is, with every field optional: the shape of an update."""

    name: str | None = Field(default=None, min_length=1, max_length=128)
    database: str | None = Field(default=None, pattern=DATABASE_NAME, description="The database, as backups name it")
    source_target_id: int | None = Field(
        default=None,
        description="A saved server the database lives on: only backups its backup jobs wrote count",
    )
    backup_glob: str | None = Field(
        default=None,
        max_length=1000,
        description=(
            "Only backups whose path relative to their backup root matches this shell pattern count "
            "(e.g. nightly/shop-*; * also matches /). Needed for backups that do not name their databases "
            "(mysqldump --tab directories)"
        ),
    )
    rto_s: int | None = Field(
        default=None, ge=1, le=MAX_RTO_S, description="Target restore time in seconds: the restore must take less"
    )
    drill_schedule: str | None = Field(
        default=None,
        max_length=128,
        description="When drills run: a five-field cron expression (minute hour day month weekday), e.g. 0 2 * * *; "
        "empty for no scheduled drills",
    )
    drill_timezone: str | None = Field(default=None, max_length=64, description="IANA time zone of the schedule")
    drill_grace_s: int | None = Field(
        default=None,
        ge=60,
        le=7 * 24 * 3600,
        description="A scheduled drill not started this many seconds after its time is overdue",
    )
    drill_preset: str | None = Field(default=None, description="Sandbox preset drills restore into")
    webhook_url: str | None = Field(default=None, max_length=2000, description="JSON POSTed here on every event")
    webhook_secret: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="Signs each webhook body (X-Restorescope-Signature: sha256=HMAC); stored encrypted, never "
        "returned. null removes it",
    )
    email_to: list[Annotated[str, Field(pattern=EMAIL, max_length=254)]] | None = Field(
        default=None, max_length=20, description="Addresses e-mailed on every event, when SMTP is configured"
    )

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        return _check_webhook_url(value)

    @field_validator("drill_schedule", "backup_glob")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None


class ProtectedDatabaseUpdate(ProtectedDatabaseFields):
    """Only the fields sent change; webhook_secret: null removes the secret."""


class ProtectedDatabaseCreate(ProtectedDatabaseFields):
    name: str = Field(min_length=1, max_length=128)
    database: str = Field(pattern=DATABASE_NAME, description="The database, as backups name it")
    rto_s: int = Field(ge=1, le=MAX_RTO_S, description="Target restore time in seconds: the restore must take less")
    drill_timezone: str = Field(default="UTC", max_length=64, description="IANA time zone of the schedule")
    drill_grace_s: int = Field(
        default=3600,
        ge=60,
        le=7 * 24 * 3600,
        description="A scheduled drill not started this many seconds after its time is overdue",
    )
    drill_preset: str = Field(default="server-defaults", description="Sandbox preset drills restore into")


class BackupRef(BaseModel):
    id: int
    path: str
    format: str
    compression: str | None
    size_bytes: int
    modified_at: datetime
    missing: bool


class EstimatePublic(BaseModel):
    seconds: float = Field(description="Estimated restore time of the latest backup")
    mb_per_s: float = Field(description="Median throughput of the runs used, MB (10^6) of backup per second")
    overhead_s: float = Field(description="Their median time outside the data phases (server start, verification)")
    method: str = Field(description="How the latest backup would be restored")
    measured_method: str = Field(description="The method of the runs used: another format when none of its own")
    job_ids: list[int]


class DrillPublic(BaseModel):
    id: int
    protected_database_id: int
    protected_database_name: str
    trigger: Literal["schedule", "manual"]
    scheduled_for: datetime | None
    created_at: datetime
    job_id: int | None
    status: DrillStatus
    error: str | None
    backup_path: str | None
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    backup_verdict: Literal["restores", "does_not_restore"] | None


class DrillsPublic(BaseModel):
    data: list[DrillPublic]
    count: int


class ProtectionStatus(BaseModel):
    backups: int = Field(description="Backups of this database found under the roots")
    latest_backup: BackupRef | None
    estimate: EstimatePublic | None
    rto_state: RtoState = Field(description="over: the estimate exceeds the RTO; unknown: no measured run yet")
    schedule_text: str | None = Field(description="The drill schedule in words")
    next_drill_at: datetime | None
    overdue_since: datetime | None = Field(description="The scheduled time of a drill that has not started in time")
    last_drill: DrillPublic | None
    active_drill_job_id: int | None


class ProtectedDatabasePublic(BaseModel):
    id: int
    name: str
    database: str
    source_target_id: int | None
    backup_glob: str | None
    rto_s: int
    drill_schedule: str | None
    drill_timezone: str
    drill_grace_s: int
    drill_preset: str
    webhook: str | None = Field(
        description="The webhook's scheme, host and port; its path is hidden (chat services put a token there)"
    )
    has_webhook_secret: bool
    email_to: list[str]
    created_at: datetime
    updated_at: datetime
    status: ProtectionStatus


class ProtectedDatabasesPublic(BaseModel):
    data: list[ProtectedDatabasePublic]
    smtp_configured: bool = Field(description="Whether this server can send e-mail (RESTORESCOPE_SMTP_HOST is set)")
