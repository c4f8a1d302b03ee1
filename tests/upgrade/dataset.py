"""What the migrate tests put into a keyspace of the earlier schema, and how they read keyspaces.

`write_dataset` writes, as the earlier cqs did (`tests/fixtures/legacy_keyspace.py`), three
live queues (two standard, one FIFO; attributes with quotes, tags, a redrive policy naming
another queue by ARN) holding 3,000 live messages spread over the time buckets of the last
20 minutes, 300 more sent and then deleted, and a deleted queue (its deletion record, and
messages a failed drop left behind). `cells` reads a message or bucket table whole, with
each cell's write time and remaining time to live, through the driver.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cassandra.cluster import Session

from cqs.cassandra_store.rows import message_uuid_at
from cqs.domain.model import Message
from tests.fixtures.legacy_keyspace import (
    LegacyQueue,
    LegacyWriter,
    driver_cluster,
    message_location,
)

ACCOUNT_ID = "000000000000"
REGION = "us-east-1"
SPREAD_MS = 20 * 60 * 1000  # message ids span the last 20 minutes: five 300 s buckets or six
FIFO_GROUPS = 6


@dataclass
class LegacyDataset:
    keyspace: str
    queues: dict[str, LegacyQueue]  # the live ones, by name
    live: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> id -> body
    deleted: dict[str, set[str]] = field(default_factory=dict)  # name -> ids deleted
    gone: LegacyQueue | None = None  # the deleted queue
    gone_ids: set[str] = field(default_factory=set)  # its messages, left behind
    buckets: int = 0  # bucket index entries of the live queues

    @property
    def live_count(self) -> int:
        return sum(len(messages) for messages in self.live.values())

    @property
    def queue_ids(self) -> set[str]:
        return {queue.queue_id for queue in self.queues.values()}


def _queues() -> list[tuple[LegacyQueue, int, int]]:
    """(queue, messages sent, of which deleted): 3,000 live in all."""
    base = {
        "DelaySeconds": "0",
        "MaximumMessageSize": "1048576",
        "MessageRetentionPeriod": "345600",
        "ReceiveMessageWaitTimeSeconds": "0",
        "VisibilityTimeout": "30",
    }
    orders = LegacyQueue(
        name="orders",
        queue_id=uuid.uuid4().hex,
        attributes={
            **base,
            "VisibilityTimeout": "45",
            "Policy": '{"Version": "2012-10-17", "Statement": [{"Sid": "it\'s mine"}]}',
        },
        tags={"team": "payments", "owner": "O'Brien"},
    )
    audit = LegacyQueue(
        name="audit-log",
        queue_id=uuid.uuid4().hex,
        attributes={
            **base,
            "MessageRetentionPeriod": "1209600",
            "RedrivePolicy": (
                '{"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:orders",'
                ' "maxReceiveCount": 5}'
            ),
        },
    )
    jobs = LegacyQueue(
        name="jobs.fifo",
        queue_id=uuid.uuid4().hex,
        attributes={
            **base,
            "FifoQueue": "true",
            "ContentBasedDeduplication": "false",
            "DeduplicationScope": "queue",
            "FifoThroughputLimit": "perQueue",
        },
        tags={"kind": "fifo"},
    )
    return [(orders, 1500, 150), (audit, 900, 90), (jobs, 900, 60)]


def _message(queue: LegacyQueue, index: int, sent_ms: int, sequence: int) -> Message:
    body = f"{queue.name} message {index}: {'x' * (index % 50)}"
    message_id = str(message_uuid_at(sent_ms))
    fifo = queue.attributes.get("FifoQueue") == "true"
    return Message(
        message_id=message_id,
        body=body,
        md5_of_body=hashlib.md5(body.encode()).hexdigest(),
        sent_timestamp_ms=sent_ms,
        visible_at_ms=sent_ms,
        sender_id="AIDAEXAMPLE",
        group_id=f"group-{index % FIFO_GROUPS}" if fifo else None,
        deduplication_id=hashlib.sha256(body.encode()).hexdigest() if fifo else None,
        sequence_number=sequence if fifo else None,
    )


def _send(
    writer: LegacyWriter, queue: LegacyQueue, count: int, now_ms: int
) -> list[Message]:
    start = now_ms - SPREAD_MS
    messages = [
        _message(queue, index, start + index * SPREAD_MS // count, start * 1000 + index)
        for index in range(count)
    ]
    writer.put(queue, messages)
    return messages


def write_dataset(contact_point: str, keyspace: str, layout: str) -> LegacyDataset:
    """A keyspace of the earlier schema in `layout` ("compact" or "regular"), as the earlier
    cqs left it; what it holds."""
    now_ms = int(time.time() * 1000)
    with LegacyWriter(contact_point, keyspace) as writer:
        writer.create_keyspace(layout)
        dataset = LegacyDataset(keyspace, queues={})
        for queue, count, deleting in _queues():
            writer.create_queue(queue, created_s=now_ms // 1000 - 3600)
            writer.save_queue(queue, modified_s=now_ms // 1000 - 60)  # SetQueueAttributes
            messages = _send(writer, queue, count, now_ms)
            doomed = [message.message_id for message in messages[::count // deleting]][:deleting]
            writer.delete_messages(queue, doomed)
            dataset.queues[queue.name] = queue
            dataset.deleted[queue.name] = set(doomed)
            dataset.live[queue.name] = {
                message.message_id: message.body
                for message in messages if message.message_id not in dataset.deleted[queue.name]
            }
            dataset.buckets += len({_bucket(message) for message in messages})
        gone = LegacyQueue("gone", uuid.uuid4().hex, dict(_queues()[0][0].attributes))
        writer.create_queue(gone)
        dataset.gone = gone
        dataset.gone_ids = {message.message_id for message in _send(writer, gone, 100, now_ms)}
        writer.delete_queue(gone.name, deleted_ms=now_ms)
    return dataset


def _bucket(message: Message) -> int:
    return message_location(uuid.UUID(message.message_id))[0]


@contextmanager
def driver_session(contact_point: str, keyspace: str) -> Iterator[Session]:
    cluster = driver_cluster(contact_point)
    try:
        session = cluster.connect(keyspace)
        session.default_fetch_size = None
        yield session
    finally:
        cluster.shutdown()


Key = tuple[Any, ...]


@dataclass(frozen=True)
class Cell:
    value: Any
    written_us: int
    ttl: int | None


def cells(contact_point: str, keyspace: str, table: str) -> dict[Key, Cell]:
    """Every live row of a message table (`messages`, `queue_messages`) or bucket index
    (`message_buckets`, `queue_message_buckets`) by key, with its cell's metadata."""
    if "buckets" in table:
        key, column = "queue_id, bucket", "registered_ms"
    else:
        key, column = "queue_id, bucket, shard, message_id", "payload"
    width = key.count(",") + 1
    with driver_session(contact_point, keyspace) as session:
        rows = session.execute(
            f"SELECT {key}, {column}, WRITETIME({column}), TTL({column}) FROM {table}"
            " LIMIT 1000000",
            timeout=60,
        )
        return {
            tuple(row[:width]): Cell(row[width], row[width + 1], row[width + 2])
            for row in rows if row[width] is not None
        }


