"""Certificates for tests: a throw-away CA, a broker certificate it signs, and a second CA that
signed nothing (the "untrusted certificate" case). Written as PEM files, which both the broker
(``ssl.keystore.type=PEM``) and aa (``ssl.cafile``) read.

:func:`make_client_stores` adds what a client presents to a broker with
``ssl.client.auth=required``: a certificate with an encrypted PEM key, the same key and chain in
PKCS12 and JKS keystores and the CA in PKCS12 and JKS truststores, all written by Java's own
``keytool`` (the files MirrorMaker 2 users hold), and a certificate of the other CA, which the
broker refuses."""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
import subprocess
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
    folder: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    return key, _ca_cert(cn, key)


def _ca_cert(cn: str, key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    return (
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


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def make_pki(folder: Path) -> Pki:
    """A CA, a broker certificate for 127.0.0.1/localhost signed by it, and an unrelated CA."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca("aa-test-ca")
    other_key, other_cert = _ca("aa-test-other-ca")
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
    pki = Pki(folder / "ca.pem", folder / "other-ca.pem", folder / "broker.pem", folder)
    pki.ca_file.write_bytes(_pem(ca_cert))
    pki.other_ca_file.write_bytes(_pem(other_cert))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pki.broker_keystore.write_bytes(key_pem + _pem(cert) + _pem(ca_cert))
    pki.broker_keystore.chmod(0o600)
    (folder / "ca.key").write_bytes(_key_pem(ca_key))
    (folder / "other-ca.key").write_bytes(_key_pem(other_key))
    return pki


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption()
        if password is None
        else serialization.BestAvailableEncryption(password.encode())
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _signed(
    cn: str, ca_key: ec.EllipticCurvePrivateKey, ca_cert: x509.Certificate
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


@dataclass(frozen=True, slots=True)
class ClientStores:
    """A client identity in every form a user may hold it, and the passwords (secrets the
    tests search every output for)."""

    certfile: Path
    keyfile: Path
    """Encrypted with :attr:`key_password`."""
    key_password: str
    keystore_p12: Path
    keystore_jks: Path
    truststore_p12: Path
    truststore_jks: Path
    store_password: str
    """Of every keystore and truststore (and of the key inside the keystores)."""
    other_certfile: Path
    other_keyfile: Path
    """A certificate and plain key from the other CA: the broker refuses it."""

    @property
    def secrets(self) -> tuple[str, str]:
        return (self.key_password, self.store_password)


def _keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=120)


def make_client_stores(pki: Pki) -> ClientStores:
    """The client's certificate, key and stores (see the module doc), under ``pki.folder``."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    folder = pki.folder
    ca_cert = x509.load_pem_x509_certificate(pki.ca_file.read_bytes())
    ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), None)
    other_cert = x509.load_pem_x509_certificate(pki.other_ca_file.read_bytes())
    other_key = serialization.load_pem_private_key((folder / "other-ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    assert isinstance(other_key, ec.EllipticCurvePrivateKey)
    key_password = "key-" + secrets.token_urlsafe(12)
    store_password = "store-" + secrets.token_urlsafe(12)
    key, cert = _signed("aa-mirror", ca_key, ca_cert)
    stores = ClientStores(
        folder / "client.pem", folder / "client.key", key_password,
        folder / "client.p12", folder / "client.jks",
        folder / "trust.p12", folder / "trust.jks", store_password,
        folder / "other-client.pem", folder / "other-client.key",
    )  # fmt: skip
    stores.certfile.write_bytes(_pem(cert) + _pem(ca_cert))
    stores.keyfile.write_bytes(_key_pem(key, key_password))
    o_key, o_cert = _signed("aa-intruder", other_key, other_cert)
    stores.other_certfile.write_bytes(_pem(o_cert))
    stores.other_keyfile.write_bytes(_key_pem(o_key))
    raw = folder / "raw.p12"
    raw.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"aa-mirror", key, cert, [ca_cert],
            serialization.BestAvailableEncryption(store_password.encode()),
        )
    )  # fmt: skip
    pw = store_password
    for path, kind in ((stores.keystore_p12, "PKCS12"), (stores.keystore_jks, "JKS")):
        _keytool(
            "-importkeystore", "-noprompt", "-srckeystore", str(raw), "-srcstoretype", "PKCS12",
            "-srcstorepass", pw, "-destkeystore", str(path), "-deststoretype", kind,
            "-deststorepass", pw, "-destkeypass", pw,
        )  # fmt: skip
    for path, kind in ((stores.truststore_p12, "PKCS12"), (stores.truststore_jks, "JKS")):
        _keytool(
            "-importcert", "-noprompt", "-alias", "aa-test-ca", "-file", str(pki.ca_file),
            "-keystore", str(path), "-storetype", kind, "-storepass", pw,
        )  # fmt: skip
    raw.unlink()
    return stores
