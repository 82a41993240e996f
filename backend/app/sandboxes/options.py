"""Server settings a job may ask of its sandbox, named as the MariaDB variables DBAs know, and presets."""

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SIZE_PATTERN = r"^\d+[KMGkmg]?$"
_OPTION_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

AioMode = Literal["io_uring", "aio", "off"]


class ServerOptions(BaseModel):
    """None everywhere means: leave the server's compiled-in default."""

    model_config = ConfigDict(extra="forbid")

    innodb_buffer_pool_size: str | None = Field(default=None, pattern=SIZE_PATTERN, examples=["1G"])
    innodb_log_file_size: str | None = Field(default=None, pattern=SIZE_PATTERN, examples=["1G"])
    innodb_doublewrite: bool | None = None
    innodb_flush_log_at_trx_commit: Literal[0, 1, 2] | None = None
    innodb_autoinc_lock_mode: Literal[0, 1, 2] | None = None
    # io_uring is MariaDB 10.11's default; "aio" is libaio (io_submit); "off" is plain pread/pwrite.
    aio_mode: AioMode | None = None
    innodb_flush_method: Literal["fsync", "O_DSYNC", "O_DIRECT", "O_DIRECT_NO_FSYNC"] | None = None
    innodb_io_capacity: int | None = Field(default=None, ge=100, le=10_000_000)
    log_bin: bool | None = None
    performance_schema: bool | None = None
    # Any other server option, passed as --name=value after validation of the name.
    extra: dict[str, str] = Field(default_factory=dict)
    # None picks a free port; a fixed port that is taken fails the job with a clear message.
    port: int | None = Field(default=None, ge=1024, le=65535)

    @field_validator("extra")
    @classmethod
    def _check_extra_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, option_value in value.items():
            if not _OPTION_NAME.match(name):
                raise ValueError(f"'{name}' is not a server option name (lower case letters, digits, _ and -)")
            if "\n" in option_value or "\x00" in option_value:
                raise ValueError(f"the value of '{name}' contains a line break or NUL byte")
        return value


PRESETS: dict[str, tuple[str, ServerOptions]] = {
    "server-defaults": ("The server's compiled-in defaults, as a fresh install has them.", ServerOptions()),
    "fast-restore": (
        "Settings for bulk loading into a scratch server: no doublewrite, no redo fsync per commit, "
        "a big redo log and buffer pool, interleaved auto-increment locks, no binary log. "
        "Never use them on a server that must survive a crash.",
        ServerOptions(
            innodb_buffer_pool_size="2G",
            innodb_log_file_size="2G",
            innodb_doublewrite=False,
            innodb_flush_log_at_trx_commit=0,
            innodb_autoinc_lock_mode=2,
            log_bin=False,
        ),
    ),
}
