"""Errors of scratch server sandboxes; each message tells the user what happened and what to do.

SandboxError            a sandbox could not be created, started or reached
 └── PortInUseError     the TCP port asked for (or picked) is taken by another process
"""


class SandboxError(Exception):
    """A sandbox server problem, worded for the user who launched the job."""


class PortInUseError(SandboxError):
    """The sandbox's TCP port is already taken on 127.0.0.1."""
