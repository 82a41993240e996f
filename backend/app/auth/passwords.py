"""Password hashes: argon2id with argon2-cffi's defaults (RFC 9106's low-memory profile: 64 MiB, 3 passes, 4 lanes),
in PHC string form, so the parameters travel with each hash and can be raised later."""

import secrets
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether the hash was made with weaker parameters than today's, so the next login re-hashes it."""
    return _hasher.check_needs_rehash(password_hash)


@lru_cache
def _decoy_hash() -> str:
    return _hasher.hash(secrets.token_urlsafe(16))


def spend_verification_time(password: str) -> None:
    """A login for a name that does not exist takes as long as one with a wrong password, so timing does not
    tell which names exist."""
    verify_password(_decoy_hash(), password)


def one_time_password() -> str:
    """Random, 16 URL-safe characters (96 bits): shown once, changed at the first login."""
    return secrets.token_urlsafe(12)
