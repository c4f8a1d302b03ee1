"""Composition root and command line: the only module that imports every adapter.

Owns `cqs serve`: reads Settings once, starts the embedded Redis and Cassandra when none
are configured, connects the adapters, builds QueueService, the revisibility worker and
the aiohttp application, and ties their lifetimes to the app (`cleanup_ctx`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from aiohttp import web

from cqs import __version__
from cqs.cassandra_store.catalog import CassandraQueueCatalog
from cqs.cassandra_store.session import connect as connect_cassandra
from cqs.cassandra_store.store import CassandraMessageStore
from cqs.receipts import ReceiptSigner
from cqs.redis_cache.cache import RedisMessageCache
from cqs.revisibility_worker import RevisibilityWorker
from cqs.service import QueueService, ServiceTuning
from cqs.settings import Settings, add_setting_flags, load_settings
from cqs.sqs_api.app import create_api_app

log = logging.getLogger("cqs")

SERVICE_KEY = web.AppKey("cqs_service", QueueService)
CACHE_KEY = web.AppKey("cqs_cache", RedisMessageCache)


def build_app(settings: Settings) -> web.Application:
    """The whole server as an aiohttp app; storage connects on startup, closes on cleanup."""
    holder: dict[str, QueueService] = {}
    app = create_api_app(
        lambda: holder["service"],
        account_id=settings.account_id,
        base_url=settings.base_url,
        region=settings.region,
    )

    async def storage(app: web.Application) -> AsyncIterator[None]:
        session = await connect_cassandra(
            contact_points=list(settings.cassandra_hosts),
            keyspace=settings.cassandra_keyspace,
            replication=settings.cassandra_replication,
            protocol_version=settings.cassandra_protocol_version,
            read_consistency=settings.cassandra_read_consistency,
            write_consistency=settings.cassandra_write_consistency,
            request_timeout=settings.cassandra_timeout_seconds,
        )
        catalog = CassandraQueueCatalog(session)
        store = await CassandraMessageStore.on_session(
            session, bucket_seconds=settings.cassandra_bucket_seconds
        )
        cache = RedisMessageCache(
            list(settings.redis_urls),
            socket_timeout=settings.redis_timeout_seconds,
        )
        if settings.receipt_secret:
            # Any operator-chosen text becomes a full-length HMAC key.
            secret = hashlib.sha256(settings.receipt_secret.encode()).digest()
        else:
            secret = await catalog.shared_secret(os.urandom(32))
        service = QueueService(
            catalog,
            store,
            cache,
            ReceiptSigner(secret),
            account_id=settings.account_id,
            region=settings.region,
            tuning=ServiceTuning(
                long_poll_recheck_seconds=settings.long_poll_recheck_seconds,
                cache_fill_lease_seconds=settings.cache_fill_lease_seconds,
                cache_fill_page_size=settings.cache_fill_page_size,
            ),
        )
        holder["service"] = service
        app[SERVICE_KEY] = service
        app[CACHE_KEY] = cache
        worker = RevisibilityWorker(
            cache,
            service.notify_messages_available,
            interval_seconds=settings.revisibility_interval_seconds,
        )
        sweeping = asyncio.create_task(worker.run(), name="revisibility-worker")
        log.info("cqs %s ready on %s:%d", __version__, settings.host, settings.port)
        try:
            yield
        finally:
            sweeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeping
            await service.close()
            await cache.close()
            await store.close()
            await catalog.close()
            await session.close()

    app.cleanup_ctx.append(storage)
    return app


@contextlib.contextmanager
def embedded_backends(settings: Settings) -> Iterator[Settings]:
    """Start the embedded Redis and/or Cassandra the settings leave unconfigured."""
    from dataclasses import replace

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


def serve(settings: Settings) -> None:
    if settings.event_loop == "uvloop":
        with contextlib.suppress(ImportError):
            import uvloop

            uvloop.install()
    elif settings.event_loop != "asyncio":
        raise SystemExit(f"unknown event loop {settings.event_loop!r}: use uvloop or asyncio")
    with embedded_backends(settings) as running:
        web.run_app(
            build_app(running),
            host=running.host,
            port=running.port,
            print=None,
            access_log=None,
            handle_signals=True,
        )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cqs", description="Amazon-SQS-compatible queue service")
    parser.add_argument("--version", action="version", version=f"cqs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the SQS API server")
    add_setting_flags(serve_parser)
    args = parser.parse_args(argv)
    flags = {k: v for k, v in vars(args).items() if k != "command"}
    settings = load_settings(flags=flags)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Cassandra 1.2's system tables have no column metadata; the driver warns on each.
    logging.getLogger("cassandra.metadata").setLevel(logging.ERROR)
    if args.command == "serve":
        # SIGTERM must unwind through the ExitStack so embedded services stop with us.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            serve(settings)
        except KeyboardInterrupt:
            pass
    return 0
