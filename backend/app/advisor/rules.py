"""The advisor's rules: each a small pure function from a run's evidence to a suggestion, or None.

Every threshold is a named constant with the reason for its value. Rules read what the run measured (the
threads' CPU states, the IO each thread waited for, the server's counters) and estimate what the change would
save from that, not from folklore: on a machine where every restore is CPU-bound (ours: 2 cores, a fast disk,
iowait under 2%), durability settings save little and the rules say so, while more loading threads and a
delimited format are where the time goes (bench/loader_speed.py, /work/shared/FIELD-NOTES.md).

A rule fires when its evidence passes its thresholds; its `expected_gain` (the share of the phase the change
should save) orders the suggestions, and those below MIN_GAIN are shown as "little to gain here".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.advisor.evidence import Alternative, Evidence, Interval, LaneActivity
from app.advisor.suggestion import Change, Setting, Suggestion, Where
from app.advisor.text import mib, pct, secs, size_option

# --- shared thresholds -------------------------------------------------------------------------------

# A suggestion that should save less than this share of the phase is listed as "little to gain here": on a
# shared 2-core machine two runs of the same restore differ by about that much.
MIN_GAIN = 0.05
# A loading thread that wanted a CPU (running, or runnable waiting for one) this share of the phase is
# CPU-bound: more threads, or less work per row, is what speeds it up. Below it, it waits on something
# else (the client, a lock, the disk) that more threads would not remove.
CPU_BOUND_DEMAND = 0.7
# The loading threads together wanted this share of every core the host has: the server is CPU-bound as a
# whole, and only less CPU work per row (or other load leaving the host) makes it faster.
SATURATED_DEMAND = 0.8
# The machine waited for the disk (iowait) at least this % of its CPU time, or the loading threads were in
# uninterruptible IO sleep this share of their time: the storage is on the critical path. Here iowait
# stays under 2% (FIELD-NOTES), so storage rules stay silent on this machine.
IOWAIT_MIN_PCT = 5.0
IO_WAIT_SHARE_MIN = 0.05

SERVER_OPTION = "target.options."


def _loading(e: Evidence) -> list[LaneActivity]:
    return e.group("loading")


def _demand(lane: LaneActivity, seconds: float) -> float:
    return (lane.running_s + lane.runnable_s) / seconds


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


def _lives(lanes: Sequence[LaneActivity]) -> float:
    return sum(lane.sampled_s for lane in lanes)


def _our_cpu_s(e: Evidence) -> float:
    return sum(lane.running_s for lane in e.lanes)


def _threads_used(e: Evidence) -> int:
    return e.job.threads or max(len(_loading(e)), 1)


def _storage_pressure(e: Evidence) -> float:
    """How much the storage held the loading threads up: the larger of their IO-sleep share and iowait."""
    loading = _loading(e)
    waited = _share(sum(lane.io_wait_s for lane in loading), _lives(loading))
    return max(waited, (e.iowait_pct or 0.0) / 100)


def _storage_bound(e: Evidence) -> bool:
    loading = _loading(e)
    waited = _share(sum(lane.io_wait_s for lane in loading), _lives(loading))
    return waited >= IO_WAIT_SHARE_MIN or (e.iowait_pct or 0.0) >= IOWAIT_MIN_PCT


def _tids(lanes: Sequence[LaneActivity]) -> tuple[int, ...]:
    return tuple(lane.tid for lane in lanes)


def _phase(e: Evidence) -> tuple[Interval, ...]:
    return (e.window,)


_SIZE_OPTIONS = frozenset({"innodb_log_file_size", "innodb_buffer_pool_size"})


def _previous(e: Evidence, option: str) -> object:
    """The run's value as the option takes it: sizes as "96M" rather than the bytes the server reports."""
    value = e.variable(option)
    if option in _SIZE_OPTIONS and value is not None and value.isdigit():
        return size_option(int(value))
    return value


def _server_change(e: Evidence, option: str, value: object, sql: str) -> Change:
    """A server option: a re-run's sandbox gets it; a saved server is the DBA's to change."""
    setting = Setting(SERVER_OPTION + option, value, _previous(e, option))
    if e.job.target_kind == "saved":
        return Change(
            (setting,),
            rerun=False,
            note=f"This job restored into a saved server, whose settings restorescope leaves alone: {sql}",
        )
    return Change((setting,))


def _logical(e: Evidence) -> bool:
    return e.job.kind == "restore"


# --- threads vs cores --------------------------------------------------------------------------------

# How much each loading thread beyond the first adds, as a share of what the first does, on this machine:
# our loader restored the sysbench .sql 1.80x faster with 2 threads than `mysql < dump.sql` on 2 idle cores
# (0.8), 1.64x on a host busy with other work (0.64) (bench/loader_speed.py, bench/advisor.py).
PARALLEL_EFFICIENCY = 0.75
PARALLEL_RUNNERS = frozenset({"loader", "myloader", "mysqlimport"})


def parallel_load(e: Evidence) -> Suggestion | None:
    """Fewer loading threads than cores and the one(s) there CPU-bound, or as many as cores but often off the CPU
    while cores sat idle: load with more threads."""
    if not _logical(e) or not e.has_cpu or e.job.runner not in PARALLEL_RUNNERS | {"mysql"}:
        return None
    loading = _loading(e)
    if not loading:
        return None
    threads = 1 if e.job.runner == "mysql" else _threads_used(e)
    if threads < e.host.cpus:
        return _fewer_threads_than_cores(e, loading, threads)
    return _threads_waiting(e, loading, threads)


