from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, field_validator

from app.jobs.schemas import DATABASE_NAME
from app.targets.connection import ConnectProblem

# A unix socket's path must fit in sockaddr_un.sun_path (108 bytes with its NUL): a longer one cannot be connected to.
MAX_SOCKET_PATH = 107


def _blank_is_none(value: object) -> object:
    """A form's empty field means "none" for the optional fields."""
    return None if isinstance(value, str) and value.strip() == "" else value


def _check_socket(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.startswith("/"):
        raise ValueError("a socket is an absolute path on the worker's host, such as /run/mysqld/mysqld.sock")
    if len(value.encode()) > MAX_SOCKET_PATH:
        raise ValueError(f"a unix socket path longer than {MAX_SOCKET_PATH} bytes cannot be connected to")
    return value


def _check_host(value: str) -> str:
    if any(character.isspace() for character in value) or "/" in value:
        raise ValueError("a host is a name or an address without spaces or slashes (a socket path goes in socket)")
    return value


Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=128)]
Host = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
Port = Annotated[int, Field(ge=1, le=65535)]
Socket = Annotated[
    str | None,
    BeforeValidator(_blank_is_none),
    Field(description="Unix socket path on the worker's host; used instead of host and port"),
]
ServerUser = Annotated[str, StringConstraints(min_length=1, max_length=128)]
Password = Annotated[str, Field(max_length=1024)]
DefaultDatabase = Annotated[
    Annotated[str, StringConstraints(pattern=DATABASE_NAME)] | None,
    BeforeValidator(_blank_is_none),
    Field(description="The database a connection check opens (it must exist), and the backup form's suggestion"),
]
Notes = Annotated[Annotated[str, StringConstraints(max_length=4000)] | None, BeforeValidator(_blank_is_none)]


class TargetCreate(BaseModel):
    # A field name that is not ours (a typo such as "passwd") is refused rather than silently dropped.
    model_config = ConfigDict(extra="forbid")

    name: Name
    host: Host = "127.0.0.1"
    port: Port = 3306
    socket: Socket = None
    user: ServerUser
    password: Password | None = Field(default=None, description="Stored encrypted; never returned by the API")
    default_database: DefaultDatabase = None
    notes: Notes = None

    @field_validator("socket")
    @classmethod
    def _socket_is_a_socket(cls, value: str | None) -> str | None:
        return _check_socket(value)

    @field_validator("host")
    @classmethod
    def _host_is_a_host(cls, value: str) -> str:
        return _check_host(value)


class TargetUpdate(BaseModel):
    """Only the fields sent change. null clears socket, default_database, notes or the password; the other fields
    cannot be null. The password is write-only: a new one replaces the stored one, and leaving it out keeps it."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    host: Host | None = None
    port: Port | None = None
    socket: Socket = None
    user: ServerUser | None = None
    password: Password | None = Field(
        default=None, description="A new password (stored encrypted; never returned); null removes the stored one"
    )
    default_database: DefaultDatabase = None
    notes: Notes = None

    @field_validator("name", "host", "port", "user", mode="before")
    @classmethod
    def _required_fields_stay(cls, value: object) -> object:
        if value is None:
            raise ValueError("cannot be empty: leave the field out to keep it as it is")
        return value

    @field_validator("socket")
    @classmethod
    def _socket_is_a_socket(cls, value: str | None) -> str | None:
        return _check_socket(value)

    @field_validator("host")
    @classmethod
    def _host_is_a_host(cls, value: str | None) -> str | None:
        return None if value is None else _check_host(value)


ServerFlavour = Literal["mariadb", "mysql"]


class TargetCheck(BaseModel):
    """What a connection check found: the server's version and host, or why the login failed."""

    ok: bool
    checked_at: datetime
    message: str
    problem: ConnectProblem | None = Field(
        default=None,
        description=(
            "Why the check failed: wrong_password (or no such user), tls_required (the account or server accepts "
            "TLS only), unreachable, unknown_database (the default database), not_allowed (the account may not "
            "log in from here), other"
        ),
    )
    server_version: str | None = None
    server_flavour: ServerFlavour | None = None
    server_hostname: str | None = Field(default=None, description="The server's @@hostname")
    on_worker_host: bool | None = Field(
        default=None,
        description=(
            "Whether the server runs on a live worker's host, as mysqldump --tab and mariabackup need; "
            "null when no worker is running to compare with"
        ),
    )
    worker_host_note: str | None = Field(default=None, description="Why on_worker_host is what it is")


class TargetPublic(BaseModel):
    """A saved server as anyone may read it: its password never, only whether there is one. Plain types, so a row
    saved under older rules is still listed."""

    id: int
    name: str
    host: str
    port: int
    socket: str | None
    user: str
    default_database: str | None
    notes: str | None
    has_password: bool
    created_at: datetime
    updated_at: datetime | None
    last_check: TargetCheck | None = Field(description="The latest connection check; none since the last edit")
    job_count: int = Field(description="Jobs that restored into it or backed it up (finished or not)")
    active_job_ids: list[int] = Field(
        description="Queued and running jobs that use it (also as a checksum source): it cannot be deleted meanwhile"
    )


class TargetsPublic(BaseModel):
    data: list[TargetPublic]
