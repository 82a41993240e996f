from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from app.core.errors import DomainError


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(_request: Request, error: DomainError) -> JSONResponse:
        # Same shape as FastAPI's validation errors, so a form shows either kind next to its field.
        location = ["body", *error.field.split(".")] if error.field else ["body"]
        return JSONResponse(
            status_code=error.status_code,
            content={"detail": [{"loc": location, "msg": error.message, "type": type(error).__name__}]},
        )
