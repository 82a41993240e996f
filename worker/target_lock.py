"""One job at a time on a shared thing, across all workers: a Redis lock the job's heartbeat renews.

A restore into a saved target holds its target's lock; a drill holds its protected database's lock, so two
drills of one database never run at once (the second waits, as a restore waits for a busy target)."""

import redis

LOCK_TTL_S = 60
_RELEASE_IF_OURS = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW_IF_OURS = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


class JobLock:
    def __init__(self, client: redis.Redis, key: str, job_id: int, busy_message: str) -> None:
        self.client, self.key, self.owner = client, key, str(job_id)
        # What a waiting job logs, with {holder} replaced by the job holding the lock.
        self.busy_message = busy_message

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.owner, nx=True, ex=LOCK_TTL_S))

    def holder(self) -> str | None:
        value = self.client.get(self.key)
        return value.decode() if isinstance(value, bytes) else None

    def renew(self) -> None:
        self.client.eval(_RENEW_IF_OURS, 1, self.key, self.owner, LOCK_TTL_S)

    def release(self) -> None:
        self.client.eval(_RELEASE_IF_OURS, 1, self.key, self.owner)


def target_lock(client: redis.Redis, target_id: int, job_id: int) -> JobLock:
    return JobLock(client, f"restorescope:target-lock:{target_id}", job_id, "the target is busy with job {holder}")


def drill_lock(client: redis.Redis, protected_database_id: int, job_id: int) -> JobLock:
    return JobLock(
        client,
        f"restorescope:drill-lock:{protected_database_id}",
        job_id,
        "another drill of this database is running (job {holder})",
    )
