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
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from aiohttp import web

from admin_ui import PREFIX as ADMIN_PREFIX
from admin_ui import AdminConsole, AdminCredentials, mount_admin_console, stored_password
from admin_ui.auth import PASSWORD_FILE_NAME
from cqs import __version__
from cqs.cassandra_store.catalog import CassandraQueueCatalog
from cqs.cassandra_store.session import connect as connect_cassandra
from cqs.cassandra_store.store import CassandraMessageStore
from cqs.errors import StorageUnavailable
from cqs.housekeeping import Housekeeper
from cqs.http_server import ReadTimeouts, run_app
from cqs.inspection import QueueInspector
from cqs.observability.exposition import (
    MULTIPROCESS_ENVIRONMENT_VARIABLE,
    fresh_multiprocess_directory,
    live_worker_pids,
    mark_worker_dead,
    multiprocess_directory,
)
from cqs.observability.health import ReadinessProbe
from cqs.observability.hub import ObservabilityHub
from cqs.observability.routes import add_observability_routes
from cqs.observability.stats import QueueStatistics
from cqs.receipts import ReceiptSigner
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.servers import server_label
from cqs.revisibility_worker import RevisibilityWorker
from cqs.service import QueueService, ServiceTuning
from cqs.settings import Settings, add_setting_flags, load_settings, settings_environment
from cqs.sqs_api.app import create_api_app

log = logging.getLogger("cqs")

SERVICE_KEY = web.AppKey("cqs_service", QueueService)
CACHE_KEY = web.AppKey("cqs_cache", RedisMessageCache)


def build_app(settings: Settings) -> web.Application:
    """The whole server as an aiohttp app; storage connects on startup, closes on cleanup."""
    holder: dict[str, QueueService] = {}
    hub = ObservabilityHub(version=__version__, multiprocess_dir=multiprocess_directory())
    app = create_api_app(
        lambda: holder["service"],
        account_id=settings.account_id,
        base_url=settings.base_url,
        region=settings.region,
        telemetry=hub.telemetry,
    )
    add_observability_routes(app, hub)
    console = admin_console(settings, hub)
    if console is not None:
        mount_admin_console(app, console)

    async def storage(app: web.Application) -> AsyncIterator[None]:
        session = await connect_cassandra(
            contact_points=list(settings.cassandra_hosts),
            keyspace=settings.cassandra_keyspace,
            replication=settings.cassandra_replication,
            protocol_version=settings.cassandra_protocol_version,
            read_consistency=settings.cassandra_read_consistency,
            write_consistency=settings.cassandra_write_consistency,
            request_timeout=settings.cassandra_timeout_seconds,
            observe=hub.telemetry.observe_backend,
        )
        catalog = CassandraQueueCatalog(session)
        store = await CassandraMessageStore.on_session(
            session, bucket_seconds=settings.cassandra_bucket_seconds
        )
        cache = RedisMessageCache(
            list(settings.redis_urls),
            socket_timeout=settings.redis_timeout_seconds,
            max_connections=settings.redis_max_connections,
            pool_wait_seconds=settings.redis_pool_wait_seconds,
            observe=hub.telemetry.observe_backend,
            observe_pool=hub.telemetry.observe_pool_wait,
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
                queue_deleted_recently_seconds=settings.queue_deleted_recently_seconds,
            ),
            telemetry=hub.telemetry,
        )
        holder["service"] = service
        hub.attach(
            statistics=QueueStatistics(catalog.list_names, cache),
            readiness=ReadinessProbe(
                cache.ping_servers, session.ping,
                redis_labels=[server_label(url) for url in settings.redis_urls],
            ),
            service=service,
        )
        app[SERVICE_KEY] = service
        app[CACHE_KEY] = cache
        if console is not None:
            inspector = QueueInspector(catalog, store, cache, worker_pids=api_process_ids)
            console.attach(inspector, shared_secret=secret)
        worker = RevisibilityWorker(
            cache,
            service.notify_messages_available,
            interval_seconds=settings.revisibility_interval_seconds,
            telemetry=hub.telemetry,
        )
        sweeping = asyncio.create_task(worker.run(), name="revisibility-worker")
        housekeeper = Housekeeper(service, trim_seconds=settings.expiry_trim_seconds)
        chores = asyncio.create_task(housekeeper.run(), name="housekeeping")
        log.info("cqs %s ready on %s:%d", __version__, settings.host, settings.port)
        try:
            yield
        finally:
            for task in (sweeping, chores):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            hub.detach()
            if console is not None:
                console.detach()
            await service.close()
            await cache.close()
            await store.close()
            await catalog.close()
            await session.close()

    app.cleanup_ctx.append(storage)
    return app


def admin_console(settings: Settings, hub: ObservabilityHub) -> AdminConsole | None:
    """The admin console's parts, unless `admin_enabled` is off. Without `admin_password`
    the password generated at the first start (kept in the data directory) is used."""
    if not settings.admin_enabled:
        return None
    password = settings.admin_password or stored_password(Path(settings.data_dir))[0]
    return AdminConsole(hub, AdminCredentials(settings.admin_user, password))


