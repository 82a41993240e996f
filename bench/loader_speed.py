"""Restore speed of our parallel loader against the tools DBAs use, on this machine, in one run.

Two datasets (made once and cached in bench/out/backups):
  sysbench  4 tables x 1M rows (`sysbench oltp_read_write prepare`), as bench/restore_overhead.py makes it
  skewed    one table of 4M rows plus three of 50k, so one big table would be the straggler

Each dataset is dumped in every format the loader reads: a mysqldump .sql, a mysqldump --tab directory, a
mydumper 0.10 directory (chunked with --rows, as myloader needs to load one table with several threads)
and a MySQL Shell layout written from the --tab files by the test helper. Every restore goes into a fresh
sandbox with the same settings, a preset of the app (--settings: server-defaults, or fast-restore, the settings
the advisor recommends for a load); only the restore itself is timed.

    PYTHONPATH=backend:. .venv/bin/python bench/loader_speed.py [--datasets sysbench,skewed] [--threads 2]
        [--settings server-defaults|fast-restore]

Goals: our loader >= 1.1x the best of myloader and mysqlimport on both datasets; our parallel restore of the
plain .sql >= 1.7x `mysql < dump.sql`.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.sandboxes.options import PRESETS, ServerOptions
from bench.restore_overhead import OUT, make_sysbench_dump
from worker.process_group import ProcessGroup
from worker.runners.loader import DEFAULT_CHUNK_SIZE, restore_with_loader
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

BACKUPS = OUT / "backups"
MYDUMPER_ROWS_PER_CHUNK = 100_000
SKEWED_SMALL_TABLES = 3
SKEWED_SMALL_ROWS = 50_000


@dataclass(frozen=True)
class Dataset:
    name: str
    database: str
    tables: int
    rows: int

    @property
    def sql(self) -> Path:
        return BACKUPS / f"{self.name}.sql"

    @property
    def tab(self) -> Path:
        return BACKUPS / f"{self.name}-tab"

    @property
    def mydumper(self) -> Path:
        return BACKUPS / f"{self.name}-mydumper"

    @property
    def mysqlsh(self) -> Path:
        return BACKUPS / f"{self.name}-mysqlsh"


DATASETS = {
    # Same name and database as bench/restore_overhead.py, so its cached .sql is shared.
    "sysbench": Dataset("sysbench-4x1000000", "sbtest", 4, 1_000_000),
    "skewed": Dataset("skewed-1x4000000", "sbskew", 1, 4_000_000),
}


@contextmanager
def sandbox(name: str, options: ServerOptions | None = None) -> Iterator[Sandbox]:
    with Sandbox(
        OUT / "work", name, options or ServerOptions(), detect_server_binary(), ProcessGroup(), lambda _line: None
    ) as server:
        server.start()
        yield server


def make_dataset(dataset: Dataset) -> None:
    """Every format of `dataset` that is not cached yet, from one source server."""
    if dataset.name.startswith("sysbench"):
        make_sysbench_dump(dataset.sql, dataset.tables, dataset.rows)
    missing = [p for p in (dataset.sql, dataset.tab, dataset.mydumper) if not p.exists()]
    if missing:
        print(f"making {', '.join(p.name for p in missing)}", flush=True)
        fast_source = ServerOptions(
            innodb_buffer_pool_size="2G", innodb_flush_log_at_trx_commit=0, innodb_doublewrite=False
        )
        with sandbox(f"loader-source-{dataset.name}", fast_source) as source:
            _fill_source(source, dataset)
            for path in missing:
                _dump(source, dataset, path)
    if not dataset.mysqlsh.exists():
        from tests.loader.layouts import write_mysqlsh_dump_from_tab

        partial = dataset.mysqlsh.with_name(dataset.mysqlsh.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        write_mysqlsh_dump_from_tab(dataset.tab, partial, dataset.database)
        partial.rename(dataset.mysqlsh)


def _fill_source(source: Sandbox, dataset: Dataset) -> None:
    with source.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {dataset.database}")
    subprocess.run(
        [
            "sysbench",
            "oltp_read_write",
            f"--mysql-socket={source.socket_path}",
            "--mysql-user=root",
            f"--mysql-db={dataset.database}",
            f"--tables={dataset.tables}",
            f"--table-size={dataset.rows}",
            "prepare",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if dataset.name.startswith("skewed"):
        with source.connect(dataset.database) as connection, connection.cursor() as cursor:
            for number in range(2, 2 + SKEWED_SMALL_TABLES):
                cursor.execute(f"CREATE TABLE sbtest{number} LIKE sbtest1")
                cursor.execute(f"INSERT INTO sbtest{number} SELECT * FROM sbtest1 LIMIT {SKEWED_SMALL_ROWS}")


def _dump(source: Sandbox, dataset: Dataset, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    if partial.is_dir():
        shutil.rmtree(partial)
    partial.unlink(missing_ok=True)
    connection = ["--no-defaults", f"--socket={source.socket_path}", "-uroot"]
    dump_tool = find_tool(("mysqldump", "mariadb-dump"))
    if target == dataset.sql:
        with partial.open("wb") as out:
            subprocess.run(
                [dump_tool, *connection, "--single-transaction", "--databases", dataset.database],
                check=True,
                stdout=out,
            )
    elif target == dataset.tab:
        partial.mkdir(parents=True)
        subprocess.run([dump_tool, *connection, f"--tab={partial}", dataset.database], check=True)
    else:
        subprocess.run(
            [
                "mydumper",
                f"--socket={source.socket_path}",
                "--user=root",
                f"--database={dataset.database}",
                f"--outputdir={partial}",
                f"--rows={MYDUMPER_ROWS_PER_CHUNK}",
                "--threads=2",
            ],
            check=True,
        )
    partial.rename(target)


# --- the restores --------------------------------------------------------------------------------


@dataclass
class Measurement:
    wall_s: float
    server_cpu_s: float  # CPU the sandbox server used: less sensitive than wall time to other load here
    client_cpu_s: float  # CPU of the restoring side: our loader's process, or the tool's processes
    load_average: float  # the machine's 1-minute load average when the restore ended


def client_cpu_seconds() -> float:
    """CPU of this process (our loader runs in it) and of the finished child processes (the tools)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def server_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(name: str, restore: Callable[[Sandbox], None], settings: ServerOptions | None = None) -> Measurement:
    """Wall and server CPU seconds of `restore` into a fresh sandbox, server defaults unless `settings` say
    otherwise (start not counted)."""
    with sandbox(f"loader-speed-{name}", settings) as server:
        assert server.pid is not None
        cpu_before, client_before = server_cpu_seconds(server.pid), client_cpu_seconds()
        started = time.perf_counter()
        restore(server)
        wall = time.perf_counter() - started
        server_cpu, client_cpu = server_cpu_seconds(server.pid) - cpu_before, client_cpu_seconds() - client_before
        return Measurement(wall, server_cpu, client_cpu, os.getloadavg()[0])


