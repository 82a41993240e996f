"""A real MariaDB server for the saved-servers spec to add on the page: a sandbox on this host (the worker's) with an
account that logs in with a password and a `shop` database. Prints one JSON line {"socket", "port", "user",
"password"} when it accepts connections, then runs until its standard input closes (so it never outlives the spec
that started it) or SIGTERM, and removes everything it made.

    .venv/bin/python e2e/saved_server.py
"""

import json
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "backend"), str(REPO)]

from app.sandboxes.options import ServerOptions  # noqa: E402
from worker.process_group import ProcessGroup  # noqa: E402
from worker.sandbox.binary import detect_server_binary  # noqa: E402
from worker.sandbox.server import Sandbox  # noqa: E402

USER = "e2e_dba"


def main() -> int:
    stopping = threading.Event()

    def stop(_signal: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    root = Path(tempfile.mkdtemp(prefix="restorescope-e2e-server-"))
    # Random per run; quotes and a space, as real ones have.
    password = f"e2e 'pw\" {secrets.token_hex(6)}"
    sandbox = Sandbox(root, "saved", ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _line: None)
    try:
        with sandbox:
            sandbox.start()
            with sandbox.connect() as connection, connection.cursor() as cursor:
                cursor.execute(f"CREATE USER '{USER}'@'localhost' IDENTIFIED BY %s", (password,))
                cursor.execute(f"GRANT ALL ON *.* TO '{USER}'@'localhost'")
                cursor.execute("CREATE DATABASE shop")
                cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, total DECIMAL(9,2))")
                cursor.execute("INSERT INTO shop.orders VALUES (1, 9.99), (2, 120.00)")
            ready = {"socket": str(sandbox.socket_path), "port": sandbox.port, "user": USER, "password": password}
            print(json.dumps(ready), flush=True)

            def watch_stdin() -> None:
                sys.stdin.read()
                stopping.set()

            threading.Thread(target=watch_stdin, daemon=True).start()
            while not stopping.wait(0.5):
                pass
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