def _fewer_threads_than_cores(e: Evidence, loading: list[LaneActivity], threads: int) -> Suggestion | None:
    cores = e.host.cpus
    busiest = max(loading, key=lambda lane: lane.running_s)
    demand = _demand(busiest, e.seconds)
    if demand < CPU_BOUND_DEMAND:
        return None
    new_threads = min(cores, 64)
    speedup = (1 + (new_threads - 1) * PARALLEL_EFFICIENCY) / (1 + (threads - 1) * PARALLEL_EFFICIENCY)
    settings: list[Setting] = []
    if e.job.runner == "mysql":
        settings.append(Setting("runner", "loader", "mysql"))
    settings.append(Setting("threads", new_threads, threads))
    seen = (
        f"{busiest.role} wanted a CPU {pct(demand)} of the {secs(e.seconds)} restore (on a CPU "
        f"{pct(_share(busiest.running_s, e.seconds))}, waiting for one {pct(_share(busiest.runnable_s, e.seconds))}): "
        f"{threads} loading thread{'s' if threads > 1 else ''} on a host with {cores} cores."
    )
    how = (
        "restorescope's loader splits the dump into chunks and loads them on" if e.job.runner == "mysql" else "load on"
    )
    return Suggestion(
        rule="parallel_load",
        title=f"{'One loading thread was' if threads == 1 else 'The loading threads were'} CPU-bound: load with "
        f"{new_threads} threads",
        seen=seen,
        numbers=(
            ("busiest loading thread wanted a CPU", pct(demand)),
            ("loading threads", str(threads)),
            ("cores", str(cores)),
        ),
        where=Where(_tids(loading), _phase(e)),
        change=Change(tuple(settings)),
        expected=(
            f"About {speedup:.1f}x faster: {how} {new_threads} connections, one per core. Each thread beyond the "
            f"first adds about {pct(PARALLEL_EFFICIENCY)} of one here (the sysbench restore: 1.6-1.8x with 2 "
            "threads on 2 cores); less while other work keeps the host's cores busy."
        ),
        expected_gain=1 - 1 / speedup,
        caveat=(
            "Tables load in parallel and out of dump order: the restore is consistent once it has finished, not "
            "while it runs. Each connection takes its own server memory (sort and join buffers)."
        ),
    )


# As many loading threads as cores, yet they were off the CPU (blocked on the client or a lock, or waiting on
# the disk) at least this share of their time while at least FREE_CORES_MIN of the host's cores sat idle:
# more threads fill those gaps. Measured here: LOAD DATA with 4 connections on 2 cores 28.9 s, with 2 31.8 s.
OFF_CPU_SHARE_MIN = 0.15
FREE_CORES_MIN = 0.25


def _threads_waiting(e: Evidence, loading: list[LaneActivity], threads: int) -> Suggestion | None:
    cores = e.host.cpus
    if e.busy_cores is None:
        return None
    off = sum(lane.blocked_s + lane.io_wait_s for lane in loading)
    off_share = _share(off, _lives(loading))
    free = cores - e.busy_cores
    new_threads = min(threads * 2, OVERSUBSCRIBED_THREADS_PER_CORE * cores, 64)
    if off_share < OFF_CPU_SHARE_MIN or free < FREE_CORES_MIN or new_threads <= threads:
        return None
    gain = min(off_share, free / cores)
    return Suggestion(
        rule="parallel_load",
        title=f"The loading threads often waited while cores sat idle: load with {new_threads} threads",
        seen=(
            f"The {len(loading)} loading threads were off the CPU {pct(off_share)} of their time (waiting for the "
            f"client, a lock or the disk) while {free:.1f} of the host's {cores} cores were idle on average."
        ),
        numbers=(
            ("loading threads off the CPU", pct(off_share)),
            ("idle cores", f"{free:.1f} of {cores}"),
            ("loading threads", str(threads)),
        ),
        where=Where(_tids(loading), _phase(e)),
        change=Change((Setting("threads", new_threads, threads),)),
        expected=(
            f"Up to {pct(gain)} shorter: while one connection waits, another uses the idle core (LOAD DATA with 4 "
            "connections on 2 cores took 28.9 s here, with 2 31.8 s)."
        ),
        expected_gain=gain,
        caveat="Each connection takes its own server memory; more than two per core no longer helped here.",
    )


# A host whose loading threads together wanted more than this many times its cores was oversubscribed by the
# restore itself. Twice the cores still helped here (LOAD DATA with 4 connections on 2 cores: 2.5x vs 2.3x
# with 2, FIELD-NOTES), so only beyond that does this rule speak, and it promises no speed: the CPU work is
# the same, only memory and context switches are saved.
OVERSUBSCRIBED_DEMAND = 1.25
OVERSUBSCRIBED_THREADS_PER_CORE = 2


def too_many_threads(e: Evidence) -> Suggestion | None:
    if not _logical(e) or not e.has_cpu or e.job.runner not in PARALLEL_RUNNERS:
        return None
    cores, threads = e.host.cpus, _threads_used(e)
    loading = _loading(e)
    demand = sum(_demand(lane, e.seconds) for lane in loading)
    if threads <= OVERSUBSCRIBED_THREADS_PER_CORE * cores or demand < OVERSUBSCRIBED_DEMAND * cores:
        return None
    new_threads = OVERSUBSCRIBED_THREADS_PER_CORE * cores
    return Suggestion(
        rule="too_many_threads",
        title=f"{threads} loading threads on {cores} cores: {new_threads} do the same work",
        seen=(
            f"The {threads} loading threads together wanted {demand:.1f} cores of the host's {cores}: they spent "
            f"{secs(sum(lane.runnable_s for lane in loading))} waiting for a CPU."
        ),
        numbers=(("loading threads", str(threads)), ("cores wanted", f"{demand:.1f}"), ("cores", str(cores))),
        where=Where(_tids(loading), _phase(e)),
        change=Change((Setting("threads", new_threads, threads),)),
        expected=(
            "About as fast: the CPU work is the same. Fewer connections use less server memory and switch less; "
            f"up to {OVERSUBSCRIBED_THREADS_PER_CORE} per core still helped here."
        ),
        expected_gain=0.0,
        caveat="None for the data: only how many connections load at once changes.",
    )


# --- straggler -------------------------------------------------------------------------------------

# One loading connection worked alone (a statement in progress, or on a CPU at least ALONE_RUNNING of a slice)
# while every other one was idle (asleep between statements and on a CPU under OTHERS_IDLE of it), for at least
# STRAGGLER_MIN_SHARE of the phase: one table (or one unsplit file) held the end of the restore while the other
# threads had nothing left. A connection waiting for the client inside its statement is still working.
STRAGGLER_MIN_SHARE = 0.15
ALONE_RUNNING = 0.5
OTHERS_IDLE = 0.1
_IDLE_STATES = frozenset({"", "Sleep"})
# A lone thread building indexes after its rows (ALTER TABLE) is not helped by smaller chunks.
_INDEX_BUILD = re.compile(r"alter|index|tmp table|copy to", re.IGNORECASE)
MIN_CHUNK = 64 << 10


