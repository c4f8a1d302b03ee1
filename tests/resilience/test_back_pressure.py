"""Redis back-pressure (`StorageBusy`, the server slow but up) in the middle of a receive.

A receive whose cache took messages out for the dead-letter queue then moves them; if the
dead-letter queue's Redis pushes back during the move, the deliveries the receive already
got must still be answered, and the message being moved must not be stranded (out of both
caches, only in Cassandra). Real processes: two redis-servers of this test's own, so the
source queue and its dead-letter queue live on different servers and only the second is
slowed (SIGSTOP for 2 s: the call times out, the probe is answered once it resumes, which
the server reads as back-pressure), the module's Cassandra node, one `cqs serve`.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cqs.redis_cache.ring import HashRing
from cqs.redis_cache.servers import ring_node
from tests.fixtures.cqs_server import CqsProcess
from tests.resilience.conftest import (
    CASSANDRA_TIMEOUT_SECONDS,
    HOME,
    FaultyCassandra,
    FaultyRedis,
    error_code,
    sqs_client,
)


def name_on(ring: HashRing, node: str, prefix: str) -> str:
    """A FIFO queue name that the ring places on `node`."""
    while True:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}.fifo"
        if ring.node_for(HOME.queue(name).key) == node:
            return name


@pytest.fixture
def second_redis(tmp_path: Path) -> Iterator[FaultyRedis]:
    redis = FaultyRedis(tmp_path / "redis-b")
    try:
        yield redis
    finally:
        redis.stop()


@pytest.mark.timeout(90)
def test_a_receive_whose_dead_letter_move_meets_back_pressure_answers_and_strands_nothing(
    cassandra: FaultyCassandra, fault_redis: FaultyRedis, second_redis: FaultyRedis,
    tmp_path: Path,
) -> None:
    """Timed on the wall clock because SIGSTOP is: the pause (2 s) falls between the Redis
    socket timeout (1 s) and that plus the probe's timeout (2 s more)."""
    urls = [fault_redis.url, second_redis.url]
    server = CqsProcess(
        urls, cassandra.contact_point, tmp_path, "bp_" + uuid.uuid4().hex[:12],
        ["--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS)],
    )
    server.start()
    try:
        sqs = sqs_client(server.url)
        ring = HashRing([ring_node(url) for url in urls])
        fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
        dlq_url = sqs.create_queue(
            QueueName=name_on(ring, ring_node(second_redis.url), "dlq"), Attributes=fifo
        )["QueueUrl"]
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"]["QueueArn"]
        redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})
        url = sqs.create_queue(
            QueueName=name_on(ring, ring_node(fault_redis.url), "source"),
            Attributes={**fifo, "RedrivePolicy": redrive},
        )["QueueUrl"]
        doomed = sqs.send_message(QueueUrl=url, MessageBody="doomed", MessageGroupId="g1")
        other = sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="g2")
        first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=0)
        assert [m["Body"] for m in first["Messages"]] == ["doomed"]  # received once: at its limit

        answers: list[Any] = []

        def receive() -> None:
            try:
                answers.append(sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60
                ).get("Messages", []))
            except Exception as exc:
                answers.append(error_code(exc))

        second_redis.pause()
        receiver = threading.Thread(target=receive, daemon=True)
        receiver.start()
        time.sleep(2.0)
        second_redis.resume()
        receiver.join(timeout=30)

        assert answers and not isinstance(answers[0], str), f"the receive failed: {answers}"
        assert [m["MessageId"] for m in answers[0]] == [other["MessageId"]]
        # The doomed message reaches the dead-letter queue (or, moved back by a refill,
        # comes out of the source again): it is not stranded.
        seen: list[tuple[str, str]] = []
        deadline = time.monotonic() + 20
        while doomed["MessageId"] not in {i for _, i in seen} and time.monotonic() < deadline:
            for where, queue_url in (("dlq", dlq_url), ("source", url)):
                reply = sqs.receive_message(
                    QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                    VisibilityTimeout=60,
                )
                seen += [(where, m["MessageId"]) for m in reply.get("Messages", [])]
        print(f"after the back-pressure: {seen}")
        assert doomed["MessageId"] in {i for _, i in seen}, "the dead-lettered message is stranded"
    finally:
        with contextlib.suppress(Exception):
            server.stop()
        print(f"--- log of cqs ---\n{server.log_tail(3000)}")
