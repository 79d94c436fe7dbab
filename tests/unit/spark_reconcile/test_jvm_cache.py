"""The driver JVM's AOT cache: when a run uses it, trains it or leaves it alone (pure logic;
the JVM is a stand-in process)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_reconcile import jvm_cache


def _java_home(tmp_path: Path, version: str) -> Path:
    home = tmp_path / f"jdk-{version}"
    home.mkdir()
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return home


def _options(cache: Path) -> jvm_cache.JvmCache:
    return jvm_cache.cache_options(cache, Path("/spark"), "4.2.0", [Path("/jars/a.jar")])


def test_a_jvm_older_than_25_gets_no_cache_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "17.0.15")))
    assert _options(tmp_path / "cache") == jvm_cache.NONE
    assert not (tmp_path / "cache").exists()


def test_a_java_home_without_a_readable_version_gets_no_cache_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert _options(tmp_path / "cache") == jvm_cache.NONE


def test_first_run_trains_the_cache_and_later_runs_use_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "25.0.3")))
    cache_dir = tmp_path / "cache"
    first = _options(cache_dir)
    assert first.training is not None
    assert first.final is not None
    assert first.options.startswith(f"-XX:AOTCacheOutput={first.training} ")
    # a run starting while the first one trains neither trains nor reads a half-written cache
    assert _options(cache_dir) == jvm_cache.NONE
    # the stand-in JVM writes the cache as it exits, when its stdin closes
    jvm = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdin.read(); open(sys.argv[1], 'wb').write(b'aot')",
            str(first.training),
        ],
        stdin=subprocess.PIPE,
    )
    assert jvm_cache.finish_training(first, jvm)
    assert first.final.read_bytes() == b"aot"
    assert not first.training.exists()
    later = _options(cache_dir)
    assert later.training is None
    assert later.options.startswith(f"-XX:AOTCache={first.final} ")


def test_a_training_that_wrote_nothing_leaves_no_cache_and_the_next_run_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "25.0.3")))
    first = _options(tmp_path / "cache")
    jvm = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    assert not jvm_cache.finish_training(first, jvm)
    assert first.final is not None
    assert not first.final.exists()
    assert _options(tmp_path / "cache").training is not None


def test_a_stale_training_marker_is_trained_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "25.0.3")))
    first = _options(tmp_path / "cache")
    assert first.training is not None
    old = time.time() - jvm_cache.TRAINING_STALE_S - 1
    os.utime(first.training, (old, old))
    assert _options(tmp_path / "cache").training == first.training


def test_the_cache_is_keyed_by_jvm_and_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "25.0.3")))
    a = jvm_cache.cache_options(cache_dir, Path("/spark"), "4.2.0", [])
    b = jvm_cache.cache_options(cache_dir, Path("/spark"), "4.2.1", [])
    monkeypatch.setenv("JAVA_HOME", str(_java_home(tmp_path, "25.0.4")))
    c = jvm_cache.cache_options(cache_dir, Path("/spark"), "4.2.0", [])
    assert len({a.final, b.final, c.final}) == 3


def test_the_cache_is_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its training run peaks over the job's 1.5 GB and it gained nothing measurable at 3 x 1M:
    a user opts in."""
    monkeypatch.delenv(jvm_cache.ENV, raising=False)
    assert not jvm_cache.wanted()
    monkeypatch.setenv(jvm_cache.ENV, "1")
    assert jvm_cache.wanted()
