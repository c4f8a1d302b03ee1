"""Queue metadata during a Cassandra outage longer than the metadata's 30 s freshness.

docs/reliability.md promises that receives of a queue with a ready cache do not wait on
Cassandra. A copy of the queue's metadata older than 30 s was reloaded in the caller's
path, so during a long outage every call first waited out the Cassandra timeout. Real
processes: the module's Cassandra node (paused with SIGSTOP), a redis-server of the test's
own, one `cqs serve` on the test clock (advanced 31 s instead of waiting them out).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from pathlib import Path

import pytest

from tests.fixtures.cqs_server import CqsProcess
from tests.resilience.conftest import (
    CASSANDRA_TIMEOUT_SECONDS,
    FaultyCassandra,
    FaultyRedis,
    sqs_client,
)


@pytest.mark.timeout(90)
def test_receives_do_not_wait_on_cassandra_when_the_outage_outlasts_the_metadata(
    cassandra: FaultyCassandra, fault_redis: FaultyRedis, tmp_path: Path
) -> None:
    """Latency is what is checked, so call durations are measured; the bound (half the
    Cassandra timeout) is far above a Redis receive and far below a wait on Cassandra."""
    server = CqsProcess(
        [fault_redis.url], cassandra.contact_point, tmp_path, "md_" + uuid.uuid4().hex[:12],
        ["--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS)], test_clock=True,
    )
    server.start()
    try:
        sqs = sqs_client(server.url)
        url = sqs.create_queue(QueueName=f"md-{uuid.uuid4().hex[:10]}")["QueueUrl"]
        sent = {
            sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")["MessageId"] for i in range(6)
        }
        cassandra.pause()
        server.advance_clock(31)  # every copy of the queue's metadata is now stale
        durations: list[float] = []
        received: set[str] = set()
        for _ in range(6):
            started = time.monotonic()
            reply = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60)
            durations.append(round(time.monotonic() - started, 2))
            received |= {m["MessageId"] for m in reply.get("Messages", [])}
    finally:
        cassandra.resume()
        with contextlib.suppress(Exception):
            server.stop()
    print(f"receive durations during the outage: {durations}")
    assert received == sent
    # The first call may learn of the outage the slow way; none after it waits on Cassandra.
    assert max(durations[1:]) < CASSANDRA_TIMEOUT_SECONDS / 2, durations
