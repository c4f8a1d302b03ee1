"""Embedded mode: start the Redis and Cassandra the settings leave unconfigured.

Owns the lifetime of the embedded services of one `cqs serve` (started before the server,
stopped when it exits; `cqs migrate` starts the Cassandra alone), the settings that point at them, and the check, before anything
starts, that this machine has what they need (one line saying what is missing and how to
get it). Imports the settings and the launchers of `cqs.embedded`; never an adapter,
aiohttp or the service.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from cqs.embedded.cassandra import EmbeddedCassandra, EmbeddedCassandraError
from cqs.embedded.cassandra5_install import CassandraInstallError, installed_lib
from cqs.embedded.redis_server import EmbeddedRedis, EmbeddedRedisError
from cqs.settings import Settings

log = logging.getLogger("cqs")

# (program, Debian package, the flag that makes it unnecessary)
_REDIS_PROGRAM = ("redis-server", "redis-server", "--redis-urls")
_JAVA_PROGRAM = ("java", "openjdk-17-jre-headless", "--cassandra-hosts")
_JARS_INSTALL = "cqs cassandra install"


def _cassandra_missing(settings: Settings) -> tuple[str, str] | None:
    """(what is missing of the embedded Cassandra's jars, how to get it); None if nothing."""
    try:
        installed_lib()
    except CassandraInstallError:
        return "the embedded Cassandra 5.0's jars are not installed", _JARS_INSTALL
    return None


def cassandra_data_dir(settings: Settings) -> Path:
    """Where the embedded Cassandra keeps its data: one directory per version (the
    `cassandra/` of the earlier embedded 1.2 is left alone: 5.0 reads no 1.2 files)."""
    data_dir = Path(settings.data_dir).resolve()
    return data_dir / f"cassandra-{settings.embedded_cassandra_version}"


class EmbeddedStartError(RuntimeError):
    """An embedded service cannot start here; the message is one line for the user."""


def missing_requirements(settings: Settings, *, with_redis: bool = True) -> str | None:
    """What this machine lacks for the embedded services the settings ask for, as one line
    saying how to get it or which flag to give instead; None when nothing is missing.
    `with_redis=False`: the command needs no Redis (`cqs migrate`)."""
    programs: list[tuple[str, str, str]] = []
    if with_redis and settings.embedded_redis:
        programs.append(_REDIS_PROGRAM)
    jar_missing: tuple[str, str] | None = None
    if settings.embedded_cassandra:
        programs.append(_JAVA_PROGRAM)
        jar_missing = _cassandra_missing(settings)
    absent = [program for program in programs if shutil.which(program[0]) is None]
    if not absent and jar_missing is None:
        return None
    what: list[str] = []
    how: list[str] = []
    if absent:
        names = " and ".join(name for name, _, _ in absent)
        what.append(f"{names} {'was' if len(absent) == 1 else 'were'} not found on PATH")
        how.append("Debian: apt-get install " + " ".join(package for _, package, _ in absent))
    if jar_missing is not None:
        what.append(jar_missing[0])
        how.append(jar_missing[1])
    flags = [flag for _, _, flag in absent]
    if jar_missing is not None and _JAVA_PROGRAM[2] not in flags:
        flags.append(_JAVA_PROGRAM[2])
    them = "it" if len(absent) + (jar_missing is not None) == 1 else "them"
    return (
        f"{' and '.join(what)}; install {them} ({'; '.join(how)})"
        f" or give {' and '.join(flags)}"
    )


@contextlib.contextmanager
def embedded_backends(settings: Settings, *, with_redis: bool = True) -> Iterator[Settings]:
    """Start the embedded Redis and/or Cassandra the settings leave unconfigured; yield the
    settings with their addresses filled in. Raises EmbeddedStartError, before starting
    anything, when this machine lacks what they need, and when one does not come up.
    `with_redis=False`: Cassandra only, for a command that needs no Redis (`cqs migrate`)."""
    missing = missing_requirements(settings, with_redis=with_redis)
    if missing is not None:
        raise EmbeddedStartError(missing)
    data_dir = Path(settings.data_dir).resolve()
    with contextlib.ExitStack() as stack:
        if with_redis and settings.embedded_redis:
            redis = EmbeddedRedis(data_dir / "redis")
            try:
                redis.start()
            except EmbeddedRedisError as error:
                raise EmbeddedStartError(str(error)) from error
            stack.callback(redis.stop)
            log.info("embedded redis-server at %s", redis.url)
            settings = replace(settings, redis_urls=(redis.url,))
        if settings.embedded_cassandra:
            version = settings.embedded_cassandra_version
            cassandra = EmbeddedCassandra(
                cassandra_data_dir(settings),
                commitlog_sync=settings.embedded_cassandra_commitlog_sync,
            )
            log.info("starting embedded Cassandra %s (takes about 20 s)", version)
            try:
                cassandra.start()
            except EmbeddedCassandraError as error:
                raise EmbeddedStartError(str(error)) from error
            stack.callback(cassandra.stop)
            log.info("embedded Cassandra %s at %s",
                     cassandra.release_version or version, cassandra.contact_point)
            settings = replace(settings, cassandra_hosts=(cassandra.contact_point,))
        yield settings
