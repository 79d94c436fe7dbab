"""HTTPS, and mutual TLS, for the HTTP port of `aa run` (``metrics.tls_*``)."""

from __future__ import annotations

import ssl

from aa.config.model import MetricsEndpoint
from aa.errors import ConfigError


def server_context(endpoint: MetricsEndpoint) -> ssl.SSLContext | None:
    """The port's TLS context (``None``: plain HTTP); with ``tls_client_cafile`` every client
    must present a certificate those CAs signed."""
    if endpoint.tls_certfile is None:
        for name in ("tls_keyfile", "tls_client_cafile"):
            if getattr(endpoint, name) is not None:
                raise ConfigError(
                    f"metrics.{name} needs metrics.tls_certfile: set the port's certificate, "
                    f"or remove metrics.{name}"
                )
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(endpoint.tls_certfile, endpoint.tls_keyfile)
        if endpoint.tls_client_cafile is not None:
            context.load_verify_locations(endpoint.tls_client_cafile)
            context.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"metrics.tls_*: {exc}; check metrics.tls_certfile, tls_keyfile and "
            "tls_client_cafile (PEM files aa run can read)"
        ) from None
    return context


def is_mutual(endpoint: MetricsEndpoint) -> bool:
    """Whether every client of the port is authenticated by its certificate."""
    return endpoint.tls_certfile is not None and endpoint.tls_client_cafile is not None
