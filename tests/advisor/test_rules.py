"""Each rule on synthetic evidence: it fires just past its threshold and stays silent just below it; then what
it proposes (the change, where it points, what it expects) for the cases a DBA meets."""

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from app.advisor import rules
from app.advisor.evidence import Alternative, Evidence, Interval, Series
from app.advisor.suggestion import Suggestion
from tests.advisor.builders import BUCKETS, GIB, SECONDS, T0, T1, lane, prepare, quiet, with_job, with_variables


@dataclass(frozen=True)
class Case:
    name: str
    check: Callable[[Evidence], Suggestion | None]
    build: Callable[[float], Evidence]
    threshold: float
    step: float
    fires_above: bool = True  # False: the rule fires at or below the threshold (a maximum)

    def __str__(self) -> str:
        return self.name


def single_stream(demand: float) -> Evidence:
    connection = lane(1, role="connection 8 (mysql)", running=demand * SECONDS * 0.6, runnable=demand * SECONDS * 0.4)
    return with_job(quiet(lanes=(connection,)), runner="mysql", threads=1)


def waiting_threads(off_share: float, free_cores: float = 0.5) -> Evidence:
    lanes = tuple(lane(tid, running=SECONDS * (1 - off_share), blocked=SECONDS * off_share) for tid in (1, 2))
    return quiet(lanes=lanes, busy_cores=2 - free_cores)


def oversubscribed(demand: float, threads: int = 5) -> Evidence:
    each = demand / threads * SECONDS
    lanes = tuple(lane(tid, running=each / 2, runnable=each / 2) for tid in range(1, threads + 1))
    return with_job(quiet(lanes=lanes), threads=threads)


def lone_tail(buckets_alone: int, total: int = 100, states: tuple[str, ...] = ()) -> Evidence:
    busy = (1.0,) * total
    early = (1.0,) * (total - buckets_alone) + (0.0,) * buckets_alone
    lanes = (lane(1, series=busy, state_series=states), lane(2, series=early))
    return quiet(lanes=lanes, buckets=total)


def saturated(demand: float, alternatives: tuple[Alternative, ...] = ()) -> Evidence:
    each = demand / 2 * SECONDS
    lanes = (lane(1, running=each * 0.8, runnable=each * 0.2), lane(2, running=each * 0.8, runnable=each * 0.2))
    return quiet(lanes=lanes, alternatives=alternatives)


def compressed(share: float, compression: str = "gzip") -> Evidence:
    e = quiet()
    ours = sum(x.running_s for x in e.lanes)
    decode_s = share * ours / (1 - share)
    return with_job(
        e,
        backup_compression=compression,
        backup_bytes=int(decode_s / rules.DECODE_S_PER_COMPRESSED_MB[compression] * 1e6),
    )


def commit_fsync(share: float) -> Evidence:
    return quiet(lanes=(lane(1, fsync=share * SECONDS), lane(2, fsync=share * SECONDS)))


def binlogged(share: float) -> Evidence:
    e = with_variables(quiet(), log_bin="ON")
    return replace(e, status_delta={**e.status_delta, "Binlog_bytes_written": share * 800_000_000})


def storage_bound(iowait_pct: float, **changes: Any) -> Evidence:
    return quiet(iowait_pct=iowait_pct, **changes)


def doublewritten(pages: float) -> Evidence:
    return storage_bound(10.0, status_delta={"Innodb_dblwr_pages_written": pages, "Innodb_pages_written": 5000.0})


def full_redo(samples_above: int, total: int = 100) -> Evidence:
    limit_mb = rules.REDO_FULL_SHARE * 80_819_529 / 1e6
    values = tuple(limit_mb + 1 if i < samples_above else limit_mb / 2 for i in range(total))
    times = tuple(T0 + int(i * (T1 - T0) / total) for i in range(total))
    e = with_variables(quiet(), innodb_log_file_size=str(96 << 20))
    return replace(
        e,
        checkpoint_age_mb=Series(times, values),
        status_end={"Innodb_checkpoint_max_age": "80819529"},
    )


def page_reads(share: float, reads: float = 50_000) -> Evidence:
    each = share * SECONDS  # read and waited for: in reads and in IO sleep
    lanes = (lane(1, io_wait=each, data_read=each), lane(2, io_wait=each, data_read=each))
    e = with_variables(quiet(lanes=lanes), innodb_buffer_pool_size=str(128 << 20))
    return replace(e, status_delta={**e.status_delta, "Innodb_buffer_pool_reads": reads})


def autoinc_waits(share: float) -> Evidence:
    states = {"Update": 60.0, "setting auto-inc lock": share * SECONDS}
    return quiet(lanes=(lane(1, states=states), lane(2, states=states)))


