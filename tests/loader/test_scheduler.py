"""The scheduler's choices, as a pure state machine: spread over tables first, then the most work left."""

from __future__ import annotations

from dataclasses import dataclass

from worker.runners.loader.scheduler import Claim, Scheduler
from worker.runners.loader.sql_script import TableKey
from worker.runners.loader.tasks import Worker


@dataclass
class FakeTask:
    table: TableKey
    size: int

    def run(self, worker: Worker) -> int:
        return 0


def key(name: str) -> TableKey:
    return ("db", name)


def claimed(scheduler: Scheduler) -> Claim:
    claim = scheduler.claim()
    assert claim is not None
    return claim


def test_connections_spread_over_tables_then_go_to_the_most_work_left() -> None:
    scheduler = Scheduler()
    for size in (10, 10, 10):
        scheduler.add(FakeTask(key("big"), size))
    scheduler.add(FakeTask(key("small"), 5))
    scheduler.add(FakeTask(key("medium"), 8))
    scheduler.add(FakeTask(key("medium"), 8))
    scheduler.close_all()

    first, second, third = claimed(scheduler), claimed(scheduler), claimed(scheduler)
    # One connection per table while tables are free, largest first.
    assert [c.table for c in (first, second, third)] == [key("big"), key("medium"), key("small")]
    scheduler.release(third)  # small is done
    # Now every table has a connection or none left: the one with most bytes left gets the next.
    assert claimed(scheduler).table == key("big")


def test_the_index_build_waits_for_the_last_chunk_of_its_table() -> None:
    scheduler = Scheduler()
    scheduler.add(FakeTask(key("t"), 10))
    scheduler.after_data(key("t"), FakeTask(key("t"), 0))
    scheduler.close(key("t"))
    scheduler.close_all()

    chunk = claimed(scheduler)
    assert chunk.task is not None and chunk.task.size == 10
    assert not scheduler.finished()
    scheduler.release(chunk)
    index_build = claimed(scheduler)
    assert index_build.task is not None and index_build.task.size == 0
    scheduler.release(index_build)
    assert scheduler.finished()
    assert scheduler.claim() is None


def test_stop_ends_every_claim() -> None:
    scheduler = Scheduler()
    scheduler.add(FakeTask(key("t"), 10))
    scheduler.stop(RuntimeError("boom"))
    assert scheduler.claim() is None
    assert str(scheduler.error) == "boom"


def test_a_connection_keeps_to_its_table_until_it_is_done() -> None:
    scheduler = Scheduler()
    for name in ("a", "b", "c"):
        for _ in range(3):
            scheduler.add(FakeTask(key(name), 10))
    scheduler.close_all()

    first, second = claimed(scheduler), claimed(scheduler)
    assert {first.table, second.table} == {key("a"), key("b")}
    scheduler.release(first)
    # c has more left than a, but a is started and nobody works on it: finish it first.
    assert claimed(scheduler).table == first.table


def test_a_table_loaded_one_at_a_time_never_has_two_connections() -> None:
    scheduler = Scheduler()
    for _ in range(3):
        scheduler.add(FakeTask(key("big"), 10))
    scheduler.add(FakeTask(key("small"), 5))
    scheduler.one_at_a_time(key("big"))
    scheduler.close_all()

    first, second = claimed(scheduler), claimed(scheduler)
    assert [first.table, second.table] == [key("big"), key("small")]
    scheduler.release(second)  # small is done; big has work left but its one connection is busy
    assert scheduler._pick() is None
    scheduler.release(first)
    assert claimed(scheduler).table == key("big")
