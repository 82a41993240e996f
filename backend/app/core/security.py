"""Secrets at rest: AES-256-GCM with a random 96-bit nonce per value, and the key kept in a 0600 file."""

import os
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.core.config import get_settings

NONCE_BYTES = 12


def _load_or_create_key(path: Path) -> bytes:
    if path.exists():
        key = path.read_bytes()
        if len(key) != 32:
            raise RuntimeError(f"{path} must hold a 32-byte key; delete it only if no saved passwords need it")
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    key = AESGCM.generate_key(bit_length=256)
    # O_EXCL: two processes starting at once must not each write a different key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _load_or_create_key(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


@lru_cache
def _cipher() -> AESGCM:
    return AESGCM(_load_or_create_key(get_settings().resolved_secret_key_file))


def encrypt_secret(plaintext: str) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + _cipher().encrypt(nonce, plaintext.encode(), None)


def decrypt_secret(blob: bytes) -> str:
    return _cipher().decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], None).decode()
