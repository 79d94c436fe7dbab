"""Certificates for tests: a throw-away CA, a broker certificate it signs, and a second CA that
signed nothing (the "untrusted certificate" case). Written as PEM files, which both the broker
(``ssl.keystore.type=PEM``) and aa (``ssl.cafile``) read."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True, slots=True)
class Pki:
    ca_file: Path
    """The CA that signed the broker's certificate: trust it and TLS works."""
    other_ca_file: Path
    """A CA that signed nothing here: trusting only it must fail verification."""
    broker_keystore: Path
    """Private key and certificate chain of the broker, one PEM file."""


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
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
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(folder: Path) -> Pki:
    """A CA, a broker certificate for 127.0.0.1/localhost signed by it, and an unrelated CA."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("aa-test-ca")
    _, other_cert = _ca("aa-test-other-ca")
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(folder / "ca.pem", folder / "other-ca.pem", folder / "broker.pem")
    pki.ca_file.write_bytes(_pem(ca_cert))
    pki.other_ca_file.write_bytes(_pem(other_cert))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pki.broker_keystore.write_bytes(key_pem + _pem(cert) + _pem(ca_cert))
    pki.broker_keystore.chmod(0o600)
    return pki
