"""Every table of the job store; importing this package registers them all on Base.metadata."""

from app.models.backup import Backup
from app.models.base import Base
from app.models.job import ACTIVE_STATUSES, Job, JobKind, JobPhase, JobStatus
from app.models.job_log import JobLog
from app.models.server_snapshot import ServerSnapshot
from app.models.target import Target
from app.models.trace import Trace, TraceSource, TraceStatus
from app.models.verification import VerificationResult

__all__ = [
    "ACTIVE_STATUSES",
    "Backup",
    "Base",
    "Job",
    "JobKind",
    "JobLog",
    "JobPhase",
    "JobStatus",
    "ServerSnapshot",
    "Target",
    "Trace",
    "TraceSource",
    "TraceStatus",
    "VerificationResult",
]
