"""What crosses the Lua boundary: the ARGV a script reads and the reply it returns.

Owns the encoding of messages into script arguments (add.lua, load.lua), the decoding of
the receive scripts' replies into model values, the deduplication field layout and the send
time a message id carries. Pure functions, no I/O. Imports the model and the message codec;
never redis, the service or aiohttp.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from cqs.domain.message_codec import decode_message, encode_message
from cqs.domain.model import Delivery, Message, ReceiveOutcome

# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


def sent_ms_of(message_id: str | None) -> int | None:
    """When a message was sent, read from its id (a version-1 UUID, as the store needs)."""
    if not message_id:
        return None
    try:
        parsed = uuid.UUID(message_id)
    except ValueError:
        return None
    return (parsed.time - _UUID_EPOCH_OFFSET) // 10_000 if parsed.version == 1 else None


def dedup_field(queue_id: str, key: str) -> str:
    """The dedup hash field of a deduplication key: scoped by the queue incarnation, so a
    re-created queue of the same name starts with no deduplication entries."""
    return f"{queue_id}/{key}"


def fifo_values(message: Message) -> list[str | int]:
    """Group id and sequence number ('' and '' for a standard queue's message)."""
    if message.group_id is None:
        return ["", ""]
    return [message.group_id, message.sequence_number or 0]


def _identity_and_times(message: Message) -> list[str | int]:
    return [message.message_id, message.sent_timestamp_ms, message.visible_at_ms]


def encode_batch(messages: Sequence[Message], dedup_fields: Mapping[str, str]) -> list[str | int]:
    """Seven ARGV values per message, as add.lua reads them."""
    return [
        value
        for message in messages
        for value in (
            *_identity_and_times(message),
            encode_message(message),
            *fifo_values(message),
            dedup_fields.get(message.message_id, ""),
        )
    ]


def encode_load_batch(
    messages: Sequence[Message], hidden_until: Mapping[str, int]
) -> list[str | int]:
    """Seven ARGV values per message, as load.lua reads them (0 = not hidden)."""
    return [
        value
        for message in messages
        for value in (
            *_identity_and_times(message),
            hidden_until.get(message.message_id, 0),
            encode_message(message),
            *fifo_values(message),
        )
    ]


def decode_receive(reply: Any) -> ReceiveOutcome | None:
    """The reply of receive.lua and receive_fifo.lua: None (cache not ready), or the
    deliveries (six values each) and the dead letters (id, payload each)."""
    if reply is None:
        return None
    delivered, dead = reply
    deliveries = [
        Delivery(
            message=decode_message(delivered[index + 1]),
            receive_count=int(delivered[index + 2]),
            first_receive_timestamp_ms=int(delivered[index + 3]),
            receipt_nonce=str(delivered[index + 4]),
            reloaded=bool(int(delivered[index + 5])),
        )
        for index in range(0, len(delivered), 6)
    ]
    return ReceiveOutcome(deliveries, [decode_message(payload) for payload in dead[1::2]])
