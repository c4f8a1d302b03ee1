"""Timer messages (#19) under faults: Redis SIGKILLed after part of them was promoted into
it, the API process SIGKILLed in the middle of a promotion, and a lost count decrement.

Servers run with the test-only clock, so "an hour ahead" passes at once; every process of
a test is kept at the same clock offset. Every check is by message id: each scheduled
message is received exactly once, and none before its `cqs.DeliverAt` (the server's time
when the receive was answered).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cqs.cassandra_store import CassandraConnection, connect
from cqs.cassandra_store.schema import SCHEDULED_COUNTS_TABLE
from tests.fixtures.cqs_server import CqsProcess, advance_clocks_together
from tests.resilience.conftest import (
    CASSANDRA_TIMEOUT_SECONDS,
    FaultyCassandra,
    FaultyRedis,
    sqs_client,
    wait_until,
)

HOUR = 3600
SCHEDULED = "cqs.ApproximateNumberOfScheduledMessages"
DELAYED = "ApproximateNumberOfMessagesDelayed"


class TimerRun:
    """Servers of one test (one clock offset for all), the scheduled ids and their receipts."""

    def __init__(self, cassandra: FaultyCassandra, redis: FaultyRedis, logs: Path) -> None:
        self._cassandra = cassandra
        self._redis = redis
        self._logs = logs
        self._keyspace = "timers_" + uuid.uuid4().hex[:10]
        self.offset = 0.0
        self.servers: list[CqsProcess] = []
        self.due: dict[str, int] = {}  # message id -> due (epoch s, server clock)
        self.receipts: dict[str, list[float]] = {}  # message id -> server times received
        self.early: list[tuple[str, float]] = []

    def start(self) -> CqsProcess:
        server = CqsProcess(
            [self._redis.url], self._cassandra.contact_point, self._logs, self._keyspace,
            ["--cassandra-timeout-seconds", str(CASSANDRA_TIMEOUT_SECONDS)], test_clock=True,
        )
        server.start()
        if self.offset:
            server.advance_clock(self.offset)
        self.servers.append(server)
        return server

    def advance(self, seconds: float) -> None:
        self.offset += seconds
        running = [s.url for s in self.servers if s.process is not None and s.process.poll() is None]
        advance_clocks_together(running, seconds)

    def now(self) -> float:
        return time.time() + self.offset

    def schedule(self, sqs: Any, url: str, count: int, first_due: int, spread: int) -> None:
        def send(start: int) -> None:
            entries = [
                {"Id": str(i), "MessageBody": f"timer {i}", "MessageAttributes": {
                    "cqs.DeliverAt": {"DataType": "Number",
                                      "StringValue": str(first_due + i % spread)},
                }}
                for i in range(start, min(start + 10, count))
            ]
            reply = sqs.send_message_batch(QueueUrl=url, Entries=entries)
            assert not reply.get("Failed"), reply["Failed"]
            for entry in reply["Successful"]:
                self.due[entry["MessageId"]] = first_due + int(entry["Id"]) % spread

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(send, range(0, count, 10)))

    def receive_for(self, sqs: Any, url: str, seconds: float) -> None:
        """Receive and delete for `seconds`, noting who came and when (server time)."""
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            messages = sqs.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300, WaitTimeSeconds=1
            ).get("Messages", [])
            answered = self.now()
            for message in messages:
                message_id = message["MessageId"]
                self.receipts.setdefault(message_id, []).append(answered)
                if self.due.get(message_id, 0) > answered:
                    self.early.append((message_id, self.due[message_id] - answered))
            if messages:
                sqs.delete_message_batch(QueueUrl=url, Entries=[
                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                    for n, m in enumerate(messages)
                ])

    def drain(self, sqs: Any, url: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while set(self.due) - set(self.receipts) and time.monotonic() < deadline:
            self.receive_for(sqs, url, 2)

    def verdict(self) -> tuple[list[str], dict[str, int], list[tuple[str, float]], list[str]]:
        """(lost, duplicates, early, unexpected)."""
        lost = sorted(set(self.due) - set(self.receipts))
        duplicates = {mid: len(at) for mid, at in self.receipts.items() if len(at) > 1}
        unexpected = sorted(set(self.receipts) - set(self.due))
        return lost, duplicates, self.early, unexpected

    def add_to_scheduled_counts(self, delta: int) -> int:
        """Add `delta` to every per-minute scheduled count of this test's keyspace (one
        queue's), as lost decrements would leave them; returns how many there are."""

        async def add() -> int:
            session = await connect(CassandraConnection(
                (self._cassandra.contact_point,), self._keyspace,
                request_timeout=CASSANDRA_TIMEOUT_SECONDS,
            ))  # fmt: skip
            try:
                found = await session.read(f"SELECT queue_id, bucket FROM {SCHEDULED_COUNTS_TABLE}")
                for row in found:
                    await session.write(
                        f"UPDATE {SCHEDULED_COUNTS_TABLE} SET messages = messages + ?"
                        " WHERE queue_id = ? AND bucket = ?",
                        [delta, row.queue_id, row.bucket],
                    )
                return len(found)
            finally:
                await session.close()

        return asyncio.run(add())

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def attributes(sqs: Any, url: str) -> dict[str, int]:
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[SCHEDULED, DELAYED])
    return {name: int(value) for name, value in found["Attributes"].items()}


