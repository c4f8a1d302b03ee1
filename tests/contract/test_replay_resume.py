"""A replay that fails between storing a batch of copies and moving its cursor past them
resumes without sending them twice and without losing them (issue 26, item 8).

The service runs on the real Cassandra and Redis adapters. The one fault is a refused
write of the replay's record, at a chosen batch, raised as the adapter raises a Cassandra
timeout (StorageUnavailable): so the failure lands exactly in the window a paused node or a
killed process only hits by chance (tests/resilience/test_replay_faults.py does that).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from cqs.cassandra_store import CassandraMessageStore, CassandraQueueCatalog
from cqs.cassandra_store.consumed import CassandraConsumedMessages
from cqs.cassandra_store.session import CassandraSession
from cqs.domain.errors import StorageUnavailable
from cqs.domain.extension_model import ConsumedRange, Replay
from cqs.domain.model import (
    Queue,
    QueueIdentity,
    QueueNamespace,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
)
from cqs.domain.receipts import ReceiptSigner
from cqs.redis_cache.cache import RedisMessageCache
from cqs.service import QueueService

ACCOUNT, REGION = "444455556666", "us-east-1"
MESSAGES = 200


class CursorWriteFails(CassandraConsumedMessages):
    """The real adapter, except that the `fail_at`-th write of a replay record (the first
    is the replay's start) is refused once, as a timed-out write would be."""

    def __init__(self, session: CassandraSession, fail_at: int) -> None:
        super().__init__(session)
        self.fail_at = fail_at
        self.saves = 0

    async def save_replay(self, queue: Queue, replay: Replay, keep_seconds: int) -> None:
        self.saves += 1
        if self.saves == self.fail_at:
            raise StorageUnavailable("Cassandra write timed out (injected)")
        await super().save_replay(queue, replay, keep_seconds)


@pytest.fixture
async def consumed(cassandra_session: CassandraSession) -> CursorWriteFails:
    # Save 1 starts the replay, save n + 1 follows batch n: the 6th batch's copies are
    # stored when the write that would move the cursor past them fails.
    return CursorWriteFails(cassandra_session, fail_at=7)


@pytest.fixture
async def service(
    queue_catalog: CassandraQueueCatalog,
    message_store: CassandraMessageStore,
    message_cache: RedisMessageCache,
    consumed: CursorWriteFails,
) -> AsyncIterator[QueueService]:
    service = QueueService(
        queue_catalog, message_store, message_cache, ReceiptSigner(b"s" * 32),
        home=QueueNamespace(ACCOUNT, REGION), consumed=consumed,
    )
    yield service
    await service.close()


async def consumed_queue(service: QueueService, attributes: dict[str, str]) -> tuple[
    QueueIdentity, list[str]
]:
    """A queue keeping consumed messages, with MESSAGES sent, received and deleted."""
    fifo = attributes.get("FifoQueue") == "true"
    queue = QueueIdentity(ACCOUNT, REGION, f"replay-{uuid.uuid4().hex[:10]}" + (
        ".fifo" if fifo else ""))
    await service.create_queue(queue, {"cqs.ConsumedRetentionSeconds": "3600", **attributes}, {})
    bodies = [f"body-{n:04d}" for n in range(MESSAGES)]
    for first in range(0, MESSAGES, 10):
        await service.send_message_batch(queue, [
            (str(n), SendRequest(
                body=body,
                message_group_id=f"g{n % 3}" if fifo else None,
                message_deduplication_id=body if fifo else None,
            ))
            for n, body in enumerate(bodies[first : first + 10])
        ])
    got = await received(service, queue, MESSAGES)
    assert sorted(m.delivery.message.body for m in got) == bodies
    return queue, bodies


async def received(
    service: QueueService, queue: QueueIdentity, wanted: int
) -> list[ReceivedMessage]:
    """Receive and delete (a FIFO group gives nothing more while one of its messages is in
    flight) until `wanted` came and then nothing for a while; a copy sent twice comes
    twice, under two ids."""
    got: list[ReceivedMessage] = []
    deadline = time.monotonic() + 30
    empty = 0
    while time.monotonic() < deadline and (len(got) < wanted or empty < 3):
        page = await service.receive_message(
            queue, ReceiveRequest(max_number_of_messages=10, visibility_timeout=600)
        )
        got.extend(page)
        for message in page:
            await service.delete_message(queue, message.receipt_handle)
        empty = 0 if page else empty + 1
    return got


@pytest.mark.parametrize("attributes", [{}, {"FifoQueue": "true"}], ids=["standard", "fifo"])
async def test_a_replay_whose_cursor_write_failed_resumes_with_every_message_once(
    service: QueueService, consumed: CursorWriteFails, attributes: dict[str, str]
) -> None:
    queue, bodies = await consumed_queue(service, attributes)
    now_ms = int(time.time() * 1000)
    span = ConsumedRange(now_ms - 600_000, now_ms + 600_000)

    with pytest.raises(StorageUnavailable):
        await service.replay_messages(queue, span, "resume-me", None)
    assert consumed.saves == consumed.fail_at  # it failed where it was meant to

    progress = await service.replay_messages(queue, span, "resume-me", None)
    assert progress.done and progress.total_replayed == MESSAGES
    # The 5 batches before the failure were sent by the first call; this one sent the rest.
    assert progress.replayed == MESSAGES - 50

    delivered = await received(service, queue, MESSAGES)
    by_body = Counter(m.delivery.message.body for m in delivered)
    lost = sorted(set(bodies) - set(by_body))
    twice = sorted(body for body, count in by_body.items() if count > 1)
    assert (lost, twice) == ([], []), f"lost {lost[:5]}..., replayed twice {twice[:5]}..."
    assert len({m.delivery.message.message_id for m in delivered}) == MESSAGES
