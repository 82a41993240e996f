"""Errors the domain raises for the user; the API turns each kind into one HTTP status.

DomainError
├── NotFound          404  the thing named does not exist
├── InvalidRequest    422  the request is well-formed but cannot be honoured (path outside the roots...)
└── Conflict          409  the thing exists but is in the wrong state (cancel a finished job...)
"""


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        # The request field the message is about, so a form can show it next to that field.
        self.field = field


class NotFound(DomainError):
    status_code = 404


class InvalidRequest(DomainError):
    status_code = 422


class Conflict(DomainError):
    status_code = 409
