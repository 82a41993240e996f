"""advisor: jobs.run_facts, and applied_suggestions keeping the score of each suggestion re-run

Revision ID: 6ad0v1s00001
Revises: 5e7ve75a0001
Create Date: 2026-11-24 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "6ad0v1s00001"
down_revision: str | None = "5e7ve75a0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("run_facts", sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    op.create_table(
        "applied_suggestions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("parent_job_id", sa.Integer(), nullable=False),
        sa.Column("child_job_id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=64), nullable=False),
        sa.Column("suggestion", sa.JSON(), nullable=False),
        sa.Column("expected_speedup", sa.Float(), nullable=True),
        sa.Column("phase", sa.String(length=32), nullable=False),
        sa.Column("parent_seconds", sa.Float(), nullable=True),
        sa.Column("child_seconds", sa.Float(), nullable=True),
        sa.Column("speedup", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("measured_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["parent_job_id"],
            ["jobs.id"],
            name=op.f("fk_applied_suggestions_parent_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["child_job_id"], ["jobs.id"], name=op.f("fk_applied_suggestions_child_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_applied_suggestions")),
        sa.UniqueConstraint("child_job_id", name=op.f("uq_applied_suggestions_child_job_id")),
    )
    op.create_index(
        op.f("ix_applied_suggestions_parent_job_id"), "applied_suggestions", ["parent_job_id"], unique=False
    )
    op.create_index(op.f("ix_applied_suggestions_rule"), "applied_suggestions", ["rule"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_applied_suggestions_rule"), table_name="applied_suggestions")
    op.drop_index(op.f("ix_applied_suggestions_parent_job_id"), table_name="applied_suggestions")
    op.drop_table("applied_suggestions")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("run_facts")
