from datetime import datetime

from pydantic import BaseModel, ConfigDict


class AuditEventPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    created_at: datetime
    username: str | None
    action: str
    object_type: str | None
    object_id: str | None
    detail: str | None
    client: str | None


class AuditEventsPublic(BaseModel):
    data: list[AuditEventPublic]
    count: int
    actions: list[str]
