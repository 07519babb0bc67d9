"""`Security`: the one object the server holds for authentication and authorization.

It owns the broker-wide settings and the stores kept in the data directory (SASL credentials, ACLs, client quotas),
and makes one
`Session` per connection: ANONYMOUS on a PLAINTEXT listener, the certificate's subject on an SSL listener whose client
sent one, and not yet authenticated on a SASL listener.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kafkalite.logs import RateLimitedWarnings
from kafkalite.security.acls import AclStore
from kafkalite.security.authorizer import Authorizer
from kafkalite.security.credentials import CredentialStore
from kafkalite.security.principal import certificate_principal
from kafkalite.security.quotas import QuotaStore
from kafkalite.security.session import Session
from kafkalite.security.settings import SecurityProtocol, SecuritySettings


class Security:
    def __init__(self, settings: SecuritySettings, data_dir: Path | None, *, fsync: bool = True) -> None:
        self.settings = settings
        self.credentials = CredentialStore(data_dir, fsync=fsync)
        self.acls = AclStore(data_dir, fsync=fsync)
        self.authorizer = Authorizer(settings, self.acls)
        self.quotas = QuotaStore(data_dir, fsync=fsync)
        # Refused logins are logged (peer, mechanism, claimed user), at most this many lines a minute.
        self.failed_logins = RateLimitedWarnings(logging.getLogger("kafkalite.security"), burst=20, period_s=60.0)

    def session(self, protocol: SecurityProtocol, host: str, peercert: dict[str, object] | None = None) -> Session:
        principal = certificate_principal(peercert) if protocol is SecurityProtocol.SSL else None
        if principal is None:
            return Session(protocol, host, self.settings, self.credentials)
        return Session(protocol, host, self.settings, self.credentials, principal)
