"""protected databases (RTO, drill schedule, notification settings), their drills, and notifications sent

Revision ID: 7b0trend0001
Revises: 7a0auth00001
Create Date: 2026-11-24 06:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "7b0trend0001"
down_revision: str | None = "7a0auth00001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "protected_databases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("database", sa.String(length=64), nullable=False),
        sa.Column("source_target_id", sa.Integer(), nullable=True),
        sa.Column("backup_glob", sa.Text(), nullable=True),
        sa.Column("rto_s", sa.Integer(), nullable=False),
        sa.Column("drill_schedule", sa.String(length=128), nullable=True),
        sa.Column("drill_timezone", sa.String(length=64), nullable=False),
        sa.Column("drill_grace_s", sa.Integer(), nullable=False),
        sa.Column("drill_preset", sa.String(length=64), nullable=False),
        sa.Column("schedule_since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("webhook_url", sa.Text(), nullable=True),
        sa.Column("webhook_secret_encrypted", sa.LargeBinary(), nullable=True),
        sa.Column("email_to", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_target_id"],
            ["targets.id"],
            name=op.f("fk_protected_databases_source_target_id_targets"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_protected_databases")),
        sa.UniqueConstraint("name", name=op.f("uq_protected_databases_name")),
    )
    with op.batch_alter_table("protected_databases") as batch:
        batch.create_index(batch.f("ix_protected_databases_source_target_id"), ["source_target_id"], unique=False)

    op.create_table(
        "drills",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("protected_database_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=True),
        sa.Column("backup_id", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["backup_id"], ["backups.id"], name=op.f("fk_drills_backup_id_backups"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_drills_job_id_jobs"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(
            ["protected_database_id"],
            ["protected_databases.id"],
            name=op.f("fk_drills_protected_database_id_protected_databases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drills")),
        sa.UniqueConstraint("job_id", name=op.f("uq_drills_job_id")),
        sa.UniqueConstraint("protected_database_id", "scheduled_for", name=op.f("uq_drills_protected_database_id")),
    )
    with op.batch_alter_table("drills") as batch:
        batch.create_index(batch.f("ix_drills_protected_database_id"), ["protected_database_id"], unique=False)

    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("protected_database_id", sa.Integer(), nullable=True),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("event_key", sa.String(length=255), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("destination", sa.Text(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["protected_database_id"],
            ["protected_databases.id"],
            name=op.f("fk_notifications_protected_database_id_protected_databases"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
        sa.UniqueConstraint("event_key", "channel", name=op.f("uq_notifications_event_key")),
    )
    with op.batch_alter_table("notifications") as batch:
        batch.create_index(batch.f("ix_notifications_protected_database_id"), ["protected_database_id"], unique=False)
        batch.create_index("ix_notifications_status_next_attempt", ["status", "next_attempt_at"], unique=False)


def downgrade() -> None:
    op.drop_table("notifications")
    op.drop_table("drills")
    op.drop_table("protected_databases")
