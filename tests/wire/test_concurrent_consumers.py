"""Hundreds of concurrent long polls on one server: each message is delivered once.

Owns the load-level scenario of issue 13: 300 long polls (WaitTimeSeconds 20) receiving and
deleting with DeleteMessageBatch while 3,000 messages are sent with SendMessage and
SendMessageBatch, over two standard queues and one FIFO queue. Every delivery is counted by
message id (benchmarks/harness/delivery_ledger.py): nothing lost, no delivery before the
visibility timeout (60 s, longer than the run, so any repeat is unexpected), none after a
delete, and every message deleted. Counts only, never times; the timeout marker only keeps
a broken server from hanging the suite.

The clients are asyncio tasks over aiohttp speaking AWS JSON 1.0 (benchmarks/harness/sqs_wire.py,
shared with benchmarks/concurrency_soak.py), since 300 blocking boto3 long polls would need
300 threads. The server is one of its own with default settings (`start_cqs_server`), so
that no other test's load shares its Redis connection pool. Must not import cqs.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from benchmarks.harness.delivery_ledger import DeliveryLedger, Verdict
from benchmarks.harness.sqs_wire import (
    ConsumerPool,
    PollPlan,
    SendPlan,
    SqsJsonClient,
    client_session,
    send_messages,
    wait_until_deleted,
)

POLLS = 300
MESSAGES = 3_000
PRODUCERS = 12
WAIT_SECONDS = 20
VISIBILITY_SECONDS = 60
DRAIN_SECONDS = 60.0


@pytest.fixture(scope="module")
def own_endpoint(redis_server: Any, start_cqs_server: Any) -> str:
    return str(start_cqs_server([redis_server.url]).url)


def describe(verdict: Verdict, ledger: DeliveryLedger) -> str:
    return (
        f"sent {verdict.sent}, received {verdict.received}, lost {len(verdict.lost)}, "
        f"deliveries {verdict.deliveries}, early duplicates {verdict.early_duplicates}, "
        f"after delete {verdict.deliveries_after_delete}, expected duplicates "
        f"{verdict.expected_duplicates}, not deleted {len(verdict.not_deleted)}, "
        f"errors {dict(ledger.errors)}, examples {list(verdict.examples[:3])}"
    )


@pytest.mark.timeout(300)
async def test_three_hundred_long_polls_deliver_each_message_once(own_endpoint: str) -> None:
    run = "cc-" + uuid.uuid4().hex[:8]
    ledger = DeliveryLedger()
    async with client_session() as session:
        client = SqsJsonClient(session, own_endpoint)
        attributes = {"VisibilityTimeout": str(VISIBILITY_SECONDS)}
        queue_urls = [
            await client.create_queue(f"{run}-standard-a", attributes),
            await client.create_queue(f"{run}-standard-b", attributes),
            await client.create_queue(f"{run}-ordered.fifo", {**attributes, "FifoQueue": "true"}),
        ]
        consumers = ConsumerPool(client, ledger, PollPlan(
            queue_urls, POLLS, wait_seconds=WAIT_SECONDS, visibility_seconds=VISIBILITY_SECONDS,
        ))
        consumers.start()
        await consumers.ramped()
        await send_messages(client, ledger, SendPlan(queue_urls, MESSAGES, PRODUCERS, run))
        await wait_until_deleted(ledger, DRAIN_SECONDS)
        # The polls still waiting get their whole wait: a late repeat would show up here.
        await consumers.stop(grace_seconds=WAIT_SECONDS + 10)
        for url in queue_urls:
            await client.delete_queue(url)

    verdict = ledger.verdict()
    seen = {
        "sends acknowledged": verdict.sent,
        "lost": len(verdict.lost),
        "delivered again before the visibility timeout": verdict.early_duplicates,
        "delivered again after a delete": verdict.deliveries_after_delete,
        "received but never deleted": len(verdict.not_deleted),
    }
    assert seen == {
        "sends acknowledged": MESSAGES,
        "lost": 0,
        "delivered again before the visibility timeout": 0,
        "delivered again after a delete": 0,
        "received but never deleted": 0,
    }, describe(verdict, ledger)
