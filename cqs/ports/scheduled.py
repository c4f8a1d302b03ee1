"""The interfaces of timer messages (issue #19): `ScheduledMessages`, the durable home of
messages due beyond the cache horizon, and `PromotionLeases`, which lets one process at a
time promote a queue's due messages. No buckets, shards or keys appear here:
`cqs/cassandra_store/scheduled.py` and `cqs/redis_cache/promotion_leases.py` implement
them. Imports only `cqs.domain.model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cqs.domain.extension_model import ScheduledQueue, ScheduledSummary
from cqs.domain.model import Message, Queue, QueueIdentity


class ScheduledMessages(Protocol):
    """Timer messages waiting for their due time (`Message.visible_at_ms`), durably."""

    async def schedule(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Write `messages` durably, each due at its `visible_at_ms`; returns only once every
        one is written (the acknowledgement point of the send)."""

    async def queues(self) -> list[ScheduledQueue]:
        """Every queue incarnation that has scheduled timer messages (or had some)."""

    async def due(self, queue: Queue, until_ms: int, limit: int) -> list[Message]:
        """Up to `limit` of the queue's messages due at or before `until_ms`, earliest
        time buckets first (not sorted within a bucket)."""

    async def remove(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Forget messages that were promoted (or dropped); missing ones are no error."""

    async def finish_through(self, queue: Queue, until_ms: int) -> None:
        """Forget the bookkeeping of time buckets that end at or before `until_ms` and hold
        no message any more."""

    async def has_finished_minutes(self, queue: Queue, until_ms: int) -> bool:
        """Whether any time bucket ending at or before `until_ms` still has bookkeeping
        (that `finish_through` would look at)."""

    async def summary(self, queue: Queue) -> ScheduledSummary:
        """How many messages wait (approximate) and when the earliest is due."""

    async def drop(self, queue: Queue) -> None:
        """Remove every scheduled message of the queue (purged or deleted)."""

    async def forget_queue(self, scheduled: ScheduledQueue) -> None:
        """Remove a deleted queue incarnation's messages and its entry in `queues()`."""


class PromotionLeases(Protocol):
    """Which process promotes a queue's due timer messages: one holder at a time."""

    async def claim(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        """Take the queue's lease, or renew it if `owner` holds it; False if another does."""

    async def release(self, queue: QueueIdentity, owner: str) -> None:
        """Give the lease back if `owner` holds it."""