def announce_admin_console(settings: Settings) -> None:
    """Print the console's URL; at the start that generates its password, the password."""
    if not settings.admin_enabled:
        return
    url = f"http://{settings.host}:{settings.port}{ADMIN_PREFIX}/"
    if settings.admin_password:
        print(f"cqs admin console: {url} (user {settings.admin_user})", flush=True)
        return
    password, created = stored_password(Path(settings.data_dir))
    kept = Path(settings.data_dir) / PASSWORD_FILE_NAME
    if created:
        print(
            f"cqs admin console: {url} user {settings.admin_user} password {password}"
            f" (generated now; kept in {kept})",
            flush=True,
        )
    else:
        print(f"cqs admin console: {url} (user {settings.admin_user}; password in {kept})",
              flush=True)


def api_process_ids() -> list[int]:
    """The API processes serving this port here: every worker of `--workers N`, or this one."""
    directory = multiprocess_directory()
    return live_worker_pids(directory) if directory is not None else [os.getpid()]


@contextlib.contextmanager
def embedded_backends(settings: Settings) -> Iterator[Settings]:
    """Start the embedded Redis and/or Cassandra the settings leave unconfigured."""
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


def install_event_loop(settings: Settings) -> None:
    if settings.event_loop == "uvloop":
        with contextlib.suppress(ImportError):
            import uvloop

            uvloop.install()
    elif settings.event_loop != "asyncio":
        raise SystemExit(f"unknown event loop {settings.event_loop!r}: use uvloop or asyncio")


def serve(settings: Settings) -> None:
    with embedded_backends(settings) as running:
        if multiprocess_directory() is None:  # not a worker: its supervisor announced it
            announce_admin_console(running)
        if running.workers > 1:
            supervise(running)
            return
        install_event_loop(running)
        run_app(  # aiohttp's run_app, with header and body read timeouts
            build_app(running),
            host=running.host,
            port=running.port,
            reuse_port=running.reuse_port,
            timeouts=ReadTimeouts(
                running.header_read_timeout_seconds, running.body_read_timeout_seconds
            ),
        )


def supervise(settings: Settings) -> None:
    """Run `settings.workers` worker processes on one port (SO_REUSEPORT); restart any that
    dies; stop them all on SIGTERM / SIGINT. Workers get the resolved settings (with the
    embedded services' addresses) through their environment."""
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CQS_")},
        **settings_environment(replace(settings, workers=1, reuse_port=True)),
    }
    # prometheus-client multiprocess mode: a scrape through any worker shows them all.
    metrics_dir = fresh_multiprocess_directory(Path(settings.data_dir))
    environment[MULTIPROCESS_ENVIRONMENT_VARIABLE] = str(metrics_dir)
    command = [sys.executable, "-m", "cqs", "serve"]

    def start_worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen(command, env=environment)

    workers = [start_worker() for _ in range(settings.workers)]
    log.info("supervising %d workers on port %d", settings.workers, settings.port)
    try:
        while True:
            time.sleep(0.5)
            for index, worker in enumerate(workers):
                if worker.poll() is not None:
                    log.warning(
                        "worker %d exited with %s; starting a new one", worker.pid, worker.returncode
                    )
                    mark_worker_dead(worker.pid, metrics_dir)
                    workers[index] = start_worker()
    except KeyboardInterrupt:
        pass
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


async def rebalance(settings: Settings, previous_redis_urls: Sequence[str]) -> list[str]:
    """After a change of the Redis server list (and the rolling restart onto it): for every
    queue whose ring owner changed, apply the deletes the old owner still remembers, then drop
    the queue's cache on both owners, so the new owner refills it from Cassandra on next use.
    Returns the names of the moved queues."""
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
    before = RedisMessageCache(list(previous_redis_urls))
    after = RedisMessageCache(list(settings.redis_urls))
    moved: list[str] = []
    try:
        pending = await before.deferred_store_deletes(1_000_000)
        for name in await catalog.list_names():
            if before.server_for(name) == after.server_for(name):
                continue
            queue = await catalog.get(name)
            if queue is not None:
                for message_id in pending.get(name, []):
                    await store.delete(queue, message_id)
            with contextlib.suppress(StorageUnavailable):
                await before.drop(name)
            await after.drop(name)
            moved.append(name)
    finally:
        await before.close()
        await after.close()
        await store.close()
        await catalog.close()
        await session.close()
    return moved


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cqs", description="Amazon-SQS-compatible queue service")
    parser.add_argument("--version", action="version", version=f"cqs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the SQS API server")
    add_setting_flags(serve_parser)
    rebalance_parser = commands.add_parser(
        "rebalance",
        help="after changing the Redis server list: move the caches of queues whose owner changed",
    )
    add_setting_flags(rebalance_parser)
    rebalance_parser.add_argument(
        "--previous-redis-urls", required=True,
        help="the comma-separated Redis URLs the servers used before the change",
    )
    args = parser.parse_args(argv)
    flags = {k: v for k, v in vars(args).items() if k not in ("command", "previous_redis_urls")}
    settings = load_settings(flags=flags)
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # Cassandra 1.2's system tables have no column metadata; the driver warns on each.
    logging.getLogger("cassandra.metadata").setLevel(logging.ERROR)
    if args.command == "rebalance":
        if settings.embedded_redis or settings.embedded_cassandra:
            parser.error("rebalance needs --redis-urls and --cassandra-hosts of the running cluster")
        previous = [u.strip() for u in args.previous_redis_urls.split(",") if u.strip()]
        moved = asyncio.run(rebalance(settings, previous))
        print(f"moved {len(moved)} queue(s): {' '.join(moved)}")
        return 0
    # SIGTERM must unwind through the ExitStack so embedded services stop with us.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        serve(settings)
    except KeyboardInterrupt:
        pass
    return 0
