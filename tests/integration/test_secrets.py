"""A saved server's password, while real jobs use it: never on any process's command line or in the environment of
the tools (they read it from a 0600 option file that is gone afterwards), never in a job's log, the API's or the
worker's log, an API answer, or the job store's file in clear."""

import contextlib
import re
import secrets
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.core.config import get_settings
from app.core.db import get_engine
from app.sandboxes.options import ServerOptions
from tests.conftest import TEST_ROOT
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

# Random per run, so nothing else on the machine can hold it by chance; quotes and a space, as real ones have.
PASSWORD = f"s3cret '{secrets.token_hex(8)}\" pw"
DEFAULTS_FILE = re.compile(rb"--defaults-file=([^\x00]+)")


@dataclass
class ProcessWatch:
    """What a scan of every /proc/<pid> saw while a job ran."""

    leaks: list[str] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    option_file_modes: dict[str, int] = field(default_factory=dict)
    scans: int = 0

    def scan(self) -> None:
        needle = PASSWORD.encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes()
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue  # gone meanwhile
            argv0 = Path(cmdline.split(b"\0", 1)[0].decode(errors="replace")).name
            if needle in cmdline:
                self.leaks.append(f"command line of {proc.name} ({argv0})")
            if needle in environ:
                self.leaks.append(f"environment of {proc.name} ({argv0})")
            for match in DEFAULTS_FILE.finditer(cmdline):
                self.tools.add(argv0)
                option_file = match.group(1).decode()
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                    self.option_file_modes[option_file] = stat.S_IMODE(Path(option_file).stat().st_mode)
        self.scans += 1


def watch_until_done(stack: Stack, job_id: int) -> tuple[dict[str, Any], ProcessWatch]:
    watch = ProcessWatch()
    done = threading.Event()

    def scan_forever() -> None:
        while not done.is_set():
            watch.scan()

    scanner = threading.Thread(target=scan_forever, daemon=True)
    scanner.start()
    try:
        job = stack.wait_until_done(job_id, timeout_s=300)
    finally:
        done.set()
        scanner.join(timeout=30)
    return job, watch


def _wait_for_exec(pid: int) -> None:
    """Until the child runs its own program: between fork and exec, /proc shows the parent's command line."""
    deadline = time.monotonic() + 30
    while b"time.sleep(30)" not in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, f"process {pid} did not exec within 30 s"
        time.sleep(0.01)


def test_the_watch_sees_a_password_on_a_command_line_or_in_an_environment(tmp_path: Path) -> None:
    """The watch itself can fail: a process given the password either way is reported."""
    option_file = tmp_path / "tool.cnf"
    option_file.write_text("[client]\n")
    option_file.chmod(0o644)
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    with (
        subprocess.Popen([*sleeper, PASSWORD]) as on_command_line,
        subprocess.Popen(sleeper, env={"MYSQL_PWD": PASSWORD}) as in_environment,
        subprocess.Popen([*sleeper, f"--defaults-file={option_file}"]) as tool,
    ):
        try:
            for process in (on_command_line, in_environment, tool):
                _wait_for_exec(process.pid)
            watch = ProcessWatch()
            watch.scan()
        finally:
            for process in (on_command_line, in_environment, tool):
                process.kill()
    python = Path(sys.executable).name
    assert sorted(watch.leaks) == [
        f"command line of {on_command_line.pid} ({python})",
        f"environment of {in_environment.pid} ({python})",
    ]
    assert python in watch.tools and watch.option_file_modes == {str(option_file): 0o644}


@pytest.fixture(scope="module")
def saved_server(work_root: Path) -> Iterator[Sandbox]:
    sandbox = Sandbox(
        work_root / "secrets", "target", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _line: None
    )
    with sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE USER 'restore'@'localhost' IDENTIFIED BY %s", (PASSWORD,))
            cursor.execute("GRANT ALL ON *.* TO 'restore'@'localhost'")
        yield sandbox


def test_no_password_in_any_process_log_answer_or_file_while_real_jobs_run(
    live_worker: Stack, big_dump: Path, saved_server: Sandbox
) -> None:
    saved = live_worker.http.post(
        "/targets",
        json={
            "name": "secret-target",
            "socket": str(saved_server.socket_path),
            "user": "restore",
            "password": PASSWORD,
        },
    )
    assert saved.status_code == 201, saved.text
    target_id = saved.json()["id"]
    answers = [saved.text, live_worker.http.get("/targets").text]

    # The mysql client restores for several seconds into the saved server: the scans see it running.
    restore = live_worker.restore("big/shop.sql", runner="mysql", target={"kind": "saved", "target_id": target_id})
    restored, restore_watch = watch_until_done(live_worker, restore["id"])
    assert restored["status"] == "succeeded", restored["error"]
    # Then mysqldump backs the restored database up from it.
    backup = live_worker.http.post(
        "/jobs/backup",
        json={
            "source": {"kind": "saved", "target_id": target_id},
            "databases": ["shop"],
            "destination": f"secrets/{secrets.token_hex(4)}",
        },
    )
    assert backup.status_code == 201, backup.text
    backed_up, backup_watch = watch_until_done(live_worker, backup.json()["id"])
    assert backed_up["status"] == "succeeded", backed_up["error"]

    # MariaDB's clients are named mariadb and mariadb-dump (mysql and mysqldump are links to them).
    for watch, tools in ((restore_watch, {"mysql", "mariadb"}), (backup_watch, {"mysqldump", "mariadb-dump"})):
        # The scans did see the tool at work, with its option file, so finding nothing means something.
        assert tools & watch.tools, f"{tools} never seen running ({watch.scans} scans): the test would prove nothing"
        assert watch.leaks == [], f"the saved password showed in: {sorted(set(watch.leaks))}"
        assert watch.option_file_modes and set(watch.option_file_modes.values()) == {0o600}
        assert not any(Path(name).exists() for name in watch.option_file_modes), "an option file was left behind"

    for job in (restored, backed_up):
        answers.append(live_worker.http.get(f"/jobs/{job['id']}").text)
        answers.append("\n".join(live_worker.log_messages(job["id"])))
    assert not any(PASSWORD in answer for answer in answers), "an API answer or a job log holds the password"
    for log in (TEST_ROOT / "logs").glob("*.log"):
        assert PASSWORD.encode() not in log.read_bytes(), f"{log.name} holds the password"
    if get_engine().dialect.name == "sqlite":
        database = Path(get_settings().resolved_database_url.split("///", 1)[1])
        for name in (database, database.with_name(database.name + "-wal")):
            if name.exists():
                assert PASSWORD.encode() not in name.read_bytes(), f"{name.name} holds the password in clear"
