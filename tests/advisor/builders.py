"""Synthetic evidence for the rules' tests: a quiet run that no rule speaks about, and lanes to vary from it.

The quiet run: a loader restore on 2 cores over 100 s, two loading threads each on a CPU 60 s and waiting 40 s
for rows from the client while other work kept the host's cores busy, no IO worth naming, a big redo log, a
buffer pool holding everything.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.advisor.evidence import Evidence, Host, IoFacts, JobFacts, LaneActivity, LaneGroup, PrepareFacts

T0 = 1_700_000_000_000_000
SECONDS = 100.0
T1 = T0 + int(SECONDS * 1e6)
BUCKETS = 20
GIB = 1 << 30


def lane(
    tid: int,
    *,
    group: LaneGroup = "loading",
    role: str | None = None,
    running: float = 60.0,
    runnable: float = 0.0,
    io_wait: float = 0.0,
    blocked: float | None = None,
    series: tuple[float, ...] | None = None,
    states: dict[str, float] | None = None,
    state_series: tuple[str, ...] = (),
    fsync: float = 0.0,
    data_read: float = 0.0,
) -> LaneActivity:
    """A lane alive for the whole phase: what is not running, runnable or IO wait is blocked."""
    rest = SECONDS - running - runnable - io_wait if blocked is None else blocked
    return LaneActivity(
        tid=tid,
        role=role or (f"connection {tid} (restorescope-loader)" if group == "loading" else f"thread {tid}"),
        process="mariadbd" if group != "tool" else "mariabackup",
        group=group,
        running_s=running,
        runnable_s=runnable,
        io_wait_s=io_wait,
        blocked_s=max(rest, 0.0),
        running_series=series if series is not None else (running / SECONDS,) * BUCKETS,
        states=states or {"Update": running},
        state_series=state_series,
        fsync_s=fsync,
        data_read_s=data_read,
        data_reads=1000 if data_read else 0,
    )


VARIABLES = {
    "innodb_flush_log_at_trx_commit": "1",
    "innodb_doublewrite": "ON",
    "innodb_log_file_size": str(4 * GIB),
    "innodb_buffer_pool_size": str(2 * GIB),
    "innodb_autoinc_lock_mode": "1",
    "innodb_use_native_aio": "ON",
    "innodb_flush_method": "O_DIRECT",
    "log_bin": "OFF",
}


def quiet(**changes: Any) -> Evidence:
    base = Evidence(
        job=JobFacts(
            kind="restore",
            runner="loader",
            backup_path="/backups/shop.sql",
            backup_format="mysqldump",
            backup_bytes=800_000_000,
            target_kind="sandbox",
            threads=2,
            chunk_size=64 << 20,
            tables=(("shop", "orders"),),
        ),
        host=Host(cpus=2, memory_bytes=24 * GIB),
        phase="restoring",
        t0_us=T0,
        t1_us=T1,
        lanes=(lane(1), lane(2), lane(10, group="background", role="page cleaner", running=1.0)),
        has_cpu=True,
        has_trace=True,
        buckets=BUCKETS,
        busy_cores=1.9,
        iowait_pct=0.5,
        io=IoFacts(fsyncs=100, fsync_p50_us=300, fsync_total_s=0.1, data_writes=1000, data_sequential_pct=95.0),
        variables=VARIABLES,
        status_delta={"Innodb_dblwr_pages_written": 5000.0, "Innodb_pages_written": 5000.0},
        status_end={"Innodb_checkpoint_max_age": str(3 * GIB)},
    )
    return replace(base, **changes)


def with_job(e: Evidence, **changes: Any) -> Evidence:
    return replace(e, job=replace(e.job, **changes))


def with_variables(e: Evidence, **values: str) -> Evidence:
    return replace(e, variables={**e.variables, **values})


def prepare(batches: int, use_memory: str | None = "16M", **changes: Any) -> Evidence:
    e = quiet(
        phase="preparing",
        lanes=(lane(50, group="tool", role="mariabackup", running=80.0),),
        prepare=PrepareFacts(batches=batches, use_memory=use_memory, redo_bytes=900_000_000, prepare_seconds=80.0),
        **changes,
    )
    return with_job(e, kind="prepare", runner="mariabackup", backup_format="mariabackup", use_memory=use_memory)
