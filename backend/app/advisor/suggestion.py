"""What the advisor says about a run: a suggestion, the change it proposes, and where its evidence is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.advisor.evidence import Interval


@dataclass(frozen=True)
class Setting:
    """One parameter of a job, named as in the restore request: "runner", "threads", "chunk_size",
    "use_memory", "read_io_threads", "backup_path", "database", or "target.options.NAME" for a sandbox's
    server option (ServerOptions); `previous` is what the run had."""

    option: str
    value: Any
    previous: Any = None


@dataclass(frozen=True)
class Change:
    settings: tuple[Setting, ...]
    # False when a re-run of this job cannot apply it (a saved server's settings, a backup in another format that
    # does not exist yet): `note` then says what to do instead.
    rerun: bool = True
    note: str | None = None


@dataclass(frozen=True)
class Where:
    """What the timeline highlights: these lanes (thread ids), over these time ranges."""

    lanes: tuple[int, ...] = ()
    ranges: tuple[Interval, ...] = ()


@dataclass(frozen=True)
class Suggestion:
    rule: str
    title: str
    seen: str  # what was seen, in a sentence with its numbers
    numbers: tuple[tuple[str, str], ...]  # the same numbers as label/value pairs
    where: Where
    change: Change
    expected: str  # the expected effect, and what the estimate rests on
    # Share (0..1) of the phase the change should save, estimated from this run's evidence: the ranking.
    expected_gain: float
    caveat: str
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def expected_speedup(self) -> float:
        return 1.0 / max(1.0 - min(self.expected_gain, 0.95), 0.05)
