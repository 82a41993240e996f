from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from app.models import Role


def _fold(value: object) -> object:
    """Names are case-insensitive: "Ann" logs in as "ann"."""
    return value.strip().lower() if isinstance(value, str) else value


Username = Annotated[
    str,
    BeforeValidator(_fold),
    StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._@-]*$"),
    Field(
        description="1-64 characters: letters, digits and . _ @ -, starting with a letter or digit; case-insensitive"
    ),
]
NewPassword = Annotated[
    str,
    Field(min_length=10, max_length=256, description="At least 10 characters, not the user name"),
]


class UserPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    username: str
    role: Role
    disabled: bool
    must_change_password: bool = Field(description="A one-time password: nothing but changing it is allowed")
    created_at: datetime
    password_changed_at: datetime
    last_login_at: datetime | None


class UsersPublic(BaseModel):
    data: list[UserPublic]


class UserCreate(BaseModel):
    username: Username
    role: Role = Role.VIEWER
    password: NewPassword | None = Field(
        default=None, description="Empty: a random one-time password is made and returned once"
    )
    must_change_password: bool = Field(default=True, description="The user must choose their own at first login")


class UserUpdate(BaseModel):
    role: Role | None = None
    disabled: bool | None = Field(default=None, description="A disabled user cannot log in; their sessions end")


class PasswordReset(BaseModel):
    password: NewPassword | None = Field(
        default=None, description="Empty: a random one-time password is made and returned once"
    )
    must_change_password: bool = True


class UserWithPassword(BaseModel):
    """A user just created or given a new password; the one-time password is shown here and never again."""

    user: UserPublic
    one_time_password: str | None = Field(description="Set when the API made the password; give it to the user")
