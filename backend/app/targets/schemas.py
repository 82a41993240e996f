from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class TargetBase(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    host: str = Field(default="127.0.0.1", min_length=1, max_length=255)
    port: int = Field(default=3306, ge=1, le=65535)
    socket: str | None = Field(default=None, description="Unix socket path; used instead of host and port")
    user: str = Field(min_length=1, max_length=128)
    notes: str | None = None


class TargetCreate(TargetBase):
    password: str | None = Field(default=None, description="Stored encrypted; never returned by the API")


class TargetPublic(TargetBase):
    model_config = ConfigDict(from_attributes=True)

    id: int
    has_password: bool
    created_at: datetime


class TargetsPublic(BaseModel):
    data: list[TargetPublic]


class TargetCheck(BaseModel):
    ok: bool
    server_version: str | None = None
    message: str
