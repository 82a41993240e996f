import hmac
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Response, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, generate_latest

from app.api.deps import SettingsDep
from app.core.db import session_scope
from app.metrics.collector import RestorescopeCollector

router = APIRouter(tags=["metrics"])

_scrape_token = HTTPBearer(auto_error=False)


def check_scrape_token(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_scrape_token)]
) -> None:
    """With RESTORESCOPE_METRICS_TOKEN set, a scrape must send it as a Bearer token; unset, /metrics is open."""
    expected = settings.metrics_token.get_secret_value()
    if not expected:
        return
    given = credentials.credentials if credentials is not None else ""
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "this server's metrics need its scrape token (RESTORESCOPE_METRICS_TOKEN) as 'Authorization: Bearer'",
            headers={"WWW-Authenticate": "Bearer"},
        )


@router.get("/metrics", include_in_schema=False, dependencies=[Depends(check_scrape_token)])
def read_metrics(settings: SettingsDep) -> Response:
    """Prometheus text format, read from the job store and Redis at scrape time."""
    # A registry of its own (not prometheus_client's global one, which would add this process's own metrics and
    # make API processes disagree); it is cheap, so each scrape builds one with the settings it was given.
    registry = CollectorRegistry()
    registry.register(RestorescopeCollector(session_scope, settings.redis_url))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_PLAIN_0_0_4)
