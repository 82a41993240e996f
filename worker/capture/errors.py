"""Errors of capture backends; each message is written for the user who launched the job.

CaptureError            a capture problem
 ├── CaptureUnavailable  the backend cannot run on this host or for this target (the reason says why)
 └── CaptureFailed       the backend started but broke while the job ran
"""


class CaptureError(Exception):
    """A capture problem, worded for the user."""


class CaptureUnavailable(CaptureError):
    """The backend cannot run here; ``reason`` says why, in a phrase that fits after "because"."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(f"capture with {backend} is not possible here: {reason}")
        self.backend = backend
        self.reason = reason


class CaptureFailed(CaptureError):
    """The tracer exited or broke while the job ran."""
