"""Pure mapping between Cassandra rows and cqs model values: no driver, no session, no I/O.

Owns where a message lives (bucket and shard, derived from its version-1 UUID alone), the
serialized form of a message in the `payload` cell, and the queue catalog row. Reused by
the Spark data sources, so it imports only `cqs.domain.model`, `cqs.domain.message_codec` and the
standard library; never the driver, asyncio or any other adapter.
"""

from __future__ import annotations

import json
import random
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from cqs.domain import message_codec
from cqs.domain.model import Message, MessageMoveTask, MoveTaskStatus, Queue, QueueIdentity

PAYLOAD_VERSION = 1

# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


@dataclass(frozen=True, slots=True)
class MessageLocation:
    """The partition holding one message: its time bucket and its shard."""

    bucket: int
    shard: int


def parse_message_id(message_id: str) -> uuid.UUID | None:
    """The message id as a version-1 UUID, or None when it is not one (so it was never stored)."""
    try:
        parsed = uuid.UUID(message_id)
    except (ValueError, AttributeError, TypeError):
        return None
    return parsed if parsed.version == 1 else None


def uuid_time_ms(message_uuid: uuid.UUID) -> int:
    """Milliseconds since the Unix epoch at which the version-1 UUID was generated."""
    return (message_uuid.time - _UUID_EPOCH_OFFSET) // 10_000


def bucket_of_ms(time_ms: int, bucket_seconds: int) -> int:
    """The bucket number (start time in seconds divided by the bucket length) of an instant."""
    return time_ms // (bucket_seconds * 1000)


def bucket_end_ms(bucket: int, bucket_seconds: int) -> int:
    return (bucket + 1) * bucket_seconds * 1000


def message_location(message_uuid: uuid.UUID, bucket_seconds: int, shard_count: int) -> MessageLocation:
    """Bucket from the UUID's timestamp; shard from a checksum of all its bytes.

    The checksum covers the timestamp's low bits, so ids from one process (whose clock
    sequence and node are constant) still spread evenly over the shards.
    """
    return MessageLocation(
        bucket=bucket_of_ms(uuid_time_ms(message_uuid), bucket_seconds),
        shard=zlib.crc32(message_uuid.bytes) % shard_count,
    )


# --- message payload -----------------------------------------------------------------------

def encode_payload(message: Message) -> bytes:
    """Everything about a message except its id, as the bytes of the `payload` cell (JSON)."""
    document = {"_v": PAYLOAD_VERSION, **message_codec.message_fields(message)}
    return message_codec.dumps(document).encode("utf-8")


def decode_payload(message_id: str, payload: bytes) -> Message:
    document = json.loads(payload.decode("utf-8"))
    if document.get("_v") != PAYLOAD_VERSION:
        raise ValueError(f"unknown message payload version {document.get('_v')!r}")
    return message_codec.message_from_fields(message_id, document)


def message_from_row(message_uuid: uuid.UUID, payload: bytes) -> Message:
    return decode_payload(str(message_uuid), payload)


# --- queue catalog -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class QueueRow:
    """The columns of one catalog row, in the order the store binds them.

    Attributes and tags are JSON objects in text columns, not CQL maps: writing a whole map
    also writes a range tombstone into the partition (to clear the old map), and one
    partition holds every queue of an account and region.
    """

    account_id: str
    region: str
    name: str
    queue_id: str
    attributes: str
    tags: str
    created_s: int
    modified_s: int


def queue_to_row(queue: Queue) -> QueueRow:
    return QueueRow(
        account_id=queue.account_id,
        region=queue.region,
        name=queue.name,
        queue_id=queue.queue_id,
        attributes=catalog_json(queue.attributes),
        tags=catalog_json(queue.tags),
        created_s=queue.created_timestamp,
        modified_s=queue.last_modified_timestamp,
    )


def queue_from_row(
    identity: QueueIdentity,
    queue_id: str,
    attributes: str | Mapping[str, str] | None,
    tags: str | Mapping[str, str] | None,
    created_s: int | None,
    modified_s: int | None,
) -> Queue:
    """A queue from its row (JSON text; a legacy row's maps, which Cassandra returns as None
    when empty, are read too)."""
    return Queue(
        account_id=identity.account_id,
        region=identity.region,
        name=identity.name,
        queue_id=queue_id,
        attributes=_string_map(attributes),
        tags=_string_map(tags),
        created_timestamp=created_s or 0,
        last_modified_timestamp=modified_s or 0,
    )


def catalog_json(values: Mapping[str, str]) -> str:
    """Attributes or tags as the catalog stores them: a JSON object, keys sorted."""
    return json.dumps(dict(sorted(values.items())), separators=(",", ":"), ensure_ascii=False)


def _string_map(stored: str | Mapping[str, str] | None) -> dict[str, str]:
    if isinstance(stored, str):
        return {str(key): str(value) for key, value in json.loads(stored or "{}").items()}
    return dict(stored or {})


# --- message move tasks --------------------------------------------------------------------

MOVE_TASK_COLUMNS = (
    "source_arn", "task_id", "destination_arn", "max_per_second", "status", "started_ms",
    "moved", "to_move", "failure_reason", "owner", "heartbeat_ms",
)


def move_task_to_row(task: MessageMoveTask) -> list[object]:
    """The values of MOVE_TASK_COLUMNS, in order. Absent values are written as "" and 0
    (a null bind value would write a tombstone)."""
    return [
        task.source_arn, task.task_id, task.destination_arn or "", task.max_per_second or 0,
        task.status.value, task.started_ms, task.moved, task.to_move, task.failure_reason or "",
        task.owner, task.heartbeat_ms,
    ]


def move_task_from_row(values: Mapping[str, object]) -> MessageMoveTask:
    def integer(name: str) -> int:
        value = values.get(name)
        return int(value) if isinstance(value, int) else 0

    per_second = values.get("max_per_second")
    destination = values.get("destination_arn")
    reason = values.get("failure_reason")
    return MessageMoveTask(
        task_id=str(values["task_id"]),
        source_arn=str(values["source_arn"]),
        destination_arn=destination if isinstance(destination, str) and destination else None,
        max_per_second=per_second if isinstance(per_second, int) and per_second > 0 else None,
        status=MoveTaskStatus(str(values.get("status") or "FAILED")),
        started_ms=integer("started_ms"),
        moved=integer("moved"),
        to_move=integer("to_move"),
        failure_reason=reason if isinstance(reason, str) and reason else None,
        owner=str(values.get("owner") or ""),
        heartbeat_ms=integer("heartbeat_ms"),
    )


def message_uuid_at(time_ms: int, clock_seq: int | None = None, node: int | None = None) -> uuid.UUID:
    """A version-1 UUID whose timestamp is `time_ms` (random clock sequence and node).

    For tools and tests that need ids from another time; the service uses `uuid.uuid1()`.
    """
    timestamp = time_ms * 10_000 + _UUID_EPOCH_OFFSET + random.getrandbits(13)
    clock = random.getrandbits(14) if clock_seq is None else clock_seq
    node_bits = random.getrandbits(48) | 0x010000000000 if node is None else node
    return uuid.UUID(
        fields=(
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            ((timestamp >> 48) & 0x0FFF) | 0x1000,
            ((clock >> 8) & 0x3F) | 0x80,
            clock & 0xFF,
            node_bits,
        )
    )
