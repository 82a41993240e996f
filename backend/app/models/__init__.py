"""Every table of the job store; importing this package registers them all on Base.metadata."""

from app.models.applied_suggestion import AppliedSuggestion
from app.models.audit_event import AuditAction, AuditEvent
from app.models.backup import Backup
from app.models.base import Base
from app.models.drill import Drill
from app.models.job import ACTIVE_STATUSES, BackupVerdict, Job, JobKind, JobPhase, JobStatus
from app.models.job_log import JobLog
from app.models.notification import DeliveryStatus, Notification
from app.models.protected_database import ProtectedDatabase
from app.models.server_snapshot import ServerSnapshot
from app.models.target import Target
from app.models.trace import Trace, TraceSource, TraceStatus
from app.models.user import Role, User
from app.models.user_session import UserSession
from app.models.verification import VerificationResult

__all__ = [
    "ACTIVE_STATUSES",
    "AppliedSuggestion",
    "AuditAction",
    "AuditEvent",
    "Backup",
    "BackupVerdict",
    "Base",
    "DeliveryStatus",
    "Drill",
    "Job",
    "JobKind",
    "JobLog",
    "JobPhase",
    "JobStatus",
    "Notification",
    "ProtectedDatabase",
    "Role",
    "ServerSnapshot",
    "Target",
    "Trace",
    "TraceSource",
    "TraceStatus",
    "User",
    "UserSession",
    "VerificationResult",
]
