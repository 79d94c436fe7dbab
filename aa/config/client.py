"""aiokafka client keyword arguments for one DC (consumer, producer and admin accept them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiokafka.helpers import create_ssl_context

from aa.config.model import Datacenter


def client_kwargs(dc: Datacenter, *, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``bootstrap_servers``, ``security_protocol`` and the SSL/SASL settings of ``dc``.

    The SASL password is revealed here (``${VAR}`` references read from ``env``, default the
    process environment), so call this where the client is built, never to log the result.
    """
    out: dict[str, Any] = {
        "bootstrap_servers": dc.bootstrap,
        "security_protocol": dc.security_protocol,
    }
    if dc.security_protocol in ("SSL", "SASL_SSL"):
        out["ssl_context"] = create_ssl_context(
            cafile=dc.ssl_cafile, certfile=dc.ssl_certfile, keyfile=dc.ssl_keyfile
        )
    if dc.security_protocol.startswith("SASL_"):
        assert dc.sasl_password is not None  # validated when loaded
        out["sasl_mechanism"] = dc.sasl_mechanism
        out["sasl_plain_username"] = dc.sasl_username
        out["sasl_plain_password"] = dc.sasl_password.reveal(env)
    return out
