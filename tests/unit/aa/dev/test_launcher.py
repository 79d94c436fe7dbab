"""Bad input to the local-cluster launcher: each gives one clear message with cause and fix."""

from __future__ import annotations

import socket
from pathlib import Path

import orjson
import pytest

from aa.cli.main import main
from aa.dev import artifacts, cluster
from aa.errors import DevClusterError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("bad", ["1SF", "S F", "SF.users", "a/b", "", "x" * 40])
def test_bad_dc_name_is_rejected_with_the_rule(tmp_path: Path, bad: str) -> None:
    with pytest.raises(DevClusterError, match="invalid DC name"):
        cluster.plan(["SF", bad], tmp_path)


def test_duplicate_dc_name(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="twice"):
        cluster.plan(["SF", "SF"], tmp_path)


def test_ports_out_of_range(tmp_path: Path) -> None:
    with pytest.raises(DevClusterError, match="--base-port"):
        cluster.plan(["A", "B", "C"], tmp_path, base_port=60000, port_step=5000)


def test_default_ports_follow_the_design(tmp_path: Path) -> None:
    planned = cluster.plan(["SF", "NYC", "LON"], tmp_path)
    assert [c.bootstrap for c in planned] == [
        "127.0.0.1:19092",
        "127.0.0.1:29092",
        "127.0.0.1:39092",
    ]


def test_cli_reports_bad_dc_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["dev", "--home", str(tmp_path), "up", "--dcs", "SF,9x"])
    assert code == 2
    assert "invalid DC name '9x'" in capsys.readouterr().err


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        spec = cluster.DevCluster("SF", port, port + 1, tmp_path / "SF")
        with pytest.raises(
            DevClusterError, match=rf"port {port} \(broker of SF\) is already in use"
        ):
            cluster.up([spec])


def test_missing_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("AA_JAVA", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DevClusterError, match=r"`java` was not found on PATH: install a Java 17"):
        artifacts.java_executable()


def test_aa_java_pointing_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AA_JAVA", "/nonexistent/java")
    with pytest.raises(DevClusterError, match="AA_JAVA='/nonexistent/java' is not an executable"):
        artifacts.java_executable()


def test_missing_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AA_MVN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DevClusterError, match=r"`mvn` was not found on PATH: install Apache Maven"):
        artifacts.fetch(artifacts.kafka_artifacts())


def _fake_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> artifacts.ArtifactSet:
    monkeypatch.setenv("AA_CACHE_DIR", str(tmp_path))
    arts = artifacts.kafka_artifacts()
    arts.lib.mkdir(parents=True)
    import zipfile

    jar = arts.lib / "a.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("x.txt", "x" * 1000)
    (arts.home / artifacts.MANIFEST).write_bytes(
        orjson.dumps({"jars": {"a.jar": jar.stat().st_size}})
    )
    return arts


def test_intact_cache_is_used_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arts = _fake_cache(tmp_path, monkeypatch)
    monkeypatch.setenv("PATH", "/nonexistent")  # Maven must not be needed
    assert artifacts.fetch(arts) == [arts.lib / "a.jar"]


def test_truncated_jar_is_a_corrupt_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arts = _fake_cache(tmp_path, monkeypatch)
    jar = arts.lib / "a.jar"
    jar.write_bytes(jar.read_bytes()[:50])
    with pytest.raises(DevClusterError, match=r"cache is corrupt: .*a.jar is truncated.*--refresh"):
        artifacts.fetch(arts)


def test_missing_jar_is_a_corrupt_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arts = _fake_cache(tmp_path, monkeypatch)
    (arts.lib / "a.jar").unlink()
    with pytest.raises(DevClusterError, match=r"a.jar is missing"):
        artifacts.fetch(arts)


def test_garbled_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    arts = _fake_cache(tmp_path, monkeypatch)
    (arts.home / artifacts.MANIFEST).write_text("{nope")
    with pytest.raises(DevClusterError, match=r"manifest .* is corrupt"):
        artifacts.fetch(arts)


def test_kafka_version_defaults_to_4x(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(artifacts.KAFKA_VERSION_ENV, raising=False)
    assert artifacts.kafka_version() == artifacts.KAFKA_VERSION
    assert artifacts.KAFKA_VERSION.startswith("4.")


def test_kafka_version_from_env_and_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(artifacts.KAFKA_VERSION_ENV, "3.9.2")
    assert artifacts.kafka_version() == "3.9.2"
    assert artifacts.kafka_version("4.3.1") == "4.3.1"  # the flag wins over the environment
    assert artifacts.kafka_artifacts().name == "kafka-3.9.2"


@pytest.mark.parametrize(("raw", "why"), [("4.x", "not a Kafka release"), ("2.8.2", "KRaft")])
def test_bad_kafka_version_names_the_setting(
    monkeypatch: pytest.MonkeyPatch, raw: str, why: str
) -> None:
    monkeypatch.setenv(artifacts.KAFKA_VERSION_ENV, raw)
    with pytest.raises(DevClusterError, match=rf"AA_KAFKA_VERSION='{raw}'.*{why}"):
        artifacts.kafka_version()
    with pytest.raises(DevClusterError, match=rf"--kafka-version='{raw}'"):
        artifacts.kafka_version(raw)


def test_kafka4_gets_a_log4j2_binding_and_config(tmp_path: Path) -> None:
    pom4 = artifacts.kafka_artifacts("4.3.1").pom_text()
    assert "<artifactId>log4j-slf4j-impl</artifactId>" in pom4
    assert "@" not in pom4.split("-->", 1)[1]  # every placeholder substituted
    flags = artifacts.log_config_flags("4.3.1", tmp_path)
    assert flags[0].startswith("-Dlog4j2.configurationFile=")
    assert Path(flags[0].split("=", 1)[1]).is_file()
    assert flags[1] == f"-Dkafka.logs.dir={tmp_path}"


def test_kafka3_keeps_its_own_log4j(tmp_path: Path) -> None:
    pom3 = artifacts.kafka_artifacts("3.9.2").pom_text()
    assert "log4j-slf4j-impl" not in pom3
    flag = artifacts.log_config_flags("3.9.2", tmp_path)[0]
    assert flag.startswith("-Dlog4j.configuration=file:")
    assert Path(flag.split(":", 1)[1]).is_file()


def test_recorded_dc_keeps_its_kafka_version(tmp_path: Path) -> None:
    [sf] = cluster.plan(["SF"], tmp_path, version="3.9.2")
    cluster._save(tmp_path, [sf])
    assert [c.kafka_version for c in cluster.plan(["SF", "NYC"], tmp_path)] == [
        "3.9.2",
        artifacts.kafka_version(),
    ]
    with pytest.raises(DevClusterError, match=r"SF .* runs Kafka 3.9.2, not 4.3.1.*--wipe"):
        cluster.plan(["SF"], tmp_path, version="4.3.1")


def test_state_without_versions_was_kafka_3_9(tmp_path: Path) -> None:
    (tmp_path / cluster.STATE_FILE).write_bytes(
        orjson.dumps([{"name": "SF", "port": 19092, "controller_port": 19093}])
    )
    [sf] = cluster.load(tmp_path)
    assert sf.kafka_version == "3.9.2"
