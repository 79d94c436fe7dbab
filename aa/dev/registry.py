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
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orjson

from aa.dev.artifacts import MANIFEST, ArtifactSet, check, classpath, find_tool, java_executable
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
    application first, then its libraries, all in one folder)."""
    artifacts = registry_artifacts()
    if not refresh and (artifacts.home / MANIFEST).exists():
        return check(artifacts)
    mvn = find_tool("mvn", "AA_MVN", "install Apache Maven 3.6+, e.g. `apt-get install maven`")
    artifacts.home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=artifacts.home.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(artifacts.pom_text())
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
        cmd = [mvn, "-B", "-q", "-f", str(work / "pom.xml"), "package", "-DskipTests"]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work)
        target = work / "target"
        runners = sorted(target.glob("*-runner.jar"))
        if done.returncode != 0 or not runners:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise DevClusterError(
                f"Maven could not build {artifacts.name} (exit {done.returncode}); check that "
                f"Maven can reach its repository (settings.xml, proxy):\n{tail}"
            )
        lib = work / "lib"
        (target / "lib").rename(lib)
        runners[0].rename(lib / "aa-schema-registry-runner.jar")
        jars = {p.name: p.stat().st_size for p in sorted(lib.glob("*.jar"))}
        for leftover in ("pom.xml", "src", "target"):
            path = work / leftover
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        (work / MANIFEST).write_bytes(orjson.dumps({"set": artifacts.name, "jars": jars}))
        if artifacts.home.exists():
            shutil.rmtree(artifacts.home)
        work.rename(artifacts.home)
        work.mkdir()  # TemporaryDirectory's cleanup tolerates the folder having moved away
    return check(artifacts)


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
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=home,
        )
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
