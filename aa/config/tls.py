"""The TLS context of one DC: PEM files, or Java keystores and truststores read as they are.

PEM files (``cafile``, ``certfile``, ``keyfile``, the key encrypted or not) go to :mod:`ssl`
directly. A ``truststore`` or ``keystore`` (what MirrorMaker 2 files name) may be JKS, PKCS12
or PEM; the kind is read from the file's first bytes, as Java reads a JKS store that holds
PKCS12. PKCS12 is read with ``cryptography``, JKS with ``pyjks`` (the ``aa[keystores]`` extra).
:mod:`ssl` loads a certificate and key from files only: a key from a store is written for that
moment to a private temporary file, encrypted with a one-time password, and removed at once.
"""

from __future__ import annotations

import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aa.config.model import Datacenter
from aa.config.secret import Secret
from aa.errors import ConfigError

JKS_MAGIC = b"\xfe\xed\xfe\xed"
JCEKS_MAGIC = b"\xce\xce\xce\xce"


@dataclass(frozen=True, slots=True)
class _Store:
    """A truststore or keystore file of one DC, and how to name it in a message."""

    dc: str
    role: str  # "truststore" | "keystore"
    path: Path
    password: Secret | None
    env: Mapping[str, str] | None

    @property
    def field(self) -> str:
        return f"datacenters.{self.dc}.ssl.{self.role}"

    def error(self, problem: str, fix: str) -> ConfigError:
        return ConfigError(f"DC {self.dc}: {self.field} {self.path} {problem}: {fix}")

    def kind(self) -> str:
        head = self.path.read_bytes()[:64]
        if head.startswith((JKS_MAGIC, JCEKS_MAGIC)):
            return "JKS"
        if b"-----BEGIN" in head or head.lstrip().startswith(b"-----"):
            return "PEM"
        return "PKCS12"

    def secret(self) -> str | None:
        return None if self.password is None else self.password.reveal(self.env)


