"""What restorescope costs over the bare tool on a real restore.

The sysbench dataset (4 tables x 1M rows, `sysbench oltp_read_write prepare`, then mysqldump) is restored
through the product (HTTP API -> Celery worker -> mysql client, with progress, row counting and verification)
and through `mysql < dump.sql` directly, into sandboxes with the same settings, alternating, in one run.

    PYTHONPATH=backend:. .venv/bin/python bench/restore_overhead.py [--tables 4] [--rows 1000000] [--rounds 1]

Goal: the product's restore phase at most 1.05x the bare `mysql < dump.sql`.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from app.sandboxes.options import ServerOptions
from tests.stack import REPO, Stack, free_port
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

OUT = REPO / "bench" / "out"


def make_sysbench_dump(target: Path, tables: int, rows: int) -> None:
    if target.exists():
        return
    print(f"making {target.name}: sysbench prepare {tables} x {rows} rows, then mysqldump", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    processes = ProcessGroup()
    with Sandbox(
        OUT / "work",
        "sysbench-source",
        ServerOptions(innodb_buffer_pool_size="1G", innodb_flush_log_at_trx_commit=0, innodb_doublewrite=False),
        detect_server_binary(),
        processes,
        lambda _line: None,
    ) as source:
        source.start()
        with source.connect() as connection, connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE sbtest")
        subprocess.run(
            [
                "sysbench",
                "oltp_read_write",
                f"--mysql-socket={source.socket_path}",
                "--mysql-user=root",
                "--mysql-db=sbtest",
                f"--tables={tables}",
                f"--table-size={rows}",
                "prepare",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            subprocess.run(
                [
                    find_tool(("mysqldump", "mariadb-dump")),
                    "--no-defaults",
                    f"--socket={source.socket_path}",
                    "-uroot",
                    "--single-transaction",
                    "--databases",
                    "sbtest",
                ],
                check=True,
                stdout=out,
            )
        partial.rename(target)


def restore_bare(dump: Path, round_no: int) -> float:
    """`mysql < dump.sql` into a fresh sandbox with server defaults; only the mysql run is timed."""
    processes = ProcessGroup()
    with Sandbox(
        OUT / "work", f"bare-{round_no}", ServerOptions(), detect_server_binary(), processes, lambda _line: None
    ) as sandbox:
        sandbox.start()
        mysql = find_tool(("mariadb", "mysql"))
        with dump.open("rb") as source:
            started = time.perf_counter()
            subprocess.run([mysql, "--no-defaults", *sandbox.client_args()], stdin=source, check=True)
            return time.perf_counter() - started


def restore_product(stack: Stack, dump: Path) -> tuple[float, float]:
    """(restore phase, whole job) seconds of a restore through the API and the worker."""
    # The mysql client, as in the side it is compared with: this measures what the job around it costs.
    job = stack.restore(dump.name, runner="mysql", target={"kind": "sandbox", "preset": "server-defaults"})
    done = stack.wait_until_done(job["id"], timeout_s=3600)
    if done["status"] != "succeeded":
        raise SystemExit(f"the product's restore failed: {done['error']}")
    start, end = (datetime.fromisoformat(t) for t in done["phase_times"]["restoring"])
    return (end - start).total_seconds(), float(done["duration_s"])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()

    backups = OUT / "backups"
    dump = backups / f"sysbench-{args.tables}x{args.rows}.sql"
    make_sysbench_dump(dump, args.tables, args.rows)
    print(f"dump: {dump} ({dump.stat().st_size / 1e6:.0f} MB)", flush=True)

    redis_port = free_port()
    redis = start_redis(redis_port)
    data_dir = OUT / f"data-{os.getpid()}"
    stack = Stack(
        OUT / "logs",
        {
            "RESTORESCOPE_DATA_DIR": str(data_dir),
            "DATABASE_URL": f"sqlite:///{data_dir / 'restorescope.db'}",
            "RESTORESCOPE_BACKUP_ROOTS": str(backups),
            "RESTORESCOPE_WORK_ROOT": str(OUT / "work"),
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        },
    )
    subprocess.run([str(REPO / ".venv/bin/alembic"), "upgrade", "head"], cwd=REPO, env=stack.env, check=True)
    bare_times: list[float] = []
    phase_times: list[float] = []
    job_times: list[float] = []
    try:
        stack.start_api()
        stack.log_in_as_admin()
        stack.start_worker()
        for round_no in range(args.rounds):
            # Alternate which goes first, so a drift in the machine's load does not favour one side.
            order = ("bare", "product") if round_no % 2 == 0 else ("product", "bare")
            for which in order:
                if which == "bare":
                    bare_times.append(restore_bare(dump, round_no))
                    print(f"round {round_no + 1}: mysql < dump.sql      {bare_times[-1]:7.1f} s", flush=True)
                else:
                    phase, whole = restore_product(stack, dump)
                    phase_times.append(phase)
                    job_times.append(whole)
                    print(
                        f"round {round_no + 1}: restorescope restore  {phase:7.1f} s (whole job {whole:.1f} s)",
                        flush=True,
                    )
    finally:
        stack.stop()
        redis.terminate()

    bare, phase, whole = (statistics.median(t) for t in (bare_times, phase_times, job_times))
    print()
    print(f"median of {args.rounds} round(s), {args.tables} x {args.rows} rows, server defaults")
    print(f"  mysql < dump.sql                   {bare:7.1f} s   1.000x")
    print(f"  restorescope, restore phase        {phase:7.1f} s   {phase / bare:.3f}x   (goal <= 1.05x)")
    print(
        f"  restorescope, whole job            {whole:7.1f} s   {whole / bare:.3f}x   "
        f"(+ sandbox start, verification, snapshots)"
    )
    sys.exit(0 if phase / bare <= 1.05 else 1)


if __name__ == "__main__":
    main()
