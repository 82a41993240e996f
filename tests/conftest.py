"""Test environment: a private data dir, a private Redis, and a fresh job store (SQLite, or PostgreSQL when
RESTORESCOPE_TEST_DATABASE=postgresql) built by `alembic upgrade head`.

The environment is set before the app is imported, because the settings are read once per process.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_ROOT = Path(tempfile.mkdtemp(prefix="restorescope-test-"))
PG_SOCKET_DIR = "/var/run/postgresql"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


REDIS_PORT = free_port()
PG_DATABASE = f"restorescope_test_{uuid.uuid4().hex[:8]}"
USE_POSTGRES = os.environ.get("RESTORESCOPE_TEST_DATABASE") == "postgresql"

os.environ.update(
    {
        "RESTORESCOPE_DATA_DIR": str(TEST_ROOT / "data"),
        "RESTORESCOPE_BACKUP_ROOTS": str(TEST_ROOT / "backups"),
        "RESTORESCOPE_WORK_ROOT": str(TEST_ROOT / "work"),
        "REDIS_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
        "RESTORESCOPE_HEARTBEAT_INTERVAL_S": "1",
        "RESTORESCOPE_HEARTBEAT_TIMEOUT_S": "10",
        # The in-process API of the API tests runs no sweep; the real API process of the integration tests does.
        "RESTORESCOPE_SWEEP_INTERVAL_S": "0",
        "RESTORESCOPE_PROGRESS_INTERVAL_S": "0.5",
        "DATABASE_URL": (
            f"postgresql+psycopg:///{PG_DATABASE}?host={PG_SOCKET_DIR}"
            if USE_POSTGRES
            else f"sqlite:///{TEST_ROOT / 'data' / 'restorescope.db'}"
        ),
    }
)
(TEST_ROOT / "backups").mkdir(parents=True)


def _admin_postgres(sql: str) -> None:
    subprocess.run(["psql", "-h", PG_SOCKET_DIR, "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True)


@pytest.fixture(scope="session", autouse=True)
def job_store() -> Iterator[None]:
    if USE_POSTGRES:
        _admin_postgres(f"CREATE DATABASE {PG_DATABASE}")
    subprocess.run([str(REPO / ".venv/bin/alembic"), "upgrade", "head"], cwd=REPO, check=True, env=os.environ.copy())
    yield
    from app.core.db import get_engine

    get_engine().dispose()
    if USE_POSTGRES:
        _admin_postgres(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")


@pytest.fixture(scope="session", autouse=True)
def redis_server() -> Iterator[str]:
    directory = TEST_ROOT / "redis"
    directory.mkdir(exist_ok=True)
    process = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(REDIS_PORT),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", REDIS_PORT)) == 0:
                break
        time.sleep(0.05)
    yield os.environ["REDIS_URL"]
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def backup_root() -> Path:
    return TEST_ROOT / "backups"


@pytest.fixture(scope="session")
def work_root() -> Path:
    return TEST_ROOT / "work"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # A failed run (or RESTORESCOPE_KEEP_TEST_DATA=1) keeps its logs, data and sandboxes; the path is printed.
    if exitstatus == 0 and not os.environ.get("RESTORESCOPE_KEEP_TEST_DATA"):
        shutil.rmtree(TEST_ROOT, ignore_errors=True)
    else:
        print(f"\nkept the test data for inspection: {TEST_ROOT}")
