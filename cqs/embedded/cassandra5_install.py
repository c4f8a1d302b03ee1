"""Fetching the embedded Apache Cassandra 5.0: cassandra-all and its runtime jars, by Maven.

Owns where the jars live (a cache outside any checkout: `$CQS_CASSANDRA_HOME` if set, else
`${XDG_CACHE_HOME:-~/.cache}/cqs/cassandra-<version>/lib`, with Maven's local repository in
`.../cqs/maven-repository` beside it), the version (read from the pom.xml shipped in
`cqs/embedded/cassandra5/`), and the one fetch: `mvn dependency:copy-dependencies` with a
pinned plugin version, Maven's own log kept in a file and shown only when it fails, one
printed line per step with what was fetched. Idempotent: a complete lib directory (marked
by a stamp written last) is reused as it is. Used by `cqs cassandra install`, by
`scripts/bootstrap` through it, and by the 5.0 launcher to find its jars. Imports the
standard library only; never the driver, the adapters or the service.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

POM = Path(__file__).with_name("cassandra5") / "pom.xml"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
_STAMP = ".cqs-complete"
_INSTALL_HINT = "cqs cassandra install (or ./scripts/bootstrap)"


class CassandraInstallError(RuntimeError):
    """The Cassandra 5.0 jars are missing or could not be fetched."""


def cassandra_version(pom: Path = POM) -> str:
    """The cassandra-all version the shipped pom.xml names ("5.0.8")."""
    match = re.search(r"<cassandra\.version>([^<]+)</cassandra\.version>", pom.read_text())
    if match is None:
        raise CassandraInstallError(f"no <cassandra.version> in {pom}")
    return match.group(1).strip()


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cqs"


def cassandra_home(version: str | None = None) -> Path:
    """The directory holding `lib/` for `version` (default: the pom's)."""
    explicit = os.environ.get("CQS_CASSANDRA_HOME")
    if explicit:
        return Path(explicit)
    return cache_root() / f"cassandra-{version or cassandra_version()}"


def installed_lib(version: str | None = None) -> Path:
    """The complete lib directory of jars, or CassandraInstallError saying how to get it."""
    lib = cassandra_home(version) / "lib"
    if not (lib / _STAMP).is_file():
        raise CassandraInstallError(
            f"Cassandra {version or cassandra_version()} is not installed at {lib}: "
            f"run {_INSTALL_HINT}"
        )
    return lib


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def install(say: Callable[[str], None] = print, mvn: str = "mvn") -> Path:
    """Fetch the jars into the cache unless they are there; return the lib directory."""
    version = cassandra_version()
    home = cassandra_home(version)
    lib = home / "lib"
    if (lib / _STAMP).is_file():
        jars = list(lib.glob("*.jar"))
        say(f"cassandra: {version} already in {lib} ({len(jars)} jars, {_mib(_size(lib))})")
        return lib
    executable = shutil.which(mvn)
    if executable is None:
        raise CassandraInstallError(
            "mvn was not found on PATH; install it (Debian: apt-get install maven)"
        )
    repository = cache_root() / "maven-repository"
    home.mkdir(parents=True, exist_ok=True)
    staging = home / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    log_path = home / "maven.log"
    before = _size(repository)
    say(f"cassandra: fetching cassandra-all {version} and its runtime jars with Maven "
        f"(Maven's log in {log_path})")
    began = time.monotonic()
    command = [
        executable, "-B", "-f", str(POM),
        f"-Dmaven.repo.local={repository}",
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    with open(log_path, "wb") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, cwd=home, check=False)
    if result.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise CassandraInstallError(f"Maven failed (exit {result.returncode}); the end of {log_path}:\n{tail}")
    fetched = _size(repository) - before
    say(f"cassandra: Maven downloaded {_mib(fetched)} into {repository} "
        f"in {time.monotonic() - began:.0f} s")
    jars = sorted(staging.glob("*.jar"))
    if not any(j.name == f"cassandra-all-{version}.jar" for j in jars):
        raise CassandraInstallError(f"Maven finished without cassandra-all-{version}.jar in {staging}")
    (staging / _STAMP).write_text(version + "\n")
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    say(f"cassandra: {len(jars)} jars ({_mib(_size(lib))}) in {lib}")
    return lib


__all__ = [
    "CassandraInstallError",
    "cassandra_home",
    "cassandra_version",
    "install",
    "installed_lib",
]
