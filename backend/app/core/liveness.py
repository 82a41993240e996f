"""Worker liveness in Redis: each worker refreshes a key with a short TTL; a dead worker's key expires."""

import redis

KEY_PREFIX = "restorescope:worker:"
BEAT_KEY_PREFIX = "restorescope:beat:"
TTL_S = 15


def announce_worker(client: redis.Redis, name: str) -> None:
    client.set(KEY_PREFIX + name, "alive", ex=TTL_S)


def alive_workers(client: redis.Redis) -> list[str]:
    return sorted(str(key, "utf-8").removeprefix(KEY_PREFIX) for key in client.scan_iter(KEY_PREFIX + "*"))


def worker_host(name: str) -> str:
    """The host of a worker named as worker.celery_app.worker_name() names it: "host:pid"."""
    return name.rsplit(":", 1)[0]


def announce_beat(client: redis.Redis, name: str) -> None:
    client.set(BEAT_KEY_PREFIX + name, "alive", ex=TTL_S)


def alive_beats(client: redis.Redis) -> list[str]:
    return sorted(str(key, "utf-8").removeprefix(BEAT_KEY_PREFIX) for key in client.scan_iter(BEAT_KEY_PREFIX + "*"))
