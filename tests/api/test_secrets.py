"""Secrets at rest and on their way to the tools: saved-server passwords encrypted with a random nonce and never
returned; users' passwords kept as argon2id hashes and session tokens as SHA-256; nothing of them in the job store's
file in clear. (While real jobs run: tests/integration/test_secrets.py.)"""

import secrets
import stat
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from app.core.config import get_settings
from app.core.db import get_engine, session_scope
from app.core.security import decrypt_secret, encrypt_secret
from app.models import Target
from app.targets.connection import Credentials, option_file
from tests.auth import TEST_PASSWORD


def _store_bytes() -> bytes:
    """Everything the job store holds on disk: the SQLite file and its write-ahead log, or PostgreSQL's rows."""
    if get_engine().dialect.name == "sqlite":
        database = Path(get_settings().resolved_database_url.split("///", 1)[1])
        files = [database, database.with_name(database.name + "-wal")]
        return b"".join(f.read_bytes() for f in files if f.exists())
    with session_scope() as session:
        tables = ("targets", "users", "user_sessions", "audit_events", "jobs", "job_logs")
        return repr([session.execute(text(f"SELECT * FROM {table}")).all() for table in tables]).encode()


def test_no_saved_password_user_password_or_session_token_in_the_store(
    client: TestClient, anonymous_client: TestClient
) -> None:
    password, replaced = f"saved-{secrets.token_hex(8)}", f"edited-{secrets.token_hex(8)}"
    response = client.post("/api/v1/targets", json={"name": "replica", "user": "restore", "password": password})
    assert response.status_code == 201
    # An edit that replaces it: neither the old nor the new one is kept in clear (nor in the audit event's detail).
    edited = client.patch(f"/api/v1/targets/{response.json()['id']}", json={"password": replaced})
    assert edited.status_code == 200 and replaced not in edited.text
    login = anonymous_client.post("/api/v1/auth/login", json={"username": "test-viewer", "password": TEST_PASSWORD})
    token = login.json()["token"]
    stored = _store_bytes()
    assert b"replica" in stored  # the scan reads what was just written
    assert password.encode() not in stored and replaced.encode() not in stored
    assert b"password replaced" in stored  # the audit event was written, and the scan sees it
    assert TEST_PASSWORD.encode() not in stored
    assert token.encode() not in stored
    assert b"$argon2id$" in stored


def test_each_value_gets_its_own_nonce_and_a_changed_byte_is_refused() -> None:
    first, second = encrypt_secret("same password"), encrypt_secret("same password")
    assert first != second and first[:12] != second[:12]
    assert decrypt_secret(first) == decrypt_secret(second) == "same password"
    tampered = first[:-1] + bytes([first[-1] ^ 1])
    with pytest.raises(InvalidTag):
        decrypt_secret(tampered)


def test_the_key_file_is_readable_by_its_owner_only(client: TestClient) -> None:
    client.post("/api/v1/targets", json={"name": "keyed", "user": "restore", "password": "x"})
    key_file = get_settings().resolved_secret_key_file
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key_file.read_bytes()) == 32
    with session_scope() as session:
        blob = session.scalars(select(Target.password_encrypted)).one()
    assert blob is not None and decrypt_secret(blob) == "x"


def test_credentials_do_not_show_their_password() -> None:
    credentials = Credentials("db1", 3306, None, "restore", "hunter2-hunter2")
    assert "hunter2" not in repr(credentials) and "hunter2" not in str(credentials)


def test_the_option_file_is_0600_and_removed_even_when_the_tool_fails(tmp_path: Path) -> None:
    credentials = Credentials("db1", 3306, None, "restore", 'it\'s a "pass\\word"')
    with pytest.raises(RuntimeError), option_file(credentials, tmp_path) as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text() == (
            '[client]\nuser="restore"\npassword="it\'s a \\"pass\\\\word\\""\nhost="db1"\nport=3306\nprotocol=TCP\n'
        )
        raise RuntimeError("the tool failed")
    assert list(tmp_path.iterdir()) == []
