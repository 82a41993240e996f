from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class LastRestorePublic(BaseModel):
    """The newest restore of a backup that showed whether it restores (see JobPublic.backup_verdict)."""

    job_id: int
    verdict: Literal["restores", "does_not_restore"]
    finished_at: datetime | None
    error: str | None


class BackupPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    path: str
    root: str
    format: str
    compression: str | None
    size_bytes: int
    modified_at: datetime
    details: dict[str, Any]
    restorable: bool
    missing: bool
    last_restore: LastRestorePublic | None = None


class BackupsPublic(BaseModel):
    data: list[BackupPublic]
    roots: list[str]