def in_cache(sqs: Any, url: str) -> int:
    """Messages promoted out of Cassandra's schedule: delayed, visible or in flight."""
    names = [DELAYED, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    found = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(found[name]) for name in names)


@pytest.fixture
def timer_run(cassandra: FaultyCassandra, fault_redis: FaultyRedis, tmp_path: Path) -> Any:
    run = TimerRun(cassandra, fault_redis, tmp_path)
    yield run
    run.stop()
    for server in run.servers:
        print(f"--- {server.url}\n{server.log_tail(2000)}")


@pytest.mark.timeout(240)
def test_timer_messages_survive_a_redis_crash_after_part_of_them_was_promoted(
    timer_run: TimerRun, fault_redis: FaultyRedis
) -> None:
    """Wall clock: Redis stays down 1 s, so the promoter meets the outage."""
    server = timer_run.start()
    sqs = sqs_client(server.url)
    url = sqs.create_queue(QueueName=f"timer-redis-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    first_due = int(timer_run.now()) + HOUR
    timer_run.schedule(sqs, url, 400, first_due, spread=120)
    assert attributes(sqs, url) == {SCHEDULED: 400, DELAYED: 0}

    timer_run.advance(HOUR - 30)  # the first half minute is within the 60 s lead
    # The scheduled count drops when a promotion round finishes, after its pages reached
    # the cache: wait for both, or a busy machine catches the round half done.
    assert wait_until(
        lambda: (found := attributes(sqs, url))[DELAYED] > 0 and found[SCHEDULED] < 400, 15
    ), attributes(sqs, url)
    promoted = attributes(sqs, url)
    assert 0 < promoted[SCHEDULED] < 400, promoted

    fault_redis.kill()
    time.sleep(1)
    fault_redis.restart()

    timer_run.receive_for(sqs, url, 3)  # nothing due yet, from the refilled cache or not
    assert timer_run.receipts == {}
    timer_run.advance(60)  # half of them due now
    timer_run.receive_for(sqs, url, 6)
    assert timer_run.receipts, "nothing arrived once due"
    timer_run.advance(120)
    timer_run.drain(sqs, url, 60)

    lost, duplicates, early, unexpected = timer_run.verdict()
    print(f"promoted before the crash: {400 - promoted[SCHEDULED]}; received "
          f"{len(timer_run.receipts)}; lost {len(lost)}; duplicates {duplicates}; early {early}")
    assert (lost, duplicates, early, unexpected) == ([], {}, [], [])
    assert wait_until(lambda: attributes(sqs, url) == {SCHEDULED: 0, DELAYED: 0}, 5)


@pytest.mark.timeout(300)
def test_timer_messages_survive_the_promoting_process_killed_mid_promotion(
    timer_run: TimerRun,
) -> None:
    total = 5000
    doomed = timer_run.start()
    sqs = sqs_client(doomed.url)
    url = sqs.create_queue(QueueName=f"timer-kill-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    first_due = int(timer_run.now()) + HOUR
    timer_run.schedule(sqs, url, total, first_due, spread=50)

    timer_run.advance(HOUR - 40)  # every one of them within the lead: one long promotion
    assert wait_until(lambda: attributes(sqs, url)[SCHEDULED] < total, 20, pause=0.05)
    doomed.kill()

    survivor = timer_run.start()  # its clock is set to the same offset
    sqs = sqs_client(survivor.url)
    left = attributes(sqs, url)
    print(f"after the kill: {left}")
    assert 0 < left[SCHEDULED] < total, f"the kill did not land mid-promotion: {left}"

    # The dead process's lease lapses (15 s), then the survivor finishes the promotion.
    # (The scheduled count may run high until the minutes end: the kill may fall between
    # removing a page and counting it down.) Wall clock: the test clock runs on from its
    # offset, so on a slow machine the first messages fall due (and turn visible) before
    # the rest are promoted; promotion is done once all are in the cache, delayed or not.
    started = time.monotonic()
    assert wait_until(lambda: in_cache(sqs, url) == total, 90), attributes(sqs, url)
    print(f"promotion finished {time.monotonic() - started:.1f} s after the restart")
    timer_run.receive_for(sqs, url, 2)
    assert timer_run.early == [], "received before it was due"
    timer_run.advance(65)
    timer_run.drain(sqs, url, 120)

    lost, duplicates, early, unexpected = timer_run.verdict()
    print(f"received {len(timer_run.receipts)}; lost {len(lost)}; duplicates "
          f"{len(duplicates)}; early {early[:5]}")
    assert (lost, duplicates, early, unexpected) == ([], {}, [], [])
    # A count the kill left high goes once its minute has ended (past the 60 s lead).
    timer_run.advance(120)
    assert wait_until(lambda: attributes(sqs, url) == {SCHEDULED: 0, DELAYED: 0}, 10), (
        attributes(sqs, url)
    )


@pytest.mark.timeout(240)
def test_a_scheduled_count_left_high_is_cleared_once_its_minutes_have_ended(
    timer_run: TimerRun,
) -> None:
    # A process killed between removing promoted messages and counting them down leaves the
    # count high; after the promotion nothing is due, yet the stale count must not stay.
    server = timer_run.start()
    sqs = sqs_client(server.url)
    url = sqs.create_queue(QueueName=f"timer-count-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    total = 40
    # Due 30-34 s into a minute, so a promotion in the next 20 s leaves that minute open.
    first_due = (int(timer_run.now()) + HOUR) // 60 * 60 + 90
    timer_run.schedule(sqs, url, total, first_due, spread=5)
    assert attributes(sqs, url) == {SCHEDULED: total, DELAYED: 0}
    buckets = timer_run.add_to_scheduled_counts(3)  # the decrements a killed process lost
    assert attributes(sqs, url) == {SCHEDULED: total + 3 * buckets, DELAYED: 0}

    # All within the lead, while their last minute has not ended: promoted, nothing left
    # due, and the count of that minute still there.
    timer_run.advance(first_due - 55 - timer_run.now())
    assert wait_until(lambda: attributes(sqs, url)[DELAYED] == total, 30), attributes(sqs, url)
    assert attributes(sqs, url)[SCHEDULED] > 0
    timer_run.advance(65)
    timer_run.drain(sqs, url, 60)
    lost, duplicates, early, unexpected = timer_run.verdict()
    assert (lost, duplicates, early, unexpected) == ([], {}, [], [])
    timer_run.advance(120)  # every minute of theirs has ended, past the lead
    assert wait_until(lambda: attributes(sqs, url) == {SCHEDULED: 0, DELAYED: 0}, 10), (
        attributes(sqs, url)
    )
