"""The first admin as `make run` makes it (scripts/run.sh runs `python -m app.users.cli first-admin` after the
migrations): a printed one-time password, or RESTORESCOPE_ADMIN_PASSWORD; nothing on a second run. Each case on a
job store of its own, in processes of their own, as run.sh does."""

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from argon2 import PasswordHasher

from tests.conftest import REPO


def _run(data_dir: Path, *args: str, extra: dict[str, str] | None = None, stdin: str = "") -> str:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RESTORESCOPE_ADMIN_")}
    env = {
        **inherited,
        "PYTHONPATH": f"{REPO / 'backend'}:{REPO}",
        "RESTORESCOPE_DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite:///{data_dir / 'restorescope.db'}",
        **(extra or {}),
    }
    done = subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, env=env, input=stdin, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _users(data_dir: Path) -> list[tuple[str, str, int, str]]:
    with sqlite3.connect(data_dir / "restorescope.db") as connection:
        rows = connection.execute("SELECT username, role, must_change_password, password_hash FROM users").fetchall()
    return [(str(a), str(b), int(c), str(d)) for a, b, c, d in rows]


def test_a_one_time_password_is_printed_once_and_must_be_changed(tmp_path: Path) -> None:
    _run(tmp_path, "alembic", "upgrade", "head")
    printed = _run(tmp_path, "app.users.cli", "first-admin")
    found = re.search(r"created the first admin 'admin' with this one-time password.*\n\n    (\S+)\n", printed)
    assert found, printed
    one_time = found.group(1)
    [(name, role, must_change, password_hash)] = _users(tmp_path)
    assert (name, role, must_change) == ("admin", "admin", 1)
    assert PasswordHasher().verify(password_hash, one_time)

    again = _run(tmp_path, "app.users.cli", "first-admin")
    assert again == "users: the job store has users already; no first admin made\n"
    assert _users(tmp_path) == [(name, role, must_change, password_hash)]


def test_the_password_from_the_environment_needs_no_change(tmp_path: Path) -> None:
    _run(tmp_path, "alembic", "upgrade", "head")
    environment = {"RESTORESCOPE_ADMIN_PASSWORD": "from-the-environment", "RESTORESCOPE_ADMIN_USER": "Root.DBA"}
    printed = _run(tmp_path, "app.users.cli", "first-admin", extra=environment)
    assert printed == "users: created the first admin 'root.dba' with the password in RESTORESCOPE_ADMIN_PASSWORD\n"
    assert "from-the-environment" not in printed
    [(name, role, must_change, password_hash)] = _users(tmp_path)
    assert (name, role, must_change) == ("root.dba", "admin", 0)
    assert PasswordHasher().verify(password_hash, "from-the-environment")
    # A second start with another password changes nothing: the variable only seeds an empty job store.
    _run(tmp_path, "app.users.cli", "first-admin", extra={"RESTORESCOPE_ADMIN_PASSWORD": "something-else-now"})
    assert _users(tmp_path)[0][3] == password_hash


def test_a_locked_out_admin_gets_a_new_one_time_password(tmp_path: Path) -> None:
    _run(tmp_path, "alembic", "upgrade", "head")
    _run(tmp_path, "app.users.cli", "first-admin", extra={"RESTORESCOPE_ADMIN_PASSWORD": "forgotten-password"})
    printed = _run(tmp_path, "app.users.cli", "reset-password", "ADMIN")
    found = re.search(r"'admin' has a new one-time password \(their sessions ended\):\n\n    (\S+)\n", printed)
    assert found, printed
    [(_, _, must_change, password_hash)] = _users(tmp_path)
    assert must_change == 1 and PasswordHasher().verify(password_hash, found.group(1))


def test_create_user_reads_the_password_from_standard_input(tmp_path: Path) -> None:
    _run(tmp_path, "alembic", "upgrade", "head")
    printed = _run(tmp_path, "app.users.cli", "create-user", "ops", "--role", "operator", stdin="ops-password-1\n")
    assert printed == "users: created 'ops' as operator\n"
    again = _run(
        tmp_path, "app.users.cli", "create-user", "ops", "--role", "viewer", "--if-missing", stdin="other-password\n"
    )
    assert again == "users: 'ops' exists already; left as it is\n"
    [(name, role, must_change, password_hash)] = _users(tmp_path)
    assert (name, role, must_change) == ("ops", "operator", 0)
    assert PasswordHasher().verify(password_hash, "ops-password-1")


def test_a_too_short_password_from_the_environment_is_refused(tmp_path: Path) -> None:
    _run(tmp_path, "alembic", "upgrade", "head")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RESTORESCOPE_ADMIN_")},
        "PYTHONPATH": f"{REPO / 'backend'}:{REPO}",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'restorescope.db'}",
        "RESTORESCOPE_DATA_DIR": str(tmp_path),
        "RESTORESCOPE_ADMIN_PASSWORD": "short",
    }
    done = subprocess.run(
        [sys.executable, "-m", "app.users.cli", "first-admin"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "cannot create the first admin from RESTORESCOPE_ADMIN_USER/PASSWORD" in done.stderr
    assert "at least 10 characters" in done.stderr
    assert _users(tmp_path) == []
