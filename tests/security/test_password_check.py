"""`CredentialStore.check_password`, the password check of logins outside SASL (the web console): the same stored
credentials a SCRAM or PLAIN exchange uses, the strongest mechanism first, persisted credentials included, and the
credential stamp that tells a login its user's password changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kafkalite.security.credentials import CredentialStore, scram_from_salted_password


def test_each_mechanism_checks_its_own_password(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    store.set_password("scram512", "SCRAM-SHA-512", "s5")
    store.set_password("scram256", "SCRAM-SHA-256", "s2", iterations=8192)
    store.set_password("plain", "PLAIN", "p")
    reopened = CredentialStore(tmp_path)  # what the broker reads back from credentials.json
    for checked in (store, reopened):
        assert checked.check_password("scram512", "s5")
        assert checked.check_password("scram256", "s2")
        assert checked.check_password("plain", "p")
        assert not checked.check_password("scram512", "s2")
        assert not checked.check_password("scram256", "")
        assert not checked.check_password("plain", "P")
        assert not checked.check_password("nobody", "s5")


def test_the_strongest_enabled_mechanism_counts() -> None:
    store = CredentialStore(None)
    store.set_password("alice", "PLAIN", "old")
    store.set_password("alice", "SCRAM-SHA-512", "new")
    assert store.check_password("alice", "new")
    assert not store.check_password("alice", "old")  # SCRAM-SHA-512 wins over PLAIN
    assert store.check_password("alice", "old", ("PLAIN",))  # only PLAIN enabled
    assert not store.check_password("alice", "new", ("SCRAM-SHA-256",))  # no credential for what is enabled


def test_a_credential_from_alter_user_scram_credentials_checks_too() -> None:
    store = CredentialStore(None)
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha256", b"from-a-client", salt, 4096)  # RFC 5802's Hi(), as a client computes it
    store.set_scram("bob", "SCRAM-SHA-256", scram_from_salted_password("SCRAM-SHA-256", salt, salted, 4096))
    assert store.check_password("bob", "from-a-client")
    assert not store.check_password("bob", "from-a-clienT")


def test_the_stamp_changes_with_every_set_and_disappears_with_the_user() -> None:
    store = CredentialStore(None)
    assert store.stamp("carol") is None
    store.set_password("carol", "SCRAM-SHA-512", "one")
    first = store.stamp("carol")
    store.set_password("carol", "SCRAM-SHA-512", "one")  # the same password: a new salt all the same
    assert store.stamp("carol") not in (None, first)
    assert store.has_user("carol")
    store.delete("carol")
    assert store.stamp("carol") is None
    assert not store.has_user("carol")
