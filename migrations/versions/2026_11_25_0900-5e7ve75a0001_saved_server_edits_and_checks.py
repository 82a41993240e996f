"""targets: a default database, when a saved server was last edited, and its latest connection check

Revision ID: 5e7ve75a0001
Revises: 7b0trend0001
Create Date: 2026-11-25 09:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "5e7ve75a0001"
down_revision: str | None = "7b0trend0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("targets") as batch:
        batch.add_column(sa.Column("default_database", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("last_check", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("targets") as batch:
        batch.drop_column("last_check")
        batch.drop_column("updated_at")
        batch.drop_column("default_database")
