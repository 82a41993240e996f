from sqlalchemy.orm import Session

from app.models import JobLog


def add_log(session: Session, job_id: int, message: str, level: str = "info", source: str = "restorescope") -> None:
    session.add(JobLog(job_id=job_id, message=message, level=level, source=source))
