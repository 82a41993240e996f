"""The control connection: runs a dump's DDL and session statements in dump order, keeps what must wait for
the data (triggers, views, routines, events) together with the session it was written for, and takes
secondary indexes out of CREATE TABLE so they are built after the rows are in."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pymysql

from worker.runners.loader import session as sessions
from worker.runners.loader.plan import Script
from worker.runners.loader.session import SessionState
from worker.runners.loader.sql_script import ScriptError, ScriptSplitter, Statement, TableKey
from worker.runners.loader.statements import (
    Action,
    Classified,
    alter_statements,
    classify,
    defer_secondary_indexes,
    qualified,
)

if TYPE_CHECKING:
    Connection = pymysql.connections.Connection[Any]

# Accepted while resuming: the object was created just before the crash, before its marker was written.
_EXISTS_CODES = frozenset({1007, 1050, 1304, 1359, 1537})  # database, table, routine, trigger, event exists
_CONNECTION_LOST = frozenset({2006, 2013, 2055})
PRIVILEGE_CODES = frozenset({1044, 1142, 1143, 1227, 1370, 1419})


class LoaderError(Exception):
    """The load failed; `str(error)` says what happened and what to do."""


class StatementError(LoaderError):
    """The server rejected a statement of the dump."""

    def __init__(self, message: str, *, code: int | None) -> None:
        super().__init__(message)
        self.code = code


class ServerGoneError(LoaderError):
    """The connection to the target server was lost."""


def explain(error: pymysql.err.MySQLError, where: str) -> LoaderError:
    code = error.args[0] if error.args and isinstance(error.args[0], int) else None
    text = error.args[-1] if error.args else str(error)
    if code in PRIVILEGE_CODES:
        return StatementError(
            f"the server refused {where}: ERROR {code}: {text}; the target's user lacks a privilege the "
            "restore needs (it creates databases, tables, views, routines, triggers and events)",
            code=code,
        )
    if code in _CONNECTION_LOST:
        return ServerGoneError(
            f"the server closed the connection while running {where} (ERROR {code}: {text}); it crashed, was "
            "restarted, or a statement is larger than max_allowed_packet; check the server's error log, then "
            "restore again: finished chunks are kept and not loaded twice"
        )
    return StatementError(
        f"the server rejected {where}: ERROR {code}: {text}; the dump is damaged or was made for another "
        "server version",
        code=code,
    )


# What waits for the end of the data. A dump directory's view files are placeholders meant to exist early
# (the real views come in their own files after the data); in a mysqldump stream views are final
# definitions that may call functions created later, so they wait too.
DEFER_ALL = frozenset({"TRIGGER", "PROCEDURE", "FUNCTION", "EVENT", "VIEW", "PACKAGE", "PACKAGE BODY"})
DEFER_ALL_BUT_VIEWS = DEFER_ALL - {"VIEW"}
DEFER_NOTHING: frozenset[str] = frozenset()


@dataclass
class Deferred:
    """A statement that creates a view, trigger, routine or event, run once every row is in."""

    statement: Statement
    state: SessionState
    what: str
    where: str


@dataclass
class Control:
    connection: Connection
    base: list[bytes]
    log: Callable[[str], None]
    # Whether a table's secondary indexes are built after its rows, given its CREATE TABLE (the loader's
    # defer_indexes option).
    defer_indexes_for: Callable[[TableKey, bytes], bool] = lambda _key, _create_table: False
    deferred: list[Deferred] = field(default_factory=list)
    index_builds: dict[TableKey, list[bytes]] = field(default_factory=dict)
    created: dict[TableKey, bytes] = field(default_factory=dict)  # each table's CREATE TABLE, as in the dump
    database: str | None = None
    _state: SessionState | None = None

    # --- session --------------------------------------------------------------------------------

    def query(self, statement: bytes) -> int:
        return int(self.connection.query(statement))

    def use(self, state: SessionState) -> None:
        for statement in [*state.statements(), *self.base]:
            self.query(statement)
        self._state = state
        self.database = state.database

    def snapshot(self) -> SessionState:
        if self._state is None:
            self._state = sessions.capture(self.connection)
        return self._state

    # --- running statements ------------------------------------------------------------------------

    def run_script(self, script: Script, state: SessionState, *, defer: frozenset[str], resuming: bool) -> None:
        """Run every statement of `script` in a session set to `state`."""
        self.use(state.with_database(script.database) if script.database else state)
        for statement in statements_of(script):
            self.execute(statement, script.name, defer=defer, resuming=resuming)

    def replay_script(self, script: Script, state: SessionState, *, defer: frozenset[str]) -> None:
        """What run_script learns (deferred statements, index builds) without changing the server: for a
        resumed load whose DDL already ran. Only session statements run."""
        self.use(state.with_database(script.database) if script.database else state)
        for statement in statements_of(script):
            classified = classify(statement.text)
            if classified.action is Action.SESSION:
                self._run(statement, script.name, classified)
            elif classified.action is Action.CREATE_TABLE:
                self.plan_indexes(statement.text, classified)
            elif classified.action is Action.POST_DATA and classified.what in defer:
                self.defer(statement, classified, script.name)

    def execute(self, statement: Statement, where: str, *, defer: frozenset[str], resuming: bool) -> Classified:
        classified = classify(statement.text)
        action = classified.action
        if action in (Action.LOCK, Action.KEYS):
            # LOCK TABLES would stop the other connections; DISABLE/ENABLE KEYS is a no-op for InnoDB.
            return classified
        if action is Action.POST_DATA and classified.what in defer:
            self.defer(statement, classified, where)
            return classified
        text = statement.text
        if action is Action.CREATE_TABLE:
            text = self.plan_indexes(text, classified)
        self._run(Statement(text, statement.line, delimiter=statement.delimiter), where, classified, resuming)
        return classified

    def _run(self, statement: Statement, where: str, classified: Classified, resuming: bool = False) -> None:
        try:
            self.query(statement.text)
        except pymysql.err.MySQLError as error:
            if resuming and error.args and error.args[0] in _EXISTS_CODES:
                return
            raise explain(error, f"the statement at line {statement.line} of {where}") from error
        if classified.action is Action.SESSION:
            self._state = None
            if classified.what == "USE":
                self.database = classified.name

    def defer(self, statement: Statement, classified: Classified, where: str) -> None:
        self.deferred.append(Deferred(statement, self.snapshot(), classified.what, where))

    def plan_indexes(self, create_table: bytes, classified: Classified) -> bytes:
        """The CREATE TABLE to run; remembers the ALTER TABLE statements that add what it leaves out."""
        database = classified.database or self.database
        if classified.name is None or database is None:
            return create_table
        key = (database, classified.name)
        self.created[key] = create_table
        if not self.defer_indexes_for(key, create_table):
            return create_table
        deferred = defer_secondary_indexes(create_table)
        if deferred is None:
            return create_table
        self.index_builds[key] = alter_statements(qualified(database, classified.name), deferred)
        self._note_deferred(key, deferred.names)
        return deferred.create_table

    def _note_deferred(self, key: TableKey, names: list[bytes]) -> None:
        listed = ", ".join(name.decode(errors="replace") for name in names)
        self.log(f"`{key[0]}`.`{key[1]}`: secondary indexes {listed} are built after the rows")

    def run_deferred(self, item: Deferred, *, resuming: bool) -> None:
        self.use(item.state)
        self._run(item.statement, item.where, classify(item.statement.text), resuming=resuming)


def statements_of(script: Script) -> Iterable[Statement]:
    splitter = ScriptSplitter()
    try:
        yield from splitter.feed(script.text)
        yield from splitter.finish()
    except ScriptError as error:
        raise LoaderError(f"{script.name}: {error}") from error