def _working(lane: LaneActivity, index: int) -> bool:
    state = lane.state_series[index] if index < len(lane.state_series) else ""
    return state not in _IDLE_STATES or _at(lane.running_series, index) >= ALONE_RUNNING


def _idle(lane: LaneActivity, index: int) -> bool:
    return not _working(lane, index) and _at(lane.running_series, index) < OTHERS_IDLE


def _lone_stretch(lanes: Sequence[LaneActivity], buckets: int) -> tuple[LaneActivity, int, int] | None:
    """The longest run of slices in which exactly one lane worked and the others were idle: (lane, first, end)."""
    best: tuple[LaneActivity, int, int] | None = None
    current: tuple[LaneActivity, int] | None = None
    for index in range(buckets + 1):
        alone = None
        if index < buckets:
            working = [lane for lane in lanes if _working(lane, index)]
            if len(working) == 1 and all(_idle(lane, index) for lane in lanes if lane is not working[0]):
                alone = working[0]
        if current is not None and (alone is None or alone.tid != current[0].tid):
            if best is None or index - current[1] > best[2] - best[1]:
                best = (current[0], current[1], index)
            current = None
        if alone is not None and current is None:
            current = (alone, index)
    return best


def _at(series: Sequence[float], index: int) -> float:
    return series[index] if index < len(series) else 0.0


