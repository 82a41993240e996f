"""One settings class, read from the environment, shared by the API, the worker and the tests."""

from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[3]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RESTORESCOPE_", env_file=".env", extra="ignore")

    # Where the app keeps its own state (job store, secret key, sandboxes) unless told otherwise.
    data_dir: Path = REPO_ROOT / "var"
    # DATABASE_URL is the conventional name, so it is read without the prefix.
    database_url: str = Field(default="", validation_alias="DATABASE_URL")
    redis_url: str = Field(default="redis://127.0.0.1:6379/0", validation_alias="REDIS_URL")
    # Backups are only ever read from inside these directories (symlinks resolved).
    # Colon-separated in the environment, like PATH.
    backup_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    # Sandbox servers get their datadir, socket and logs under here.
    work_root: Path | None = None
    secret_key_file: Path | None = None

    # A running job writes a heartbeat this often; a sweep fails jobs whose heartbeat is older than the timeout.
    heartbeat_interval_s: float = 2.0
    heartbeat_timeout_s: float = 30.0
    sweep_interval_s: float = 5.0
    # Redis redelivers a message not acknowledged within this time. Tasks are acknowledged on receipt, so it
    # only applies to messages reserved but not started (ETA retries of a job waiting for its target).
    broker_visibility_timeout_s: float = 12 * 3600
    # How often the worker publishes progress to the job store while a job runs.
    progress_interval_s: float = 1.0

    # Uploaded trace logs (POST /traces/import) larger than this are refused with 413.
    trace_upload_max_bytes: int = 512 * 2**20

    # A login session ends after this long without a request, and at the latest this long after the login.
    session_idle_timeout_s: float = 12 * 3600
    session_max_age_s: float = 7 * 24 * 3600
    # Set behind HTTPS, so the browser sends the session cookie over TLS only.
    cookie_secure: bool = False
    # When set, /metrics answers only a scrape with "Authorization: Bearer <token>" (Prometheus: authorization:
    # credentials_file); unset, it is open like the health check (counts only: no names, paths or secrets).
    metrics_token: SecretStr = SecretStr("")
    # The first admin that `make run` creates when the job store has no user yet.
    admin_user: str = "admin"
    admin_password: SecretStr = SecretStr("")

    # Celery beat sends the scheduler's tick this often: it starts due drills, looks for overdue drills, failed
    # jobs and RTO breaches, and delivers notifications.
    drill_tick_s: float = 15.0

    # Notifications: each webhook POST or SMTP exchange gives up after notify_timeout_s; a failed delivery is
    # tried again after notify_retry_base_s, doubling each time, notify_max_attempts times in all.
    notify_timeout_s: float = 10.0
    notify_max_attempts: int = 5
    notify_retry_base_s: float = 30.0
    # E-mail goes out only when smtp_host is set.
    smtp_host: str = ""
    smtp_port: int = 25
    smtp_from: str = "restorescope@localhost"
    smtp_user: str = ""
    smtp_password: SecretStr = SecretStr("")
    smtp_starttls: bool = False
    # The address people open the app at, for links in notifications ("https://restorescope.example.com").
    public_url: str = ""

    # Binaries; empty means "find on PATH or in /usr/sbin".
    mariadbd_path: str = ""
    mysql_client_path: str = ""

    @field_validator("backup_roots", mode="before")
    @classmethod
    def _split_roots(cls, value: object) -> object:
        if isinstance(value, str):
            return [p for p in value.split(":") if p]
        return value

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'restorescope.db'}"

    @property
    def resolved_backup_roots(self) -> list[Path]:
        return self.backup_roots or [self.data_dir / "backups"]

    @property
    def resolved_work_root(self) -> Path:
        return self.work_root or self.data_dir / "work"

    @property
    def resolved_secret_key_file(self) -> Path:
        return self.secret_key_file or self.data_dir / "secret.key"


@lru_cache
def get_settings() -> Settings:
    return Settings()
