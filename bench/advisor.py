"""Does following the advisor make restores faster? Start from the slowest common path and let it drive.

Restore: the sysbench dataset (4 tables x 1M rows, bench/loader_speed.py makes it in every format and caches it
in bench/out/backups) restored through the product with the mysql client (`mysql < dump.sql`) into a sandbox
on server defaults; then up to --steps times: read the run's advice, take the top suggestion that a re-run can
apply, re-run with it. Each step's restoring phase is timed by the job itself.
Prepare: a mariabackup backup of the same data taken while sysbench wrote to the server (its redo log is
applied by the prepare), restored with the prepare's defaults, and again with a small --use-memory (16M); then
the same loop over the preparing phase (the copy of the backup and its prepare).

    PYTHONPATH=backend:. .venv/bin/python bench/advisor.py [--steps 4] [--only restore,prepare] [--no-bare]
        [--confirm N]

The chain runs one configuration after the other, so a change in the machine's load between two steps shows
as a speedup or a slowdown: --confirm N then runs the first and the last configuration again N times each,
alternating (retries of those jobs), and the median ratio of the pairs is printed next to the chain's.

`mysql < dump.sql` outside the product is timed too (--no-bare skips it), so the starting point can be checked
against the bare tool. Goal: the restore chain ends at least 2.5x faster than where it started (the best path
measured by hand here was about 2.6x, mysqlimport on --tab files).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from app.sandboxes.options import ServerOptions
from bench.loader_speed import DATASETS, make_dataset, mysql_bare, ours, timed
from bench.restore_overhead import OUT, start_redis
from tests.stack import REPO, Stack, free_port
from worker.process_group import ProcessGroup
from worker.sandbox.binary import detect_server_binary, find_tool
from worker.sandbox.server import Sandbox

BACKUPS = OUT / "backups"
PHYSICAL = BACKUPS / "sysbench-physical-under-load"
GOAL = 2.5
# The source of the physical backup keeps every page dirty and its redo unflushed (a 2G log, lazy flushing):
# the backup then starts from an old checkpoint and carries all the redo written since, as a backup of a busy
# server does.
LAZY_SOURCE = ServerOptions(
    innodb_buffer_pool_size="2G",
    innodb_log_file_size="2G",
    innodb_io_capacity=100,
    extra={
        "innodb_max_dirty_pages_pct": "90",
        "innodb_max_dirty_pages_pct_lwm": "80",
        "innodb_adaptive_flushing": "OFF",
    },
)
WRITE_LOAD_S = 90
SMALL_USE_MEMORY = "16M"
BACKUP_AFTER_S = 30


def make_physical_under_load() -> None:
    """A mariabackup backup of the sysbench set taken while `sysbench oltp_write_only` writes to the server."""
    if PHYSICAL.exists():
        return
    print(f"making {PHYSICAL.name}: the sysbench set, then mariabackup --backup under write load", flush=True)
    partial = PHYSICAL.with_name(PHYSICAL.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    dataset = DATASETS["sysbench"]
    with Sandbox(
        OUT / "work", "advisor-physical-source", LAZY_SOURCE, detect_server_binary(), ProcessGroup(), lambda _l: None
    ) as source:
        source.start()
        ours(dataset.sql, None, 2, 64 << 20)(source)
        load = subprocess.Popen(
            [
                "sysbench",
                "oltp_write_only",
                f"--mysql-socket={source.socket_path}",
                "--mysql-user=root",
                f"--mysql-db={dataset.database}",
                f"--tables={dataset.tables}",
                f"--table-size={dataset.rows}",
                "--threads=2",
                f"--time={WRITE_LOAD_S}",
                "run",
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            time.sleep(BACKUP_AFTER_S)
            subprocess.run(
                [
                    find_tool(("mariabackup", "mariadb-backup")),
                    "--no-defaults",
                    "--backup",
                    "--user=root",
                    f"--target-dir={partial}",
                    f"--socket={source.socket_path}",
                    f"--datadir={source.datadir}",
                ],
                check=True,
                capture_output=True,
            )
        finally:
            load.terminate()
            load.wait()
    partial.rename(PHYSICAL)


@dataclass
class Step:
    job_id: int
    rule: str | None
    change: str
    seconds: float
    status: str
    expected: float | None = None


def phase_seconds(job: dict[str, Any], phase: str) -> float:
    from datetime import datetime

    start, end = job["phase_times"][phase]
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def top_suggestion(stack: Stack, job_id: int) -> dict[str, Any] | None:
    advice = stack.http.get(f"/jobs/{job_id}/advice").json()
    for note in advice.get("notes") or []:
        print(f"      note: {note}", flush=True)
    print(f"      what held it back: {advice.get('headline')}", flush=True)
    for suggestion in advice["suggestions"]:
        if not suggestion["minor"] and suggestion["change"]["rerun"]:
            suggestion_: dict[str, Any] = suggestion
            return suggestion_
    return None


def follow(stack: Stack, first: dict[str, Any], phase: str, steps: int) -> list[Step]:
    """Run `first`, then re-run the top suggestion of each run, up to `steps` times."""
    job = stack.wait_until_done(first["id"], timeout_s=3600)
    if job["status"] != "succeeded":
        raise SystemExit(f"the starting job {job['id']} {job['status']}: {job['error']}")
    chain = [Step(job["id"], None, "start", phase_seconds(job, phase), job["status"])]
    print(f"  step 0: job {job['id']}  {chain[0].seconds:7.1f} s  (load average {os.getloadavg()[0]:.1f})", flush=True)
    for number in range(1, steps + 1):
        suggestion = top_suggestion(stack, job["id"])
        if suggestion is None:
            print("      no suggestion left that a re-run can apply: stop", flush=True)
            break
        change = ", ".join(
            f"{s['option'].removeprefix('target.options.')} {s['previous']} -> {s['value']}"
            for s in suggestion["change"]["settings"]
        )
        print(f"      top: {suggestion['title']} [{change}] expected {suggestion['expected_speedup']:.2f}x", flush=True)
        response = stack.http.post(f"/jobs/{job['id']}/advice/{suggestion['rule']}/rerun", json={})
        if response.status_code != 201:
            raise SystemExit(f"re-run refused: {response.text}")
        job = stack.wait_until_done(response.json()["id"], timeout_s=3600)
        if job["status"] != "succeeded":
            raise SystemExit(f"the re-run {job['id']} {job['status']}: {job['error']}")
        step = Step(job["id"], suggestion["rule"], change, phase_seconds(job, phase), job["status"])
        step.expected = suggestion["expected_speedup"]
        chain.append(step)
        print(
            f"  step {number}: job {job['id']}  {step.seconds:7.1f} s  x{chain[-2].seconds / step.seconds:.2f} on the "
            f"step before, x{chain[0].seconds / step.seconds:.2f} in all  (load average {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    return chain


def report(title: str, chain: list[Step], bare: float | None) -> float:
    print(f"\n{title}")
    print(f"  {'step':4} {'job':>5} {'seconds':>8} {'x step':>7} {'x total':>8} {'expected':>9}  change")
    for index, step in enumerate(chain):
        before = chain[index - 1].seconds if index else step.seconds
        expected = f"{step.expected:.2f}x" if step.expected else ""
        print(
            f"  {index:<4} {step.job_id:>5} {step.seconds:8.1f} {before / step.seconds:6.2f}x "
            f"{chain[0].seconds / step.seconds:7.2f}x {expected:>9}  {step.rule or ''} {step.change}"
        )
    total = chain[0].seconds / chain[-1].seconds
    if bare is not None:
        print(f"  bare `mysql < dump.sql` (no product, same sandbox settings): {bare:.1f} s")
        print(f"  final step vs bare `mysql < dump.sql`: {bare / chain[-1].seconds:.2f}x")
    return total


def confirm(stack: Stack, chain: list[Step], phase: str, rounds: int) -> float | None:
    """The first and last configurations again, alternating; the median of first/last over every pair."""
    if rounds <= 0 or len(chain) < 2:
        return None
    first, last = [chain[0].seconds], [chain[-1].seconds]
    for round_no in range(rounds):
        order = [(chain[0].job_id, first), (chain[-1].job_id, last)]
        for job_id, times in order if round_no % 2 else reversed(order):
            response = stack.http.post(f"/jobs/{job_id}/retry")
            if response.status_code != 201:
                raise SystemExit(f"retry refused: {response.text}")
            job = stack.wait_until_done(response.json()["id"], timeout_s=3600)
            if job["status"] != "succeeded":
                raise SystemExit(f"the retry {job['id']} {job['status']}: {job['error']}")
            times.append(phase_seconds(job, phase))
            print(
                f"  confirm {round_no + 1}: job {job_id} again: {times[-1]:7.1f} s  (load average "
                f"{os.getloadavg()[0]:.1f})",
                flush=True,
            )
    ratios = [a / b for a, b in zip(first, last, strict=True)]
    median = statistics.median(ratios)
    print(
        f"  first vs last configuration, {len(ratios)} pairs: "
        f"{', '.join(f'{r:.2f}x' for r in ratios)}; median {median:.2f}x",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--only", default="restore,prepare")
    parser.add_argument("--no-bare", action="store_true", help="skip timing `mysql < dump.sql` outside the product")
    parser.add_argument("--confirm", type=int, default=0, help="time the first and last configurations N more times")
    args = parser.parse_args()
    chains = args.only.split(",")
    dataset = DATASETS["sysbench"]
    make_dataset(dataset)
    if "prepare" in chains:
        make_physical_under_load()

    redis_port = free_port()
    redis = start_redis(redis_port)
    data_dir = OUT / f"data-advisor-{os.getpid()}"
    stack = Stack(
        OUT / "logs",
        {
            "RESTORESCOPE_DATA_DIR": str(data_dir),
            "DATABASE_URL": f"sqlite:///{data_dir / 'restorescope.db'}",
            "RESTORESCOPE_BACKUP_ROOTS": str(BACKUPS),
            "RESTORESCOPE_WORK_ROOT": str(OUT / "work"),
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        },
    )
    subprocess.run([str(REPO / ".venv/bin/alembic"), "upgrade", "head"], cwd=REPO, env=stack.env, check=True)
    results: dict[str, float] = {}
    bare = None
    try:
        stack.start_api()
        stack.start_worker()
        if "restore" in chains:
            print(
                f"\nrestore: {dataset.sql.name} with the mysql client on server defaults, then the advice", flush=True
            )
            first = stack.restore(
                dataset.sql.name, runner="mysql", target={"kind": "sandbox", "preset": "server-defaults"}
            )
            chain = follow(stack, first, "restoring", args.steps)
            if not args.no_bare:
                bare = timed("advisor-bare", mysql_bare(dataset)).wall_s
                print(f"  bare mysql < dump.sql: {bare:.1f} s", flush=True)
            results["restore"] = report("restore chain (restoring phase)", chain, bare)
            confirmed = confirm(stack, chain, "restoring", args.confirm)
            if confirmed is not None:
                results["restore"] = confirmed
        if "prepare" in chains:
            for memory in (None, SMALL_USE_MEMORY):
                said = f"--use-memory {memory}" if memory else "the prepare's defaults"
                print(f"\nprepare: {PHYSICAL.name} with {said}, then the advice", flush=True)
                extra = {"use_memory": memory} if memory else {}
                chain = follow(stack, stack.restore(PHYSICAL.name, **extra), "preparing", args.steps)
                results[f"prepare, {said}"] = report(f"prepare chain from {said} (preparing phase)", chain, None)
                confirmed = confirm(stack, chain, "preparing", args.confirm)
                if confirmed is not None:
                    results[f"prepare, {said}"] = confirmed
    finally:
        stack.stop()
        redis.terminate()
        threading.Thread(target=shutil.rmtree, args=(data_dir,), kwargs={"ignore_errors": True}).start()
    print()
    for name, total in results.items():
        goal = f"(goal {GOAL}x: {'met' if total >= GOAL else 'NOT met'})" if name == "restore" else "(as measured)"
        print(f"{name}: total speedup {total:.2f}x {goal}")
    sys.exit(0 if results.get("restore", GOAL) >= GOAL else 1)


if __name__ == "__main__":
    main()
