"""traces: one summary row per job's IO trace

Revision ID: 7c1e5a0f3b21
Revises: 2bbb326b9465
Create Date: 2026-11-22 06:33:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7c1e5a0f3b21"
down_revision: str | None = "2bbb326b9465"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "traces",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("backend", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("aio_mode", sa.String(length=32), nullable=True),
        sa.Column("visibility", sa.Text(), nullable=True),
        sa.Column("fallback_reason", sa.Text(), nullable=True),
        sa.Column("operations", sa.BigInteger(), nullable=False),
        sa.Column("lanes", sa.Integer(), nullable=False),
        sa.Column("malformed_lines", sa.BigInteger(), nullable=False),
        sa.Column("malformed", sa.JSON(), nullable=False),
        sa.Column("t_min_us", sa.BigInteger(), nullable=True),
        sa.Column("t_max_us", sa.BigInteger(), nullable=True),
        sa.Column("bytes_read", sa.BigInteger(), nullable=False),
        sa.Column("bytes_written", sa.BigInteger(), nullable=False),
        sa.Column("kinds", sa.JSON(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_traces_job_id_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_traces")),
        sa.UniqueConstraint("job_id", name=op.f("uq_traces_job_id")),
    )


def downgrade() -> None:
    op.drop_table("traces")
