"""Worker liveness in Redis: each worker refreshes a key with a short TTL; a dead worker's key expires."""

import redis

KEY_PREFIX = "restorescope:worker:"
TTL_S = 15


def announce_worker(client: redis.Redis, name: str) -> None:
    client.set(KEY_PREFIX + name, "alive", ex=TTL_S)


def alive_workers(client: redis.Redis) -> list[str]:
    return sorted(str(key, "utf-8").removeprefix(KEY_PREFIX) for key in client.scan_iter(KEY_PREFIX + "*"))
