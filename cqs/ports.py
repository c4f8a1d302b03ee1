"""The interfaces the service needs from storage, in queue language.

Owns `QueueCatalog`, `MessageStore` and `MessageCache`. No shard numbers, buckets, Redis keys
or driver types appear here; adapters in `cqs/cassandra_store/` and `cqs/redis_cache/`
implement these and translate their drivers' failures into `StorageUnavailable`.
Imports only `cqs.model`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from cqs.model import (
    CacheState,
    Deduplication,
    DeleteOutcome,
    Delivery,
    FifoAdmission,
    Message,
    MessageCounts,
    MessageMoveTask,
    Queue,
    Redelivery,
    VisibilityOutcome,
)


class QueueCatalog(Protocol):
    """Durable queue metadata, shared by every API process."""

    async def create(self, queue: Queue) -> Queue:
        """Store `queue` unless its name exists; return the queue now stored under the name."""

    async def get(self, name: str) -> Queue | None:
        """The queue called `name`, or None."""

    async def list_names(self) -> list[str]:
        """Every queue name, sorted."""

    async def save(self, queue: Queue) -> None:
        """Replace the attributes, tags and modified time of an existing queue."""

    async def delete(self, name: str) -> None:
        """Forget the queue's metadata (its messages are dropped through the store)."""

    async def shared_secret(self, candidate: bytes) -> bytes:
        """The one secret every process uses to sign receipt handles.

        The first caller's `candidate` is stored; every caller gets the stored value back.
        """

    async def record_purge(self, queue: Queue, purged_ms: int) -> None:
        """Remember when this incarnation of the queue was last purged."""

    async def last_purge_ms(self, queue: Queue) -> int | None:
        """When this incarnation of the queue was last purged, or None."""

    async def record_deletion(self, name: str, deleted_ms: int) -> None:
        """Remember that a queue of this name was deleted (for QueueDeletedRecently)."""

    async def deleted_ms(self, name: str) -> int | None:
        """When a queue of this name was last deleted, or None."""

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


