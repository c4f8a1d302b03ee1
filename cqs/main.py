"""Composition root and command line: the only module that imports every adapter.

Owns the wiring: parses the command line, reads Settings once, connects the adapters,
builds QueueService, the revisibility worker and the aiohttp application, ties their
lifetimes to the app (`cleanup_ctx`), and starts the chosen command. The commands that are
operations rather than wiring (the `--workers` supervisor, `cqs rebalance`, `cqs migrate`,
the embedded services) live in `cqs.operations` and get their parts from here.
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
import time
from collections.abc import AsyncIterator, Callable, Sequence

from aiohttp import web

from cqs import __version__
from cqs.admin_ui import mount_admin_console
from cqs.cassandra_store import (
    CassandraConnection,
    CassandraLegacyKeyspace,
    CassandraMessageStore,
    CassandraQueueCatalog,
    CassandraSession,
    KeyspaceNeedsMigration,
    KeyspaceNotFound,
)
from cqs.cassandra_store import connect as connect_cassandra
from cqs.cassandra_store.session import BackendObserver
from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import QueueIdentity, QueueNamespace
from cqs.embedded.cassandra5_install import CassandraInstallError
from cqs.embedded.cassandra5_install import install as install_cassandra
from cqs.observability.exposition import live_worker_pids, multiprocess_directory
from cqs.observability.health import ReadinessProbe
from cqs.observability.hub import ObservabilityHub
from cqs.observability.routes import add_observability_routes
from cqs.observability.stats import QueueStatistics
from cqs.operations import groups_cli
from cqs.operations.authentication import (
    announced_credentials,
    credential_store,
    credentials_reloaded_on_hangup,
)
from cqs.operations.console import admin_console, admin_console_hint
from cqs.operations.embedded import EmbeddedStartError, embedded_backends
from cqs.operations.logs import configure_logging
from cqs.operations.migrate import MigrationRefused, migrate
from cqs.operations.rebalance import rebalance
from cqs.operations.redis_eviction import EvictingRedis, check_eviction_policies
from cqs.operations.service_setup import compose_service
from cqs.operations.supervisor import secrets_from_supervisor, supervise
from cqs.operations.tls import TlsFilesError
from cqs.operations.tls_settings import (
    api_scheme,
    api_tls_context,
    cassandra_tls_context,
    check_backend_tls_files,
    redis_tls,
)
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.pool import cache_labels
from cqs.redis_cache.topology import parse_topology
from cqs.revisibility_worker import RevisibilityWorker
from cqs.service import QueueService
from cqs.service.clock import OffsetClock, ReferenceClock, follow_reference
from cqs.service.housekeeping import Housekeeper
from cqs.service.inspection import StorageQueueInspector as QueueInspector
from cqs.settings import Settings, add_setting_flags, load_settings
from cqs.sqs_api.app import ApiSettings, create_api_app
from cqs.sqs_api.clock_route import add_test_clock_route
from cqs.sqs_api.credentials import CredentialsError
from cqs.sqs_api.http_server import Listener, ReadTimeouts, run_app

log = logging.getLogger("cqs")

SERVICE_KEY = web.AppKey("cqs_service", QueueService)
CACHE_KEY = web.AppKey("cqs_cache", RedisMessageCache)


def build_app(settings: Settings, console_hint: str | None = None) -> web.Application:
    """The whole server as an aiohttp app; storage connects on startup, closes on cleanup.
    `console_hint` is printed under the ready line (where the console is, its password)."""
    holder: dict[str, QueueService] = {}
    # Every process follows the first Redis server's clock (service/clock.py says why).
    reference = ReferenceClock()
    clock = OffsetClock(reference.time)  # advanced only through the test-only route below
    hub = ObservabilityHub(version=__version__, multiprocess_dir=multiprocess_directory())
    credentials = announced_credentials(settings)
    app = create_api_app(
        lambda: holder["service"],
        ApiSettings(
            account_id=settings.account_id,
            base_url=settings.base_url,
            region=settings.region,
            access_keys=credentials.access_key if settings.auth == "verify" else None,
        ),
        telemetry=hub.telemetry,
    )
    app.cleanup_ctx.append(credentials_reloaded_on_hangup(credentials))
    add_observability_routes(app, hub)
    if settings.test_clock:
        add_test_clock_route(app, clock)
    console = admin_console(settings, hub, credentials)
    if console is not None:
        mount_admin_console(app, console)

    async def storage(app: web.Application) -> AsyncIterator[None]:
        session, catalog, store = await open_cassandra(
            settings, observe=hub.telemetry.observe_backend, clock=reference.time
        )
        cache = RedisMessageCache(
            list(settings.redis_urls),
            socket_timeout=settings.redis_timeout_seconds,
            max_connections=settings.redis_max_connections,
            pool_wait_seconds=settings.redis_pool_wait_seconds,
            observe=hub.telemetry.observe_backend,
            observe_pool=hub.telemetry.observe_pool_wait,
            clock=clock.time,
            tls=redis_tls(settings),
        )
        try:
            await check_eviction_policies(cache, allowed=settings.redis_eviction_allowed)
        except EvictingRedis:
            await cache.close()
            await session.close()
            raise
        await follow_reference(reference, cache.clock_offset, once=True)
        following = asyncio.create_task(
            follow_reference(reference, cache.clock_offset), name="reference-clock"
        )
        if settings.receipt_secret:
            # Any operator-chosen text becomes a full-length HMAC key.
            secret = hashlib.sha256(settings.receipt_secret.encode()).digest()
        else:
            secret = await catalog.shared_secret(os.urandom(32))
        service, promotion_leases = compose_service(
            settings, session, catalog, store, cache, secret, clock=clock.time,
            telemetry=hub.telemetry,
        )
        holder["service"] = service
        hub.attach(
            statistics=QueueStatistics(
                catalog, cache, service.home, wall_clock=clock.time
            ),
            readiness=ReadinessProbe(
                cache.ping_servers, session.ping,
                redis_labels=cache_labels(settings.redis_urls),
            ),
            service=service,
        )
        app[SERVICE_KEY] = service
        app[CACHE_KEY] = cache
        if console is not None:
            inspector = QueueInspector(
                catalog, store, cache, service.home, worker_pids=api_process_ids
            )
            console.attach(inspector, shared_secret=secret)
        worker = RevisibilityWorker(
            cache,
            service.notify_messages_available,
            interval_seconds=settings.revisibility_interval_seconds,
            clock=clock.time,
            telemetry=hub.telemetry,
        )
        sweeping = asyncio.create_task(worker.run(), name="revisibility-worker")
        housekeeper = Housekeeper(service, trim_seconds=settings.expiry_trim_seconds)
        chores = asyncio.create_task(housekeeper.run(), name="housekeeping")
        log.info(
            "cqs %s ready on %s://%s:%d",
            __version__, api_scheme(settings), settings.host, settings.port,
        )
        if console_hint is not None:
            print(console_hint, flush=True)
        try:
            yield
        finally:
            for task in (sweeping, chores, following):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            hub.detach()
            if console is not None:
                console.detach()
            await service.close()
            await promotion_leases.close()
            await cache.close()
            await store.close()
            await catalog.close()
            await session.close()

    app.cleanup_ctx.append(storage)
    return app


def api_process_ids() -> list[int]:
    """The API processes serving this port here: every worker of `--workers N`, or this one."""
    directory = multiprocess_directory()
    return live_worker_pids(directory) if directory is not None else [os.getpid()]


def install_event_loop(settings: Settings) -> None:
    if settings.event_loop == "uvloop":
        with contextlib.suppress(ImportError):
            import uvloop

            uvloop.install()
    elif settings.event_loop != "asyncio":
        raise SystemExit(f"unknown event loop {settings.event_loop!r}: use uvloop or asyncio")


def serve(settings: Settings) -> None:
    # Before anything starts: a supervisor checks the files once instead of restarting
    # workers that fail on them.
    tls = api_tls_context(settings)
    check_backend_tls_files(settings)
    with embedded_backends(settings) as running:
        # Read (at the first start: generated) before the console is built; a worker's
        # supervisor has already printed it.
        hint = admin_console_hint(running) if multiprocess_directory() is None else None
        if running.workers > 1:
            if hint is not None:
                print(hint, flush=True)
            supervise(running)
            return
        install_event_loop(running)
        run_app(  # aiohttp's run_app, with header and body read timeouts
            build_app(running, console_hint=hint),
            Listener(
                host=running.host,
                port=running.port,
                reuse_port=running.reuse_port,
                ssl_context=tls,
                timeouts=ReadTimeouts(
                    running.header_read_timeout_seconds, running.body_read_timeout_seconds
                ),
            ),
        )


def cassandra_connection(
    settings: Settings, clock: Callable[[], float] = time.time
) -> CassandraConnection:
    """How every Cassandra session of this process reaches the keyspace (`clock`: where its
    write timestamps come from)."""
    return CassandraConnection(
        contact_points=tuple(settings.cassandra_hosts),
        keyspace=settings.cassandra_keyspace,
        replication=settings.cassandra_replication,
        local_datacenter=settings.cassandra_local_datacenter or None,
        protocol_version=settings.cassandra_protocol_version or None,  # 0: negotiate
        read_consistency=settings.cassandra_read_consistency or None,
        write_consistency=settings.cassandra_write_consistency or None,
        request_timeout=settings.cassandra_timeout_seconds,
        heartbeat_interval=settings.cassandra_heartbeat_interval_seconds,
        heartbeat_timeout=settings.cassandra_heartbeat_timeout_seconds,
        reconnect_base_delay=settings.cassandra_reconnect_base_seconds,
        reconnect_max_delay=settings.cassandra_reconnect_max_seconds,
        username=settings.cassandra_username,
        password=settings.cassandra_password,
        ssl_context=cassandra_tls_context(settings),
        clock=clock,
    )


async def open_cassandra(
    settings: Settings, observe: BackendObserver | None = None,
    clock: Callable[[], float] = time.time,
) -> tuple[CassandraSession, CassandraQueueCatalog, CassandraMessageStore]:
    """One session, and the catalog and the store on it (neither owns it: close all three)."""
    session = await connect_cassandra(cassandra_connection(settings, clock), observe=observe)
    catalog = CassandraQueueCatalog(session)
    store = await CassandraMessageStore.on_session(
        session, bucket_seconds=settings.cassandra_bucket_seconds
    )
    return session, catalog, store


async def rebalance_caches(
    settings: Settings, previous_redis_urls: Sequence[str]
) -> list[QueueIdentity]:
    """`cqs rebalance`: the adapters of the old and the new ring, for the operation."""
    session, catalog, store = await open_cassandra(settings)
    before = RedisMessageCache(list(previous_redis_urls), tls=redis_tls(settings))
    after = RedisMessageCache(list(settings.redis_urls), tls=redis_tls(settings))
    try:
        return await rebalance(catalog, store, before, after)
    finally:
        await before.close()
        await after.close()
        await store.close()
        await catalog.close()
        await session.close()


async def migrate_keyspace(settings: Settings, *, drop_legacy: bool) -> None:
    """`cqs migrate`: the keyspace, opened past the server's refusal, for the operation."""
    connection = cassandra_connection(settings)
    try:
        keyspace = await CassandraLegacyKeyspace.open(connection)
    except KeyspaceNotFound:
        _say(f"nothing to migrate: there is no keyspace {connection.keyspace}")
        return
    try:
        await migrate(
            keyspace,
            QueueNamespace(settings.account_id, settings.region),
            drop_legacy=drop_legacy,
            report=_say,
        )
    finally:
        await keyspace.close()


