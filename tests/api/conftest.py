import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from app.core.db import session_scope
from app.main import app
from app.models import Backup, Job, JobLog, ServerSnapshot, Target, VerificationResult

DUMP_HEAD = b"""-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: shop
-- ------------------------------------------------------
-- Server version\t10.11.19-MariaDB-0+deb12u1

--
-- Current Database: `shop`
--

CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;

USE `shop`;
CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`));
INSERT INTO `t` VALUES (1),(2),(3);
"""

NODB_HEAD = b"""-- MariaDB dump 10.19  Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: localhost    Database: shop
-- ------------------------------------------------------
-- Server version\t10.11.19-MariaDB-0+deb12u1
CREATE TABLE `t` (`id` int NOT NULL, PRIMARY KEY (`id`));
INSERT INTO `t` VALUES (1),(2),(3);
"""


@pytest.fixture(autouse=True)
def empty_job_store() -> Iterator[None]:
    yield
    with session_scope() as session:
        for model in (VerificationResult, ServerSnapshot, JobLog, Job, Target, Backup):
            session.execute(delete(model))


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def dumps(backup_root: Path) -> Iterator[dict[str, Path]]:
    folder = backup_root / "api"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "plain": folder / "shop.sql",
        "gzip": folder / "shop.sql.gz",
        "nodb": folder / "nodb.sql",
    }
    files["plain"].write_bytes(DUMP_HEAD)
    files["gzip"].write_bytes(gzip.compress(DUMP_HEAD))
    files["nodb"].write_bytes(NODB_HEAD)
    mydumper = folder / "mydumper-dir"
    mydumper.mkdir(exist_ok=True)
    (mydumper / "metadata").write_text("Started dump at: 2026-11-01 00:00:00\n")
    files["mydumper"] = mydumper
    yield files
    for path in files.values():
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink(missing_ok=True)


def error_message(response_json: dict[str, object]) -> str:
    detail = response_json["detail"]
    assert isinstance(detail, list)
    return " | ".join(str(item["msg"]) for item in detail)


def error_fields(response_json: dict[str, object]) -> list[str]:
    detail = response_json["detail"]
    assert isinstance(detail, list)
    return [".".join(str(p) for p in item["loc"][1:]) for item in detail]
