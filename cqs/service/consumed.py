"""ConsumedMessages: keeping what DeleteMessage consumed, reading it back, replaying it.

Owns the queue attribute `cqs.ConsumedRetentionSeconds` at work: the store delete of a
DeleteMessage on a queue that keeps consumed messages reads the message first and writes a
copy, with the delete time, beside the delete (CqsExtensions.ReplayMessages and Spark read
those copies); reading the copies of a time range in pages; and a replay, which sends the
copies of a range to the queue again as new messages (new ids; same body, message
attributes, AWSTraceHeader, and on FIFO queues the same group with the original message id
as deduplication id, so a repeated replay within five minutes adds nothing): what a replay
sends is made here, and run, resumably, by `replays.py`.

Each consumer keeps and replays its own: a consumer group is served as a queue, so its
deletes keep copies under the group (by the group's own attribute), and its replay sends
into the group; a queue's replay reaches the queue's consumers only, never its groups.

A copy is best effort where the store is away: a delete that the cache takes while
Cassandra cannot be written keeps no copy (the delete itself is deferred as ever).
Imports model, errors and ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from cqs.domain.errors import InvalidParameterValue, StorageError
from cqs.domain.extension_model import ConsumedMessage, ConsumedRange, Replay
from cqs.domain.model import Message, Queue, SendRequest
from cqs.ports import ConsumedMessageStore, MessageStore
from cqs.service.clock import epoch_ms

log = logging.getLogger(__name__)

MAX_CONSUMED_PAGE = 100  # messages in one page of PeekConsumedMessages


class NoConsumedStore:
    """A `ConsumedMessageStore` that keeps nothing (a service built without one)."""

    def __init__(self) -> None:
        self._replays: dict[tuple[str, str], Replay] = {}

    async def keep(
        self, queue: Queue, consumed: Sequence[ConsumedMessage], keep_seconds: int
    ) -> None:
        return None

    async def read(
        self, queue: Queue, span: ConsumedRange, after: str | None, limit: int
    ) -> tuple[list[ConsumedMessage], str | None]:
        return [], None

    # A replay of nothing still has a record, so that its id answers as it should.
    async def replay(self, queue: Queue, replay_id: str) -> Replay | None:
        return self._replays.get((queue.queue_id, replay_id))

    async def save_replay(self, queue: Queue, replay: Replay, keep_seconds: int) -> None:
        self._replays[(queue.queue_id, replay.replay_id)] = replay

    async def replay_copies(
        self, queue: Queue, replay_id: str, source_ids: Sequence[str]
    ) -> dict[str, str]:
        return {}

    async def record_replay_copies(
        self, queue: Queue, replay_id: str, copies: Mapping[str, str], keep_seconds: int
    ) -> None:
        return None


class ConsumedMessages:
    def __init__(
        self,
        store: MessageStore,
        consumed: ConsumedMessageStore,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._consumed = consumed
        self._clock = clock

    async def delete_stored(self, queue: Queue, message_ids: Sequence[str]) -> None:
        """The store delete of DeleteMessage(Batch): with copies kept first when the queue
        keeps consumed messages. Raises what the store delete raises (StorageUnavailable
        lets the caller defer it); copies that cannot be written are logged and given up."""
        keep_seconds = queue.consumed_retention_seconds
        if keep_seconds <= 0 or not message_ids:
            await self._store.delete_many(queue, message_ids)
            return
        found = await asyncio.gather(*(self._store.get(queue, mid) for mid in message_ids))
        now_ms = epoch_ms(self._clock)
        # A message deleted already (a repeated delete) has nothing left to keep.
        copies = [ConsumedMessage(message, now_ms) for message in found if message is not None]
        kept, deleted = await asyncio.gather(
            self._consumed.keep(queue, copies, keep_seconds),
            self._store.delete_many(queue, message_ids),
            return_exceptions=True,
        )
        if isinstance(deleted, BaseException):
            raise deleted
        if isinstance(kept, StorageError):
            log.warning(
                "queue %s: no consumed copy of %d messages kept: %s", queue.name, len(copies), kept
            )
        elif isinstance(kept, BaseException):
            raise kept

    async def read(
        self, queue: Queue, span: ConsumedRange, next_token: str | None, limit: int
    ) -> tuple[list[ConsumedMessage], str | None]:
        """A page of the copies consumed within `span` (PeekConsumedMessages, Spark)."""
        if not 1 <= limit <= MAX_CONSUMED_PAGE:
            raise InvalidParameterValue(
                f"Value {limit} for parameter MaxNumberOfMessages is invalid. Reason: Must be"
                f" between 1 and {MAX_CONSUMED_PAGE}, if provided."
            )
        check_span(span)
        try:
            return await self._consumed.read(queue, span, next_token, limit)
        except ValueError as exc:
            raise InvalidParameterValue("Invalid NextToken value.") from exc


def check_span(span: ConsumedRange) -> None:
    if span.start_ms < 0 or span.end_ms <= span.start_ms:
        raise InvalidParameterValue(
            "Value for parameter EndTime is invalid. Reason: EndTime must be after StartTime,"
            " and StartTime not before 0."
        )


def replayed_request(queue: Queue, message: Message) -> SendRequest:
    """A send of the consumed message again; no delay (it is due now)."""
    return SendRequest(
        body=message.body,
        delay_seconds=None if queue.fifo else 0,
        message_attributes=dict(message.message_attributes),
        system_attributes=dict(message.system_attributes),
        message_group_id=message.group_id if queue.fifo else None,
        message_deduplication_id=message.message_id if queue.fifo else None,
    )
