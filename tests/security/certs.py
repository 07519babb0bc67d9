"""Test PKI made with the `cryptography` package: a CA, a server certificate for 127.0.0.1/localhost, client
certificates, written as the PEM files a listener's `ssl.*` settings name."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _name(common_name: str, organization: str = "KafkaLite Tests") -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "NL"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca_key: ec.EllipticCurvePrivateKey
    ca_cert: x509.Certificate

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    def issue(
        self, common_name: str, *, server: bool, valid: bool = True, organization: str = "KafkaLite Tests"
    ) -> tuple[Path, Path, Path]:
        """(certificate file, key file, certificate+key file) for `common_name`, signed by the CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + (_DAY if valid else -_DAY / 2))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
        cert = builder.sign(self.ca_key, hashes.SHA256())
        stem = self.directory / common_name.replace(" ", "_")
        cert_file, key_file, both = stem.with_suffix(".crt"), stem.with_suffix(".key"), stem.with_suffix(".pem")
        cert_file.write_bytes(_pem_cert(cert))
        key_file.write_bytes(_pem_key(key))
        both.write_bytes(_pem_cert(cert) + _pem_key(key))
        return cert_file, key_file, both


def make_pki(directory: Path, ca_name: str = "KafkaLite Test CA") -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pki = Pki(directory, key, cert)
    pki.ca_file.write_bytes(_pem_cert(cert))
    return pki
