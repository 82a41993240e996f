"""The real stack for integration tests: an API process (uvicorn), a Celery worker process, the private Redis
of the session, sandbox MariaDB servers, and dumps made by mysqldump from a real server."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_ROOT
from tests.stack import REPO, Stack


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    running = Stack(TEST_ROOT / "logs", {"RESTORESCOPE_SWEEP_INTERVAL_S": "2"})
    try:
        running.start_api()
        running.start_worker()
        yield running
    finally:
        running.stop()


@pytest.fixture
def live_worker(stack: Stack) -> Stack:
    """The stack with a worker running (a test before may have killed it)."""
    if stack.worker is None or stack.worker.poll() is not None:
        stack.start_worker()
    return stack


@pytest.fixture(scope="session")
def demo_dumps(backup_root: Path, work_root: Path) -> dict[str, Path]:
    from worker.demo import make_demo_dumps

    folder = backup_root / "demo"
    paths = make_demo_dumps(folder, work_root / "make-demo", rows=3000, log=lambda _line: None)
    return {path.name: path for path in paths}


@pytest.fixture(scope="session")
def big_dump(backup_root: Path, work_root: Path) -> Path:
    """A dump that takes several seconds to restore, so a test can act while it runs."""
    folder = backup_root / "big"
    subprocess.run(
        [sys.executable, "-m", "worker.demo", str(folder), "--rows", "1000", "--big"],
        check=True,
        env={**os.environ, "PYTHONPATH": f"{REPO / 'backend'}:{REPO}"},
        cwd=REPO,
        capture_output=True,
    )
    return folder / "shop.sql"


def sandbox_dirs(work_root: Path) -> list[Path]:
    return sorted(p for p in work_root.glob("job-*") if p.is_dir())


def server_processes(marker: str) -> list[int]:
    """Pids of mariadbd processes whose command line mentions marker (a sandbox's directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "mariadbd" in cmdline and marker in cmdline:
            found.append(int(proc.name))
    return found
