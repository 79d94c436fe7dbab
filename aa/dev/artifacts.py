"""Fetch Java artifacts with Maven into aa's cache, and check the cache before using it.

Every artifact set is described by a small POM shipped in ``aa/dev/resources``; Maven resolves
it from the user's configured repositories and ``dependency:copy-dependencies`` copies the jars
into ``<cache>/<set>/lib``. A ``manifest.json`` written last marks a complete fetch and lists
every jar with its size, so a truncated or deleted jar is found before a JVM fails obscurely.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path

import orjson

from aa.errors import DevClusterError

KAFKA_VERSION = "4.3.1"
"""The default Kafka: the newest release whose broker, ``connect-mirror`` (MirrorMaker 2) and
``kafka-tools`` artifacts all resolve (4.4.0's MirrorMaker 2 jars were not published when this
was chosen). aiokafka 0.14 picks each request's version from the broker's ApiVersions answer, so
4.x brokers, which dropped the oldest protocol versions (KIP-896), serve aa fine."""
COMPAT_KAFKA_VERSION = "3.9.2"
"""The 3.9 line stays supported: CI runs the mesh, exactly-once and failover tests on it too."""
KAFKA_VERSION_ENV = "AA_KAFKA_VERSION"
"""Names another Kafka release for ``aa dev`` and the test suite (``--kafka-version`` wins)."""
LOG4J2_VERSION = "2.25.4"
"""Kafka 4.x ships log4j-core but no SLF4J binding; this version matches what 4.3 depends on."""
SCALA_BINARY = "2.13"
"""The Scala build of Kafka's and Spark's jars."""
MANIFEST = "manifest.json"
"""Written last into an artifact folder, listing its jars: a folder without it is fetched again."""
_VERSION_RE = re.compile(r"\d+\.\d+\.\d+")


def cache_root() -> Path:
    """``$AA_CACHE_DIR``, else ``$XDG_CACHE_HOME/aa``, else ``~/.cache/aa``."""
    if env := os.environ.get("AA_CACHE_DIR"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "aa"


@dataclass(frozen=True, slots=True)
class ArtifactSet:
    """One POM's worth of jars in the cache."""

    name: str
    pom_resource: str
    substitutions: tuple[tuple[str, str], ...]

    @property
    def home(self) -> Path:
        return cache_root() / self.name

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    def pom_text(self) -> str:
        text = resources.files("aa.dev").joinpath("resources", self.pom_resource).read_text()
        for key, value in self.substitutions:
            text = text.replace(f"@{key}@", value)
        return text


def kafka_version(explicit: str | None = None) -> str:
    """``explicit``, else ``$AA_KAFKA_VERSION``, else the default; checked to be ``X.Y.Z``."""
    source = "--kafka-version"
    version = explicit
    if not version:
        source = KAFKA_VERSION_ENV
        version = os.environ.get(KAFKA_VERSION_ENV) or KAFKA_VERSION
    if not _VERSION_RE.fullmatch(version):
        raise DevClusterError(
            f"{source}={version!r} is not a Kafka release number: use e.g. {KAFKA_VERSION} or "
            f"{COMPAT_KAFKA_VERSION}"
        )
    if int(version.split(".")[0]) < 3:
        raise DevClusterError(
            f"{source}={version!r}: aa's local clusters run KRaft, which needs Kafka 3.x or "
            f"newer: use {KAFKA_VERSION} (default) or {COMPAT_KAFKA_VERSION}"
        )
    return version


def uses_log4j2(version: str) -> bool:
    """Kafka 4.0 moved from log4j 1 (reload4j) to log4j2 (KIP-653)."""
    return int(version.split(".")[0]) >= 4


def _logging_dependencies(version: str) -> str:
    if not uses_log4j2(version):
        return ""  # 3.x brings reload4j and its SLF4J binding itself
    return "".join(
        "<dependency><groupId>org.apache.logging.log4j</groupId>"
        f"<artifactId>{name}</artifactId><version>{LOG4J2_VERSION}</version></dependency>"
        for name in ("log4j-core", "log4j-slf4j-impl")
    )


def kafka_artifacts(version: str | None = None) -> ArtifactSet:
    """Broker, MirrorMaker 2 and perf tools of ``version`` (default: :func:`kafka_version`)."""
    version = kafka_version(version)
    return ArtifactSet(
        f"kafka-{version}",
        "kafka-pom.xml",
        (("KAFKA_VERSION", version), ("LOGGING_DEPENDENCIES", _logging_dependencies(version))),
    )


def log_config_flags(version: str, log_dir: Path) -> list[str]:
    """JVM flags that send a Kafka process's log to ``log_dir/server.log``.

    4.x reads a log4j2 config (``-Dlog4j.configuration`` does nothing there); 3.x a log4j 1
    one. Both files ship in ``aa/dev/resources``.
    """
    files = resources.files("aa.dev").joinpath("resources")
    if uses_log4j2(version):
        flag = f"-Dlog4j2.configurationFile={files.joinpath('log4j2.properties')}"
    else:
        flag = f"-Dlog4j.configuration=file:{files.joinpath('log4j.properties')}"
    return [flag, f"-Dkafka.logs.dir={log_dir}"]


