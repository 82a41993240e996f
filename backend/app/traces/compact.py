"""Query files built when a trace closes (filled in by the query side)."""

from pathlib import Path


def compact(directory: Path) -> None:
    """Nothing yet: queries read the parts directly."""
