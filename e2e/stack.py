"""The whole app for the browser tests, as a user runs it, in a throwaway directory.

Starts a private Redis on a free port, builds a SQLite job store with `alembic upgrade head`, makes the first
admin as `make run` does (with RESTORESCOPE_ADMIN_PASSWORD), makes the demo backups under a private backup root,
then runs the API (uvicorn, which serves frontend/dist), a Celery worker and Celery beat (the drill scheduler)
through tests/stack.py, and has the admin create an operator and a viewer through the API. Prints one JSON line {"url": ..., "users": {role:
{"username", "password"}}} when ready, then runs until
SIGTERM/SIGINT or until its standard input closes (so it never outlives the Playwright run that
started it), and removes everything it made.

    .venv/bin/python e2e/stack.py [--keep]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.stack import Stack, free_port  # noqa: E402

# The specs log in as these (throwaway passwords of a throwaway job store).
USERS = {
    role: {"username": f"e2e-{role}", "password": f"e2e-{role}-password"} for role in ("admin", "operator", "viewer")
}


def start_redis(directory: Path, port: int) -> subprocess.Popen[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("redis-server did not start")


def make_demo_backup(folder: Path, extra: list[str], env: dict[str, str]) -> None:
    """worker.demo into folder. Tried twice: on a loaded machine (benchmarks running beside the tests) we have
    seen mariadb-install-db fail once and pass when run again."""
    command = [sys.executable, "-m", "worker.demo", str(folder), *extra]
    for attempt in (1, 2):
        done = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode == 0:
            return
        print(f"stack: making the demo backup failed (attempt {attempt}):\n{done.stderr[-4000:]}", file=sys.stderr)
        shutil.rmtree(folder, ignore_errors=True)
    raise RuntimeError(f"could not make the demo backup in {folder}; see the errors above")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, job store)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="restorescope-e2e-"))
    redis_port = free_port()
    env = {
        "RESTORESCOPE_DATA_DIR": str(root / "data"),
        "RESTORESCOPE_BACKUP_ROOTS": str(root / "backups"),
        "RESTORESCOPE_WORK_ROOT": str(root / "work"),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "DATABASE_URL": f"sqlite:///{root / 'data' / 'restorescope.db'}",
        "RESTORESCOPE_HEARTBEAT_INTERVAL_S": "1",
        "RESTORESCOPE_PROGRESS_INTERVAL_S": "0.5",
        "RESTORESCOPE_SWEEP_INTERVAL_S": "2",
        # A drill scheduled for the next minute starts within two seconds of it.
        "RESTORESCOPE_DRILL_TICK_S": "2",
        # Small, so the browser test can show what a too-large upload looks like without sending 512 MiB.
        "RESTORESCOPE_TRACE_UPLOAD_MAX_BYTES": str(4 * 2**20),
    }
    full_env = {**os.environ, **env, "PYTHONPATH": f"{REPO / 'backend'}:{REPO}"}
    (root / "data").mkdir(parents=True)
    (root / "backups").mkdir()

    stopping = threading.Event()

    def stop(_signal: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    redis = start_redis(root / "redis", redis_port)
    stack = Stack(root / "logs", env)
    try:
        subprocess.run([str(REPO / ".venv/bin/alembic"), "upgrade", "head"], cwd=REPO, env=full_env, check=True)
        admin = USERS["admin"]
        first_admin_env = {
            **full_env,
            "RESTORESCOPE_ADMIN_USER": admin["username"],
            "RESTORESCOPE_ADMIN_PASSWORD": admin["password"],
        }
        subprocess.run([sys.executable, "-m", "app.users.cli", "first-admin"], cwd=REPO, env=first_admin_env, check=True)
        # The demo backups to restore (dumps and a mariabackup directory), and a bigger one (a 300k-row table) that restores for long enough to
        # be cancelled from the browser.
        for folder, extra in (("demo", ["--rows", "3000", "--physical"]), ("big", ["--rows", "1000", "--big"])):
            make_demo_backup(root / "backups" / folder, extra, full_env)
        stack.start_api()
        stack.log_in(admin["username"], admin["password"])
        for role in ("operator", "viewer"):
            made = stack.http.post("/users", json={**USERS[role], "role": role, "must_change_password": False})
            made.raise_for_status()
        stack.start_worker()
        stack.start_beat()
        ready = {"url": f"http://127.0.0.1:{stack.port}", "root": str(root), "users": USERS}
        print(json.dumps(ready), flush=True)

        # Stop when told to, or when the parent (Playwright) goes away and our stdin closes.
        def watch_stdin() -> None:
            sys.stdin.read()
            stopping.set()

        threading.Thread(target=watch_stdin, daemon=True).start()
        while not stopping.wait(0.5):
            pass
        return 0
    finally:
        stack.stop()
        os.killpg(redis.pid, signal.SIGTERM)
        redis.wait(timeout=10)
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