class MessageStore(Protocol):
    """Durable messages: the source of truth the cache is filled from."""

    async def put(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Write `messages` durably (expiring after the queue's retention period).

        Returns only once every message is written; raises StorageUnavailable otherwise.
        """

    async def delete(self, queue: Queue, message_id: str) -> None:
        """Remove one message; deleting a missing message is not an error."""

    async def get(self, queue: Queue, message_id: str) -> Message | None: ...

    def scan(self, queue: Queue, page_size: int) -> AsyncIterator[list[Message]]:
        """Every live message of the queue, in pages, oldest first where the layout allows."""

    async def sample(self, queue: Queue, limit: int, now_ms: int) -> list[Message]:
        """Up to `limit` live messages whose delay has passed (serving without the cache)."""

    async def count(self, queue: Queue) -> int:
        """How many live messages the queue holds (exact or close; used without the cache)."""

    async def purge(self, queue: Queue) -> None:
        """Remove every message of the queue."""

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


class MessageCache(Protocol):
    """The hot copy of each queue: visible list, in-flight set, delayed set, in Redis.

    Every method raises StorageUnavailable when the queue's Redis cannot be reached.
    """

    async def state(self, queue_name: str) -> CacheState:
        """READY, FILLING or ABSENT (never UNAVAILABLE: that is raised)."""

    async def begin_fill(self, queue_name: str, owner: str, lease_ms: int) -> bool:
        """Atomically move ABSENT -> FILLING for `owner`; False if the state was not ABSENT."""

    async def renew_fill(self, queue_name: str, owner: str, lease_ms: int) -> bool:
        """Extend `owner`'s fill lease; False if the lease was lost."""

    async def load(
        self,
        queue_name: str,
        owner: str,
        messages: Sequence[Message],
        now_ms: int,
        hidden_until: Mapping[str, int],
    ) -> bool:
        """During `owner`'s fill: add messages not yet cached, not deleted since the fill
        began and not waiting for their store delete (see `defer_store_delete`).

        A message whose id is in `hidden_until` with a time after `now_ms` is loaded in
        flight until then (this process handed it out while the cache was away). Returns
        False, loading nothing, if `owner` no longer holds the fill lease.
        """

    async def finish_fill(
        self,
        queue_name: str,
        owner: str,
        now_ms: int | None = None,
        hidden_until: Mapping[str, int] | None = None,
    ) -> bool:
        """FILLING -> READY if `owner` still holds the lease.

        Messages in `hidden_until` (handed out by the filler from the store after their page
        was loaded) that are visible in the cache go in flight until their time first.
        """

    async def add(
        self,
        queue_name: str,
        messages: Sequence[Message],
        now_ms: int,
        queue_id: str = "",
        deduplication_keys: Mapping[str, str] | None = None,
    ) -> bool:
        """Add newly sent messages when the cache is READY or FILLING.

        Returns False (adding nothing) when the state is ABSENT: the fill will load them.
        When a long poll of any process listens on the queue (`listen`), the queue's name is
        published so that `arrivals` of every process yields it. FIFO: the admissions
        (`admit`) named by `deduplication_keys` (message id -> key) become stored entries,
        whatever the state, kept for the deduplication interval.
        """

    async def admit(
        self, queue_name: str, queue_id: str, candidates: Sequence[tuple[str, str]], now_ms: int
    ) -> FifoAdmission:
        """FIFO, before storing a send: for each (deduplication key, would-be message id),
        hold the key and number the message, or name the earlier send owning the key."""

    async def abandon(
        self, queue_name: str, queue_id: str, admitted: Sequence[tuple[str, str]]
    ) -> None:
        """Release the admissions (deduplication key, message id) of a send not stored."""

    async def load_deduplications(
        self, queue_name: str, queue_id: str, records: Sequence[Deduplication], now_ms: int
    ) -> int:
        """Merge deduplication records of the durable store (keys already held are kept)."""

    async def receive_fifo(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
        attempt_id: str | None,
    ) -> tuple[list[Delivery], list[Message]] | None:
        """`receive_redriving` for a FIFO queue: sequence order within a message group, no
        message of a group with messages in flight, groups one after another. A repeated
        `attempt_id` (ReceiveRequestAttemptId) whose messages are still in flight under it
        gets the same deliveries again (same nonces) instead."""

    async def listen(self, queue_name: str, ttl_ms: int) -> None:
        """Announce that a long poll waits on the queue for up to `ttl_ms` (refreshable)."""

    def arrivals(self) -> AsyncIterator[str]:
        """Names of queues that got visible messages while someone listened, from every
        server, as they are published; runs until cancelled and rides out server outages."""

    async def trim_expired(self, queue_name: str, now_ms: int, retention_ms: int) -> int:
        """Remove visible messages older than the retention period; return how many."""

    async def defer_store_delete(self, queue_name: str, message_id: str) -> None:
        """Remember a delete the durable store could not take yet; fills skip the message."""

    async def deferred_store_deletes(self, limit: int) -> dict[str, list[str]]:
        """Up to `limit` remembered deletes, by queue name, from every reachable server."""

    async def forget_store_deletes(self, queue_name: str, message_ids: Sequence[str]) -> None:
        """The store took these deletes: stop remembering them."""

    async def receive(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
    ) -> list[Delivery] | None:
        """Hide up to `max_count` visible messages until now + timeout; None if not READY.

        Due in-flight and delayed messages are made visible first; messages older than
        `retention_ms` are dropped, not delivered. `nonces[i]` becomes the i-th delivery's
        receipt nonce.
        """

    async def receive_redriving(
        self,
        queue_name: str,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
    ) -> tuple[list[Delivery], list[Message]] | None:
        """`receive`, and atomically with it the dead-letter check of a RedrivePolicy.

        A message that was already received `max_receive_count` times (0 = no limit) is
        not delivered: it is removed from the cache and returned in the second list, for
        the caller to move to the dead-letter queue (and delete from the store).
        """

    async def delete(self, queue_name: str, message_id: str, receipt_nonce: str) -> DeleteOutcome:
        """Remove the message unless it was received again since `receipt_nonce`."""

    async def change_visibility(
        self, queue_name: str, message_id: str, receipt_nonce: str, visible_at_ms: int
    ) -> VisibilityOutcome:
        """Move an in-flight message's return time (visible_at <= now makes it visible)."""

    async def counts(self, queue_name: str, now_ms: int) -> MessageCounts: ...

    async def next_due_ms(self, queue_name: str) -> int | None:
        """When the next in-flight or delayed message of the queue becomes visible."""

    async def purge(self, queue_name: str) -> None:
        """Remove every message, keeping the queue READY."""

    async def drop(self, queue_name: str) -> None:
        """Forget the queue entirely (state and messages)."""

    async def release_due(
        self, now_ms: int, limit: int, sweeper: str, lease_ms: int
    ) -> list[str]:
        """On every Redis server whose sweep lease `sweeper` holds or can take, make due
        in-flight and delayed messages visible.

        One sweeper per server at a time (the lease expires after `lease_ms` unless renewed
        by the next call), so several processes do not repeat each other's work, and a
        survivor takes over when the sweeper dies. Work is proportional to the due
        messages. Returns the names of the queues that got visible messages back. A server
        that cannot be reached is skipped.
        """

    async def close(self) -> None: ...

    # --- for operators (the admin console's inspection; read only) -------------------------

    def server_of(self, queue_name: str) -> str:
        """The name of the server holding the queue (`host:port/db`, never a password)."""

    async def describe_servers(self, now_ms: int) -> dict[str, dict[str, str]]:
        """Per server name: its own figures (version, memory, clients, uptime) and the
        revisibility state (queues with due messages, the earliest due ms, the sweeper);
        an empty dict for a server that cannot be reached."""

    async def message_states(
        self, queue_name: str, message_ids: Sequence[str], now_ms: int
    ) -> dict[str, tuple[str, int, int]]:
        """Where each cached message is ("visible", "in flight" or "delayed"), with its
        receive count and first receive ms (0: never); ids the cache does not hold are left
        out. Reads only: no visibility or receive count changes."""


class Telemetry(Protocol):
    """What the service, the revisibility worker and the API tier report about their work,
    in queue words, for whatever records it (metrics, logs). Every method returns at once
    and never raises; `NullTelemetry` records nothing.
    """

    def messages_sent(self, queue_name: str, count: int) -> None:
        """`count` messages were stored durably (the send was acknowledged)."""

    def messages_received(self, queue_name: str, count: int, from_cache: bool) -> None:
        """One receive pass over the queue handed out `count` messages (maybe 0), answered
        by the cache or, with `from_cache` False, by the durable store."""

    def messages_deleted(self, queue_name: str, count: int) -> None: ...

    def messages_expired(self, queue_name: str, count: int) -> None:
        """`count` cached messages passed their retention period and were dropped."""

    def messages_moved_to_dead_letter_queue(self, queue_name: str, count: int) -> None:
        """`count` messages of `queue_name` exceeded maxReceiveCount and went to its DLQ."""

    def messages_redelivered(self, queue_name: str, reason: Redelivery, count: int) -> None:
        """`count` deliveries repeat (or may repeat) an earlier one, for `reason`."""

    def serving_from_store(self, queue_name: str, active: bool) -> None:
        """The queue is (`active`) or is no longer served from the durable store
        (Return-From-Cassandra); reported on every receive pass."""

    def fill_started(self, queue_name: str) -> None: ...

    def fill_progress(self, queue_name: str, messages: int) -> None:
        """The running fill loaded `messages` more messages into the cache."""

    def fill_finished(self, queue_name: str, completed: bool) -> None:
        """The fill ended: the cache is READY (`completed`), or the fill was abandoned."""

    def long_poll_waiting(self, delta: int) -> None:
        """A long poll started (+1) or stopped (-1) waiting for messages."""

    def sweep(self, duration_seconds: float, released_queues: int, lag_ms: int) -> None:
        """One revisibility pass; `lag_ms` bounds how late its messages became visible."""

    def request_finished(self, action: str, outcome: str, duration_seconds: float) -> None:
        """One API request: its action, and "success" or the error code it was answered with."""


class NullTelemetry:
    """Telemetry that records nothing: the default wherever none is given."""

    def messages_sent(self, queue_name: str, count: int) -> None:
        pass

    def messages_received(self, queue_name: str, count: int, from_cache: bool) -> None:
        pass

    def messages_deleted(self, queue_name: str, count: int) -> None:
        pass

    def messages_expired(self, queue_name: str, count: int) -> None:
        pass

    def messages_moved_to_dead_letter_queue(self, queue_name: str, count: int) -> None:
        pass

    def messages_redelivered(self, queue_name: str, reason: Redelivery, count: int) -> None:
        pass

    def serving_from_store(self, queue_name: str, active: bool) -> None:
        pass

    def fill_started(self, queue_name: str) -> None:
        pass

    def fill_progress(self, queue_name: str, messages: int) -> None:
        pass

    def fill_finished(self, queue_name: str, completed: bool) -> None:
        pass

    def long_poll_waiting(self, delta: int) -> None:
        pass

    def sweep(self, duration_seconds: float, released_queues: int, lag_ms: int) -> None:
        pass

    def request_finished(self, action: str, outcome: str, duration_seconds: float) -> None:
        pass
