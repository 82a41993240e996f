"""What a load has finished, recorded in the target server so that a resumed load neither loses nor repeats rows.

Why in the target and in the same transaction: a chunk is loaded in one InnoDB transaction (LOAD DATA or
a batch of INSERTs), and its marker row is inserted into `_restorescope`.`chunks_done` before that
transaction commits. The rows and the marker therefore commit together or not at all, whatever kills the
load (cancel, worker crash, server crash: InnoDB recovery keeps or drops both). A marker written anywhere
else after the commit would leave a window where a crash loses the marker of committed rows and the
resume loads them twice; written before the commit, a crash would skip rows that were never committed.
Deleting a chunk's primary-key range before reloading it was the other option, but on-the-fly chunks
of a stream have no known key range and tables without a primary key have none at all.

Non-transactional tables (MyISAM, Aria) cannot take part in that transaction: the loader reloads such a
table from its first row (TRUNCATE) unless every chunk of it was done.

DDL and the steps after the data (index builds, triggers, views, routines) commit on their own, so each is
recorded just after it runs; each is written so that running it a second time after a crash in that
window is harmless (CREATE on an object that exists is accepted while resuming).

The schema `_restorescope` is dropped when the load completes; while it exists the target holds an
unfinished (or failed) load, and its `state` row says which dump and why it stopped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql

SCHEMA = "_restorescope"
if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[Any]


class ResumeMismatchError(Exception):
    """The target holds an unfinished load of another dump."""


@dataclass
class ResumeState:
    resumed: bool
    chunk_size: int
    chunks: dict[str, tuple[int, int]] = field(default_factory=dict)  # chunk id -> (rows, bytes)
    steps: set[str] = field(default_factory=set)
    control_done: int = -1  # the last control statement of a stream that ran


def _hash(text: str) -> bytes:
    return hashlib.sha1(text.encode(), usedforsecurity=False).digest()


class Markers:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def open(self, identity: str, description: str, chunk_size: int) -> ResumeState:
        """Start recording; resume what an earlier load of the same dump recorded."""
        with self._connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (SCHEMA,))
            if cursor.fetchone() is None:
                self._create(cursor, identity, description, chunk_size)
                return ResumeState(False, chunk_size)
            cursor.execute(f"SELECT identity, description, chunk_size, control_done FROM `{SCHEMA}`.state")
            row = cursor.fetchone()
            if row is None:
                cursor.execute(f"DROP DATABASE `{SCHEMA}`")
                self._create(cursor, identity, description, chunk_size)
                return ResumeState(False, chunk_size)
            if row[0] != identity:
                raise ResumeMismatchError(
                    f"the target server holds an unfinished restore of {row[1]} (schema `{SCHEMA}`); restore that "
                    f"dump again to finish it, or drop its databases and the schema `{SCHEMA}` to start over"
                )
            state = ResumeState(True, int(row[2]), control_done=int(row[3]))
            cursor.execute(f"SELECT chunk, rows_loaded, bytes FROM `{SCHEMA}`.chunks_done")
            state.chunks = {str(c): (int(r), int(b)) for c, r, b in cursor.fetchall()}
            cursor.execute(f"SELECT step FROM `{SCHEMA}`.steps_done")
            state.steps = {str(s) for (s,) in cursor.fetchall()}
            cursor.execute(f"UPDATE `{SCHEMA}`.state SET status = 'loading', message = NULL")
            return state

    def _create(self, cursor: Any, identity: str, description: str, chunk_size: int) -> None:
        cursor.execute(f"CREATE DATABASE `{SCHEMA}` CHARACTER SET utf8mb4")
        cursor.execute(
            f"CREATE TABLE `{SCHEMA}`.state (one TINYINT PRIMARY KEY, identity VARCHAR(128) NOT NULL, "
            "description TEXT NOT NULL, chunk_size BIGINT NOT NULL, control_done BIGINT NOT NULL, "
            "status VARCHAR(16) NOT NULL, message TEXT) ENGINE=InnoDB"
        )
        cursor.execute(
            f"CREATE TABLE `{SCHEMA}`.chunks_done (chunk_hash BINARY(20) PRIMARY KEY, chunk TEXT NOT NULL, "
            "rows_loaded BIGINT NOT NULL, bytes BIGINT NOT NULL) ENGINE=InnoDB"
        )
        cursor.execute(
            f"CREATE TABLE `{SCHEMA}`.steps_done (step_hash BINARY(20) PRIMARY KEY, step TEXT NOT NULL) ENGINE=InnoDB"
        )
        cursor.execute(
            f"INSERT INTO `{SCHEMA}`.state VALUES (1, %s, %s, %s, -1, 'loading', NULL)",
            (identity, description, chunk_size),
        )

    @staticmethod
    def chunk_statement(chunk: str, rows: int, size: int) -> tuple[str, tuple[object, ...]]:
        """The INSERT that marks `chunk` done; the caller runs it inside the chunk's transaction."""
        return (
            f"INSERT INTO `{SCHEMA}`.chunks_done VALUES (%s, %s, %s, %s)",
            (_hash(chunk), chunk, rows, size),
        )

    def step_done(self, step: str) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"INSERT IGNORE INTO `{SCHEMA}`.steps_done VALUES (%s, %s)", (_hash(step), step))

    def control_done(self, ordinal: int) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"UPDATE `{SCHEMA}`.state SET control_done = %s", (ordinal,))

    def failed(self, message: str) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"UPDATE `{SCHEMA}`.state SET status = 'failed', message = %s", (message[:60000],))

    def finish(self) -> None:
        with self._connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{SCHEMA}`")
