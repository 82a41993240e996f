"""A real saved server edited and checked through the real stack (API process, worker, Redis): each check reports
what a DBA needs (version, flavour, whether it is on the worker's host) or why the login failed, and a backup job
after the edits logs in with the replaced password."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from app.sandboxes.options import ServerOptions
from tests.conftest import free_port
from tests.stack import Stack
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PASSWORD = "dba 'pass\"word"
TLS_PASSWORD = "tls-only-password"


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for the server, so it offers TLS."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "restorescope-test-server")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "server-cert.pem", directory / "server-key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def server(work_root: Path) -> Iterator[Sandbox]:
    """A server on this host that offers TLS, with a `shop` database, an account that logs in with a password and
    one that must use TLS."""
    cert, key = _self_signed(work_root / "saved-server-tls")
    options = ServerOptions(extra={"ssl_cert": str(cert), "ssl_key": str(key)})
    sandbox = Sandbox(
        work_root / "saved-servers", "edited", options, detect_server_binary(), ProcessGroup(), lambda _: None
    )
    with sandbox:
        sandbox.start()
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE USER 'dba'@'localhost' IDENTIFIED BY %s", (PASSWORD,))
            cursor.execute("GRANT ALL ON *.* TO 'dba'@'localhost'")
            cursor.execute("CREATE USER 'tls_only'@'localhost' IDENTIFIED BY %s REQUIRE SSL", (TLS_PASSWORD,))
            cursor.execute("CREATE DATABASE shop")
            cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(9,2))")
            cursor.execute("INSERT INTO shop.orders VALUES (1, 9.99), (2, 120.00), (3, 0.50)")
            cursor.execute("SELECT @@have_ssl")
            assert cursor.fetchone() == ("YES",), "the test server must offer TLS"
        yield sandbox


def _edit(stack: Stack, target_id: int, **changes: Any) -> dict[str, Any]:
    response = stack.http.patch(f"/targets/{target_id}", json=changes)
    assert response.status_code == 200, response.text
    edited: dict[str, Any] = response.json()
    return edited


def _check(stack: Stack, target_id: int) -> dict[str, Any]:
    response = stack.http.post(f"/targets/{target_id}/check")
    assert response.status_code == 200, response.text
    check: dict[str, Any] = response.json()
    return check


def test_a_saved_server_edited_and_checked(live_worker: Stack, server: Sandbox) -> None:
    saved = live_worker.http.post(
        "/targets",
        json={"name": "edited-server", "socket": str(server.socket_path), "user": "dba", "password": "not it"},
    )
    assert saved.status_code == 201, saved.text
    target_id = saved.json()["id"]

    wrong = _check(live_worker, target_id)
    assert (wrong["ok"], wrong["problem"]) == (False, "wrong_password")
    assert f"the server at {server.socket_path} refused user 'dba': wrong password or no such user" in wrong["message"]

    # The right password: the version, the flavour, and the server runs on the worker's host (this one).
    assert _edit(live_worker, target_id, password=PASSWORD)["last_check"] is None
    right = _check(live_worker, target_id)
    assert right["ok"] is True and right["problem"] is None, right["message"]
    assert right["server_version"].startswith(server.binary.version) and right["server_flavour"] == "mariadb"
    assert right["message"].startswith(f"connected to {right['server_version']}") and "as 'dba'" in right["message"]
    assert right["on_worker_host"] is True, right["worker_host_note"]
    assert right["worker_host_note"] == (
        f"yes: it runs on the worker's host '{right['server_hostname']}' (process {server.pid})"
    )
    listed = {t["id"]: t for t in live_worker.http.get("/targets").json()["data"]}[target_id]
    assert listed["last_check"] == right and listed["has_password"] is True

    # Over TCP instead of the socket, into its shop database: the password was kept.
    edited = _edit(live_worker, target_id, socket=None, host="127.0.0.1", port=server.port, default_database="shop")
    assert (edited["socket"], edited["port"], edited["has_password"]) == (None, server.port, True)
    over_tcp = _check(live_worker, target_id)
    assert over_tcp["ok"] is True and over_tcp["message"].endswith("as 'dba', database 'shop'"), over_tcp["message"]

    _edit(live_worker, target_id, default_database="no_such_db")
    missing = _check(live_worker, target_id)
    assert (missing["ok"], missing["problem"]) == (False, "unknown_database")
    assert f"the server at 127.0.0.1:{server.port} has no database 'no_such_db'" in missing["message"]

    # An account created with REQUIRE SSL: MariaDB says "access denied", and the check finds out it is TLS.
    _edit(live_worker, target_id, default_database=None, user="tls_only", password=TLS_PASSWORD)
    tls = _check(live_worker, target_id)
    assert (tls["ok"], tls["problem"]) == (False, "tls_required"), tls["message"]
    assert "accepts user 'tls_only' only over TLS" in tls["message"]

    closed_port = free_port()
    _edit(live_worker, target_id, user="dba", password=PASSWORD, port=closed_port)
    unreachable = _check(live_worker, target_id)
    assert (unreachable["ok"], unreachable["problem"]) == (False, "unreachable")
    assert f"cannot reach a server at 127.0.0.1:{closed_port}: nothing listens there" in unreachable["message"]

    # Back on its socket, a backup job logs in with the password the edits left, and dumps the shop.
    _edit(live_worker, target_id, socket=str(server.socket_path), name="edited-server-2")
    assert _check(live_worker, target_id)["ok"] is True
    backup = live_worker.http.post(
        "/jobs/backup",
        json={"source": {"kind": "saved", "target_id": target_id}, "databases": ["shop"], "destination": "edited/one"},
    )
    assert backup.status_code == 201, backup.text
    done = live_worker.wait_until_done(backup.json()["id"], timeout_s=120)
    assert done["status"] == "succeeded", (done["error"], live_worker.log_messages(done["id"]))
    assert done["parameters"]["source"]["name"] == "edited-server-2"

    events = live_worker.http.get("/audit", params={"object_type": "target", "object_id": str(target_id)}).json()
    socket_path, port = server.socket_path, server.port
    assert [event["detail"] for event in reversed(events["data"])] == [
        f"edited-server: dba@{socket_path}, with a password",
        "edited-server: password replaced",
        f"edited-server: port 3306 -> {port}, socket {socket_path} -> none, default database none -> shop",
        "edited-server: default database shop -> no_such_db",
        "edited-server: user dba -> tls_only, default database no_such_db -> none, password replaced",
        f"edited-server: port {port} -> {closed_port}, user tls_only -> dba, password replaced",
        f"edited-server-2: name 'edited-server' -> 'edited-server-2', socket none -> {socket_path}",
    ]
