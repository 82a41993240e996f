from pathlib import Path

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from app.core.config import REPO_ROOT

FRONTEND_DIST = REPO_ROOT / "frontend" / "dist"

# Paths the browser app never owns: an unknown API path must stay a JSON 404, not become the app's page.
_NOT_THE_APP = ("api", "assets", "docs", "redoc", "openapi.json")


def mount_frontend(app: FastAPI, dist: Path = FRONTEND_DIST) -> None:
    """Serve the built UI at / when it has been built; the API works without it.

    Any other GET path gets index.html, so deep links such as /jobs/5/timeline open the right page.
    """
    if not (dist / "index.html").exists():
        return
    app.mount("/assets", StaticFiles(directory=dist / "assets"), name="assets")
    root = dist.resolve()

    @app.get("/{path:path}", include_in_schema=False)
    async def spa(path: str) -> FileResponse:
        if path.split("/", 1)[0] in _NOT_THE_APP:
            raise HTTPException(status_code=404, detail="Not Found")
        candidate = (dist / path).resolve()
        if path and candidate.is_file() and candidate.is_relative_to(root):
            return FileResponse(candidate)
        # index.html must not be cached: it names the current build's hashed asset files.
        return FileResponse(dist / "index.html", headers={"Cache-Control": "no-cache"})
