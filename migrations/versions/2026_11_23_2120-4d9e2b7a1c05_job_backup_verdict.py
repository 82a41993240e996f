"""jobs.backup_verdict: whether a restore showed its backup restores or not

Revision ID: 4d9e2b7a1c05
Revises: 7c1e5a0f3b21
Create Date: 2026-11-23 21:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "4d9e2b7a1c05"
down_revision: str | None = "7c1e5a0f3b21"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("backup_verdict", sa.String(length=24), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("backup_verdict")
