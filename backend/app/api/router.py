from fastapi import APIRouter

from app.backups.routes import router as backups_router
from app.health.routes import router as health_router
from app.jobs.routes import router as jobs_router
from app.sandboxes.routes import router as sandboxes_router
from app.targets.routes import router as targets_router
from app.traces.routes import router as traces_router

api_router = APIRouter()
for router in (health_router, jobs_router, backups_router, targets_router, sandboxes_router, traces_router):
    api_router.include_router(router)
