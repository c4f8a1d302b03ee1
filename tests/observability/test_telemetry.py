"""PrometheusTelemetry: events become metric values. Unit tests of the recording, and the
service and revisibility worker reporting through it over the real Redis and Cassandra
(expiry and cache fills, which a wire test cannot reach in its time budget)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from cqs.cassandra_store import CassandraMessageStore, CassandraQueueCatalog
from cqs.domain.model import QueueNamespace, ReceiveRequest, SendRequest
from cqs.domain.receipts import ReceiptSigner
from cqs.observability.metrics import CqsMetrics
from cqs.observability.telemetry import STORE_MODE_GAP_CAP_SECONDS, PrometheusTelemetry
from cqs.redis_cache.cache import RedisMessageCache
from cqs.revisibility_worker import RevisibilityWorker
from cqs.service import QueueService
from tests.fixtures.manual_clock import ManualClock


def recorder() -> tuple[PrometheusTelemetry, Callable[..., float], ManualClock]:
    """A telemetry on a fresh registry, a reader of its values, and its clock."""
    registry = CollectorRegistry()
    clock = ManualClock()
    telemetry = PrometheusTelemetry(CqsMetrics(registry), clock=clock)

    def value(name: str, **labels: str) -> float:
        found = registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    return telemetry, value, clock


def test_message_events_count_per_queue_and_source() -> None:
    telemetry, value, _ = recorder()
    telemetry.messages_sent("orders", 3)
    telemetry.messages_received("orders", 2, from_cache=True)
    telemetry.messages_received("orders", 1, from_cache=False)
    telemetry.messages_received("orders", 0, from_cache=True)
    telemetry.messages_deleted("orders", 2)
    telemetry.messages_expired("orders", 4)
    telemetry.messages_expired("quiet", 0)
    telemetry.messages_moved_to_dead_letter_queue("orders", 1)

    assert value("cqs_messages_sent_total", queue="orders") == 3
    assert value("cqs_messages_received_total", queue="orders", source="cache") == 2
    assert value("cqs_messages_received_total", queue="orders", source="store") == 1
    assert value("cqs_cache_hits_total") == 2
    assert value("cqs_cache_misses_total") == 1
    assert value("cqs_messages_deleted_total", queue="orders") == 2
    assert value("cqs_messages_expired_total", queue="orders") == 4
    assert value("cqs_messages_moved_to_dead_letter_queue_total", queue="orders") == 1


def test_time_served_from_cassandra_accrues_between_passes_and_stops_with_the_cache() -> None:
    telemetry, value, clock = recorder()
    telemetry.serving_from_store("orders", True)
    clock.now += 1.5
    telemetry.serving_from_store("orders", True)
    clock.now += 0.5
    telemetry.serving_from_store("orders", False)  # the cache answers again
    clock.now += 100
    telemetry.serving_from_store("orders", False)
    assert value("cqs_cache_serving_from_store_seconds_total", queue="orders") == 2.0

    telemetry.serving_from_store("orders", True)
    clock.now += 10 * STORE_MODE_GAP_CAP_SECONDS
    telemetry.serving_from_store("orders", True)
    assert value("cqs_cache_serving_from_store_seconds_total", queue="orders") == (
        2.0 + STORE_MODE_GAP_CAP_SECONDS
    )


def test_fills_are_counted_once_with_their_duration_and_messages() -> None:
    telemetry, value, clock = recorder()
    telemetry.fill_started("orders")
    assert value("cqs_cache_fills_in_progress") == 1
    telemetry.fill_progress("orders", 500)
    telemetry.fill_progress("orders", 20)
    clock.now += 3
    telemetry.fill_finished("orders", True)
    telemetry.fill_finished("orders", False)  # the service's finally: already reported
    telemetry.fill_started("lost")
    telemetry.fill_finished("lost", False)

    assert value("cqs_cache_fills_in_progress") == 0
    assert value("cqs_cache_fill_messages_total") == 520
    assert value("cqs_cache_fills_total", outcome="completed") == 1
    assert value("cqs_cache_fills_total", outcome="abandoned") == 1
    assert value("cqs_cache_fill_duration_seconds_count") == 1
    assert value("cqs_cache_fill_duration_seconds_sum") == 3


def test_requests_long_polls_sweeps_and_backend_calls_are_recorded() -> None:
    telemetry, value, _ = recorder()
    telemetry.request_finished("SendMessage", "success", 0.003)
    telemetry.request_finished("SendMessage", "InvalidParameterValue", 0.001)
    telemetry.long_poll_waiting(1)
    telemetry.long_poll_waiting(1)
    telemetry.long_poll_waiting(-1)
    telemetry.sweep(0.002, 0, 0)
    telemetry.sweep(0.004, 3, 120)
    telemetry.observe_backend("redis", "h:1/0", "receive", 0.0004, True)
    telemetry.observe_backend("redis", "h:1/0", "receive", 1.0, False)

    assert value("cqs_api_requests_total", action="SendMessage", outcome="success") == 1
    assert value(
        "cqs_api_requests_total", action="SendMessage", outcome="InvalidParameterValue"
    ) == 1
    assert value("cqs_api_request_duration_seconds_count", action="SendMessage") == 2
    assert value("cqs_api_long_polls_waiting") == 1
    assert value("cqs_revisibility_sweep_duration_seconds_count") == 2
    assert value("cqs_revisibility_released_queues_total") == 3
    assert value("cqs_revisibility_lag_seconds_count") == 1
    assert value("cqs_revisibility_lag_seconds_sum") == 0.12
    labels = {"backend": "redis", "server": "h:1/0", "operation": "receive"}
    assert value("cqs_backend_request_duration_seconds_count", **labels) == 2
    assert value("cqs_backend_errors_total", **labels) == 1


# --- the service and the worker reporting, over the real storage ------------------------------


def service_with(
    catalog: CassandraQueueCatalog,
    store: CassandraMessageStore,
    cache: RedisMessageCache,
    telemetry: PrometheusTelemetry,
    clock: Callable[[], float],
) -> QueueService:
    return QueueService(
        catalog, store, cache, ReceiptSigner(b"s" * 32),
        home=QueueNamespace("000000000000", "us-east-1"), clock=clock, telemetry=telemetry,
    )


async def test_messages_past_their_retention_are_counted_as_expired(
    queue_catalog: CassandraQueueCatalog,
    message_store: CassandraMessageStore,
    message_cache: RedisMessageCache,
) -> None:
    import time

    telemetry, value, _ = recorder()
    clock = ManualClock(time.time())
    service = service_with(queue_catalog, message_store, message_cache, telemetry, clock)
    name = "expiring-" + uuid.uuid4().hex[:10]
    queue = service.home.queue(name)
    await service.create_queue(queue, {"MessageRetentionPeriod": "60"}, {})
    for body in ("a", "b"):
        await service.send_message(queue, SendRequest(body=body))
    clock.now += 61

    await service.chores.trim_expired_messages()
    assert value("cqs_messages_expired_total", queue=name) == 2
    assert value("cqs_messages_sent_total", queue=name) == 2
    await service.close()


async def test_a_receive_without_cache_is_served_from_cassandra_and_starts_a_fill(
    queue_catalog: CassandraQueueCatalog,
    message_store: CassandraMessageStore,
    message_cache: RedisMessageCache,
) -> None:
    import time

    telemetry, value, _ = recorder()
    service = service_with(queue_catalog, message_store, message_cache, telemetry, time.time)
    name = "refilled-" + uuid.uuid4().hex[:10]
    queue = service.home.queue(name)
    await service.create_queue(queue, {}, {})
    for body in ("a", "b", "c"):
        await service.send_message(queue, SendRequest(body=body))
    await message_cache.drop(queue)  # as after a Redis restart

    received = await service.receive_message(
        queue, ReceiveRequest(max_number_of_messages=1, visibility_timeout=60)
    )
    assert len(received) == 1
    assert value("cqs_messages_received_total", queue=name, source="store") == 1
    assert value("cqs_cache_misses_total") == 1
    for _ in range(100):
        if value("cqs_cache_fills_total", outcome="completed"):
            break
        await asyncio.sleep(0.05)
    assert value("cqs_cache_fills_total", outcome="completed") == 1
    assert value("cqs_cache_fill_messages_total") == 3
    assert value("cqs_cache_fill_duration_seconds_count") == 1
    assert value("cqs_cache_fills_in_progress") == 0

    from_cache = await service.receive_message(queue, ReceiveRequest(max_number_of_messages=10))
    assert value("cqs_cache_hits_total") == 1
    assert value("cqs_messages_received_total", queue=name, source="cache") == len(from_cache)
    await service.close()


async def test_a_sweep_that_releases_messages_reports_its_duration_and_lag(
    lone_cache: RedisMessageCache,
) -> None:
    from tests.observability.test_queue_stats import cached_queue, message

    telemetry, value, _ = recorder()
    queue = await cached_queue(lone_cache, "swept")
    sent = message(0)
    now_ms = sent.sent_timestamp_ms
    await lone_cache.add(queue, [sent], now_ms)
    outcome = await lone_cache.receive(queue, 1, 1, now_ms, 10**9, ["n"])
    assert outcome is not None and outcome.deliveries
    worker = RevisibilityWorker(
        lone_cache, lambda names: None, telemetry=telemetry, clock=lambda: (now_ms + 50) / 1000
    )
    assert await worker.sweep() == [queue]
    assert value("cqs_revisibility_sweep_duration_seconds_count") == 1
    assert value("cqs_revisibility_released_queues_total") == 1
    assert value("cqs_revisibility_lag_seconds_count") == 1


@pytest.mark.parametrize("completed", [True, False])
def test_fill_outcome_label_names_how_the_fill_ended(completed: bool) -> None:
    telemetry, value, _ = recorder()
    telemetry.fill_started("q")
    telemetry.fill_finished("q", completed)
    outcome = "completed" if completed else "abandoned"
    assert value("cqs_cache_fills_total", outcome=outcome) == 1