def tables(contact_point: str, keyspace: str) -> set[str]:
    cluster = driver_cluster(contact_point)
    try:
        cluster.connect()
        found = cluster.metadata.keyspaces.get(keyspace)
        return set(found.tables) if found is not None else set()
    finally:
        cluster.shutdown()


def keyspaces(contact_point: str) -> set[str]:
    cluster = driver_cluster(contact_point)
    try:
        cluster.connect()
        return set(cluster.metadata.keyspaces)
    finally:
        cluster.shutdown()


def rows_of(contact_point: str, keyspace: str, cql: str) -> list[Any]:
    with driver_session(contact_point, keyspace) as session:
        return list(session.execute(cql, timeout=60))


def same_cells(before: Mapping[Key, Cell], after: Mapping[Key, Cell], slack_s: int) -> None:
    """The same rows, values and write times; times to live no longer than before and no
    more than `slack_s` shorter."""
    assert before.keys() == after.keys(), (
        f"{len(before.keys() - after.keys())} rows missing,"
        f" {len(after.keys() - before.keys())} rows added"
    )
    for key, old in before.items():
        new = after[key]
        assert (new.value, new.written_us) == (old.value, old.written_us), key
        if old.ttl is None:
            assert new.ttl is None, key
        else:
            assert new.ttl is not None and old.ttl - slack_s <= new.ttl <= old.ttl, (key, old, new)
