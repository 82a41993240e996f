"""The session a statement of a dump expects to run in, captured on one connection and set on another.

A dump sets its session with SET statements (`SET NAMES utf8mb4`, `SET TIME_ZONE='+00:00'`,
`SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO'`) and `USE`. The loader runs those on its control connection in dump
order and hands each batch of rows, and each trigger or routine it creates later, the state that was in
force where it appeared in the dump, so N connections and a deferred CREATE TRIGGER see what `mysql <
dump.sql` would have given them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pymysql

from worker.runners.loader.statements import quote_name

# What a dump's SET statements change and what the data or the created objects depend on.
CAPTURED_VARIABLES = (
    "character_set_client",
    "character_set_results",
    "collation_connection",
    "sql_mode",
    "time_zone",
)


@dataclass(frozen=True)
class SessionState:
    values: tuple[tuple[str, str], ...]
    database: str | None

    def statements(self) -> list[bytes]:
        """SET and USE statements that put another connection into this state."""
        assignments = ", ".join(f"SESSION {name} = {_literal(value)}" for name, value in self.values)
        statements = [f"SET {assignments}".encode()] if assignments else []
        if self.database is not None:
            statements.append(f"USE {quote_name(self.database)}".encode())
        return statements

    def with_database(self, database: str | None) -> SessionState:
        return SessionState(self.values, database)


def capture(connection: pymysql.connections.Connection[Any]) -> SessionState:
    columns = ", ".join(f"@@SESSION.{name}" for name in CAPTURED_VARIABLES)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns}, DATABASE()")
        row = cursor.fetchone()
    assert row is not None
    values = tuple((name, _text(value)) for name, value in zip(CAPTURED_VARIABLES, row, strict=False))
    database = row[-1]
    return SessionState(values, _text(database) if database is not None else None)


def state_of(settings: dict[str, str], database: str | None = None) -> SessionState:
    """A state from plain settings (a dump's metadata), in the order the server must get them."""
    ordered = [(name, settings[name]) for name in CAPTURED_VARIABLES if name in settings]
    ordered += [(name, value) for name, value in settings.items() if name not in CAPTURED_VARIABLES]
    return SessionState(tuple(ordered), database)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _literal(value: str) -> str:
    if value.isdigit():
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
