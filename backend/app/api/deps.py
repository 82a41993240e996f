"""Request dependencies as Annotated aliases, so route signatures read like prose."""

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends
from sqlalchemy.orm import Session

from app.core.config import Settings, get_settings
from app.core.db import session_scope


def get_session() -> Iterator[Session]:
    """One unit of work per request: commit on success, roll back on error."""
    with session_scope() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
