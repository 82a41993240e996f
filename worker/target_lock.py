"""One restore per saved target at a time, across all workers: a Redis lock the job's heartbeat renews."""

import redis

LOCK_TTL_S = 60
_RELEASE_IF_OURS = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_RENEW_IF_OURS = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


class TargetLock:
    def __init__(self, client: redis.Redis, target_id: int, job_id: int) -> None:
        self.client, self.key, self.owner = client, f"restorescope:target-lock:{target_id}", str(job_id)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.owner, nx=True, ex=LOCK_TTL_S))

    def holder(self) -> str | None:
        value = self.client.get(self.key)
        return value.decode() if isinstance(value, bytes) else None

    def renew(self) -> None:
        self.client.eval(_RENEW_IF_OURS, 1, self.key, self.owner, LOCK_TTL_S)

    def release(self) -> None:
        self.client.eval(_RELEASE_IF_OURS, 1, self.key, self.owner)
