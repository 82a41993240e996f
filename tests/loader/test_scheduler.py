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


def test_connections_sharing_a_table_work_from_different_halves_of_it() -> None:
    scheduler = Scheduler()
    for _ in range(8):
        scheduler.add(FakeTask(key("big"), 10))
    scheduler.close_all()

    first = claimed(scheduler)
    second = claimed(scheduler)
    assert (first.seq, second.seq) == (0, 4)  # the second starts in the middle of what nobody is heading into
    taken_by_first, taken_by_second = [first.seq], [second.seq]
    for _ in range(3):
        scheduler.release(first)
        first = scheduler.claim(after=first)  # type: ignore[assignment]
        taken_by_first.append(first.seq)
        scheduler.release(second)
        second = scheduler.claim(after=second)  # type: ignore[assignment]
        taken_by_second.append(second.seq)
    assert taken_by_first == [0, 1, 2, 3]
    assert taken_by_second == [4, 5, 6, 7]


def test_a_connection_whose_next_chunk_is_taken_splits_the_largest_run_left() -> None:
    scheduler = Scheduler()
    for _ in range(10):
        scheduler.add(FakeTask(key("big"), 10))
    scheduler.close_all()

    first, second = claimed(scheduler), claimed(scheduler)
    assert (first.seq, second.seq) == (0, 5)
    scheduler.release(first)
    for expected in (1, 2, 3, 4):
        first = scheduler.claim(after=first)  # type: ignore[assignment]
        assert first.seq == expected
        scheduler.release(first)
    # 5 is running and 6-9 follow it: the first connection takes the middle of 6-9, not 6.
    assert scheduler.claim(after=first).seq == 8  # type: ignore[union-attr]


def test_a_run_nobody_is_heading_into_is_taken_from_its_start() -> None:
    scheduler = Scheduler()
    for _ in range(6):
        scheduler.add(FakeTask(key("big"), 10))
    scheduler.close_all()

    first, second = claimed(scheduler), claimed(scheduler)  # 0, and 3 (the middle of 1-5)
    assert (first.seq, second.seq) == (0, 3)
    scheduler.release(first)  # the first connection leaves the table (an index build elsewhere, say)
    # 1-2 follow the finished 0 that nobody continues: a newcomer takes them from their start.
    assert claimed(scheduler).seq == 1


@dataclass
class FakeSource:
    """Cuts `left` tasks, then is used up."""

    table: TableKey
    left: int

    @property
    def remaining(self) -> int:
        return self.left * 10

    def cut(self) -> FakeTask | None:
        if not self.left:
            return None
        self.left -= 1
        return FakeTask(self.table, 10)


def test_sources_of_one_table_are_shared_out_like_chunks() -> None:
    scheduler = Scheduler()
    for _ in range(3):
        scheduler.add(FakeSource(key("big"), 2))
    scheduler.close_all()

    first, second = claimed(scheduler), claimed(scheduler)
    assert (first.seq, second.seq) == (0, 2)  # not both cutting from the first file
    scheduler.release(first)
    assert scheduler.claim(after=first).seq == 0  # type: ignore[union-attr]  # it goes on cutting its file
    scheduler.exhausted(first)
    scheduler.release(first)
    first = scheduler.claim(after=first)  # type: ignore[assignment]
    assert first.seq == 1
    scheduler.exhausted(second)
    scheduler.release(second)
    # Nothing is left that nobody works on: the connection cuts from the other one's file in turn.
    assert scheduler.claim(after=second).seq == 1  # type: ignore[union-attr]
