from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from app.users.schemas import NewPassword, UserPublic


class LoginRequest(BaseModel):
    username: Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1, max_length=64)]
    password: str = Field(min_length=1, max_length=1024)


class LoginPublic(BaseModel):
    token: str = Field(
        description="The session token, also set as an HttpOnly cookie; API clients send it as "
        "'Authorization: Bearer <token>'"
    )
    expires_at: datetime = Field(
        description="When the session ends if it is used until then (it also ends after a while without use)"
    )
    user: UserPublic


class PasswordChange(BaseModel):
    current_password: str = Field(min_length=1, max_length=1024)
    new_password: NewPassword