def fsync_latency(p50_us: float, count: int = 1000) -> Evidence:
    return quiet(io=replace(quiet().io, fsyncs=count, fsync_p50_us=int(p50_us)))


def random_writes(sequential_pct: float) -> Evidence:
    io = replace(quiet().io, data_writes=50_000, data_sequential_pct=sequential_pct, data_write_p50_bytes=16384)
    return with_job(storage_bound(10.0, io=io), runner="mysql", threads=1)


def simulated_aio(iowait_pct: float) -> Evidence:
    return with_variables(storage_bound(iowait_pct), innodb_use_native_aio="OFF")


def prepare_waiting(share: float) -> Evidence:
    e = prepare(1)
    main = lane(50, group="tool", role="mariabackup", running=SECONDS * (1 - share), io_wait=SECONDS * share)
    return replace(e, lanes=(main,))


CASES = [
    Case("parallel_load: one stream wanting a CPU", rules.parallel_load, single_stream, rules.CPU_BOUND_DEMAND, 0.01),
    Case("parallel_load: threads off the CPU", rules.parallel_load, waiting_threads, rules.OFF_CPU_SHARE_MIN, 0.01),
    Case(
        "parallel_load: idle cores",
        rules.parallel_load,
        lambda free: waiting_threads(0.5, free),
        rules.FREE_CORES_MIN,
        0.01,
    ),
    Case(
        "too_many_threads: demand",
        rules.too_many_threads,
        oversubscribed,
        rules.OVERSUBSCRIBED_DEMAND * 2,
        0.02,
    ),
    Case(
        "too_many_threads: threads per core",
        rules.too_many_threads,
        lambda threads: oversubscribed(4.0, int(threads)),
        rules.OVERSUBSCRIBED_THREADS_PER_CORE * 2 + 0.5,
        0.5,
    ),
    Case("straggler", rules.straggler, lambda n: lone_tail(round(n * 100)), rules.STRAGGLER_MIN_SHARE, 0.01),
    Case("delimited_format", rules.delimited_format, saturated, rules.SATURATED_DEMAND * 2, 0.02),
    Case("decompression", rules.decompression, compressed, rules.DECOMPRESS_SHARE_MIN, 0.005),
    Case(
        "decompression: bzip2",
        rules.decompression,
        lambda share: compressed(share, "bzip2"),
        rules.DECOMPRESS_SHARE_MIN,
        0.005,
    ),
    Case("redo_fsync_per_commit", rules.redo_fsync_per_commit, commit_fsync, rules.COMMIT_FSYNC_SHARE_MIN, 0.002),
    Case("binary_log", rules.binary_log, binlogged, rules.BINLOG_SHARE_MIN, 0.01),
    Case("doublewrite: pages", rules.doublewrite, doublewritten, rules.DBLWR_MIN_PAGES, 1),
    Case(
        "doublewrite: storage",
        rules.doublewrite,
        lambda iowait: storage_bound(iowait),
        rules.IOWAIT_MIN_PCT,
        0.1,
    ),
    Case(
        "small_redo_log",
        rules.small_redo_log,
        lambda share: full_redo(round(share * 100)),
        rules.REDO_PRESSURE_TIME_MIN,
        0.01,
    ),
    Case("small_buffer_pool: waits", rules.small_buffer_pool, page_reads, rules.BP_READ_SHARE_MIN, 0.002),
    Case(
        "small_buffer_pool: pages",
        rules.small_buffer_pool,
        lambda reads: page_reads(0.1, reads),
        rules.BP_READS_MIN,
        1,
    ),
    Case("autoinc_lock", rules.autoinc_lock, autoinc_waits, rules.AUTOINC_WAIT_SHARE_MIN, 0.002),
    Case("slow_fsync", rules.slow_fsync, fsync_latency, rules.SLOW_FSYNC_P50_US, 1),
    Case(
        "slow_fsync: enough fsyncs",
        rules.slow_fsync,
        lambda count: fsync_latency(5000, int(count)),
        rules.SLOW_FSYNC_MIN_COUNT,
        1,
    ),
    Case(
        "random_small_writes",
        rules.random_small_writes,
        random_writes,
        rules.RANDOM_MAX_SEQUENTIAL_PCT,
        0.1,
        fires_above=False,
    ),
    Case("aio_mode", rules.aio_mode, simulated_aio, rules.IOWAIT_MIN_PCT, 0.1),
    Case(
        "prepare_batches",
        rules.prepare_batches,
        lambda batches: prepare(int(batches)),
        rules.PREPARE_BATCHES_MIN - 0.5,
        0.5,
    ),
    Case("prepare_read_threads", rules.prepare_read_threads, prepare_waiting, rules.PREPARE_IO_WAIT_MIN, 0.01),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fires_just_past_its_threshold(case: Case) -> None:
    past = case.threshold + case.step if case.fires_above else case.threshold
    suggestion = case.check(case.build(past))
    assert suggestion is not None
    assert suggestion.rule == case.check.__name__
    assert suggestion.seen and suggestion.expected and suggestion.caveat and suggestion.change.settings
    assert 0.0 <= suggestion.expected_gain < 1.0


@pytest.mark.parametrize("case", CASES, ids=str)
def test_stays_silent_just_below_it(case: Case) -> None:
    below = case.threshold - case.step if case.fires_above else case.threshold + case.step
    assert case.check(case.build(below)) is None


@pytest.mark.parametrize("check", [rule.check for rule in rules.RULES], ids=lambda c: c.__name__)
def test_a_quiet_run_gets_no_suggestion(check: Callable[[Evidence], Suggestion | None]) -> None:
    assert check(quiet()) is None


def test_rules_that_need_samples_stay_silent_without_them() -> None:
    blind = replace(single_stream(0.95), has_cpu=False, has_trace=False, lanes=())
    assert rules.advise(blind) == []


# --- what the suggestions propose -----------------------------------------------------------------


def test_one_mysql_stream_is_moved_to_the_loader_with_a_thread_per_core() -> None:
    suggestion = rules.parallel_load(single_stream(0.9))
    assert suggestion is not None
    options = {s.option: (s.previous, s.value) for s in suggestion.change.settings}
    assert options == {"runner": ("mysql", "loader"), "threads": (1, 2)}
    assert suggestion.where.lanes == (1,) and suggestion.where.ranges == (Interval(T0, T1),)
    # 1 + 0.75 per extra thread: 1.75x.
    assert suggestion.expected_speedup == pytest.approx(1 + rules.PARALLEL_EFFICIENCY)


def test_threads_that_wait_while_cores_idle_are_doubled_up_to_two_per_core() -> None:
    suggestion = rules.parallel_load(waiting_threads(0.4, free_cores=0.6))
    assert suggestion is not None
    assert [(s.option, s.value) for s in suggestion.change.settings] == [("threads", 4)]
    assert suggestion.expected_gain == pytest.approx(0.3)  # the idle share of the cores bounds it


def test_the_straggler_is_the_lone_lane_over_its_stretch_and_gets_smaller_chunks() -> None:
    suggestion = rules.straggler(lone_tail(40))
    assert suggestion is not None
    assert suggestion.where.lanes == (1,)
    (stretch,) = suggestion.where.ranges
    assert stretch.t0_us == T0 + int(0.6 * (T1 - T0)) and stretch.t1_us == T1
    assert [(s.option, s.previous, s.value) for s in suggestion.change.settings] == [("chunk_size", 64 << 20, 16 << 20)]
    assert suggestion.expected_gain == pytest.approx(0.4 * 0.5)


def test_a_lone_thread_building_its_indexes_is_not_a_straggler_chunks_would_help() -> None:
    states = ("Update",) * 60 + ("altering table",) * 40
    assert rules.straggler(lone_tail(40, states=states)) is None


def test_mysqlimport_leaving_one_file_to_one_thread_is_moved_to_the_loader() -> None:
    suggestion = rules.straggler(with_job(lone_tail(40), runner="mysqlimport"))
    assert suggestion is not None
    assert ("runner", "loader") in [(s.option, s.value) for s in suggestion.change.settings]


TAB = Alternative("/backups/shop-tab", "mysqldump-tab", None, 700_000_000, delimited=True, database="shop")
SHELL = Alternative("/backups/shop-mysqlsh", "mysqlsh", "zstd", 300_000_000, delimited=True)


def test_a_saturated_sql_restore_is_pointed_at_the_uncompressed_delimited_backup_of_the_same_tables() -> None:
    suggestion = rules.delimited_format(saturated(1.9, alternatives=(SHELL, TAB)))
    assert suggestion is not None and suggestion.change.rerun
    assert [(s.option, s.value) for s in suggestion.change.settings] == [
        ("backup_path", "/backups/shop-tab"),
        ("database", "shop"),
    ]
    # The loading threads did nearly all the CPU work: close to the measured server CPU ratio.
    assert 0.3 < suggestion.expected_gain <= 1 - rules.DELIMITED_SERVER_CPU_RATIO


def test_without_a_delimited_backup_the_change_is_the_next_backups_tool_and_no_rerun() -> None:
    suggestion = rules.delimited_format(saturated(1.9))
    assert suggestion is not None and not suggestion.change.rerun
    assert suggestion.change.settings[0].option == "backup.tool"
    assert suggestion.change.note is not None and "mysqldump --tab" in suggestion.change.note


def test_a_delimited_restore_is_not_told_to_use_a_delimited_format() -> None:
    assert rules.delimited_format(with_job(saturated(1.9), backup_format="mysqldump-tab")) is None


def test_a_single_stream_is_not_called_server_cpu_bound_while_a_core_is_free() -> None:
    assert rules.delimited_format(single_stream(0.95)) is None


def test_server_changes_on_a_saved_server_cannot_be_rerun_and_say_what_to_run_instead() -> None:
    suggestion = rules.redo_fsync_per_commit(with_job(commit_fsync(0.2), target_kind="saved"))
    assert suggestion is not None and not suggestion.change.rerun
    assert (
        suggestion.change.note is not None and "SET GLOBAL innodb_flush_log_at_trx_commit = 2" in suggestion.change.note
    )


def test_the_redo_rule_sizes_the_log_and_points_at_the_full_stretches() -> None:
    suggestion = rules.small_redo_log(full_redo(50))
    assert suggestion is not None
    (setting,) = suggestion.change.settings
    assert (setting.option, setting.previous, setting.value) == ("target.options.innodb_log_file_size", "96M", "1G")
    (stretch,) = suggestion.where.ranges
    assert stretch.t0_us == T0 and stretch.t1_us == T0 + int(50 * (T1 - T0) / 100)
    assert [lane.tid for lane in quiet().lanes if lane.tid in suggestion.where.lanes] == [10]  # the page cleaner


def test_a_full_redo_log_on_a_cpu_bound_restore_is_listed_as_little_to_gain() -> None:
    suggestion = rules.small_redo_log(full_redo(90))
    assert suggestion is not None and suggestion.expected_gain < rules.MIN_GAIN


def test_the_buffer_pool_grows_to_hold_the_data_within_half_the_memory() -> None:
    suggestion = rules.small_buffer_pool(page_reads(0.1))
    assert suggestion is not None
    assert suggestion.change.settings[0].value == "1G"  # 1.25 x 800 MB, rounded up to a power of two
    small_host = replace(page_reads(0.1), host=replace(quiet().host, memory_bytes=GIB))
    capped = rules.small_buffer_pool(small_host)
    assert capped is not None and capped.change.settings[0].value == "512M"


def test_a_prepare_in_many_batches_gets_memory_for_a_few_batches_not_one() -> None:
    suggestion = rules.prepare_batches(prepare(109, "16M"))
    assert suggestion is not None
    (setting,) = suggestion.change.settings
    assert (setting.option, setting.previous, setting.value) == ("use_memory", "16M", "512M")  # 16M x 109 / 4
    assert suggestion.where.lanes == (50,)
    default_memory = rules.prepare_batches(prepare(15, None))
    assert default_memory is not None and default_memory.change.settings[0].value == "512M"


def test_advise_orders_by_expected_gain() -> None:
    e = replace(
        single_stream(0.9),
        iowait_pct=10.0,
        status_delta={"Innodb_dblwr_pages_written": 5000.0, "Innodb_pages_written": 5000.0},
    )
    found = rules.advise(e)
    assert [s.rule for s in found] == ["parallel_load", "doublewrite"]
    assert found[0].expected_gain > found[1].expected_gain


def test_every_rule_is_in_the_catalog_once() -> None:
    ids = [rule.id for rule in rules.RULES]
    assert len(ids) == len(set(ids)) and ids == [rule.check.__name__ for rule in rules.RULES]
    assert len(ids) >= 15


def test_bucket_count_of_the_builders_matches_the_quiet_run() -> None:
    assert quiet().buckets == BUCKETS


def test_a_lone_connection_waiting_for_rows_inside_its_statement_is_still_the_straggler() -> None:
    # It sat in "Update" on a CPU only a fifth of each slice (the client feeding it), the other one slept.
    working = lane(1, series=(0.2,) * 100, state_series=("Update",) * 100)
    asleep = lane(2, series=(0.9,) * 60 + (0.0,) * 40, state_series=("Update",) * 60 + ("Sleep",) * 40)
    suggestion = rules.straggler(quiet(lanes=(working, asleep), buckets=100))
    assert suggestion is not None and suggestion.where.lanes == (1,)
    assert suggestion.expected_gain == pytest.approx(0.4 * 0.5)


def test_a_restore_with_two_threads_of_which_one_ever_loaded_is_a_straggler() -> None:
    only = lane(1, series=(1.0,) * 100)
    suggestion = rules.straggler(quiet(lanes=(only,), buckets=100))
    assert suggestion is not None and "the other 1 loading thread was idle" in suggestion.seen


def test_two_connections_inside_statements_are_not_one_straggler() -> None:
    busy = lane(1, series=(1.0,) * 100, state_series=("Update",) * 100)
    waiting = lane(2, series=(0.0,) * 100, state_series=("Waiting for table metadata lock",) * 100)
    assert rules.straggler(quiet(lanes=(busy, waiting), buckets=100)) is None
