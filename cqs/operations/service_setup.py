"""The QueueService of one API process, composed from the storage it was given.

Owns which adapters and tuning the service gets from Settings: the message cache, store
and catalog the composition root opened, plus the stores and leases of the features beyond
SQS (consumed copies for replay, timer messages and their promotion leases, #19).
Imports settings, the service and the adapters; the composition root calls it.
"""

from __future__ import annotations

from collections.abc import Callable

from cqs.cassandra_store import (
    CassandraConsumedMessages,
    CassandraMessageStore,
    CassandraQueueCatalog,
)
from cqs.cassandra_store.scheduled import CassandraScheduledMessages
from cqs.cassandra_store.session import CassandraSession
from cqs.domain.model import QueueNamespace
from cqs.domain.receipts import ReceiptSigner
from cqs.operations.tls_settings import redis_tls
from cqs.ports import Telemetry
from cqs.redis_cache.cache import RedisMessageCache
from cqs.redis_cache.pool import ServerPool
from cqs.redis_cache.promotion_leases import RedisPromotionLeases
from cqs.redis_cache.servers import ServerLimits
from cqs.service import QueueService, ServiceTuning
from cqs.settings import Settings


def compose_service(
    settings: Settings,
    session: CassandraSession,
    catalog: CassandraQueueCatalog,
    store: CassandraMessageStore,
    cache: RedisMessageCache,
    secret: bytes,
    *,
    clock: Callable[[], float],
    telemetry: Telemetry,
) -> tuple[QueueService, RedisPromotionLeases]:
    """The service, and the promotion leases the caller closes after the service."""
    promotion_leases = timer_promotion_leases(settings)
    service = QueueService(
        catalog,
        store,
        cache,
        ReceiptSigner(secret),
        home=QueueNamespace(settings.account_id, settings.region),
        tuning=ServiceTuning(
            long_poll_recheck_seconds=settings.long_poll_recheck_seconds,
            cache_fill_lease_seconds=settings.cache_fill_lease_seconds,
            cache_fill_page_size=settings.cache_fill_page_size,
            queue_deleted_recently_seconds=settings.queue_deleted_recently_seconds,
            timer_horizon_seconds=settings.timer_horizon_seconds,
            timer_promotion_lead_seconds=settings.timer_promotion_lead_seconds,
        ),
        clock=clock,
        telemetry=telemetry,
        consumed=CassandraConsumedMessages(session),
        scheduled=CassandraScheduledMessages(session),
        promotion_leases=promotion_leases,
    )
    return service, promotion_leases


def timer_promotion_leases(settings: Settings) -> RedisPromotionLeases:
    """The timer messages' promotion leases (#19), on a small pool of their own."""
    limits = ServerLimits(
        socket_timeout=settings.redis_timeout_seconds, max_connections=4,
        pool_wait_seconds=settings.redis_pool_wait_seconds,
    )
    return RedisPromotionLeases(
        ServerPool(list(settings.redis_urls), limits, tls=redis_tls(settings))
    )
