"""SASL user credentials, stored salted and hashed: never a password in clear, on disk or in memory.

File: `<data_dir>/_kafkalite/security/credentials.json`, mode 0600, replaced atomically on every change::

    {"version": 1, "users": {"alice": {
        "SCRAM-SHA-512": {"salt": b64, "iterations": 4096, "stored_key": b64, "server_key": b64},
        "PLAIN":         {"salt": b64, "iterations": 4096, "hash": b64}}}}

SCRAM entries are RFC 5802's StoredKey and ServerKey, which is all a SCRAM server needs (the exchange proves the
client knows the password without it ever being sent); they are made by `scramp`, or, for AlterUserScramCredentials,
from the salted password the client computed (RFC 5802 §3: ClientKey = HMAC(SaltedPassword, "Client Key"),
StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key")). PLAIN entries are PBKDF2-HMAC-SHA512 of
the password; a PLAIN login recomputes it and compares in constant time.

Iteration counts follow Kafka's bounds: 4096 to 16384. A store without a data directory keeps users in memory only.
Not safe for concurrent writers across processes: `kafkalite users` edits the file while the broker is stopped,
as Kafka's `kafka-storage format --add-scram` does; a running broker changes users through
AlterUserScramCredentials.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kafkalite.errors import InvalidConfigError, StorageError
from kafkalite.security import documents

SCRAM_MECHANISMS: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS: Final = ("PLAIN", *SCRAM_MECHANISMS)
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
_HASHES: Final = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_PLAIN_HASH: Final = "sha512"


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    def auth_info(self) -> tuple[bytes, bytes, bytes, int]:
        """What scramp's server asks its `auth_fn` for."""
        return self.salt, self.stored_key, self.server_key, self.iterations


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode(), validate=True)


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise InvalidConfigError(f"iterations {iterations} outside [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")


def check_user_name(user: str) -> None:
    if not user or user != user.strip() or any(ord(ch) < 32 for ch in user):
        raise InvalidConfigError(f"invalid user name {user!r}")


