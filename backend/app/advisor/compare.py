"""Two runs side by side: which parameters differ, and per operation what changed (pure, table-tested)."""

from __future__ import annotations

from typing import Any

# Parameters a user reads as "the settings of the run"; bookkeeping (backup_format, verify) is left out.
_COMPARED = (
    "backup_path",
    "database",
    "runner",
    "threads",
    "chunk_size",
    "use_memory",
    "read_io_threads",
    "write_io_threads",
    "capture",
)


def flatten_settings(parameters: dict[str, Any], run_facts: dict[str, Any]) -> dict[str, Any]:
    """The settings of a run as option -> value, with the threads the worker actually used."""
    flat = {name: parameters.get(name) for name in _COMPARED}
    if run_facts.get("threads") is not None:
        flat["threads"] = run_facts["threads"]
    target = parameters.get("target") or {}
    flat["target"] = "saved" if target.get("kind") == "saved" else f"sandbox ({target.get('preset', '?')})"
    for name, value in (target.get("options") or {}).items():
        if name == "extra":
            for extra_name, extra_value in (value or {}).items():
                flat[f"target.options.extra.{extra_name}"] = extra_value
        elif name != "port":
            flat[f"target.options.{name}"] = value
    return flat


def setting_differences(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"option": name, "a": a.get(name), "b": b.get(name)}
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]


def _change_pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return round(100.0 * (b - a) / a, 1)


def _side(row: dict[str, Any] | None) -> dict[str, Any] | None:
    if row is None:
        return None
    latency = row["latency_us"]
    return {
        "count": row["count"],
        "bytes": row["bytes"],
        "mb_per_s": row["mb_per_s"],
        "p50_us": latency["p50"],
        "p95_us": latency["p95"],
        "p99_us": latency["p99"],
    }


def compare_rows(a: list[dict[str, Any]], b: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Rows of two /trace/stats lists (by_kind or by_op) joined on `key`, busiest in either run first."""
    left = {row[key]: row for row in a}
    right = {row[key]: row for row in b}
    names = sorted(
        set(left) | set(right),
        key=lambda name: -max(left.get(name, {}).get("count", 0), right.get(name, {}).get("count", 0)),
    )
    rows = []
    for name in names:
        x, y = left.get(name), right.get(name)
        kind = (x or y or {}).get("kind", name)
        rows.append(
            {
                "op": name,
                "kind": kind,
                "a": _side(x),
                "b": _side(y),
                "count_change_pct": _change_pct(x["count"] if x else None, y["count"] if y else None),
                "bytes_change_pct": _change_pct(x["bytes"] if x else None, y["bytes"] if y else None),
                "p95_change_pct": _change_pct(
                    x["latency_us"]["p95"] if x else None, y["latency_us"]["p95"] if y else None
                ),
            }
        )
    return rows