def ssl_context(dc: Datacenter, env: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """The client TLS context of ``dc``: the CAs it trusts, and its own certificate if set."""
    for name, path in (
        ("cafile", dc.ssl_cafile),
        ("certfile", dc.ssl_certfile),
        ("keyfile", dc.ssl_keyfile),
        ("truststore", dc.ssl_truststore),
        ("keystore", dc.ssl_keystore),
    ):
        if path is not None and not Path(path).expanduser().is_file():
            fix = "fix the path (or remove the setting to use the system's CAs)"
            raise ConfigError(
                f"DC {dc.name}: datacenters.{dc.name}.ssl.{name} {path} does not exist: "
                + (fix if name in ("cafile", "truststore") else "fix the path")
            )
    try:
        if dc.ssl_cafile:
            context = ssl.create_default_context(cafile=dc.ssl_cafile)
        elif dc.ssl_truststore:
            store = _Store(
                dc.name, "truststore", Path(dc.ssl_truststore).expanduser(),
                dc.ssl_truststore_password, env,
            )  # fmt: skip
            context = ssl.create_default_context(cadata=_trusted(store))
        else:
            context = ssl.create_default_context()
    except ssl.SSLError as exc:
        raise ConfigError(
            f"DC {dc.name}: the CA certificates in datacenters.{dc.name}.ssl cannot be loaded "
            f"({exc.reason or exc}): cafile must be a PEM file of CA certificates"
        ) from None
    if dc.ssl_certfile:
        _load_pem_key(context, dc, env)
    elif dc.ssl_keystore:
        store = _Store(
            dc.name, "keystore", Path(dc.ssl_keystore).expanduser(), dc.ssl_keystore_password, env
        )
        key_password = dc.ssl_key_password or dc.ssl_keystore_password
        _load_store_key(context, store, None if key_password is None else key_password.reveal(env))
    return context


def _load_pem_key(context: ssl.SSLContext, dc: Datacenter, env: Mapping[str, str] | None) -> None:
    field = f"datacenters.{dc.name}.ssl"
    key_field = f"{field}.keyfile" if dc.ssl_keyfile else f"{field}.certfile"

    def password() -> str:
        if dc.ssl_key_password is None:
            raise ConfigError(
                f"DC {dc.name}: the private key in {key_field} is encrypted: set "
                f"{field}.key_password (e.g. '${{KEY_PASSWORD}}')"
            )
        return dc.ssl_key_password.reveal(env)

    try:
        context.load_cert_chain(dc.ssl_certfile, dc.ssl_keyfile, password=password)  # type: ignore[arg-type]
    except ssl.SSLError as exc:
        reason = exc.reason or str(exc)
        key_file = Path(dc.ssl_keyfile or dc.ssl_certfile or "").expanduser()
        if dc.ssl_key_password is not None and b"ENCRYPTED" in key_file.read_bytes():
            raise ConfigError(
                f"DC {dc.name}: {field}.key_password does not decrypt the private key in "
                f"{key_field}: fix the password"
            ) from None
        raise ConfigError(
            f"DC {dc.name}: the client certificate in {field}.certfile and its key cannot be "
            f"loaded ({reason}): certfile must be a PEM certificate (chain) and keyfile its "
            "private key (PEM; encrypted needs key_password)"
        ) from None


# -- stores ------------------------------------------------------------------------------------


def _need(module: str, store: _Store, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise store.error(
            f"is a {what} store",
            "reading it needs the keystores extra: pip install 'aa[keystores]'",
        ) from None


def _trusted(store: _Store) -> str:
    """The CA certificates of a truststore, as PEM text."""
    kind = store.kind()
    if kind == "PEM":
        return store.path.read_text()
    if kind == "JKS":
        ks = _jks(store)
        ders = [entry.cert for entry in ks.certs.values()]
        ders += [der for entry in ks.private_keys.values() for _, der in entry.cert_chain[1:]]
    else:
        _, cert, extra = _pkcs12(store)
        ders = [c for c in [cert, *extra] if c is not None]
    if not ders:
        raise store.error("holds no certificate", "import the CA certificate into it")
    return "".join(_pem_cert(der) for der in ders)


def _load_store_key(context: ssl.SSLContext, store: _Store, key_password: str | None) -> None:
    """The client's key and certificate chain from a keystore, into ``context``."""
    kind = store.kind()
    if kind == "PEM":
        try:
            context.load_cert_chain(store.path, password=lambda: key_password or "")
        except ssl.SSLError as exc:
            raise store.error(
                f"cannot be loaded ({exc.reason or exc})",
                "a PEM keystore holds the private key and the certificate chain; an encrypted "
                "key needs ssl.key_password",
            ) from None
        return
    if kind == "JKS":
        key_der, chain = _jks_key(store, key_password)
    else:
        key, cert, extra = _pkcs12(store)
        if key is None or cert is None:
            raise store.error("holds no private key", "import the client's key and certificate")
        key_der, chain = key, [cert, *extra]
    _load_in_memory(context, key_der, chain)


def _pkcs12(store: _Store) -> tuple[Any, Any, list[Any]]:
    """(private key, its certificate, other certificates) as DER, from a PKCS12 store."""
    _need("cryptography", store, "PKCS12")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    secret = store.secret()
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            store.path.read_bytes(), None if secret is None else secret.encode()
        )
    except ValueError:
        raise store.error(
            "cannot be opened (PKCS12): wrong password or not a keystore",
            f"check {store.field}_password",
        ) from None
    der = serialization.Encoding.DER
    key_der = (
        None
        if key is None
        else key.private_bytes(der, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return (
        key_der,
        None if cert is None else cert.public_bytes(der),
        [c.public_bytes(der) for c in extra],
    )


def _jks(store: _Store) -> Any:
    jks = _need("jks", store, "JKS")
    secret = store.secret()
    try:
        return jks.KeyStore.loads(store.path.read_bytes(), secret or "", try_decrypt_keys=False)
    except jks.util.KeystoreSignatureException:
        raise store.error(
            "cannot be opened (JKS): the password is wrong", f"check {store.field}_password"
        ) from None
    except jks.util.KeystoreException as exc:
        raise store.error(f"cannot be read as JKS ({exc})", "check the file") from None


def _jks_key(store: _Store, key_password: str | None) -> tuple[bytes, list[bytes]]:
    jks = _need("jks", store, "JKS")
    ks = _jks(store)
    if not ks.private_keys:
        raise store.error("holds no private key", "import the client's key and certificate")
    entry = next(iter(ks.private_keys.values()))
    try:
        entry.decrypt(key_password or "")
    except jks.util.DecryptionFailureException:
        raise ConfigError(
            f"DC {store.dc}: the key in {store.field} {store.path} cannot be decrypted: set "
            f"datacenters.{store.dc}.ssl.key_password (or keystore_password) to its password"
        ) from None
    return entry.pkey_pkcs8, [der for _, der in entry.cert_chain]


def _pem_cert(der: bytes) -> str:
    return ssl.DER_cert_to_PEM_cert(der)


def _load_in_memory(context: ssl.SSLContext, key_der: bytes, chain: list[bytes]) -> None:
    from cryptography.hazmat.primitives import serialization

    once = secrets.token_urlsafe(24)
    key = serialization.load_der_private_key(key_der, None)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(once.encode()),
    )
    with tempfile.TemporaryDirectory(prefix="aa-tls-") as folder:  # mode 0700
        path = Path(folder) / "client.pem"
        path.touch(mode=0o600)
        path.write_bytes(pem + "".join(_pem_cert(der) for der in chain).encode())
        context.load_cert_chain(path, password=once)
