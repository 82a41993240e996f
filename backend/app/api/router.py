from fastapi import APIRouter, Depends

from app.advisor.routes import router as advisor_router
from app.api.deps import require_viewer
from app.audit.routes import router as audit_router
from app.auth.routes import router as auth_router
from app.backups.routes import router as backups_router
from app.drills.routes import router as drills_router
from app.health.routes import router as health_router
from app.jobs.routes import router as jobs_router
from app.notifications.routes import router as notifications_router
from app.protected.routes import router as protected_router
from app.sandboxes.routes import router as sandboxes_router
from app.targets.routes import router as targets_router
from app.traces.routes import router as traces_router
from app.trends.routes import router as trends_router
from app.users.routes import router as users_router

api_router = APIRouter()
# Open: the health check (load balancers, `make run`'s wait) and the auth routes, which check sessions themselves.
api_router.include_router(health_router)
api_router.include_router(auth_router)
# Everything else needs at least a viewer's session; routes that change things ask for more in their signature.
for router in (
    jobs_router,
    backups_router,
    targets_router,
    sandboxes_router,
    traces_router,
    advisor_router,
    users_router,
    audit_router,
    protected_router,
    drills_router,
    trends_router,
    notifications_router,
):
    api_router.include_router(router, dependencies=[Depends(require_viewer)])
