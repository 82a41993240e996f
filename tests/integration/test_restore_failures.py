"""Bad input fails the job with a message that says what happened and what to do, and loses nothing else:
the sandbox is removed and the API stays up."""

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import server_processes
from tests.stack import Stack

pytestmark = pytest.mark.integration


def _assert_failed_cleanly(stack: Stack, job_id: int, *fragments: str) -> dict[str, object]:
    done = stack.wait_until_done(job_id)
    assert done["status"] == "failed", done
    for fragment in fragments:
        assert fragment in done["error"], (fragment, done["error"])
    if done["sandbox_dir"]:
        assert not Path(done["sandbox_dir"]).exists()
        assert server_processes(done["sandbox_dir"]) == []
    assert stack.http.get("/health").status_code == 200
    return done


@pytest.fixture
def bad_dumps(backup_root: Path, demo_dumps: dict[str, Path]) -> Iterator[Path]:
    folder = backup_root / "bad"
    folder.mkdir(exist_ok=True)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.parametrize(("name", "compression"), [("shop.sql.gz", "gzip"), ("shop.sql.zst", "zstd")])
def test_truncated_compressed_dump(
    live_worker: Stack, demo_dumps: dict[str, Path], bad_dumps: Path, name: str, compression: str
) -> None:
    data = demo_dumps[name].read_bytes()
    (bad_dumps / name).write_bytes(data[: len(data) * 6 // 10])
    job = live_worker.restore(f"bad/{name}")
    done = _assert_failed_cleanly(live_worker, job["id"], "truncated", "copy the backup again", compression)
    # The backup picker marks it as a backup that does not restore, with this job's reason.
    assert done["backup_verdict"] == "does_not_restore"
    assert _last_restore(live_worker, f"bad/{name}") == {
        "job_id": job["id"],
        "verdict": "does_not_restore",
        "finished_at": done["finished_at"],
        "error": done["error"],
    }


def _last_restore(stack: Stack, relative_path: str) -> object:
    backups = stack.http.get("/backups").json()["data"]
    return next(b["last_restore"] for b in backups if b["path"].endswith(relative_path))


def test_sql_error_half_way(live_worker: Stack, demo_dumps: dict[str, Path], bad_dumps: Path) -> None:
    lines = demo_dumps["shop.sql"].read_bytes().split(b"\n")
    middle = next(i for i, line in enumerate(lines) if line.startswith(b"CREATE TABLE `orders`"))
    lines.insert(middle, b"THIS IS NOT SQL;")
    (bad_dumps / "broken.sql").write_bytes(b"\n".join(lines))
    job = live_worker.restore("bad/broken.sql")
    done = _assert_failed_cleanly(live_worker, job["id"], f"at line {middle + 1}", "ERROR 1064")
    assert "damaged" in str(done["error"])
    assert done["backup_verdict"] == "does_not_restore"
    assert any("ERROR 1064" in m for m in live_worker.log_messages(job["id"]))


def test_port_already_taken(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        job = live_worker.restore("demo/shop.sql", target={"kind": "sandbox", "options": {"port": port}})
        done = _assert_failed_cleanly(
            live_worker, job["id"], f"port {port} is already in use on 127.0.0.1", "leave the port empty"
        )
    # Not the backup's fault: no verdict on it.
    assert done["backup_verdict"] is None


def test_backup_removed_after_it_was_queued(
    live_worker: Stack, demo_dumps: dict[str, Path], bad_dumps: Path, work_root: Path
) -> None:
    doomed = bad_dumps / "doomed.sql"
    shutil.copy(demo_dumps["shop.sql"], doomed)
    # Cancel-free way to make the worker see a missing file: queue it while the worker is stopped.
    assert live_worker.worker is not None
    live_worker.kill_worker()
    job = live_worker.restore("bad/doomed.sql")
    doomed.unlink()
    live_worker.start_worker()
    _assert_failed_cleanly(live_worker, job["id"], "does not exist under the backup roots")


def test_bad_server_option_shows_the_server_error(live_worker: Stack, demo_dumps: dict[str, Path]) -> None:
    job = live_worker.restore(
        "demo/shop.sql", target={"kind": "sandbox", "options": {"extra": {"no-such-option": "1"}}}
    )
    _assert_failed_cleanly(live_worker, job["id"], "unknown variable 'no-such-option=1'")
