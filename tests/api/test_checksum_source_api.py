"""A restore request's checksum source as a client sees it: kept in the job's parameters, or refused on its field."""

from pathlib import Path

from fastapi.testclient import TestClient

from tests.api.conftest import error_fields, error_message


def test_checksum_source_is_kept_in_the_parameters(client: TestClient, dumps: dict[str, Path]) -> None:
    """The user names the server the backup came from; the queued job carries its id for the worker."""
    source = client.post("/api/v1/targets", json={"name": "prod", "user": "restore", "password": "pw"}).json()
    response = client.post(
        "/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", "checksum_source_id": source["id"]}
    )
    assert response.status_code == 201, response.text
    assert response.json()["parameters"]["checksum_source_id"] == source["id"]


def test_unknown_or_unusable_checksum_source_is_refused_on_its_field(
    client: TestClient, dumps: dict[str, Path]
) -> None:
    """An id that names no saved target, or a request that does not verify, is shown under the field."""
    source = client.post("/api/v1/targets", json={"name": "prod", "user": "restore", "password": "pw"}).json()
    cases = [
        ({"checksum_source_id": 999}, "no saved target with id 999"),
        ({"checksum_source_id": source["id"], "verify": False}, "turn verify on"),
    ]
    for extra, message in cases:
        response = client.post("/api/v1/jobs/restore", json={"backup_path": "api/shop.sql", **extra})
        assert response.status_code == 422, extra
        assert error_fields(response.json()) == ["checksum_source_id"], response.json()
        assert message in error_message(response.json())
