"""Principals: who a connection is, as Kafka names them (`User:alice`, `User:CN=client,O=Example`, `User:ANONYMOUS`).

An SSL connection with a client certificate is the certificate's subject in RFC 2253 form (Kafka's DEFAULT
`ssl.principal.mapping.rules`, which is Java's `X500Principal.getName()`): relative distinguished names from last
to first, joined with `,`, multi-valued ones with `+`, special characters escaped with a backslash. A SASL connection
is the authenticated user name; any other connection is `User:ANONYMOUS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

USER: Final = "User"

# Attribute names Python's ssl module uses → the keywords RFC 2253 (and Java's X500Principal) writes.
_KEYWORDS: Final = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


@dataclass(frozen=True, slots=True)
class Principal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Principal:
        """`Type:name` (ValueError without the colon); the name may itself hold colons."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"{text!r} is not a principal (Type:name)")
        return cls(kind, name)


ANONYMOUS: Final = Principal(USER, "ANONYMOUS")


def _escape(value: str) -> str:
    escaped = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def subject_name(subject: Iterable[Iterable[tuple[str, str]]]) -> str:
    """RFC 2253 text of a certificate subject as `ssl.SSLSocket.getpeercert()["subject"]` gives it."""
    rdns = ["+".join(f"{_KEYWORDS.get(kind, kind)}={_escape(value)}" for kind, value in rdn) for rdn in subject]
    return ",".join(reversed(rdns))


def certificate_principal(peercert: dict[str, object] | None) -> Principal:
    """The principal of a TLS peer: its certificate subject, or ANONYMOUS when it sent no certificate."""
    subject = (peercert or {}).get("subject")
    if not subject:
        return ANONYMOUS
    return Principal(USER, subject_name(subject))  # type: ignore[arg-type]