def _say(line: str) -> None:
    print(line, flush=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_migrate(settings: Settings, *, drop_legacy: bool) -> int:
    """`cqs migrate` on the configured Cassandra, or on the embedded one under the data
    directory (started for the run) when none is configured."""
    try:
        with embedded_backends(settings, with_redis=False) as running:
            asyncio.run(migrate_keyspace(running, drop_legacy=drop_legacy))
    except (EmbeddedStartError, MigrationRefused, StorageUnavailable, TlsFilesError) as error:
        print(f"cqs migrate: {error}", file=sys.stderr)  # what to do about it: no traceback
        return 1
    except KeyboardInterrupt:
        print(
            "cqs migrate: interrupted; run it again to finish (copying a row again changes"
            " nothing)",
            file=sys.stderr,
        )
        return 130
    return 0


def run_cassandra_install() -> int:
    """`cqs cassandra install`: the embedded Cassandra 5.0's jars, fetched once."""
    try:
        install_cassandra()
    except CassandraInstallError as error:
        print(f"cqs cassandra install: {error}", file=sys.stderr)
        return 1
    return 0


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
    migrate_parser = commands.add_parser(
        "migrate",
        help="after stopping every cqs process of an earlier version: copy its keyspace to"
        " this version's tables (docs/operations.md, Upgrading)",
    )
    add_setting_flags(migrate_parser)
    migrate_parser.add_argument(
        "--drop-legacy", action="store_true", default=False,
        help="then drop the earlier version's tables (refused while any of their rows is"
        " newer than the migration)",
    )
    groups_cli.add_parser(commands)  # `cqs groups ...`: a client of a running server (#19)
    cassandra_parser = commands.add_parser(
        "cassandra", help="the embedded Apache Cassandra 5.0 (`cqs cassandra install`)"
    )
    cassandra_commands = cassandra_parser.add_subparsers(dest="cassandra_command", required=True)
    cassandra_commands.add_parser(
        "install",
        help="fetch cassandra-all and its runtime jars with Maven into the cache (once)",
    )
    args = parser.parse_args(argv)
    if args.command == "groups":
        return groups_cli.run(args)
    if args.command == "cassandra":
        return run_cassandra_install()
    not_settings = ("command", "previous_redis_urls", "drop_legacy")
    flags = {k: v for k, v in vars(args).items() if k not in not_settings}
    try:
        settings = load_settings(flags=flags, secrets=secrets_from_supervisor())
        if settings.redis_urls:
            parse_topology(settings.redis_urls)  # servers, one cluster or one Sentinel set
    except ValueError as error:  # a bad value, or the test clock outside tests
        parser.error(str(error))
    configure_logging(settings)
    if args.command == "rebalance":
        if settings.embedded_redis or settings.embedded_cassandra:
            parser.error("rebalance needs --redis-urls and --cassandra-hosts of the running cluster")
        previous = [u.strip() for u in args.previous_redis_urls.split(",") if u.strip()]
        moved = asyncio.run(rebalance_caches(settings, previous))
        print(f"moved {len(moved)} queue(s): {' '.join(queue.key for queue in moved)}")
        return 0
    # SIGTERM must unwind through the ExitStack so embedded services stop with us.
    signal.signal(signal.SIGTERM, _interrupt)
    # SIGHUP re-reads the credentials once the app runs; before that it must not end us.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if args.command == "migrate":
        return run_migrate(settings, drop_legacy=args.drop_legacy)
    try:
        credential_store(settings)  # refused at once, before any embedded service starts
        serve(settings)
    except CredentialsError as error:
        print(f"cqs serve: {error}", file=sys.stderr)  # names the entry, never a secret
        return 2
    except (EmbeddedStartError, KeyspaceNeedsMigration, EvictingRedis) as error:
        print(f"cqs serve: {error}", file=sys.stderr)  # what to do about it: no traceback
        return 1
    except TlsFilesError as error:  # a setting names a file that does not load
        print(f"cqs serve: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0