def spark_kafka_artifacts(spark_version: str, scala: str = SCALA_BINARY) -> ArtifactSet:
    return ArtifactSet(
        f"spark-kafka-{spark_version}_{scala}",
        "spark-kafka-pom.xml",
        (("SPARK_VERSION", spark_version), ("SCALA_VERSION", scala)),
    )


def find_tool(name: str, env_var: str, hint: str) -> str:
    """The path of a required executable, or a ``DevClusterError`` saying how to get it."""
    explicit = os.environ.get(env_var)
    if explicit:
        if Path(explicit).is_file() and os.access(explicit, os.X_OK):
            return explicit
        raise DevClusterError(f"{env_var}={explicit!r} is not an executable file: fix or unset it")
    if name == "java" and (java_home := os.environ.get("JAVA_HOME")):
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise DevClusterError(f"`{name}` was not found on PATH: {hint} (or set {env_var})")
    return found


def java_executable() -> str:
    """The ``java`` to run brokers with; it must be Java 17 or newer."""
    java = find_tool(
        "java", "AA_JAVA", "install a Java 17+ runtime, e.g. `apt-get install openjdk-17-jre`"
    )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        raise DevClusterError(f"could not read the version of {java}: {out.stderr.strip()!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < 17:
        raise DevClusterError(
            f"{java} is Java {major}; Kafka needs Java 17+: install it and put it "
            "first on PATH or set JAVA_HOME"
        )
    return java


def check(artifacts: ArtifactSet) -> list[Path]:
    """The jars of a complete, intact fetch; raise ``DevClusterError`` naming what is wrong."""
    manifest_path = artifacts.home / MANIFEST
    fix = f"run `aa dev fetch --refresh` (or delete {artifacts.home})"
    try:
        manifest = orjson.loads(manifest_path.read_bytes())
        jars: dict[str, int] = manifest["jars"]
    except FileNotFoundError:
        raise DevClusterError(f"{artifacts.name} is not fetched yet: run `aa dev fetch`") from None
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise DevClusterError(f"the cache manifest {manifest_path} is corrupt: {fix}") from None
    paths = []
    for name, size in sorted(jars.items()):
        path = artifacts.lib / name
        if not path.is_file():
            raise DevClusterError(f"the cache is corrupt: {path} is missing: {fix}")
        if path.stat().st_size != size or not zipfile.is_zipfile(path):
            raise DevClusterError(f"the cache is corrupt: {path} is truncated or damaged: {fix}")
        paths.append(path)
    if not paths:
        raise DevClusterError(f"the cache manifest {manifest_path} lists no jars: {fix}")
    return paths


Build = Callable[[Path, str], None]
"""Fills ``<work>/lib`` with jars, given the work folder (its ``pom.xml`` written) and ``mvn``."""


def fetch(
    artifacts: ArtifactSet, *, refresh: bool = False, build: Build | None = None
) -> list[Path]:
    """Resolve ``artifacts`` with Maven unless a complete copy is cached; return its jars.
    ``build`` makes them (default: the POM's runtime dependencies, copied).

    A half-finished earlier fetch (no manifest) is fetched again; a complete but damaged cache
    is an error unless ``refresh`` is set, so a broken disk does not go unnoticed.
    """
    if not refresh and (artifacts.home / MANIFEST).exists():
        return check(artifacts)
    mvn = find_tool("mvn", "AA_MVN", "install Apache Maven 3.6+, e.g. `apt-get install maven`")
    artifacts.home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=artifacts.home.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        (work / "pom.xml").write_text(artifacts.pom_text())
        (build or partial(_copy_dependencies, name=artifacts.name))(work, mvn)
        lib = work / "lib"
        jars = {p.name: p.stat().st_size for p in sorted(lib.glob("*.jar"))}
        for leftover in work.iterdir():
            if leftover != lib:
                shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        (work / MANIFEST).write_bytes(orjson.dumps({"set": artifacts.name, "jars": jars}))
        if artifacts.home.exists():
            shutil.rmtree(artifacts.home)
        work.rename(artifacts.home)
        # TemporaryDirectory's cleanup tolerates the folder having moved away.
        work.mkdir()
    return check(artifacts)


def maven(mvn: str, work: Path, goals: list[str], doing: str) -> None:
    """Run ``mvn`` on ``work/pom.xml``; a failure is a :class:`DevClusterError` with its tail."""
    cmd = [mvn, "-B", "-q", "-f", str(work / "pom.xml"), *goals]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise DevClusterError(
            f"Maven could not {doing} (exit {done.returncode}); check that Maven can reach its "
            f"repository (settings.xml, proxy):\n{tail}"
        )


def _copy_dependencies(work: Path, mvn: str, *, name: str) -> None:
    lib = work / "lib"
    goals = ["dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime"]
    maven(mvn, work, goals, f"resolve {name}")
    if not lib.is_dir():
        raise DevClusterError(f"Maven resolved no jars into {lib}")


def spawn(cmd: list[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start a server process in its own session (a Ctrl-C of the caller's terminal does not
    reach it), its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )


def classpath(jars: list[Path]) -> str:
    """A ``-cp`` value: ``dir/*`` when the jars are one checked folder (short `ps` lines)."""
    folders = {p.parent for p in jars}
    if len(folders) == 1:
        return str(folders.pop() / "*")
    return os.pathsep.join(str(p) for p in jars)
