from sqlalchemy import select
from sqlalchemy.orm import Session

from app.core.errors import Conflict, NotFound
from app.core.security import encrypt_secret
from app.models import Target
from app.targets.connection import Credentials, TargetUnreachable, connect
from app.targets.schemas import TargetCheck, TargetCreate


def create_target(session: Session, data: TargetCreate) -> Target:
    if session.scalar(select(Target).where(Target.name == data.name)) is not None:
        raise Conflict(f"a target named '{data.name}' already exists; choose another name", field="name")
    target = Target(**data.model_dump(exclude={"password"}))
    if data.password is not None:
        target.password_encrypted = encrypt_secret(data.password)
    session.add(target)
    session.flush()
    return target


def list_targets(session: Session) -> list[Target]:
    return list(session.scalars(select(Target).order_by(Target.name)))


def get_target(session: Session, target_id: int) -> Target:
    target = session.get(Target, target_id)
    if target is None:
        raise NotFound(f"no saved target with id {target_id}", field="target_id")
    return target


def delete_target(session: Session, target_id: int) -> None:
    session.delete(get_target(session, target_id))


def check_target(target: Target) -> TargetCheck:
    try:
        connection = connect(Credentials.of(target))
    except TargetUnreachable as error:
        return TargetCheck(ok=False, message=str(error))
    with connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    version = str(row[0]) if row else "unknown version"
    return TargetCheck(ok=True, server_version=version, message=f"connected to {version}")