def straggler(e: Evidence) -> Suggestion | None:
    if not _logical(e) or not e.has_cpu or e.buckets <= 0:
        return None
    loading = _loading(e)
    if not loading or _threads_used(e) < 2:
        return None
    found = _lone_stretch(loading, e.buckets)
    if found is None:
        return None
    lane, first, end = found
    share = (end - first) / e.buckets
    if share < STRAGGLER_MIN_SHARE:
        return None
    states = lane.state_series[first:end]
    index_building = sum(1 for state in states if _INDEX_BUILD.search(state))
    if states and index_building * 2 >= len(states):
        return None
    slice_us = (e.t1_us - e.t0_us) / e.buckets
    stretch = Interval(int(e.t0_us + first * slice_us), int(e.t0_us + end * slice_us))
    stretch_s = (stretch.t1_us - stretch.t0_us) / 1e6
    threads = min(_threads_used(e), e.host.cpus)
    chunk = e.job.chunk_size or 64 << 20
    new_chunk = max(MIN_CHUNK, chunk // 4)
    settings = []
    if e.job.runner != "loader":
        settings.append(Setting("runner", "loader", e.job.runner))
    settings.append(Setting("chunk_size", new_chunk, chunk))
    others = _threads_used(e) - 1
    return Suggestion(
        rule="straggler",
        title="One thread finished the restore alone: split big tables into smaller chunks",
        seen=(
            f"For {secs(stretch_s)} ({pct(share)} of the restore) only {lane.role} was loading; the other "
            f"{others} loading thread{'s were' if others > 1 else ' was'} idle, with nothing left to load."
        ),
        numbers=(("alone for", secs(stretch_s)), ("share of the restore", pct(share)), ("chunk size", mib(chunk))),
        where=Where((lane.tid,), (stretch,)),
        change=Change(tuple(settings)),
        expected=(
            f"Up to {secs(stretch_s * (1 - 1 / threads))} shorter ({pct(share * (1 - 1 / threads))}): with "
            f"{mib(new_chunk)} chunks the loader gives a big table to several connections, so all {threads} work "
            "until the end."
        ),
        expected_gain=share * (1 - 1 / threads),
        caveat="More chunks mean more, smaller transactions: a little more commit work; the data is the same.",
    )


# --- SQL parsing and the format --------------------------------------------------------------------

# Server CPU for the same rows loaded with LOAD DATA from delimited text, over INSERT statements: the sysbench
# set (4 x 1M rows) with our loader on 2 threads, connection threads on a CPU 18.0 s from --tab files vs
# 27.4 s from the mysqldump .sql (bench/advisor.py; the restore took 36.9 s vs 54.7 s).
DELIMITED_SERVER_CPU_RATIO = 0.65
STATEMENT_FORMATS = frozenset({"mysqldump", "mydumper"})
# Cheapest to read first: no decompression, then zstd (decodes fastest), then gzip, then bzip2.
_COMPRESSION_ORDER = {None: 0, "zstd": 1, "gzip": 2, "bzip2": 3}


def _best(alternatives: Sequence[Alternative]) -> Alternative | None:
    if not alternatives:
        return None
    return min(alternatives, key=lambda a: (_COMPRESSION_ORDER.get(a.compression, 4), a.size_bytes, a.path))


def _alternative_settings(e: Evidence, alternative: Alternative) -> tuple[Setting, ...]:
    settings = [Setting("backup_path", alternative.path, e.job.backup_path)]
    if alternative.database is not None and alternative.database != e.job.database:
        settings.append(Setting("database", alternative.database, e.job.database))
    if e.job.runner not in ("loader", "auto"):
        settings.append(Setting("runner", "loader", e.job.runner))
    return tuple(settings)


def delimited_format(e: Evidence) -> Suggestion | None:
    """The server's CPUs were the limit and they were parsing SQL: delimited rows cost it less per row."""
    fmt = e.job.backup_format
    if not _logical(e) or not e.has_cpu or fmt not in STATEMENT_FORMATS:
        return None
    loading = _loading(e)
    demand = sum(_demand(lane, e.seconds) for lane in loading)
    cores = e.host.cpus
    if demand < SATURATED_DEMAND * cores:
        return None
    loading_cpu = sum(lane.running_s for lane in loading)
    gain = (1 - DELIMITED_SERVER_CPU_RATIO) * _share(loading_cpu, _our_cpu_s(e))
    alternative = _best([a for a in e.alternatives if a.delimited])
    if alternative is not None:
        change = Change(_alternative_settings(e, alternative))
        how = f"restore {alternative.path} ({alternative.format}), which holds the same tables as delimited rows"
    else:
        change = Change(
            (Setting("backup.tool", "mysqldump-tab", fmt),),
            rerun=False,
            note="No backup of the same tables in a delimited format was found under the backup roots: take the "
            "next backup with mysqldump --tab (or MySQL Shell's dump), then restore that with the loader.",
        )
        how = "restore a delimited backup of the same tables (mysqldump --tab, MySQL Shell)"
    return Suggestion(
        rule="delimited_format",
        title="The server's CPUs were busy parsing SQL: restore a delimited backup",
        seen=(
            f"The {len(loading)} loading threads wanted {demand:.1f} of the {cores} cores for the whole "
            f"{secs(e.seconds)} ({secs(loading_cpu)} on a CPU) executing INSERT statements of a {fmt} dump: "
            "the restore was CPU-bound in the server."
        ),
        numbers=(
            ("cores wanted by the loading threads", f"{demand:.1f} of {cores}"),
            ("loading threads on a CPU", secs(loading_cpu)),
            ("format", fmt),
        ),
        where=Where(_tids(loading), _phase(e)),
        change=change,
        expected=(
            f"About {1 / max(1 - gain, 0.05):.1f}x faster: {how}. LOAD DATA of delimited rows took "
            f"{pct(DELIMITED_SERVER_CPU_RATIO)} of the server CPU of INSERT statements for the same rows here."
        ),
        expected_gain=gain,
        caveat=(
            "The other backup must hold the same data as this one (it was matched by its tables; check when it was "
            "taken). Delimited files carry no triggers, routines or views of their own beyond the table scripts."
        ),
    )


# CPU seconds to decompress one MB of compressed dump, measured here with the libraries the worker reads
# with (Python's zlib and zstandard) on 300 MB of the sysbench .sql: gzip -6 1.1 s per 100 MB compressed
# (191 MB/s of SQL out), zstd -3 0.33 s (614 MB/s out); bzip2 (pbzip2 -9, Python's bz2 through
# worker.runners.dump_stream) on the first 300 MB of it: 12.4 s for 132 MB compressed (24 MB/s of SQL out).
DECODE_S_PER_COMPRESSED_MB = {"gzip": 0.011, "zstd": 0.0033, "bzip2": 0.094}
# Decompression took at least this share of the CPU the restore used: worth reading another copy.
DECOMPRESS_SHARE_MIN = 0.10


def decompression(e: Evidence) -> Suggestion | None:
    compression = e.job.backup_compression
    if not _logical(e) or not e.has_cpu or compression not in DECODE_S_PER_COMPRESSED_MB or not e.job.backup_bytes:
        return None
    decode_s = e.job.backup_bytes / 1e6 * DECODE_S_PER_COMPRESSED_MB[compression]
    used = _our_cpu_s(e) + decode_s  # the worker's decompression is not on a sampled lane
    share = _share(decode_s, used)
    if share < DECOMPRESS_SHARE_MIN:
        return None
    cheaper = [
        a
        for a in e.alternatives
        if _COMPRESSION_ORDER.get(a.compression, 4) < _COMPRESSION_ORDER.get(compression, 4)
        and a.delimited == (e.job.backup_format not in STATEMENT_FORMATS)
    ]
    alternative = _best(cheaper)
    after = (
        0.0
        if alternative is None or alternative.compression is None
        else alternative.size_bytes / 1e6 * DECODE_S_PER_COMPRESSED_MB.get(alternative.compression, 0.0)
    )
    gain = _share(max(decode_s - after, 0.0), used)
    if alternative is not None:
        change = Change(_alternative_settings(e, alternative))
        how = f"read {alternative.path} ({alternative.compression or 'not compressed'})"
    else:
        change = Change(
            (Setting("backup.compression", "zstd", compression),),
            rerun=False,
            note="No copy of this backup with a cheaper compression was found under the backup roots: take the next "
            "backup with zstd (or decompress this one once before restoring it).",
        )
        how = "read a zstd (or uncompressed) copy"
    return Suggestion(
        rule="decompression",
        title=f"Decompressing {compression} took a large share of the CPU",
        seen=(
            f"Decompressing the {mib(e.job.backup_bytes)} {compression} backup costs about {secs(decode_s)} of CPU "
            f"(measured rate), {pct(share)} of the CPU this restore used."
        ),
        numbers=(("decompression CPU (estimated)", secs(decode_s)), ("share of the restore's CPU", pct(share))),
        where=Where(_tids(_loading(e)), _phase(e)),
        change=change,
        expected=f"Up to {pct(gain)} shorter: {how}, which costs {secs(after)} to decode.",
        expected_gain=gain,
        caveat="A copy with another compression must be the same backup; an uncompressed one takes more disk.",
    )


# --- durability settings ---------------------------------------------------------------------------

# The loading threads spent this share of their time in fsync, that is waiting at COMMIT for the redo log
# (and binary log) to reach the disk. Below it, fsync per commit costs less than two runs differ.
COMMIT_FSYNC_SHARE_MIN = 0.05


def redo_fsync_per_commit(e: Evidence) -> Suggestion | None:
    if not e.has_trace or e.variable_int("innodb_flush_log_at_trx_commit") != 1:
        return None
    loading = _loading(e) if _logical(e) else []
    fsync_s = sum(lane.fsync_s for lane in loading)
    share = _share(fsync_s, _lives(loading))
    if share < COMMIT_FSYNC_SHARE_MIN:
        return None
    return Suggestion(
        rule="redo_fsync_per_commit",
        title="Every commit waited for the redo log to reach the disk",
        seen=(
            f"The loading threads spent {secs(fsync_s)} ({pct(share)} of their time) in fsync at commit, with "
            f"innodb_flush_log_at_trx_commit=1; an fsync took {e.io.fsync_p50_us / 1000:.2f} ms (median)."
        ),
        numbers=(("in fsync at commit", secs(fsync_s)), ("share of the loading threads' time", pct(share))),
        where=Where(_tids([lane for lane in loading if lane.fsync_s > 0]), _phase(e)),
        change=_server_change(
            e, "innodb_flush_log_at_trx_commit", 2, "SET GLOBAL innodb_flush_log_at_trx_commit = 2 for the restore."
        ),
        expected=f"Up to {pct(share)} shorter: commits write the log to the OS and it reaches the disk once a second.",
        expected_gain=share,
        caveat=(
            "A crash of the OS or a power loss loses up to a second of commits (a crash of the server alone loses "
            "nothing): fine for a scratch restore you would start over; set it back to 1 before the server takes "
            "production writes."
        ),
    )


# The binary log took at least this share of the bytes restored: a restore into a scratch server writes
# every row twice (table and binlog) for nothing.
BINLOG_SHARE_MIN = 0.25
# Writing the binary log costs about this share of a restore's time for each byte logged per byte restored:
# row events are formatted and written by the committing thread. Not measured here (the sysbench restore
# ran with log_bin off); MariaDB's own figure for bulk loads is 10-20%.
BINLOG_COST = 0.15


def binary_log(e: Evidence) -> Suggestion | None:
    if not _logical(e) or e.variable_on("log_bin") is not True or not e.job.backup_bytes:
        return None
    logged = e.status_delta.get("Binlog_bytes_written") or float(e.io.bytes_written_by_file_kind.get("binlog", 0))
    share = _share(logged, e.job.backup_bytes)
    if share < BINLOG_SHARE_MIN:
        return None
    gain = min(share, 1.0) * BINLOG_COST
    return Suggestion(
        rule="binary_log",
        title="The restore was written to the binary log too",
        seen=f"The server wrote {mib(logged)} of binary log while restoring {mib(e.job.backup_bytes)}.",
        numbers=(("binary log written", mib(logged)), ("per byte restored", pct(share))),
        where=Where(_tids(_loading(e)), _phase(e)),
        change=_server_change(e, "log_bin", False, "restore with SET SESSION sql_log_bin = 0 (the loader does)."),
        expected=f"About {pct(gain)} shorter (not measured here): no row events to format, write and sync.",
        expected_gain=gain,
        caveat=(
            "Replicas and point-in-time recovery from this server do not see the restored rows: take a fresh backup "
            "(or rebuild replicas) after the restore."
        ),
    )


# At least this many pages (16 MiB) went through the doublewrite buffer: enough to matter if writing did.
DBLWR_MIN_PAGES = 1024


def doublewrite(e: Evidence) -> Suggestion | None:
    if e.variable_on("innodb_doublewrite") is not True:
        return None
    pages = e.status_delta.get("Innodb_dblwr_pages_written", 0.0)
    written = e.status_delta.get("Innodb_pages_written", 0.0)
    if pages < DBLWR_MIN_PAGES or not _storage_bound(e):
        return None
    share_of_writes = _share(pages, pages + written)
    pressure = _storage_pressure(e)
    gain = pressure * share_of_writes
    flushers = [lane for lane in e.group("background") if re.search(r"page cleaner|io write", lane.role)]
    loading = _loading(e)
    waited = _share(sum(lane.io_wait_s for lane in loading), _lives(loading))
    return Suggestion(
        rule="doublewrite",
        title="Every page was written twice (doublewrite) while the storage held the restore up",
        seen=(
            f"{int(pages)} pages went through the doublewrite buffer ({pct(share_of_writes)} of page writes) while "
            f"the loading threads waited on the disk {pct(waited)} of their time (iowait {e.iowait_pct or 0:.1f}%)."
        ),
        numbers=(("doublewrite pages", str(int(pages))), ("storage pressure", pct(pressure))),
        where=Where(_tids(flushers or _loading(e)), _phase(e)),
        change=_server_change(
            e, "innodb_doublewrite", False, "restart it with --innodb-doublewrite=0 for the restore."
        ),
        expected=f"Up to {pct(gain)} shorter: half the page writes, on storage that was the bottleneck.",
        expected_gain=gain,
        caveat=(
            "Without doublewrite a crash in the middle of a page write leaves a torn page InnoDB cannot repair: only "
            "for a scratch restore; turn it back on (a restart) before production use."
        ),
    )


# --- redo log and buffer pool --------------------------------------------------------------------

# The checkpoint age sat at or above this share of its maximum (Innodb_checkpoint_max_age) for at least
# REDO_PRESSURE_TIME_MIN of the phase: the redo log was full, and InnoDB flushed pages to make room.
REDO_FULL_SHARE = 0.75
REDO_PRESSURE_TIME_MIN = 0.25
REDO_TARGET_MIN = 1 << 30
REDO_TARGET_MAX = 4 << 30


def _pressured(e: Evidence, limit_mb: float) -> tuple[float, tuple[Interval, ...]]:
    """Share of the samples at or above the limit, and the stretches they form (the longest five)."""
    series = e.checkpoint_age_mb
    if series is None or not series.values:
        return 0.0, ()
    above = [value >= limit_mb for value in series.values]
    stretches: list[Interval] = []
    start: int | None = None
    for index, flag in enumerate([*above, False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            t0 = series.t_us[max(start - 1, 0)]
            t1 = series.t_us[min(index, len(series.t_us) - 1)]
            stretches.append(Interval(t0, max(t1, t0 + 1)))
            start = None
    stretches.sort(key=lambda s: s.t1_us - s.t0_us, reverse=True)
    return sum(above) / len(above), tuple(sorted(stretches[:5], key=lambda s: s.t0_us))


def small_redo_log(e: Evidence) -> Suggestion | None:
    max_age = _float(e.status_end.get("Innodb_checkpoint_max_age"))
    log_size = e.variable_int("innodb_log_file_size")
    if not max_age or not log_size:
        return None
    limit_mb = REDO_FULL_SHARE * max_age / 1e6
    share, stretches = _pressured(e, limit_mb)
    if share < REDO_PRESSURE_TIME_MIN:
        return None
    flushers = [lane for lane in e.group("background") if re.search(r"page cleaner|io write|innodb worker", lane.role)]
    flush_cpu = sum(lane.running_s for lane in flushers)
    loading = _loading(e)
    stalled = _share(sum(lane.io_wait_s for lane in loading), _lives(loading))
    cores = e.host.cpus
    saturated = sum(_demand(lane, e.seconds) for lane in e.lanes) >= SATURATED_DEMAND * cores
    # Flushing costs the restore only what the loading threads waited for, plus, when the CPUs were the limit,
    # the CPU the flushing threads took from them.
    gain = share * (stalled + (_share(flush_cpu, _our_cpu_s(e)) if saturated else 0.0))
    target = max(REDO_TARGET_MIN, _pow2_at_least(4 * log_size))
    target = min(target, REDO_TARGET_MAX)
    if target <= log_size:
        return None
    return Suggestion(
        rule="small_redo_log",
        title=f"The redo log was full {pct(share)} of the time: a bigger one lets InnoDB flush lazily",
        seen=(
            f"The checkpoint age stayed at or above {pct(REDO_FULL_SHARE)} of its maximum ({mib(max_age)}, from "
            f"innodb_log_file_size={mib(log_size)}) for {pct(share)} of the restore; the flushing threads used "
            f"{secs(flush_cpu)} of CPU and the loading threads waited on the disk {pct(stalled)} of their time."
        ),
        numbers=(
            ("time with a full redo log", pct(share)),
            ("innodb_log_file_size", mib(log_size)),
            ("flushing threads on a CPU", secs(flush_cpu)),
        ),
        where=Where(_tids(flushers), stretches or _phase(e)),
        change=_server_change(
            e, "innodb_log_file_size", size_option(target), f"SET GLOBAL innodb_log_file_size = {target}."
        ),
        expected=(
            f"{'Little' if gain < MIN_GAIN else f'Up to {pct(gain)}'}: with {size_option(target)} of redo, pages are "
            "flushed later and fewer times; it saves what the flushing cost this run, which on a CPU-bound restore "
            "is little (tuned server settings: 69 s vs 72 s here)."
        ),
        expected_gain=gain,
        caveat=(
            f"Crash recovery reads up to the whole redo log: a bigger one takes longer to recover after a crash, and "
            f"its file takes {size_option(target)} of disk."
        ),
    )


def _float(value: object) -> float | None:
    try:
        return float(str(value)) if value is not None else None
    except ValueError:
        return None


def _pow2_at_least(value: float) -> int:
    power = 1 << 20
    while power < value:
        power <<= 1
    return power


# At least this many pages (160 MiB) were read from disk during the load, and the loading threads spent at
# least BP_READ_SHARE_MIN of their time reading pages: the buffer pool could not hold what the load touches
# (secondary index pages, mostly).
BP_READS_MIN = 10_000
BP_READ_SHARE_MIN = 0.05
# The buffer pool is sized to hold the restored data, but never more than this share of the host's memory.
BP_MAX_MEMORY_SHARE = 0.5


def small_buffer_pool(e: Evidence) -> Suggestion | None:
    if not _logical(e) or not e.has_trace:
        return None
    reads = e.status_delta.get("Innodb_buffer_pool_reads", 0.0)
    loading = _loading(e)
    # A read the thread waited for is both in its read operations and in uninterruptible sleep: asynchronous
    # read-ahead (io_uring) shows up as long reads while the thread goes on working.
    read_s = sum(min(lane.data_read_s, lane.io_wait_s) for lane in loading)
    share = _share(read_s, _lives(loading))
    current = e.variable_int("innodb_buffer_pool_size")
    if reads < BP_READS_MIN or share < BP_READ_SHARE_MIN or not current:
        return None
    wanted = _pow2_at_least(1.25 * (e.job.backup_bytes or 2 * current))
    cap = int(BP_MAX_MEMORY_SHARE * e.host.memory_bytes) if e.host.memory_bytes else wanted
    target = min(max(wanted, 2 * current), _pow2_below(cap))
    if target <= current:
        return None
    return Suggestion(
        rule="small_buffer_pool",
        title="Pages the load needed were not in the buffer pool",
        seen=(
            f"The server read {int(reads)} pages from disk during the restore; the loading threads spent "
            f"{secs(read_s)} ({pct(share)} of their time) waiting for them, with a {mib(current)} buffer pool."
        ),
        numbers=(("pages read from disk", str(int(reads))), ("loading threads reading", pct(share))),
        where=Where(_tids([lane for lane in loading if lane.data_read_s > 0]), _phase(e)),
        change=_server_change(
            e, "innodb_buffer_pool_size", size_option(target), f"SET GLOBAL innodb_buffer_pool_size = {target}."
        ),
        expected=f"Up to {pct(share)} shorter: the pages stay in memory and the reads go away.",
        expected_gain=share,
        caveat=(
            f"The sandbox takes {size_option(target)} of the worker's memory (at most "
            f"{pct(BP_MAX_MEMORY_SHARE)} of it): other jobs on the same worker have that much less."
        ),
    )


def _pow2_below(value: int) -> int:
    power = 1 << 20
    while power * 2 <= value:
        power <<= 1
    return power


# --- locks -----------------------------------------------------------------------------------------

# The loading connections spent this share of their time waiting for the table's AUTO-INC lock (a
# processlist state naming it): consecutive lock mode serialises their inserts into one table.
AUTOINC_WAIT_SHARE_MIN = 0.05
_AUTOINC_STATE = re.compile(r"auto[-_ ]?inc", re.IGNORECASE)


def autoinc_lock(e: Evidence) -> Suggestion | None:
    mode = e.variable_int("innodb_autoinc_lock_mode")
    if not _logical(e) or mode is None or mode == 2:
        return None
    loading = _loading(e)
    waiting = {
        lane.tid: sum(seconds for state, seconds in lane.states.items() if _AUTOINC_STATE.search(state))
        for lane in loading
    }
    waited = sum(waiting.values())
    share = _share(waited, _lives(loading))
    if share < AUTOINC_WAIT_SHARE_MIN:
        return None
    return Suggestion(
        rule="autoinc_lock",
        title="Loading threads queued for the AUTO-INC lock",
        seen=(
            f"The loading connections spent {secs(waited)} ({pct(share)} of their time) waiting for a table's "
            f"AUTO-INC lock, with innodb_autoinc_lock_mode={mode}."
        ),
        numbers=(("waiting for AUTO-INC", secs(waited)), ("share", pct(share))),
        where=Where(tuple(tid for tid, seconds in waiting.items() if seconds > 0), _phase(e)),
        change=_server_change(
            e, "innodb_autoinc_lock_mode", 2, "restart it with --innodb-autoinc-lock-mode=2 for the restore."
        ),
        expected=f"Up to {pct(share)} shorter: with mode 2 (interleaved) inserts into one table do not queue.",
        expected_gain=share,
        caveat=(
            "Interleaved mode hands out auto-increment values of concurrent multi-row inserts interleaved (rows keep "
            "the values the dump gives them): unsafe with statement-based binary logging (binlog_format=STATEMENT)."
        ),
    )


# --- storage ---------------------------------------------------------------------------------------

# fsync taking this long at the median means slow storage (this machine's disk: 0.3-0.4 ms).
SLOW_FSYNC_P50_US = 2000
SLOW_FSYNC_MIN_COUNT = 50


def slow_fsync(e: Evidence) -> Suggestion | None:
    if not e.has_trace or e.io.fsyncs < SLOW_FSYNC_MIN_COUNT or e.io.fsync_p50_us < SLOW_FSYNC_P50_US:
        return None
    method = e.variable("innodb_flush_method")
    if method == "O_DIRECT_NO_FSYNC":
        return None
    loading = _loading(e) if _logical(e) else e.group("tool")
    waited = _share(sum(lane.io_wait_s + lane.fsync_s for lane in loading), _lives(loading))
    gain = waited * 0.5
    return Suggestion(
        rule="slow_fsync",
        title=f"The storage took {e.io.fsync_p50_us / 1000:.1f} ms per fsync",
        seen=(
            f"{e.io.fsyncs} fsyncs took {e.io.fsync_p50_us / 1000:.1f} ms each (median), {secs(e.io.fsync_total_s)} "
            f"in all; the {'loading' if _logical(e) else 'prepare'} threads waited on the disk {pct(waited)} of "
            "their time."
        ),
        numbers=(("fsync median", f"{e.io.fsync_p50_us / 1000:.1f} ms"), ("fsyncs", str(e.io.fsyncs))),
        where=Where(_tids(loading), _phase(e)),
        change=_server_change(
            e, "innodb_flush_method", "O_DIRECT_NO_FSYNC", "restart it with --innodb-flush-method=O_DIRECT_NO_FSYNC."
        ),
        expected=(
            f"Up to {pct(gain)} shorter: data files written with O_DIRECT are not fsynced after each batch of page "
            "writes (the redo log still is); about half of the fsync waits here were for data files."
        ),
        expected_gain=gain,
        caveat=(
            "O_DIRECT_NO_FSYNC relies on the file system keeping file sizes without an fsync (ext4 and XFS do): "
            "for scratch servers; and storage this slow also makes every commit slow."
        ),
    )


# Data-file writes of at most SMALL_WRITE_BYTES, no more than RANDOM_MAX_SEQUENTIAL_PCT of them sequential,
# at least RANDOM_WRITES_MIN of them, on storage that held the restore up: secondary index pages updated in
# random order, flushed one by one.
RANDOM_WRITES_MIN = 10_000
RANDOM_MAX_SEQUENTIAL_PCT = 50.0
SMALL_WRITE_BYTES = 16 << 10


def random_small_writes(e: Evidence) -> Suggestion | None:
    io = e.io
    if not _logical(e) or not e.has_trace or io.data_writes < RANDOM_WRITES_MIN:
        return None
    if io.data_sequential_pct > RANDOM_MAX_SEQUENTIAL_PCT or io.data_write_p50_bytes > SMALL_WRITE_BYTES:
        return None
    if not _storage_bound(e):
        return None
    random_share = 1 - io.data_sequential_pct / 100
    gain = _storage_pressure(e) * random_share
    if e.job.runner != "loader":
        change = Change((Setting("runner", "loader", e.job.runner),))
        how = "the loader builds secondary indexes after the rows, sorted, so index pages are written in order"
    else:
        current = e.variable_int("innodb_buffer_pool_size") or 128 << 20
        cap = int(BP_MAX_MEMORY_SHARE * e.host.memory_bytes) if e.host.memory_bytes else 4 * current
        target = min(4 * current, _pow2_below(cap))
        if target <= current:
            return None
        change = _server_change(
            e, "innodb_buffer_pool_size", size_option(target), f"SET GLOBAL innodb_buffer_pool_size = {target}."
        )
        how = "a bigger buffer pool keeps index pages in memory until many changes to each are written at once"
    return Suggestion(
        rule="random_small_writes",
        title="Small random writes to the data files on storage that held the restore up",
        seen=(
            f"{io.data_writes} writes to data files, {100 - io.data_sequential_pct:.0f}% at random offsets, "
            f"{io.data_write_p50_bytes // 1024} KiB at the median; 95% finished within "
            f"{io.data_write_p95_us / 1000:.1f} ms."
        ),
        numbers=(("data-file writes", str(io.data_writes)), ("random", pct(random_share))),
        where=Where(_tids(e.group("background")), _phase(e)),
        change=change,
        expected=f"Up to {pct(gain)} shorter: {how}.",
        expected_gain=gain,
        caveat="None for the data.",
    )


# Simulated AIO (innodb_use_native_aio=0) and the storage held the restore up: page IO goes through a few
# threads doing plain pread/pwrite. (io_uring vs libaio measured +34% and -18% in two runs here: noise, so
# that choice gets no rule.)
def aio_mode(e: Evidence) -> Suggestion | None:
    simulated = e.job.aio_mode == "off" or e.variable_on("innodb_use_native_aio") is False
    if not simulated or not _storage_bound(e):
        return None
    gain = _storage_pressure(e) * 0.5
    return Suggestion(
        rule="aio_mode",
        title="Page IO went through simulated AIO",
        seen=(
            "The server ran with innodb_use_native_aio=0 (plain pread/pwrite from a few IO threads) while the loading "
            f"threads waited on the disk {pct(_storage_pressure(e))} of the time."
        ),
        numbers=(("AIO", "simulated"), ("storage pressure", pct(_storage_pressure(e)))),
        where=Where(_tids([lane for lane in e.group("background") if "io " in lane.role]), _phase(e)),
        change=_server_change(e, "aio_mode", "io_uring", "restart it with --innodb-use-native-aio=1."),
        expected=f"Up to {pct(gain)} shorter: io_uring keeps many page reads and writes in flight at once.",
        expected_gain=gain,
        caveat="strace cannot see io_uring's page IO: capture such a run with eBPF or FUSE.",
    )


# --- prepare ---------------------------------------------------------------------------------------

# A prepare whose redo did not fit in --use-memory applies it in batches, each ending with a flush of its
# pages. Measured here, `mariabackup --prepare` alone on copies of a backup taken under sysbench write load (1.4 GB
# of redo), two rounds in alternating order: 16M 102 batches 17.8/25.5 s, 96M (the default) 14 batches 10.7/11.4 s,
# 512M 3 batches 9.5/9.2 s, 2G 2 batches 8.7/9.7 s; CPU time 8.5-10.5 s throughout. That is 0.12-0.15 s a batch,
# and nothing more once a few batches remain (FIELD-NOTES: 10.0 s vs 10.3 s with 2G): the prepare is CPU-bound
# parsing redo, so the target is a few batches, not one.
PREPARE_BATCHES_MIN = 2
PREPARE_BATCH_COST_S = 0.13
PREPARE_TARGET_BATCHES = 4
DEFAULT_USE_MEMORY = 96 << 20


def _size_bytes(text: str | None) -> int | None:
    if not text:
        return None
    match = re.fullmatch(r"(\d+)([KMGkmg]?)", text)
    if match is None:
        return None
    return int(match[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[match[2].lower()]


def prepare_batches(e: Evidence) -> Suggestion | None:
    prepare = e.prepare
    if e.job.kind != "prepare" or prepare is None or prepare.batches < PREPARE_BATCHES_MIN:
        return None
    memory = _size_bytes(prepare.use_memory) or DEFAULT_USE_MEMORY
    wanted = _pow2_at_least(memory * prepare.batches / PREPARE_TARGET_BATCHES)
    cap = int(BP_MAX_MEMORY_SHARE * e.host.memory_bytes) if e.host.memory_bytes else wanted
    target = min(max(wanted, 2 * memory), _pow2_below(cap))
    if target <= memory:
        return None
    batches_after = max(1, round(prepare.batches * memory / target))
    saved = (prepare.batches - batches_after) * PREPARE_BATCH_COST_S
    gain = min(_share(saved, e.seconds), 0.9)
    tools = e.group("tool")
    return Suggestion(
        rule="prepare_batches",
        title=f"The prepare applied the redo log in {prepare.batches} batches: give it more memory",
        seen=(
            f"{mib(prepare.redo_bytes or 0)} of redo did not fit in --use-memory "
            f"{prepare.use_memory or '96M (the default)'}: recovery ran {prepare.batches} batches, each flushing its "
            f"pages before the next (prepare {secs(prepare.prepare_seconds)})."
        ),
        numbers=(
            ("recovery batches", str(prepare.batches)),
            ("--use-memory", prepare.use_memory or "96M"),
            ("redo applied", mib(prepare.redo_bytes or 0)),
        ),
        where=Where(_tids(tools), _phase(e)),
        change=Change((Setting("use_memory", size_option(target), prepare.use_memory),)),
        expected=(
            f"About {secs(saved)} shorter ({pct(gain)}): about {batches_after} "
            f"batch{'es' if batches_after != 1 else ''} with {size_option(target)}, at "
            f"~{PREPARE_BATCH_COST_S * 1000:.0f} ms a batch measured here. More memory than a few batches need buys "
            "nothing: the prepare is CPU-bound parsing redo."
        ),
        expected_gain=gain,
        caveat=f"The prepare takes {size_option(target)} of the worker's memory while it runs.",
    )


# The prepare's threads waited on reads (uninterruptible IO sleep) this share of the phase: page reads were
# the limit, and more read IO threads keep more of them in flight.
PREPARE_IO_WAIT_MIN = 0.25
DEFAULT_READ_IO_THREADS = 4


def prepare_read_threads(e: Evidence) -> Suggestion | None:
    if e.job.kind != "prepare" or not e.has_cpu:
        return None
    tools = e.group("tool")
    if not tools:
        return None
    main = max(tools, key=lambda lane: lane.running_s + lane.io_wait_s)
    waited = _share(main.io_wait_s + main.data_read_s, e.seconds)
    current = e.job.read_io_threads or DEFAULT_READ_IO_THREADS
    if waited < PREPARE_IO_WAIT_MIN or current >= 64:
        return None
    target = min(current * 2, 64)
    gain = waited * 0.5
    return Suggestion(
        rule="prepare_read_threads",
        title="The prepare waited for page reads",
        seen=(
            f"{main.role} (thread {main.tid}) waited for reads {pct(waited)} of the prepare, with {current} read IO "
            "threads."
        ),
        numbers=(("waiting for reads", pct(waited)), ("read IO threads", str(current))),
        where=Where((main.tid,), _phase(e)),
        change=Change((Setting("read_io_threads", target, e.job.read_io_threads),)),
        expected=f"Up to {pct(gain)} shorter: {target} read IO threads keep twice as many page reads in flight.",
        expected_gain=gain,
        caveat="More concurrent reads load the worker's storage; harmless for the backup, which is only read.",
    )


@dataclass(frozen=True)
class Rule:
    id: str
    check: Callable[[Evidence], Suggestion | None]
    needs: str  # what evidence it reads: "cpu", "trace", "server", "prepare"


RULES: tuple[Rule, ...] = (
    Rule("parallel_load", parallel_load, "cpu"),
    Rule("too_many_threads", too_many_threads, "cpu"),
    Rule("straggler", straggler, "cpu"),
    Rule("delimited_format", delimited_format, "cpu"),
    Rule("decompression", decompression, "cpu"),
    Rule("redo_fsync_per_commit", redo_fsync_per_commit, "trace"),
    Rule("binary_log", binary_log, "server"),
    Rule("doublewrite", doublewrite, "server"),
    Rule("small_redo_log", small_redo_log, "server"),
    Rule("small_buffer_pool", small_buffer_pool, "trace"),
    Rule("autoinc_lock", autoinc_lock, "server"),
    Rule("slow_fsync", slow_fsync, "trace"),
    Rule("random_small_writes", random_small_writes, "trace"),
    Rule("aio_mode", aio_mode, "server"),
    Rule("prepare_batches", prepare_batches, "prepare"),
    Rule("prepare_read_threads", prepare_read_threads, "cpu"),
)


def advise(e: Evidence) -> list[Suggestion]:
    """Every rule that fires, the most to gain first."""
    found = [suggestion for rule in RULES if (suggestion := rule.check(e)) is not None]
    return sorted(found, key=lambda s: (-s.expected_gain, s.rule))
