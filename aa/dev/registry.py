"""A real schema registry on this machine: Apicurio Registry, built from its Maven artifacts.

Schema translation (:mod:`aa.schemas`) talks Confluent's Schema Registry REST API; Apicurio
Registry serves it under ``/apis/ccompat/v7``. Apicurio publishes the application's classes,
not a runnable jar, so :func:`fetch_registry` runs Quarkus' build step over them with Maven
(``aa/dev/resources/apicurio-pom.xml`` says why this version and what it changes) and keeps
the result in aa's cache like Kafka's jars; :func:`start_registry` runs it with in-memory
storage on a loopback port. Tests start one per DC (``tests/helpers/registry.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aa.dev.artifacts import ArtifactSet, classpath, fetch, java_executable, maven, spawn
from aa.errors import DevClusterError

APICURIO_VERSION = "2.4.2.Final"
"""The newest Apicurio Registry whose modules all resolve from Maven Central (see the POM)."""
QUARKUS_VERSION = "2.16.4.Final"
"""The Quarkus that Apicurio release is built on (its parent POM's ``quarkus.version``)."""
CCOMPAT_PATH = "/apis/ccompat/v7"
"""Where Apicurio serves Confluent's Schema Registry API."""
MAIN_CLASS = "io.quarkus.runner.GeneratedMain"


def registry_artifacts() -> ArtifactSet:
    return ArtifactSet(
        f"apicurio-registry-{APICURIO_VERSION}",
        "apicurio-pom.xml",
        (("APICURIO_VERSION", APICURIO_VERSION), ("QUARKUS_VERSION", QUARKUS_VERSION)),
    )


def fetch_registry(*, refresh: bool = False) -> list[Path]:
    """Build the registry with Maven unless a complete build is cached; its jars (the
    application and its libraries, in one folder)."""
    return fetch(registry_artifacts(), refresh=refresh, build=_quarkus_build)


def _quarkus_build(work: Path, mvn: str) -> None:
    java = work / "src" / "main" / "java" / "aa" / "registry"
    java.mkdir(parents=True)
    source = resources.files("aa.dev").joinpath("resources", "apicurio-NoDynamicConfig.java")
    (java / "NoDynamicConfig.java").write_text(source.read_text())
    settings = work / "src" / "main" / "resources"
    settings.mkdir(parents=True)
    # the application's beans are in a dependency that carries no bean index: index it
    (settings / "application.properties").write_text(
        "quarkus.index-dependency.registry.group-id=io.apicurio\n"
        "quarkus.index-dependency.registry.artifact-id=apicurio-registry-app\n"
    )
    maven(mvn, work, ["package", "-DskipTests"], f"build {registry_artifacts().name}")
    target = work / "target"
    runners = sorted(target.glob("*-runner.jar"))
    if not runners:
        raise DevClusterError(f"Maven built no runnable jar in {target}")
    lib = work / "lib"
    (target / "lib").rename(lib)
    runners[0].rename(lib / "aa-schema-registry-runner.jar")


@dataclass(frozen=True, slots=True)
class LocalRegistry:
    """A registry :func:`start_registry` started: its URL (Confluent's API), process, log."""

    url: str
    pid: int
    log: Path

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; waits until it is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(self.pid):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_registry(
    port: int, home: Path, *, heap: str = "256m", timeout: float = 180.0
) -> LocalRegistry:
    """Run the registry on ``127.0.0.1:port`` (in-memory storage: a restart forgets every
    schema), its log in ``home``; returns once its API answers, or raises with the log's tail."""
    jars = fetch_registry()
    home.mkdir(parents=True, exist_ok=True)
    log = home / "registry.log"
    cmd = [
        java_executable(),
        f"-Xmx{heap}",
        "-XX:TieredStopAtLevel=1",  # starts in about half the time; tests register little
        "-XX:+UseSerialGC",
        "-XX:+ExitOnOutOfMemoryError",
        f"-Dquarkus.http.port={port}",
        "-Dquarkus.http.host=127.0.0.1",
        "-cp",
        classpath(jars),
        MAIN_CLASS,
    ]
    proc = spawn(cmd, log, home)
    registry = LocalRegistry(f"http://127.0.0.1:{port}{CCOMPAT_PATH}", proc.pid, log)
    deadline = time.monotonic() + timeout
    while not _answers(registry.url):
        if proc.poll() is not None or time.monotonic() > deadline:
            registry.stop()
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            raise DevClusterError(f"the schema registry on port {port} did not start:\n{tail}")
        time.sleep(0.25)
    return registry


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=2) as response:  # noqa: S310 - our own loopback URL
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False
