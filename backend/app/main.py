from fastapi import FastAPI

from app.api.errors import install_error_handlers
from app.api.lifespan import lifespan
from app.api.router import api_router
from app.api.static import mount_frontend
from app.metrics.routes import router as metrics_router

app = FastAPI(
    title="restorescope",
    description="Launch, watch and verify MySQL/MariaDB restores into sandbox servers.",
    lifespan=lifespan,
)
install_error_handlers(app)
app.include_router(api_router, prefix="/api/v1")
# At the root, where Prometheus looks; included before the frontend, whose catch-all would otherwise answer it.
app.include_router(metrics_router)
mount_frontend(app)
