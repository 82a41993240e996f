"""Which piece of work each loading connection takes next.

Largest tables first, and connections spread over different tables; once every table has its connection,
the table with the most bytes left gets the next free one, as MySQL Shell's loader does, so one big table
is worked on by several connections at the end instead of being the straggler. A connection keeps to the
table it works on until that table is done, so tables finish one after another and each one's secondary
indexes (built once its last rows are in) are built while other tables still load: measured on sysbench
4 x 1M rows with 2 connections, moving on to the table with the most left made all four finish together
and their four index builds (6 s each) pile up at the end (31.7 s in all).

Within a table, each connection works through a contiguous run of its chunks: it goes on with the chunk
after the one it just ran, and a connection joining the table starts in the middle of the largest run
nobody is heading into. Two connections taking alternate chunks insert into neighbouring keys at the right
edge of the primary key and wait on each other's page and index latches there; measured on the skewed set
(one table of 4M sysbench rows, LOAD DATA, secondary index built afterwards, 2 connections, fast-restore
settings), the rows took 22.0-23.1 s from the two halves of the file against 25.4 s from alternate chunks.

Work comes as ready tasks or as a `Source` that cuts tasks on demand from a big file or stream; several
connections may cut from one source in turn.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from worker.runners.loader.sql_script import TableKey

if TYPE_CHECKING:
    from worker.runners.loader.tasks import Worker


class Task(Protocol):
    table: TableKey
    size: int  # bytes of the dump it covers (on disk), for progress and for "most work left"

    def run(self, worker: Worker) -> int: ...


@runtime_checkable
class _SourceLike(Protocol):
    @property
    def remaining(self) -> int: ...

    def cut(self) -> Task | None: ...


class Source(Protocol):
    """Cuts tasks from a big file while it is read; `cut()` returns None once the file is used up."""

    table: TableKey

    @property
    def remaining(self) -> int: ...

    def cut(self) -> Task | None: ...


@dataclass
class _Entry:
    seq: int  # the item's place among its table's items in the order they were added (the dump's order)
    item: Task | Source


@dataclass
class _Table:
    key: TableKey
    queue: list[_Entry] = field(default_factory=list)  # in seq order
    running: dict[int, int] = field(default_factory=dict)  # seq -> connections working on that item now
    added: int = 0
    queued_bytes: int = 0
    active: int = 0  # connections working on its data now
    closed: bool = False  # no more data will be added
    held: bool = False  # its data waits (the driver has yet to decide how the table is loaded)
    alone: bool = False  # one connection at a time (its statements would only wait on each other's lock)
    started: bool = False  # a connection has taken some of its data
    after_data: Task | None = None  # the index build, ready once the data is in

    def remaining(self) -> int:
        return self.queued_bytes + sum(e.item.remaining for e in self.queue if isinstance(e.item, _SourceLike))

    def entry_for(self, after: int | None) -> _Entry:
        """The item a connection takes next: the one after `after` (the seq it ran last here), else the start
        of a run of items nobody is heading into, else the middle of the largest run."""
        if after is not None:
            for entry in self.queue:
                # The source it was cutting from, or the next item unless another connection is on it.
                if entry.seq == after or (entry.seq == after + 1 and entry.seq not in self.running):
                    return entry
        free = [e for e in self.queue if e.seq not in self.running]
        if not free:
            return self.queue[0]  # only sources that are being cut: cut from one in turn
        runs: list[list[_Entry]] = []
        for entry in free:
            if runs and runs[-1][-1].seq + 1 == entry.seq:
                runs[-1].append(entry)
            else:
                runs.append([entry])
        unfollowed = [run for run in runs if run[0].seq - 1 not in self.running]
        if unfollowed:
            return max(unfollowed, key=len)[0]
        largest = max(runs, key=len)
        return largest[len(largest) // 2]

    def has_data_work(self) -> bool:
        return bool(self.queue)


def _is_source(item: object) -> bool:
    return isinstance(item, _SourceLike)


@dataclass
class Claim:
    """What a connection took: a task to run, or a source to cut the next task from."""

    table: TableKey
    task: Task | None = None
    source: Source | None = None
    seq: int | None = None  # the item's place in its table's order (None for an index build)


class Scheduler:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._tables: dict[TableKey, _Table] = {}
        self._stopped = False
        self._all_closed = False
        self.error: BaseException | None = None

    # --- adding work (the driver) ------------------------------------------------------------------

    def add(self, item: Task | Source) -> None:
        with self._lock:
            table = self._table(item.table)
            table.queue.append(_Entry(table.added, item))
            table.added += 1
            if not _is_source(item):
                table.queued_bytes += item.size  # type: ignore[union-attr]
            self._lock.notify_all()

    def after_data(self, key: TableKey, task: Task) -> None:
        """Run `task` (an index build) once every data task of the table is done and it is closed."""
        with self._lock:
            self._table(key).after_data = task
            self._lock.notify_all()

    def one_at_a_time(self, key: TableKey) -> None:
        """Never give the table's data to two connections at once."""
        with self._lock:
            self._table(key).alone = True

    def hold(self, key: TableKey, held: bool = True) -> None:
        """Keep the table's data tasks from starting (held=True) or let them start."""
        with self._lock:
            self._table(key).held = held
            self._lock.notify_all()

    def close(self, key: TableKey) -> None:
        with self._lock:
            self._table(key).closed = True
            self._lock.notify_all()

    def close_all(self) -> None:
        with self._lock:
            self._all_closed = True
            for table in self._tables.values():
                table.closed = True
            self._lock.notify_all()

    def stop(self, error: BaseException | None = None) -> None:
        with self._lock:
            self._stopped = True
            if error is not None and self.error is None:
                self.error = error
            self._lock.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _table(self, key: TableKey) -> _Table:
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = _Table(key)
        return table

    # --- taking work (the connections) ----------------------------------------------------------------

    def claim(self, after: Claim | None = None) -> Claim | None:
        """The next piece of work, waiting for one; None once everything is done or the load stopped.
        `after` is what this connection did last, so it can go on where it left off."""
        with self._lock:
            while True:
                if self._stopped:
                    return None
                claim = self._pick(after)
                if claim is not None:
                    return claim
                if self._all_closed and not any(t.queue or t.active or t.after_data for t in self._tables.values()):
                    return None
                self._lock.wait()

    def _pick(self, after: Claim | None = None) -> Claim | None:
        for table in self._tables.values():
            if table.after_data is not None and table.closed and not table.queue and table.active == 0:
                task, table.after_data = table.after_data, None
                table.active += 1
                return Claim(table.key, task=task)
        candidates = [t for t in self._tables.values() if t.queue and not t.held and not (t.alone and t.active)]
        if not candidates:
            return None
        table = self._choose(candidates)
        table.active += 1
        table.started = True
        entry = table.entry_for(after.seq if after is not None and after.table == table.key else None)
        table.running[entry.seq] = table.running.get(entry.seq, 0) + 1
        if _is_source(entry.item):
            return Claim(table.key, source=entry.item, seq=entry.seq)  # type: ignore[arg-type]
        table.queue.remove(entry)
        table.queued_bytes -= entry.item.size  # type: ignore[union-attr]
        return Claim(table.key, task=entry.item, seq=entry.seq)  # type: ignore[arg-type]

    @staticmethod
    def _choose(candidates: list[_Table]) -> _Table:
        # 1. A started table nobody works on (the one this connection just left, usually), least left
        #    first: tables finish one after the other, so each one's index build overlaps the loading of
        #    the next instead of all of them piling up at the end.
        waiting = [t for t in candidates if t.started and t.active == 0]
        if waiting:
            return min(waiting, key=lambda t: t.remaining())
        # 2. The largest table not started yet: connections spread over tables, big ones first.
        fresh = [t for t in candidates if not t.started]
        if fresh:
            return max(fresh, key=lambda t: t.remaining())
        # 3. Every table has its connection: join the one with the most work left, so one big table is not
        #    left to a single connection at the end.
        return min(candidates, key=lambda t: (t.active, -t.remaining()))

    def exhausted(self, claim: Claim) -> None:
        """The claimed source has nothing left: drop it (another connection may have done so already)."""
        with self._lock:
            table = self._tables[claim.table]
            table.queue = [e for e in table.queue if e.item is not claim.source]
            self._lock.notify_all()

    def release(self, claim: Claim) -> None:
        """The connection is done with what it claimed (successfully or not)."""
        with self._lock:
            table = self._tables[claim.table]
            table.active -= 1
            if claim.seq is not None:
                table.running[claim.seq] -= 1
                if not table.running[claim.seq]:
                    del table.running[claim.seq]
            self._lock.notify_all()

    # --- the driver's view ------------------------------------------------------------------------------

    def wait(self, timeout: float) -> None:
        with self._lock:
            self._lock.wait(timeout)

    def idle(self, key: TableKey | None = None) -> bool:
        """Nothing queued or running for table `key` (for any table when None)."""
        with self._lock:
            tables = [t for k, t in self._tables.items() if key is None or k == key]
            return not any(t.queue or t.active for t in tables)

    def finished(self) -> bool:
        with self._lock:
            return self._all_closed and not any(t.queue or t.active or t.after_data for t in self._tables.values())

    def queued_bytes(self) -> int:
        """Bytes of ready tasks no connection has taken yet (what a streaming driver may read ahead)."""
        with self._lock:
            return sum(t.queued_bytes for t in self._tables.values())
