"""Cassandra outages on real processes: a paused JVM (SIGSTOP) and a killed one (SIGKILL).

While the durable store cannot answer, SendMessage answers 503 ServiceUnavailable and never
acknowledges what it did not store; receives and deletes of messages already in the cache
keep working (a delete is remembered in Redis until Cassandra takes it); no call outlives
the configured Cassandra timeout by much. Afterwards everything drains by message id, and a
forced refill of the cache (Redis killed and restarted empty) does not bring deleted
messages back. The module has its own Cassandra node, which these tests hurt.
"""

from __future__ import annotations

import queue as queue_module
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from cqs.domain.model import CacheState
from tests.resilience.conftest import (
    CALL_BOUND_SECONDS,
    FaultyCassandra,
    FaultyRedis,
    Ledger,
    StartApi,
    cache_state,
    remembered_store_deletes,
    sqs_client,
    wait_until,
)

PAUSE_SECONDS = 8.0
KILLED_SECONDS = 3.0
RECOVERY_SECONDS = 60.0


def run_through_cassandra_outage(
    redis: FaultyRedis,
    start_api: StartApi,
    begin_outage: Callable[[], None],
    end_outage: Callable[[], float],
) -> None:
    """Drive one server through an outage; `end_outage` returns when the store was last
    certainly unable to answer (before it was resumed / restarted)."""
    server = start_api()
    queue = f"cassandra-outage-{uuid.uuid4().hex[:10]}"
    sqs = sqs_client(server.url)
    url = sqs.create_queue(QueueName=queue)["QueueUrl"]
    ledger = Ledger()
    for _ in range(30):
        assert ledger.send(sqs, url)
    assert cache_state(redis.url, queue) is CacheState.READY

    stop = threading.Event()

    def keep_sending() -> None:
        client = sqs_client(server.url)
        while not stop.is_set():
            ledger.send(client, url)
            time.sleep(0.1)

    to_delete: queue_module.Queue[dict[str, Any]] = queue_module.Queue()

    def keep_receiving() -> None:  # never waits behind a slow delete
        client = sqs_client(server.url)
        while not stop.is_set():
            for message in ledger.receive(client, url, visibility=60, wait=0, count=2):
                to_delete.put(message)
            time.sleep(0.2)

    def keep_deleting() -> None:
        client = sqs_client(server.url)
        while not stop.is_set() or not to_delete.empty():
            try:
                message = to_delete.get(timeout=0.2)
            except queue_module.Empty:
                continue
            ledger.delete(client, url, message)

    threads = [
        threading.Thread(target=t, daemon=True)
        for t in (keep_sending, keep_receiving, keep_deleting)
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        outage_began = time.monotonic()
        begin_outage()
        store_back_at = end_outage()
        recovered = wait_until(
            lambda: any(t > store_back_at for t in list(ledger.acknowledged_at.values())),
            RECOVERY_SECONDS,
        )
        recovered_at = time.monotonic()
        time.sleep(2.0)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)

    with ledger.lock:
        during = [c for c in ledger.calls if c.started >= outage_began and c.finished <= store_back_at]
        deleted_during = {i for i, t in ledger.deleted.items() if outage_began <= t <= store_back_at}
    acknowledged_while_down = [
        c for c in during if c.action == "SendMessage" and c.outcome == "ok"
        and c.started > outage_began + 0.05
    ]
    refused_sends = [c for c in during if c.action == "SendMessage" and c.outcome != "ok"]
    received_during = sum(
        1 for r in ledger.receipts if outage_began <= r.asked and r.at <= store_back_at
    )
    print(
        f"outage {store_back_at - outage_began:.1f} s; sends refused during it "
        f"{len(refused_sends)} ({sorted({c.outcome for c in refused_sends})}); received during "
        f"it {received_during}, deleted during it {len(deleted_during)}; sends succeed again "
        f"{recovered_at - store_back_at:.1f} s after the store came back"
    )

    # Deletes taken during the outage reach Cassandra once it is back ...
    flushed = wait_until(lambda: not remembered_store_deletes(redis.url), 30, pause=0.5)
    remembered = {} if flushed else remembered_store_deletes(redis.url)
    # ... so a cache refilled from Cassandra does not bring them back.
    redis.kill()
    redis.restart()
    deadline = time.monotonic() + 60
    empty_polls = 0
    while (ledger.lost() or empty_polls < 2) and time.monotonic() < deadline:
        messages = ledger.receive(sqs, url, visibility=30, wait=1)
        empty_polls = 0 if messages else empty_polls + 1
        for message in messages:
            ledger.delete(sqs, url, message)
    print(ledger.summary())
    with ledger.lock:
        timeline = [
            (c.action, round(c.started - outage_began, 2), round(c.seconds, 2), c.outcome)
            for c in ledger.calls
            if outage_began - 1 <= c.started <= store_back_at + 1
        ]
    print("calls around the outage (action, start s, duration s, outcome):", timeline)

    assert not acknowledged_while_down, f"acknowledged while Cassandra was down: {acknowledged_while_down}"
    assert refused_sends, "no send was refused while Cassandra was down"
    assert {c.outcome for c in refused_sends} == {"ServiceUnavailable"}
    assert received_during > 0, "cached messages could not be received during the outage"
    assert deleted_during, "no delete succeeded during the outage"
    errors = ledger.errors()
    assert not [e for e in errors if not e.startswith("SendMessage:")], errors
    assert recovered, f"sends still failing {RECOVERY_SECONDS:.0f} s after Cassandra came back"
    assert flushed, f"deletes still waiting for Cassandra: {remembered}"
    assert not ledger.lost(), f"lost {len(ledger.lost())}: {ledger.lost()[:10]}"
    strays = ledger.unexpected()
    assert not strays, [
        (r, [mid for mid, body in ledger.acknowledged.items() if body == r.body]) for r in strays
    ]
    assert not (ledger.resurrected()), f"deleted, then delivered again: {ledger.resurrected()}"
    slowest = ledger.slowest()
    assert slowest is not None and slowest.seconds <= CALL_BOUND_SECONDS, slowest


@pytest.mark.timeout(180)
def test_a_paused_cassandra_refuses_sends_but_cached_messages_flow_and_nothing_is_lost(
    cassandra: FaultyCassandra, fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Wall clock: Cassandra is paused for PAUSE_SECONDS under load: the fault's shape."""
    def end_outage() -> float:
        time.sleep(PAUSE_SECONDS)
        back = time.monotonic()
        cassandra.resume()
        return back

    run_through_cassandra_outage(fault_redis, start_api, cassandra.pause, end_outage)


@pytest.mark.timeout(180)
def test_a_killed_and_restarted_cassandra_loses_nothing_acknowledged(
    cassandra: FaultyCassandra, fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Wall clock: Cassandra stays down KILLED_SECONDS under load: the fault's shape."""
    def end_outage() -> float:
        time.sleep(KILLED_SECONDS)
        back = time.monotonic()
        cassandra.restart()
        return back

    run_through_cassandra_outage(fault_redis, start_api, cassandra.kill, end_outage)
