"""Which backups are a protected database's. Pure, table-driven."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from app.protected.selection import Selection, belongs, databases_held, latest

ROOT = "/backups"
SHOP_SQL = {"databases": ["shop"], "has_use_statements": True}
ALL_SQL = {"databases": ["crm", "shop"], "has_use_statements": True}
ONE_DB_NO_USE = {"databases": [], "source_database": "shop", "has_use_statements": False}
ANONYMOUS_SQL = {"databases": [], "has_use_statements": False}
MYDUMPER = {"databases": ["shop"], "tables": 4}
MYSQLSH = {"schemas": ["crm"], "complete": True}
TAB = {"tables": 4, "has_use_statements": False}
PHYSICAL = {"backup_type": "full-backuped", "databases": ["crm", "shop"]}


@pytest.mark.parametrize(
    ("details", "held"),
    [
        (SHOP_SQL, ["shop"]),
        (ALL_SQL, ["crm", "shop"]),
        (ONE_DB_NO_USE, ["shop"]),
        (ANONYMOUS_SQL, None),
        (MYDUMPER, ["shop"]),
        (MYSQLSH, ["crm"]),
        (TAB, None),
        (PHYSICAL, ["crm", "shop"]),
        ({}, None),
    ],
)
def test_databases_held(details: dict[str, Any], held: list[str] | None) -> None:
    assert databases_held(details) == held


@pytest.mark.parametrize(
    ("selection", "path", "details", "expected"),
    [
        # The backup names its databases: it must name this one.
        (Selection("shop"), "/backups/nightly/shop.sql.gz", SHOP_SQL, True),
        (Selection("shop"), "/backups/nightly/all.sql.gz", ALL_SQL, True),
        (Selection("shop"), "/backups/crm.sql", {"databases": ["crm"]}, False),
        (Selection("shop"), "/backups/physical", PHYSICAL, True),
        # It does not say: only a pattern or a source server can vouch for it.
        (Selection("shop"), "/backups/shop-tab", TAB, False),
        (Selection("shop", backup_glob="shop-*"), "/backups/shop-tab", TAB, True),
        (Selection("shop", source_paths={"/backups/shop-tab"}), "/backups/shop-tab", TAB, True),
        # The pattern is matched against the path under the root; * crosses folders.
        (Selection("shop", backup_glob="nightly/*"), "/backups/nightly/2026/shop.sql.gz", SHOP_SQL, True),
        (Selection("shop", backup_glob="weekly/*"), "/backups/nightly/shop.sql.gz", SHOP_SQL, False),
        # A pattern does not make a backup of another database this one's.
        (Selection("shop", backup_glob="*"), "/backups/crm.sql", {"databases": ["crm"]}, False),
        # With a source server, only what its backup jobs wrote.
        (Selection("shop", source_paths=set()), "/backups/shop.sql", SHOP_SQL, False),
        (Selection("shop", source_paths={"/backups/shop.sql"}), "/backups/shop.sql", SHOP_SQL, True),
        # Database names are case-sensitive on the servers we restore to (lower_case_table_names=0).
        (Selection("Shop"), "/backups/shop.sql", SHOP_SQL, False),
    ],
)
def test_belongs(selection: Selection, path: str, details: dict[str, Any], expected: bool) -> None:
    assert belongs(selection, path=path, root=ROOT, details=details) is expected


@dataclass
class FakeBackup:
    id: int
    modified_at: datetime


def test_latest_is_the_newest_by_modification_then_id() -> None:
    day = datetime(2026, 3, 1, tzinfo=UTC)
    older, newer, same_time_later_id = FakeBackup(1, day), FakeBackup(2, day.replace(day=2)), FakeBackup(3, day)
    assert latest([older, newer, same_time_later_id]) is newer
    assert latest([older, same_time_later_id]) is same_time_later_id
    assert latest([]) is None
