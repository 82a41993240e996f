from fastapi import APIRouter, status

from app.api.deps import AdminUser, SessionDep
from app.users import service
from app.users.schemas import PasswordReset, UserCreate, UserPublic, UsersPublic, UserUpdate, UserWithPassword

router = APIRouter(prefix="/users", tags=["users"])


@router.get("", operation_id="users-read_users")
def read_users(session: SessionDep, _admin: AdminUser) -> UsersPublic:
    """Every user with their role (admin only)."""
    return UsersPublic(data=[UserPublic.model_validate(u) for u in service.list_users(session)])


@router.post("", status_code=status.HTTP_201_CREATED, operation_id="users-create_user")
def create_user(session: SessionDep, admin: AdminUser, data: UserCreate) -> UserWithPassword:
    """Create a user with a role; without a password, a one-time password is made and shown once."""
    user, shown = service.create_user(session, data, admin)
    return UserWithPassword(user=UserPublic.model_validate(user), one_time_password=shown)


@router.patch("/{user_id}", operation_id="users-update_user")
def update_user(session: SessionDep, admin: AdminUser, user_id: int, data: UserUpdate) -> UserPublic:
    """Change a user's role, or disable (their sessions end) or enable them; the last enabled admin stays one."""
    return UserPublic.model_validate(service.update_user(session, user_id, data, admin))


@router.post("/{user_id}/password", operation_id="users-reset_password")
def reset_password(session: SessionDep, admin: AdminUser, user_id: int, data: PasswordReset) -> UserWithPassword:
    """Give a user a new password (a one-time password unless told otherwise); their sessions end."""
    user, shown = service.reset_password(session, user_id, data, admin)
    return UserWithPassword(user=UserPublic.model_validate(user), one_time_password=shown)


@router.delete("/{user_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="users-delete_user")
def delete_user(session: SessionDep, admin: AdminUser, user_id: int) -> None:
    """Delete a user (not yourself, nor the last enabled admin); jobs and the audit log keep their name."""
    service.delete_user(session, user_id, admin)
