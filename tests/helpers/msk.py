"""A broker listener that accepts AWS MSK IAM tokens without AWS: the test plugin
``tests/helpers/java/aa/test/RecordingTokenValidator.java`` (compiled here with the JDK's
``javac`` against the broker's own jars) accepts any OAUTHBEARER token and records it, so a test
can check what aa's MSK IAM provider signed and sent."""

from __future__ import annotations

import base64
import shutil
import subprocess
import urllib.parse
from pathlib import Path

from aa.dev.artifacts import classpath, fetch, kafka_artifacts

SOURCE = Path(__file__).parent / "java" / "aa" / "test" / "RecordingTokenValidator.java"
VALIDATOR = "aa.test.RecordingTokenValidator"


def missing() -> str | None:
    return None if shutil.which("javac") else "javac is missing: install a JDK (openjdk-17-jdk)"


def compile_validator(folder: Path, kafka_version: str) -> Path:
    """The folder of compiled classes to put on the broker's classpath."""
    out = folder / "classes"
    out.mkdir(parents=True, exist_ok=True)
    cp = classpath(fetch(kafka_artifacts(kafka_version)))
    subprocess.run(
        ["javac", "-d", str(out), "-cp", cp, str(SOURCE)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return out


def broker_settings(listener: str) -> list[tuple[str, str]]:
    prefix = f"listener.name.{listener.lower()}"
    return [
        (f"{prefix}.sasl.enabled.mechanisms", "OAUTHBEARER"),
        (
            f"{prefix}.oauthbearer.sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        ),
        (f"{prefix}.oauthbearer.sasl.server.callback.handler.class", VALIDATOR),
    ]


def broker_jvm_options(token_log: Path) -> list[str]:
    return [f"-Daa.test.token.log={token_log}"]


def signed_request(token: str) -> dict[str, str]:
    """The query of the presigned AWS request an MSK IAM token is (base64url, no padding),
    with its host under ``"host"``."""
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    parts = urllib.parse.urlsplit(url)
    query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
    return {**query, "host": parts.netloc}
