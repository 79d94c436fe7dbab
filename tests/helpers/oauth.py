"""A small OAuth 2.0 identity provider on loopback: a token endpoint (client credentials, HTTP
Basic authentication) that signs JWTs with an RSA key, and the JWKS with that key, which the
broker's OIDC validator (Kafka's ``OAuthBearerValidatorCallbackHandler``) fetches.

Each client has a secret and a token lifetime; a negative lifetime hands out tokens that
expired that long ago (the "expired token" mistake). :attr:`IdentityProvider.issued` counts
the tokens each client was given, so a test sees aa refresh them."""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

AUDIENCE = "aa-test-kafka"
KID = "aa-test-key"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(n: int) -> str:
    return _b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


@dataclass
class IdentityProvider:
    """Serve with :meth:`start`; ``clients`` maps client id -> (secret, token lifetime s)."""

    clients: dict[str, tuple[str, float]]
    issued: Counter[str] = field(default_factory=Counter)
    _key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    _server: ThreadingHTTPServer | None = None

    @property
    def base(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_url(self) -> str:
        return f"{self.base}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.base}/jwks"

    @property
    def issuer(self) -> str:
        return self.base

    def jwks(self) -> dict[str, Any]:
        numbers = self._key.public_key().public_numbers()
        key = {"kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256"}
        return {"keys": [{**key, "n": _uint(numbers.n), "e": _uint(numbers.e)}]}

    def sign(self, client_id: str, lifetime_s: float) -> str:
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": KID}
        claims = {
            "sub": client_id,
            "iss": self.issuer,
            "aud": AUDIENCE,
            "iat": now if lifetime_s > 0 else now + int(lifetime_s) - 60,
            "exp": now + int(lifetime_s),
            "scope": "kafka",
        }
        head = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._key.sign(head.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{head}.{_b64(signature)}"

    def start(self, port: int) -> IdentityProvider:
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:  # quiet: tests read their own output
                pass

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, idp.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                client = idp._client(self.headers.get("Authorization", ""))
                if self.path != "/token" or form.get("grant_type") != ["client_credentials"]:
                    self._answer(400, {"error": "unsupported_grant_type"})
                elif client is None:
                    self._answer(401, {"error": "invalid_client"})
                else:
                    lifetime = idp.clients[client][1]
                    idp.issued[client] += 1
                    self._answer(
                        200,
                        {
                            "access_token": idp.sign(client, lifetime),
                            "token_type": "bearer",
                            "expires_in": max(1, int(lifetime)),
                        },
                    )

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def _client(self, authorization: str) -> str | None:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            user, _, secret = base64.b64decode(value).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        client, secret = urllib.parse.unquote(user), urllib.parse.unquote(secret)
        known = self.clients.get(client)
        return client if known is not None and known[0] == secret else None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def broker_settings(idp: IdentityProvider, listener: str) -> list[tuple[str, str]]:
    """Broker properties: ``listener`` validates OAUTHBEARER tokens against ``idp``'s JWKS."""
    prefix = f"listener.name.{listener.lower()}.oauthbearer"
    return [
        (
            f"{prefix}.sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        ),
        (
            f"{prefix}.sasl.server.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        ),
        # the broker closes a connection when its token expires (aiokafka does not
        # re-authenticate): a flow must open it again with a new token
        (f"{prefix}.connections.max.reauth.ms", "3600000"),
        ("sasl.oauthbearer.jwks.endpoint.url", idp.jwks_url),
        ("sasl.oauthbearer.expected.audience", AUDIENCE),
        ("sasl.oauthbearer.expected.issuer", idp.issuer),
        ("sasl.oauthbearer.clock.skew.seconds", "0"),
    ]


def broker_jvm_options(idp: IdentityProvider) -> list[str]:
    """Kafka 4.x fetches only the URLs this system property allows (3.9: all by default)."""
    return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={idp.jwks_url}"]
