"""Users as an admin manages them, and the first admin. Services flush; the caller's unit of work commits."""

from pydantic import TypeAdapter
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from app.audit.service import record
from app.auth.passwords import hash_password, one_time_password
from app.core.errors import Conflict, InvalidRequest, NotFound
from app.models import AuditAction, Role, User, UserSession
from app.models.base import utcnow
from app.users.schemas import NewPassword, PasswordReset, UserCreate, Username, UserUpdate


def check_new_password(username: str, password: str, field: str = "password") -> None:
    """What the schema cannot say: a password is not the user's own name."""
    if password.strip().lower() == username.lower():
        raise InvalidRequest("a password must not be the user name", field=field)


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.username)))


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    return user


def _new_password(username: str, given: str | None) -> tuple[str, str | None]:
    """The password to hash, and the one-time password to show when we made it."""
    if given is not None:
        check_new_password(username, given)
        return given, None
    made = one_time_password()
    return made, made


def create_user(
    session: Session, data: UserCreate, actor: User | None, actor_name: str | None = None
) -> tuple[User, str | None]:
    if session.scalar(select(User).where(User.username == data.username)) is not None:
        raise Conflict(f"a user named '{data.username}' already exists; choose another name", field="username")
    password, shown = _new_password(data.username, data.password)
    user = User(
        username=data.username,
        password_hash=hash_password(password),
        role=data.role,
        disabled=False,
        must_change_password=data.must_change_password or shown is not None,
        created_at=utcnow(),
        password_changed_at=utcnow(),
    )
    session.add(user)
    session.flush()
    record(
        session,
        AuditAction.USER_CREATE,
        actor,
        username=actor_name,
        object_type="user",
        object_id=user.id,
        detail=f"{user.username} as {user.role}",
    )
    return user, shown


def _active_admin_ids(session: Session) -> list[int]:
    # Rows locked (on PostgreSQL; SQLite serialises writers anyway): two admins demoting each other at the same
    # moment must not leave none.
    query = select(User.id).where(User.role == Role.ADMIN, User.disabled.is_(False)).with_for_update()
    return list(session.scalars(query))


def _keep_an_admin(session: Session, user: User, what: str) -> None:
    """Refuse a change that would leave no enabled admin: nobody could manage users any more."""
    others = [i for i in _active_admin_ids(session) if i != user.id]
    if not others:
        raise Conflict(
            f"{user.username} is the last enabled admin: {what} would leave nobody able to manage users; "
            "make another user admin first"
        )


def _end_sessions(session: Session, user_id: int) -> None:
    session.execute(delete(UserSession).where(UserSession.user_id == user_id))


def update_user(session: Session, user_id: int, data: UserUpdate, actor: User) -> User:
    user = get_user(session, user_id)
    changes = []
    is_active_admin = user.role == Role.ADMIN and not user.disabled
    if data.role is not None and data.role != user.role:
        if is_active_admin and data.role != Role.ADMIN:
            _keep_an_admin(session, user, f"making them {data.role}")
        changes.append(f"role {user.role} -> {data.role}")
        user.role = data.role
    if data.disabled is not None and data.disabled != user.disabled:
        if data.disabled and is_active_admin:
            _keep_an_admin(session, user, "disabling them")
        changes.append("disabled" if data.disabled else "enabled")
        user.disabled = data.disabled
        if data.disabled:
            _end_sessions(session, user.id)
    if changes:
        record(
            session,
            AuditAction.USER_UPDATE,
            actor,
            object_type="user",
            object_id=user.id,
            detail=f"{user.username}: {', '.join(changes)}",
        )
    session.flush()
    return user


def reset_password(
    session: Session, user_id: int, data: PasswordReset, actor: User | None, actor_name: str | None = None
) -> tuple[User, str | None]:
    """An admin's reset (or `actor_name`'s, without a user: the command line): the user's sessions end, and by
    default they must choose their own at the next login."""
    user = get_user(session, user_id)
    password, shown = _new_password(user.username, data.password)
    user.password_hash = hash_password(password)
    user.must_change_password = data.must_change_password or shown is not None
    user.password_changed_at = utcnow()
    _end_sessions(session, user.id)
    record(
        session,
        AuditAction.USER_PASSWORD_RESET,
        actor,
        username=actor_name,
        object_type="user",
        object_id=user.id,
        detail=user.username + (" (one-time password)" if user.must_change_password else ""),
    )
    session.flush()
    return user, shown


def delete_user(session: Session, user_id: int, actor: User) -> None:
    """Jobs keep the name of who started them, and the audit log the name of who acted."""
    user = get_user(session, user_id)
    if user.id == actor.id:
        raise Conflict("you cannot delete yourself: ask another admin, or disable the account instead")
    if user.role == Role.ADMIN and not user.disabled:
        _keep_an_admin(session, user, "deleting them")
    record(
        session,
        AuditAction.USER_DELETE,
        actor,
        object_type="user",
        object_id=user.id,
        detail=f"{user.username} ({user.role})",
    )
    session.delete(user)
    session.flush()


def ensure_first_admin(session: Session, username: str, password: str | None) -> tuple[User, str | None] | None:
    """The first admin when there is no user at all (None when there is one): with the given password, or a
    one-time password to change at the first login."""
    if session.scalar(select(func.count()).select_from(User)):
        return None
    # The same rules as the API's (pydantic.ValidationError when broken).
    username = TypeAdapter(Username).validate_python(username)
    if password:
        password = TypeAdapter(NewPassword).validate_python(password)
        check_new_password(username, password)
    shown = None if password else one_time_password()
    chosen = password or shown
    assert chosen is not None
    user = User(
        username=username,
        password_hash=hash_password(chosen),
        role=Role.ADMIN,
        disabled=False,
        must_change_password=shown is not None,
        created_at=utcnow(),
        password_changed_at=utcnow(),
    )
    session.add(user)
    session.flush()
    how = "with a one-time password" if shown else "with the password from RESTORESCOPE_ADMIN_PASSWORD"
    record(session, AuditAction.FIRST_ADMIN, user, object_type="user", object_id=user.id, detail=how)
    return user, shown