def scram_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """A SCRAM credential from the client-side salted password (AlterUserScramCredentials' upsertion)."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, iterations, stored_key, server_key)


class CredentialStore:
    """Users and their credentials per mechanism; `path` None keeps them in memory only."""

    def __init__(self, data_dir: Path | None, *, fsync: bool = True) -> None:
        self.path = documents.document_path(data_dir, "credentials.json")
        self._fsync = fsync
        self._users: dict[str, dict[str, dict[str, Any]]] = {}
        self._load()

    def _load(self) -> None:
        def parse(users: Any) -> dict[str, dict[str, dict[str, Any]]]:
            if not isinstance(users, dict):
                raise TypeError("users is not an object")
            return users

        self._users = documents.load(self.path, "users", parse, "credentials") or {}

    def _save(self) -> None:
        documents.save(self.path, "users", self._users, fsync=self._fsync)

    def users(self) -> dict[str, list[tuple[str, int]]]:
        """user → [(mechanism, iterations)], sorted by name."""
        return {
            user: sorted((mechanism, int(entry["iterations"])) for mechanism, entry in mechanisms.items())
            for user, mechanisms in sorted(self._users.items())
        }

    def set_password(self, user: str, mechanism: str, password: str, iterations: int = MIN_ITERATIONS) -> None:
        check_user_name(user)
        check_iterations(iterations)
        if mechanism == "PLAIN":
            salt = os.urandom(32)
            digest = hashlib.pbkdf2_hmac(_PLAIN_HASH, password.encode(), salt, iterations)
            entry: dict[str, Any] = {"salt": _b64(salt), "iterations": iterations, "hash": _b64(digest)}
            self._put(user, mechanism, entry)
            return
        if mechanism not in SCRAM_MECHANISMS:
            raise InvalidConfigError(f"unknown SASL mechanism {mechanism!r} (one of {', '.join(MECHANISMS)})")
        import scramp  # only where SCRAM users are made: its asn1crypto imports cost start-up time

        salt, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(password, iterations)
        self.set_scram(user, mechanism, ScramCredential(salt, iterations, stored_key, server_key))

    def set_scram(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        check_user_name(user)
        check_iterations(credential.iterations)
        entry = {
            "salt": _b64(credential.salt),
            "iterations": credential.iterations,
            "stored_key": _b64(credential.stored_key),
            "server_key": _b64(credential.server_key),
        }
        self._put(user, mechanism, entry)

    def _put(self, user: str, mechanism: str, entry: dict[str, Any]) -> None:
        previous = self._users.get(user)
        self._users[user] = {**(previous or {}), mechanism: entry}
        try:
            self._save()
        except StorageError:
            if previous is None:
                del self._users[user]
            else:
                self._users[user] = previous
            raise

    def delete(self, user: str, mechanism: str | None = None) -> bool:
        """Remove one mechanism of `user` (None: all of them); False when there was nothing to remove."""
        mechanisms = self._users.get(user)
        if mechanisms is None or (mechanism is not None and mechanism not in mechanisms):
            return False
        previous = dict(mechanisms)
        if mechanism is None or len(mechanisms) == 1:
            del self._users[user]
        else:
            del mechanisms[mechanism]
        try:
            self._save()
        except StorageError:
            self._users[user] = previous
            raise
        return True

    def scram(self, user: str, mechanism: str) -> ScramCredential | None:
        entry = self._users.get(user, {}).get(mechanism)
        if entry is None:
            return None
        return ScramCredential(
            _unb64(entry["salt"]), int(entry["iterations"]), _unb64(entry["stored_key"]), _unb64(entry["server_key"])
        )

    def has_user(self, user: str) -> bool:
        return user in self._users

    def stamp(self, user: str) -> tuple[str, ...] | None:
        """What changes whenever `user`'s credentials change (every set draws a new salt); None for no such user.
        A login made with an old password compares its stamp to this to notice the change."""
        mechanisms = self._users.get(user)
        if mechanisms is None:
            return None
        return tuple(f"{mechanism}:{entry['salt']}" for mechanism, entry in sorted(mechanisms.items()))

    def check_password(self, user: str, password: str, mechanisms: tuple[str, ...] = MECHANISMS) -> bool:
        """Whether `password` is `user`'s password, checked against the strongest of `mechanisms` the user has a
        credential for (SCRAM-SHA-512, SCRAM-SHA-256, then PLAIN): what a login form uses. SCRAM keys are
        recomputed by `scramp` from the stored salt and iteration count and compared in constant time. Costs one
        PBKDF2 whether or not the user exists (no timing hint); blocking, so run it off the event loop."""
        import scramp  # imported where used, as in `make_scram`: it costs start-up time

        entries = self._users.get(user, {})
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            credential = self.scram(user, mechanism) if mechanism in mechanisms and mechanism in entries else None
            if credential is not None:
                _, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(
                    password, credential.iterations, credential.salt
                )
                return hmac.compare_digest(stored_key, credential.stored_key) & hmac.compare_digest(
                    server_key, credential.server_key
                )
        if "PLAIN" in mechanisms:
            return self.check_plain(user, password)
        self.check_plain("", password)  # the same cost for a user with no usable credential
        return False

    def check_plain(self, user: str, password: str) -> bool:
        """Whether `password` is `user`'s PLAIN password; costs one PBKDF2 even for an unknown user (no timing hint)."""
        entry = self._users.get(user, {}).get("PLAIN")
        salt = _unb64(entry["salt"]) if entry else b"\0" * 32
        iterations = int(entry["iterations"]) if entry else MIN_ITERATIONS
        digest = hashlib.pbkdf2_hmac(_PLAIN_HASH, password.encode(), salt, iterations)
        return entry is not None and hmac.compare_digest(digest, _unb64(entry["hash"]))
