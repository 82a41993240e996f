"""Alembic reads the app's own metadata and the same DATABASE_URL as the API and worker."""

from typing import Any, Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import Connection

from app.core.db import get_engine
from app.models import Base
from app.models.types import UTCDateTime

target_metadata = Base.metadata


def render_item(type_: str, obj: Any, autogen_context: AutogenContext) -> "str | Literal[False]":
    # Migrations must not import app code that may change later: UTCDateTime is a plain aware DateTime in SQL.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def run_migrations(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place: batch mode rebuilds the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


connectable = context.config.attributes.get("connection")
if connectable is not None:
    run_migrations(connectable)
else:
    with get_engine().connect() as connection:
        run_migrations(connection)
