"""The local driver JVM's ahead-of-time cache (JDK 25+): classes loaded and linked, and method
profiles, kept across runs.

Every run is one short-lived JVM that loads the same ~10,000 classes of Spark and plans the
same queries; a JDK 25 AOT cache (JEP 483/514/515) keeps that work from one run to the next
(3 x 200k events: CPU 67.6 -> 59.0 s, docs/benchmarks.md, issue 14's sixth change). The first
run on a machine trains it (``-XX:AOTCacheOutput``: the JVM writes the cache as it exits, ~15 s
more for that run); later runs use it (``-XX:AOTCache``). The cache lives in aa's cache folder
(``<cache>/reconcile-jvm``), keyed by the JVM, the Spark install and the jars, so another JVM or
Spark never reads a cache it did not write. Older JVMs, an unreadable JVM version, a cache that
is missing, being trained or does not fit: no option, the JVM runs as before (a cache the JVM
cannot map is ignored by the JVM itself, with ``-XX:AOTMode`` left at ``auto``).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ENV = "AA_RECONCILE_JVM_CACHE"
"""Set to ``1`` to use the cache. Off by default: its gain at 3 x 1M was within the runs'
noise, and the training run peaked at 2.4 GB Pss, over the job's 1.5 GB (issue 14)."""
MIN_JAVA = 25
"""JDK 25 has the one-step training run (``-XX:AOTCacheOutput``, JEP 514) and keeps method
profiles (JEP 515)."""
TRAINING_STALE_S = 3600
"""A training run's marker older than this belongs to a run that died: train again."""
_QUIET = "-Xlog:aot=off -Xlog:cds=off"
"""A cache that does not fit is ignored; its warnings would land in the job's output."""


@dataclass(frozen=True, slots=True)
class JvmCache:
    """What to add to the driver JVM's options, and where a training run's cache lands."""

    options: str
    training: Path | None = None
    """The file the JVM writes as it exits (moved into place by :func:`finish_training`)."""
    final: Path | None = None


NONE = JvmCache("")


def wanted() -> bool:
    """Whether the user asked for the cache (:data:`ENV`)."""
    return os.environ.get(ENV, "") == "1"


def java_home() -> Path | None:
    """The Java home ``spark-submit`` will use: ``$JAVA_HOME``, else ``java`` on ``PATH``."""
    if home := os.environ.get("JAVA_HOME"):
        return Path(home).resolve()
    java = shutil.which("java")
    return Path(java).resolve().parent.parent if java else None


def java_version(home: Path) -> str | None:
    """``JAVA_VERSION`` of the home's ``release`` file (every JDK build has one)."""
    try:
        text = (home / "release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="([0-9][^"]*)"', text, re.MULTILINE)
    return found.group(1) if found else None


def _major(version: str) -> int:
    head = version.split(".")[0].split("-")[0].split("+")[0]
    return int(head) if head.isdigit() else 0


def cache_options(
    cache_dir: Path, spark_home: Path, spark_version: str, jars: Sequence[Path]
) -> JvmCache:
    """The AOT options for this run: use the cache, train it, or nothing."""
    home = java_home()
    version = java_version(home) if home else None
    if home is None or version is None or _major(version) < MIN_JAVA:
        return NONE
    key_text = "\n".join(
        [str(home), version, str(spark_home.resolve()), spark_version, *map(str, jars)]
    )
    key = f"java{version}-{hashlib.sha256(key_text.encode()).hexdigest()[:16]}"
    final = cache_dir / f"{key}.aot"
    if final.is_file() and final.stat().st_size > 0:
        return JvmCache(f"-XX:AOTCache={final} {_QUIET}")
    training = cache_dir / f"{key}.aot.training"
    try:
        if time.time() - training.stat().st_mtime < TRAINING_STALE_S:
            return NONE  # another run is training it
    except OSError:
        pass
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        training.write_bytes(b"")  # the marker; the JVM overwrites it as it exits
    except OSError:
        return NONE
    return JvmCache(f"-XX:AOTCacheOutput={training} {_QUIET}", training, final)


def finish_training(cache: JvmCache, jvm: object, timeout_s: float = 300.0) -> bool:
    """After a training run's Spark has stopped: let its JVM exit (it writes the cache as it
    does), then move the cache into place. ``jvm`` is the JVM's ``subprocess.Popen``. False,
    and nothing in place, when the JVM did not exit in time or wrote nothing."""
    if cache.training is None or cache.final is None or not isinstance(jvm, subprocess.Popen):
        return False
    if jvm.stdin is not None:
        jvm.stdin.close()  # pyspark's gateway JVM exits when its stdin closes
    try:
        jvm.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False
    try:
        if cache.training.stat().st_size == 0:
            cache.training.unlink()
            return False
        os.replace(cache.training, cache.final)
    except OSError:
        return False
    return True