def mysql_bare(dataset: Dataset) -> Callable[[Sandbox], None]:
    def run(server: Sandbox) -> None:
        with dataset.sql.open("rb") as dump:
            subprocess.run(
                [find_tool(("mariadb", "mysql")), "--no-defaults", *server.client_args()], stdin=dump, check=True
            )

    return run


def myloader(dataset: Dataset, threads: int) -> Callable[[Sandbox], None]:
    def run(server: Sandbox) -> None:
        subprocess.run(
            [
                "myloader",
                f"--socket={server.socket_path}",
                "--user=root",
                f"--directory={dataset.mydumper}",
                f"--threads={threads}",
            ],
            check=True,
        )

    return run


def mysqlimport(dataset: Dataset, threads: int) -> Callable[[Sandbox], None]:
    """What a DBA runs on a --tab dump: the table scripts through mysql, then mysqlimport (both timed)."""

    def run(server: Sandbox) -> None:
        client = ["--no-defaults", *server.client_args()]
        scripts = b"".join(p.read_bytes() for p in sorted(dataset.tab.glob("*.sql")))
        create = f"CREATE DATABASE {dataset.database}; USE {dataset.database};\n".encode()
        subprocess.run([find_tool(("mariadb", "mysql")), *client], input=create + scripts, check=True)
        files = [str(p) for p in sorted(dataset.tab.glob("*.txt"))]
        subprocess.run(
            [
                find_tool(("mariadb-import", "mysqlimport")),
                *client,
                "--local",
                f"--use-threads={threads}",
                dataset.database,
                *files,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    return run


def ours(path: Path, database: str | None, threads: int, chunk_size: int) -> Callable[[Sandbox], None]:
    def run(server: Sandbox) -> None:
        outcome = restore_with_loader(
            path,
            server.connect,
            None,
            lambda _progress: None,
            lambda line: print(f"    {line}", flush=True),
            lambda: False,
            database=database,
            threads=threads,
            chunk_size=chunk_size,
        )
        rows = sum(outcome.expected_rows.values())
        with server.connect() as connection, connection.cursor() as cursor:
            counted = 0
            for (database_name, table), _expected in outcome.expected_rows.items():
                cursor.execute(f"SELECT COUNT(*) FROM `{database_name}`.`{table}`")
                row = cursor.fetchone()
                counted += int(row[0]) if row else 0
        if counted != rows:
            raise SystemExit(f"our loader lost rows from {path.name}: {counted} of {rows}")

    return run


def contenders(dataset: Dataset, threads: int, chunk_size: int) -> dict[str, Callable[[Sandbox], None]]:
    tab_database = dataset.database
    return {
        "mysql < dump.sql": mysql_bare(dataset),
        f"myloader -t {threads}": myloader(dataset, threads),
        f"mysqlimport --use-threads={threads}": mysqlimport(dataset, threads),
        "ours .sql": ours(dataset.sql, None, threads, chunk_size),
        "ours --tab": ours(dataset.tab, tab_database, threads, chunk_size),
        "ours mydumper": ours(dataset.mydumper, None, threads, chunk_size),
        "ours mysqlsh (zstd)": ours(dataset.mysqlsh, None, threads, chunk_size),
    }


def report(dataset: Dataset, results: dict[str, list[Measurement]], settings_name: str) -> bool:
    wall = {name: statistics.median(m.wall_s for m in runs) for name, runs in results.items()}
    cpu = {name: statistics.median(m.server_cpu_s for m in runs) for name, runs in results.items()}
    client = {name: statistics.median(m.client_cpu_s for m in runs) for name, runs in results.items()}
    loads = [m.load_average for runs in results.values() for m in runs]
    bare = wall["mysql < dump.sql"]
    tools = [name for name in wall if name.startswith(("myloader", "mysqlimport"))]
    best_tool = min(tools, key=lambda name: wall[name])
    ours_names = [name for name in wall if name.startswith("ours")]
    best_ours = min(ours_names, key=lambda name: wall[name])
    rounds = len(next(iter(results.values())))
    print(
        f"\n{dataset.name}: median of {rounds} round(s), settings {settings_name}, "
        f"load average {min(loads):.1f}-{max(loads):.1f} (2 CPUs)"
    )
    print(f"  {'':28} {'wall s':>8} {'vs mysql':>9} {'vs ' + best_tool:>30} {'server CPU s':>13} {'client CPU s':>13}")
    for name in wall:
        ratio = wall[best_tool] / wall[name]
        print(
            f"  {name:28} {wall[name]:8.1f} {bare / wall[name]:8.2f}x {ratio:29.2f}x {cpu[name]:13.1f} "
            f"{client[name]:13.1f}"
        )
    vs_tool = wall[best_tool] / wall[best_ours]
    sql_vs_bare = bare / wall["ours .sql"]
    verdict = "met" if vs_tool >= 1.1 else "NOT met"
    print(f"  goal: best of ours ({best_ours}) >= 1.1x {best_tool}: {vs_tool:.2f}x {verdict}")
    print(
        f"  goal: ours .sql >= 1.7x mysql < dump.sql: {sql_vs_bare:.2f}x {'met' if sql_vs_bare >= 1.7 else 'NOT met'}"
    )
    return vs_tool >= 1.1 and sql_vs_bare >= 1.7


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="sysbench,skewed")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk-mb", type=int, default=DEFAULT_CHUNK_SIZE >> 20)
    parser.add_argument("--only", default="", help="comma-separated contender names (substring match)")
    parser.add_argument("--settings", choices=sorted(PRESETS), default="server-defaults")
    parser.add_argument("--only-make", action="store_true", help="make the datasets and stop")
    args = parser.parse_args()
    datasets = [DATASETS[key] for key in args.datasets.split(",")]
    settings = PRESETS[args.settings][1]
    for dataset in datasets:
        make_dataset(dataset)
    if args.only_make:
        sys.exit(0)
    all_met = True
    for dataset in datasets:
        runs = contenders(dataset, args.threads, args.chunk_mb << 20)
        if args.only:
            runs = {k: v for k, v in runs.items() if any(part in k for part in args.only.split(","))}
        results: dict[str, list[Measurement]] = {name: [] for name in runs}
        for round_no in range(args.rounds):
            # Alternate the order, so a drift in the machine's load does not favour one contender.
            order = list(runs) if round_no % 2 == 0 else list(reversed(runs))
            for name in order:
                # One sandbox name per contender: a killed run's leftovers never pass for another's target.
                slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
                measured = timed(f"{slug}-{round_no}", runs[name], settings)
                results[name].append(measured)
                print(
                    f"{dataset.name} round {round_no + 1}: {name:28} {measured.wall_s:7.1f} s  "
                    f"server CPU {measured.server_cpu_s:6.1f} s  client CPU {measured.client_cpu_s:5.1f} s  "
                    f"(load average {measured.load_average:.1f})",
                    flush=True,
                )
        if {"mysql < dump.sql", "ours .sql"} <= set(results) and any(
            n.startswith(("myloader", "mysqlimport")) for n in results
        ):
            all_met = report(dataset, results, args.settings) and all_met
        else:
            for name, measured_runs in results.items():
                print(f"  {name:28} {statistics.median(m.wall_s for m in measured_runs):7.1f} s")
    sys.exit(0 if all_met else 1)


if __name__ == "__main__":
    main()
