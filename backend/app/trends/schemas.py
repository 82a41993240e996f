from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.protected.schemas import ProtectionStatus


class RunPublic(BaseModel):
    job_id: int | None = Field(description="None for a drill that could not restore anything")
    drill: bool
    status: str
    backup_verdict: Literal["restores", "does_not_restore"] | None
    method: str = Field(description="runner · format (compression)")
    runner: str
    at: datetime = Field(description="When the run ended")
    started_at: datetime | None
    duration_s: float | None = Field(description="The whole job: server start, restore, verification")
    restore_s: float | None = Field(description="The phases that moved the backup's bytes")
    mb_per_s: float | None = Field(description="Backup MB (10^6) over restore_s")
    baseline_mb_per_s: float | None = Field(description="Median of the same method's previous runs")
    regression: bool = Field(description="Much slower than the baseline (see regression_rule)")
    error: str | None


class DayPublic(BaseModel):
    date: date
    state: Literal["ok", "slow", "failed", "none"]
    runs: int
    failed: int
    slow: int
    job_ids: list[int]


class DatabaseTrend(BaseModel):
    protected_database_id: int
    name: str
    database: str
    rto_s: int
    timezone: str = Field(description="The time zone of the status strip's days")
    status: ProtectionStatus
    days: list[DayPublic] = Field(description="The status strip: the last 30 days, oldest first, ending today")
    runs: list[RunPublic] = Field(description="Runs that ended in the window, oldest first")
    regressions: int


class TrendsPublic(BaseModel):
    generated_at: datetime
    days: int
    regression_rule: str
    databases: list[DatabaseTrend]
