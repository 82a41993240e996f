"""Session tokens: 256 random bits handed to the client; the job store keeps only their SHA-256 (a token is
random, so a plain hash is enough: there is nothing to guess, unlike a password)."""

import hashlib
import secrets

COOKIE_NAME = "restorescope_session"
# The API is all the cookie is for.
COOKIE_PATH = "/api"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
