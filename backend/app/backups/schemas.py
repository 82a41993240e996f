from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


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


class BackupsPublic(BaseModel):
    data: list[BackupPublic]
    roots: list[str]
