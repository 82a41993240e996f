"""Statement classification and the secondary-index deferral, on statements as the dump tools write them."""

from __future__ import annotations

import pytest

from worker.runners.loader.statements import (
    Action,
    alter_statements,
    classify,
    defer_secondary_indexes,
    replace_load_data_file,
)


@pytest.mark.parametrize(
    ("text", "action", "what", "database", "name"),
    [
        (b"/*!40101 SET NAMES utf8mb4 */", Action.SESSION, "", None, None),
        (b"USE `shop`", Action.SESSION, "USE", None, "shop"),
        (
            b"/*M!999999\\- enable the sandbox mode */ \n-- MariaDB dump 10.19\n--\n"
            b"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */",
            Action.SESSION,
            "",
            None,
            None,
        ),
        (
            b"CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET latin1 */",
            Action.CREATE_DATABASE,
            "DATABASE",
            None,
            "shop",
        ),
        (b"CREATE TABLE `orders` (\n  `id` int(11) NOT NULL\n)", Action.CREATE_TABLE, "TABLE", None, "orders"),
        (b"CREATE TABLE IF NOT EXISTS `d`.`t` (a int)", Action.CREATE_TABLE, "TABLE", "d", "t"),
        (b"DROP TABLE IF EXISTS `customers`", Action.DROP_TABLE, "TABLE", None, "customers"),
        (b"/*!50001 DROP VIEW IF EXISTS `big_orders`*/", Action.POST_DATA, "VIEW", None, "big_orders"),
        (b"/*!50001 CREATE VIEW `big_orders` AS SELECT\n 1 AS `id` */", Action.POST_DATA, "VIEW", None, "big_orders"),
        (
            b"/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n"
            b"/*!50001 VIEW `big_orders` AS select 1 */",
            Action.POST_DATA,
            "VIEW",
            None,
            "big_orders",
        ),
        (
            b"/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ "
            b"/*!50003 TRIGGER orders_bi BEFORE INSERT ON orders FOR EACH ROW SET NEW.amount = NEW.amount */",
            Action.POST_DATA,
            "TRIGGER",
            None,
            "orders_bi",
        ),
        (
            b"CREATE DEFINER=`root`@`localhost` FUNCTION `f1`() RETURNS int(11)\n    DETERMINISTIC\nRETURN 42",
            Action.POST_DATA,
            "FUNCTION",
            None,
            "f1",
        ),
        (
            b"/*!50106 CREATE*/ /*!50117 DEFINER=`root`@`localhost`*/ "
            b"/*!50106 EVENT `e1` ON SCHEDULE EVERY 1 DAY DO SELECT 1 */",
            Action.POST_DATA,
            "EVENT",
            None,
            "e1",
        ),
        (b"/*!50003 DROP FUNCTION IF EXISTS `f1` */", Action.POST_DATA, "FUNCTION", None, "f1"),
        (b"/*!40000 ALTER TABLE `customers` DISABLE KEYS */", Action.KEYS, "DISABLE", None, "customers"),
        (b"LOCK TABLES `customers` WRITE", Action.LOCK, "", None, None),
        (b"UNLOCK TABLES", Action.LOCK, "", None, None),
        (b"LOAD DATA LOCAL INFILE 'd.t.00000.dat' INTO TABLE `t`", Action.LOAD_DATA, "", None, None),
        (b"UPDATE t SET a = 1", Action.OTHER, "", None, None),
    ],
)
def test_classify(text: bytes, action: Action, what: str, database: str | None, name: str | None) -> None:
    classified = classify(text)
    assert (classified.action, classified.what, classified.database, classified.name) == (action, what, database, name)


SBTEST = b"""CREATE TABLE `sbtest1` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `k` int(11) NOT NULL DEFAULT 0,
  `c` char(120) NOT NULL DEFAULT '',
  PRIMARY KEY (`id`),
  UNIQUE KEY `c_u` (`c`),
  KEY `k_1` (`k`),
  FULLTEXT KEY `ft` (`c`)
) ENGINE=InnoDB AUTO_INCREMENT=1000001 DEFAULT CHARSET=latin1"""


def test_secondary_indexes_are_deferred() -> None:
    deferred = defer_secondary_indexes(SBTEST)
    assert deferred is not None
    assert deferred.create_table == (
        b"CREATE TABLE `sbtest1` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `k` int(11) NOT NULL DEFAULT 0,\n"
        b"  `c` char(120) NOT NULL DEFAULT '',\n  PRIMARY KEY (`id`),\n  UNIQUE KEY `c_u` (`c`)\n"
        b") ENGINE=InnoDB AUTO_INCREMENT=1000001 DEFAULT CHARSET=latin1"
    )
    assert alter_statements(b"`d`.`sbtest1`", deferred) == [
        b"ALTER TABLE `d`.`sbtest1` ADD KEY `k_1` (`k`)",
        b"ALTER TABLE `d`.`sbtest1` ADD FULLTEXT KEY `ft` (`c`)",
    ]


@pytest.mark.parametrize(
    "create",
    [
        # foreign keys need their indexes
        b"CREATE TABLE `o` (\n  `id` int,\n  `c` int,\n  KEY `c` (`c`),\n"
        b"  CONSTRAINT `f` FOREIGN KEY (`c`) REFERENCES `cu` (`id`)\n) ENGINE=InnoDB",
        # MyISAM copies the table to add an index
        b"CREATE TABLE `m` (\n  `id` int,\n  KEY `i` (`id`)\n) ENGINE=MyISAM",
        # nothing to defer
        b"CREATE TABLE `p` (\n  `id` int,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB",
    ],
)
def test_tables_left_alone(create: bytes) -> None:
    assert defer_secondary_indexes(create) is None


def test_the_key_an_auto_increment_column_needs_stays() -> None:
    create = (
        b"CREATE TABLE `a` (\n  `x` int,\n  `n` int NOT NULL AUTO_INCREMENT,\n  KEY `n` (`n`),\n  KEY `x` (`x`)\n"
        b") ENGINE=InnoDB"
    )
    deferred = defer_secondary_indexes(create)
    assert deferred is not None
    assert b"KEY `n` (`n`)" in deferred.create_table
    assert deferred.add_clauses == [b"ADD KEY `x` (`x`)"]


def test_replace_load_data_file() -> None:
    text = b"LOAD DATA LOCAL INFILE 'db.t.00000.dat' REPLACE INTO TABLE `t` FIELDS TERMINATED BY '\\t'"
    replaced, original = replace_load_data_file(text, "/dev/fd/7")
    assert original == "db.t.00000.dat"
    assert replaced == b"LOAD DATA LOCAL INFILE '/dev/fd/7' REPLACE INTO TABLE `t` FIELDS TERMINATED BY '\\t'"
