"""Consumer groups under faults: every group still gets every acknowledged send when the
queues' Redis is killed under load and restarted empty (the groups' caches refill from
their own Cassandra copies). Real processes only: a redis-server of this test's own, the
module's Cassandra node and two `cqs serve` processes sharing both.
"""

from __future__ import annotations

import time
import uuid

import pytest

from cqs.domain.model import CacheState
from cqs.operations.groups_cli import call
from tests.resilience.conftest import (
    FaultyRedis,
    Ledger,
    StartApi,
    Workload,
    cache_state,
    sqs_client,
    wait_until,
)


@pytest.mark.timeout(240)
def test_every_group_gets_every_acknowledged_send_when_redis_is_killed_under_load(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Wall clock: load runs 4 s, Redis is down 5 s and load goes on 3 s: the fault's shape."""
    first, second = start_api(), start_api()
    name = f"cg-fault-{uuid.uuid4().hex[:10]}"
    queue_url = sqs_client(first.url).create_queue(QueueName=name)["QueueUrl"]
    group_urls = [
        call(first.url, "CreateConsumerGroup", {"QueueUrl": queue_url, "GroupName": group})
        ["QueueUrl"]
        for group in ("billing", "audit")
    ]
    sent = Ledger()
    producers = Workload(sent, [(first.url, queue_url), (second.url, queue_url)],
                         producers=2, consumers=0)
    consumers = {url: Ledger() for url in group_urls}
    loads = [
        Workload(ledger, [(first.url, url), (second.url, url)], producers=0, consumers=2)
        for url, ledger in consumers.items()
    ]
    for load in (producers, *loads):
        load.start()
    try:
        time.sleep(4)
        fault_redis.kill()
        time.sleep(5)
        fault_redis.restart()
        refilled = wait_until(
            lambda: all(cache_state(fault_redis.url, f"{name}/{group}") is CacheState.READY
                        for group in ("billing", "audit")),
            20, pause=0.3,
        )
        time.sleep(3)
        producers.stop()
        for ledger in consumers.values():  # what each group must have received
            with sent.lock:
                acknowledged, failed = dict(sent.acknowledged), set(sent.failed_bodies)
            with ledger.lock:
                ledger.acknowledged.update(acknowledged)
                ledger.failed_bodies.update(failed)
        drained = [load.drain(90) for load in loads]
    finally:
        for load in (producers, *loads):
            load.stop()

    print(sent.summary())
    assert not [e for e in sent.errors() if e.startswith("SendMessage:")], sent.errors()
    assert len(sent.acknowledged) > 50, sent.summary()
    for (url, ledger), done in zip(consumers.items(), drained, strict=True):
        print(url, ledger.summary())
        assert done, f"{url}: lost {len(ledger.lost())}: {ledger.lost()[:10]}"
        # Nothing reached a group that was never sent (a failed send may still have been
        # stored, as for the queue itself: at-least-once allows that).
        assert not ledger.unexpected(), url
        assert not ledger.resurrected(), url
    assert refilled, "the groups' caches were not refilled after Redis came back"
