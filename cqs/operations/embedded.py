"""Embedded mode: start the Redis and Cassandra the settings leave unconfigured.

Owns the lifetime of the embedded services of one `cqs serve` (started before the server,
stopped when it exits) and the settings that point at them. Imports the settings and the
launchers of `cqs.embedded`; never an adapter, aiohttp or the service.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from cqs.settings import Settings

log = logging.getLogger("cqs")


@contextlib.contextmanager
def embedded_backends(settings: Settings) -> Iterator[Settings]:
    """Start the embedded Redis and/or Cassandra the settings leave unconfigured; yield the
    settings with their addresses filled in."""
    data_dir = Path(settings.data_dir).resolve()
    with contextlib.ExitStack() as stack:
        if settings.embedded_redis:
            from cqs.embedded.redis_server import EmbeddedRedis

            redis = EmbeddedRedis(data_dir / "redis")
            redis.start()
            stack.callback(redis.stop)
            log.info("embedded redis-server at %s", redis.url)
            settings = replace(settings, redis_urls=(redis.url,))
        if settings.embedded_cassandra:
            from cqs.embedded.cassandra import EmbeddedCassandra

            cassandra = EmbeddedCassandra(data_dir / "cassandra")
            log.info("starting embedded Cassandra (takes a few seconds)")
            cassandra.start()
            stack.callback(cassandra.stop)
            log.info("embedded Cassandra at %s", cassandra.contact_point)
            settings = replace(settings, cassandra_hosts=(cassandra.contact_point,))
        yield settings
