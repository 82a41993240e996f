"""A suggestion's change applied to a job: the restore request of the re-run (pure, table-tested)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from app.advisor.suggestion import Setting

# Parameters of a restore request a change may set directly; "target.options.NAME" sets a sandbox's option.
REQUEST_FIELDS = frozenset(
    {"backup_path", "database", "runner", "threads", "chunk_size", "use_memory", "read_io_threads", "write_io_threads"}
)
_COPIED = (*REQUEST_FIELDS, "verify", "checksum_source_id", "capture")
SERVER_OPTION = "target.options."


class ChangeNotApplicable(ValueError):
    """The change names something a re-run of this job cannot set."""


def request_of(parameters: dict[str, Any]) -> dict[str, Any]:
    """The restore request that queues the same job again (the parameters a job stores are resolved: a sandbox's
    options already hold its preset's values, so they are all passed as explicit settings)."""
    request: dict[str, Any] = {name: parameters[name] for name in _COPIED if parameters.get(name) is not None}
    target = parameters.get("target") or {"kind": "sandbox"}
    if target.get("kind") == "saved":
        request["target"] = {"kind": "saved", "target_id": target["target_id"]}
    else:
        request["target"] = {
            "kind": "sandbox",
            "preset": target.get("preset", "server-defaults"),
            "options": copy.deepcopy(target.get("options") or {}),
            "keep": bool(target.get("keep", False)),
        }
    return request


def apply_settings(request: dict[str, Any], settings: Iterable[Setting]) -> dict[str, Any]:
    changed = copy.deepcopy(request)
    for setting in settings:
        if setting.option in REQUEST_FIELDS:
            changed[setting.option] = setting.value
        elif setting.option.startswith(SERVER_OPTION):
            if changed["target"]["kind"] != "sandbox":
                raise ChangeNotApplicable(
                    f"{setting.option} is a server option: a re-run into a saved server cannot change it"
                )
            name = setting.option.removeprefix(SERVER_OPTION)
            options = changed["target"].setdefault("options", {})
            if name.startswith("extra."):
                options.setdefault("extra", {})[name.removeprefix("extra.")] = str(setting.value)
            else:
                options[name] = setting.value
        else:
            raise ChangeNotApplicable(f"{setting.option} is not a setting of a restore job")
    return changed
