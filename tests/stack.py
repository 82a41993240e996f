"""The app as separate processes, as a user runs it: an API (uvicorn), a Celery worker and, when asked, Celery
beat (the drill scheduler), driven over HTTP. Used by the integration tests and the benchmarks."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


TERMINAL = {"succeeded", "failed", "cancelled"}
# The admin that test and bench stacks log in as: their job stores are throwaway, so a fixed password does.
STACK_ADMIN = "stack-admin"
STACK_PASSWORD = "stack-admin-password"


class Stack:
    def __init__(self, logs: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api/v1"
        self.env = {**os.environ, "PYTHONPATH": f"{REPO / 'backend'}:{REPO}", **(env or {})}
        self.logs = logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self.api: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.beat: subprocess.Popen[bytes] | None = None
        self.http = httpx2.Client(base_url=self.url, timeout=60)

    def _spawn(
        self, args: list[str], log_name: str, extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with (self.logs / log_name).open("ab") as log:
            # Its own session, so a test can kill the whole worker (main process and pool children) at once.
            return subprocess.Popen(
                args,
                cwd=REPO,
                env={**self.env, **(extra_env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def start_api(self) -> None:
        self.api = self._spawn(
            [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)],
            "api.log",
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.http.get("/health").status_code == 200:
                    return
            except httpx2.TransportError:
                time.sleep(0.2)
        raise RuntimeError(f"API did not start; see {self.logs / 'api.log'}")

    def ensure_user(self, username: str, password: str, role: str = "admin") -> None:
        """A user in this stack's job store (left as it is if it exists), made by the command line tool."""
        subprocess.run(
            [sys.executable, "-m", "app.users.cli", "create-user", username, "--role", role, "--if-missing"],
            cwd=REPO,
            env=self.env,
            input=f"{password}\n".encode(),
            check=True,
            capture_output=True,
        )

    def log_in(self, username: str, password: str) -> str:
        """Every later request of self.http carries the session, as 'Authorization: Bearer'; returns the token."""
        response = self.http.post("/auth/login", json={"username": username, "password": password})
        assert response.status_code == 200, response.text
        token = str(response.json()["token"])
        self.http.headers["Authorization"] = f"Bearer {token}"
        return token

    def log_in_as_admin(self) -> str:
        """Logs self.http in as STACK_ADMIN, made first if this job store does not have it."""
        self.ensure_user(STACK_ADMIN, STACK_PASSWORD)
        return self.log_in(STACK_ADMIN, STACK_PASSWORD)

    def start_worker(self, extra_env: dict[str, str] | None = None) -> None:
        self.worker = self.spawn_worker(extra_env)
        self.wait_for_workers(1)

    def spawn_worker(self, extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            "2",
            "--without-gossip",
            "--without-mingle",
        ]
        return self._spawn(command, "worker.log", extra_env)

    def wait_for_workers(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(self.http.get("/health").json()["workers"]) >= count:
                return
            time.sleep(0.3)
        raise RuntimeError(f"{count} worker(s) did not start; see {self.logs / 'worker.log'}")

    def kill_worker(self) -> None:
        """kill -9 of the worker's main process and its pool children, as the OOM killer or a crash would."""
        assert self.worker is not None
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=10)
        self.worker = None

    def start_beat(self) -> None:
        """Celery beat, which sends the scheduler's tick (drills, notifications); waits until it says it is alive."""
        command = [sys.executable, "-m", "celery", "-A", "worker.celery_app", "beat", "--loglevel", "INFO"]
        self.beat = self._spawn(command, "beat.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.http.get("/health").json().get("schedulers"):
                return
            if self.beat.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"celery beat did not start; see {self.logs / 'beat.log'}")

    def stop_beat(self) -> None:
        self._terminate(self.beat)
        self.beat = None

    @staticmethod
    def _terminate(process: subprocess.Popen[bytes] | None) -> None:
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def stop(self) -> None:
        for process in (self.beat, self.worker, self.api):
            self._terminate(process)
        self.http.close()

    def restore(self, backup_path: str, **body: Any) -> dict[str, Any]:
        response = self.http.post("/jobs/restore", json={"backup_path": backup_path, **body})
        assert response.status_code == 201, response.text
        job: dict[str, Any] = response.json()
        return job

    def job(self, job_id: int) -> dict[str, Any]:
        job: dict[str, Any] = self.http.get(f"/jobs/{job_id}").json()
        return job

    def wait_for(self, job_id: int, until: Callable[[dict[str, Any]], bool], timeout_s: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if until(job):
                return job
            time.sleep(0.25)
        raise AssertionError(f"job {job_id} did not get there in {timeout_s} s: {self.job(job_id)}")

    def wait_until_done(self, job_id: int, timeout_s: float = 180) -> dict[str, Any]:
        return self.wait_for(job_id, lambda j: j["status"] in TERMINAL, timeout_s)

    def log_messages(self, job_id: int) -> list[str]:
        return [
            line["message"] for line in self.http.get(f"/jobs/{job_id}/logs", params={"limit": 5000}).json()["data"]
        ]
