"""The durable store's interfaces, in queue language: `QueueCatalog` (queue metadata) and
`MessageStore` (every message, durably). No shard numbers, buckets or driver types appear
here; `cqs/cassandra_store/` implements them and translates driver failures into
`StorageUnavailable`. Imports only `cqs.domain.model`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from cqs.domain.model import (
    Deduplication,
    Message,
    MessageMoveTask,
    Queue,
    QueueIdentity,
)


class QueueCatalog(Protocol):
    """Durable queue metadata, shared by every API process."""

    async def create(self, queue: Queue) -> Queue:
        """Store `queue` unless its identity exists; return the queue now stored under it."""

    async def get(self, identity: QueueIdentity) -> Queue | None:
        """The queue of that account, region and name, or None."""

    async def list_names(self, account_id: str, region: str) -> list[str]:
        """The names of one account's queues in one region, sorted."""

    async def list_all(self) -> list[QueueIdentity]:
        """Every queue of every account and region, sorted."""

    async def save(self, queue: Queue) -> None:
        """Replace the attributes, tags and modified time of an existing queue."""

    async def delete(self, identity: QueueIdentity) -> None:
        """Forget the queue's metadata (its messages are dropped through the store)."""

    async def shared_secret(self, candidate: bytes) -> bytes:
        """The one secret every process uses to sign receipt handles.

        The first caller's `candidate` is stored; every caller gets the stored value back.
        """

    async def record_purge(self, queue: Queue, purged_ms: int) -> None:
        """Remember when this incarnation of the queue was last purged."""

    async def last_purge_ms(self, queue: Queue) -> int | None:
        """When this incarnation of the queue was last purged, or None."""

    async def record_deletion(self, identity: QueueIdentity, deleted_ms: int) -> None:
        """Remember that a queue of this identity was deleted (for QueueDeletedRecently)."""

    async def deleted_ms(self, identity: QueueIdentity) -> int | None:
        """When a queue of this identity was last deleted, or None."""

    async def save_move_task(self, task: MessageMoveTask) -> None:
        """Store (insert or replace) a message move task."""

    async def record_move_progress(self, task: MessageMoveTask) -> None:
        """Write only the task's `moved` count and `heartbeat_ms` (never its status)."""

    async def request_move_cancel(self, source_arn: str, task_id: str) -> None:
        """Set only the task's status to CANCELLING; its runner finishes the cancel."""

    async def move_task(self, source_arn: str, task_id: str) -> MessageMoveTask | None: ...

    async def move_tasks(self, source_arn: str) -> list[MessageMoveTask]:
        """Every task of the source queue, newest first."""

    async def active_move_tasks(self) -> list[MessageMoveTask]:
        """Every RUNNING or CANCELLING task of every queue (for resuming after a restart)."""

    async def close(self) -> None: ...

    # --- consumer groups (#19) ---------------------------------------------------------------
    async def consumer_groups(self, identity: QueueIdentity) -> list[Queue]:
        """The queues named `<name>/<group>` of `identity`'s account and region, in name
        order: the consumer groups of the queue `identity` (one slice of one partition)."""
        ...


class MessageStore(Protocol):
    """Durable messages: the source of truth the cache is filled from."""

    async def put(
        self, queue: Queue, messages: Sequence[Message], *, keep_seconds: int | None = None
    ) -> None:
        """Write `messages` durably, expiring after `keep_seconds` (default: the queue's
        retention period).

        Returns only once every message is written; raises StorageUnavailable otherwise.
        """

    async def delete(self, queue: Queue, message_id: str) -> None:
        """Remove one message; deleting a missing message is not an error."""

    async def delete_many(self, queue: Queue, message_ids: Sequence[str]) -> None:
        """`delete` for several messages, in as few requests as the store allows."""

    async def get(self, queue: Queue, message_id: str) -> Message | None: ...

    def scan(self, queue: Queue, page_size: int) -> AsyncIterator[list[Message]]:
        """Every live message of the queue, in pages, oldest first where the layout allows."""

    async def sample(self, queue: Queue, limit: int, now_ms: int) -> list[Message]:
        """Up to `limit` live messages whose delay has passed (serving without the cache)."""

    async def count(self, queue: Queue) -> int:
        """How many live messages the queue holds (exact or close; used without the cache)."""

    async def claim(
        self, queue: Queue, message_ids: Sequence[str], hidden_until_ms: int, now_ms: int
    ) -> set[str]:
        """Claim messages about to be handed out from the store, for every process until
        `hidden_until_ms`; the ids this call claimed (not those held by another claim still
        in force, nor those whose claim could not be settled)."""

    async def renew_claim(
        self, queue: Queue, message_id: str, hidden_until_ms: int, now_ms: int
    ) -> None:
        """Move the claim of a message this process handed out to `hidden_until_ms`."""

    async def claims(
        self, queue: Queue, now_ms: int, message_ids: Sequence[str] | None = None
    ) -> dict[str, int]:
        """Message id -> hidden until (ms) of the claims in force at `now_ms`: all of the
        queue's, or those among `message_ids`."""

    async def purge(self, queue: Queue) -> None:
        """Remove every message of the queue and, for a FIFO queue, its deduplication records."""

    async def drop(self, queue: Queue) -> None:
        """Remove every message and every other trace of a deleted queue."""

    async def close(self) -> None: ...

    async def record_deduplications(
        self, queue: Queue, records: Sequence[Deduplication]
    ) -> None:
        """Keep FIFO deduplication records until they lapse (`expires_ms`)."""

    async def deduplications(
        self, queue: Queue, keys: Sequence[str] | None = None
    ) -> list[Deduplication]:
        """The queue's live deduplication records (only those with `keys`, if given)."""

    # --- for operators (the admin console's inspection; read only) -------------------------

    async def browse(
        self, queue: Queue, after: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        """Up to `limit` live messages in `scan` order, starting after the position `after`
        (None: from the start), and the position after the page (None: nothing follows).

        Changes nothing (not even drained buckets); a position is opaque text, and one the
        store did not give out raises ValueError.
        """

    async def describe(self) -> dict[str, str]:
        """What the store's cluster says about itself (release, cluster name, nodes...)."""
