"""TLS server contexts from PEM files, rebuilt when the files change (certificate rotation without a restart).

`TlsContextSource(settings).server_context` is the `ssl.SSLContext` a listener is bound with: TLS 1.2 or 1.3 only
(as `ssl.enabled.protocols` allows), the keystore's certificate chain and key, and with `ssl.client.auth`
requested or required the truststore's CAs to verify client certificates (CERT_OPTIONAL / CERT_REQUIRED).

Reloading: the listener's context stays the same object (the event loop's TLS transport is built with it, and uvloop
handles TLS natively only that way). Its server-name callback, which OpenSSL calls in every handshake whether or not
the client sent a name, asks `current()` for the newest context and switches the handshake to it. Every
`RELOAD_CHECK_S` at most, `current()` compares the files' modification times and sizes with those it was built from
and builds a new context when they changed; connections already open keep the certificate they shook hands with.
A rebuild that fails (a half-written file) is logged once and the previous context stays in use.

Building the first context checks the files: a missing or unreadable keystore, a key that does not match, or a
wrong key password is an `InvalidConfigError` at start.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from typing import Final

from kafkalite.errors import InvalidConfigError
from kafkalite.security.settings import ClientAuth, TlsSettings

log = logging.getLogger("kafkalite.security")

RELOAD_CHECK_S: Final = 1.0
_VERSIONS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def build_context(settings: TlsSettings) -> ssl.SSLContext:
    """A server-side context for `settings`; `InvalidConfigError` when a file is missing or does not fit."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_VERSIONS[p] for p in settings.protocols)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE
    if settings.cipher_suites:
        try:
            context.set_ciphers(":".join(settings.cipher_suites))
        except ssl.SSLError as exc:
            raise InvalidConfigError(f"ssl.cipher.suites: {exc}") from None
    try:
        context.load_cert_chain(settings.keystore_location, password=settings.key_password)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfigError(
            f"ssl.keystore.location {settings.keystore_location}: cannot load certificate chain and key ({exc})"
        ) from None
    if settings.client_auth is not ClientAuth.NONE:
        if settings.truststore_location is None:
            raise InvalidConfigError(f"ssl.client.auth={settings.client_auth.value} needs ssl.truststore.location")
        try:
            context.load_verify_locations(cafile=settings.truststore_location)
        except (OSError, ssl.SSLError) as exc:
            raise InvalidConfigError(
                f"ssl.truststore.location {settings.truststore_location}: cannot load CA certificates ({exc})"
            ) from None
        required = settings.client_auth is ClientAuth.REQUIRED
        context.verify_mode = ssl.CERT_REQUIRED if required else ssl.CERT_OPTIONAL
    return context


class TlsContextSource:
    """The current context of one listener, rebuilt when its PEM files change."""

    def __init__(self, settings: TlsSettings) -> None:
        self.settings = settings
        self._stamp = self._file_stamp()
        self._failed_stamp: tuple[tuple[int, int], ...] | None = None
        self._context = build_context(settings)
        self._checked = time.monotonic()
        self.server_context = self._context
        self.server_context.sni_callback = self._switch

    def _switch(self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _: ssl.SSLContext) -> None:
        """OpenSSL's server-name callback: move this handshake to the newest context (same verify settings)."""
        newest = self.current()
        if newest is not connection.context:
            connection.context = newest

    def _paths(self) -> list[str]:
        return [p for p in (self.settings.keystore_location, self.settings.truststore_location) if p]

    def _file_stamp(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self._paths():
            try:
                st = os.stat(path)
            except OSError:
                stamps.append((-1, -1))
            else:
                stamps.append((st.st_mtime_ns, st.st_size))
        return tuple(stamps)

    def current(self) -> ssl.SSLContext:
        now = time.monotonic()
        if now - self._checked >= RELOAD_CHECK_S:
            self._checked = now
            self.reload_if_changed()
        return self._context

    def reload_if_changed(self) -> bool:
        """Rebuild the context when a file changed; True when a new one is in use."""
        stamp = self._file_stamp()
        if stamp in (self._stamp, self._failed_stamp):
            return False
        try:
            context = build_context(self.settings)
        except InvalidConfigError as exc:
            self._failed_stamp = stamp
            log.warning("TLS files changed but do not load; keeping the previous certificates: %s", exc)
            return False
        self._stamp = stamp
        self._context = context
        log.info("Reloaded TLS certificates from %s", ", ".join(self._paths()))
        return True
