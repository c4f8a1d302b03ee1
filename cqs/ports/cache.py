"""The hot cache's interfaces, in queue language, one Protocol per role.

- `CachedMessages`: what the SQS actions do to a queue's cached messages (add, FIFO
  admission, receive, delete, change visibility, counts, purge, long-poll announcements);
- `CacheFill`: the fill state machine of docs/architecture.md (ABSENT -> FILLING -> READY,
  the fill lease, loading pages and deduplication records, dropping a queue's cache);
- `DueSweeper`: periodic upkeep across every server (making due messages visible, trimming
  expired ones, the store deletes that wait for Cassandra);
- `CacheInspection`: what operators read (states, servers, where a queue lives);
- `MessageCache`: all four, which is what the Redis adapter is.

No Redis keys or driver types appear here; `cqs/redis_cache/` implements them and translates
its failures into `StorageUnavailable` (an outage) or `StorageBusy` (back-pressure). Every
method raises StorageUnavailable when the queue's Redis cannot be reached. Imports only
`cqs.domain.model`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from cqs.domain.model import (
    CachedMessageState,
    CacheState,
    Deduplication,
    DeduplicationClaim,
    DeleteOutcome,
    FifoAdmission,
    Message,
    MessageCounts,
    QueueIdentity,
    ReceiveOutcome,
    VisibilityOutcome,
)


class CachedMessages(Protocol):
    """The hot copy of each queue: visible list, in-flight set, delayed set."""

    async def state(self, queue: QueueIdentity) -> CacheState:
        """READY, FILLING or ABSENT (never UNAVAILABLE: that is raised)."""

    async def add(
        self,
        queue: QueueIdentity,
        messages: Sequence[Message],
        now_ms: int,
        queue_id: str = "",
        deduplication_keys: Mapping[str, str] | None = None,
    ) -> bool:
        """Add newly sent messages when the cache is READY or FILLING.

        Returns False (adding nothing) when the state is ABSENT: the fill will load them.
        When a long poll of any process listens on the queue (`listen`), the queue's key is
        published so that `arrivals` of every process yields it. FIFO: the admissions
        (`admit`) named by `deduplication_keys` (message id -> key) become stored entries,
        whatever the state, kept for the deduplication interval.
        """

    async def admit(
        self, queue: QueueIdentity, queue_id: str, claims: Sequence[DeduplicationClaim], now_ms: int
    ) -> FifoAdmission:
        """FIFO, before storing a send: for each claim (deduplication key, would-be message
        id), hold the key and number the message, or name the earlier send owning the key."""

    async def abandon(
        self, queue: QueueIdentity, queue_id: str, admitted: Sequence[DeduplicationClaim]
    ) -> None:
        """Release the admitted claims of a send not stored."""

    async def receive(
        self,
        queue: QueueIdentity,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int = 0,
    ) -> ReceiveOutcome | None:
        """Hide up to `max_count` visible messages until now + timeout; None if not READY.

        Due in-flight and delayed messages are made visible first; messages older than
        `retention_ms` are dropped, not delivered. `nonces[i]` becomes the i-th delivery's
        receipt nonce. Atomically with it, the dead-letter check of a RedrivePolicy: a
        message that was already received `max_receive_count` times (0 = no limit) is not
        delivered: it is removed from the cache and returned apart, for the
        caller to move to the dead-letter queue (and delete from the store): `dead_letters`.
        """

    async def receive_fifo(
        self,
        queue: QueueIdentity,
        max_count: int,
        visibility_timeout_ms: int,
        now_ms: int,
        retention_ms: int,
        nonces: Sequence[str],
        max_receive_count: int,
        attempt_id: str | None,
    ) -> ReceiveOutcome | None:
        """`receive` for a FIFO queue: sequence order within a message group, each group
        only up to its first message in flight, groups one after another. A repeated
        `attempt_id` (ReceiveRequestAttemptId) whose messages are still in flight under it
        gets the same deliveries again (same nonces) instead."""

    async def delete(
        self, queue: QueueIdentity, message_id: str, receipt_nonce: str
    ) -> DeleteOutcome:
        """Remove the message unless it was received again since `receipt_nonce`; on a FIFO
        queue only while that receive's visibility timeout runs (else EXPIRED_HANDLE)."""

    async def delete_many(
        self, queue: QueueIdentity, handles: Sequence[tuple[str, str]]
    ) -> list[DeleteOutcome]:
        """`delete` for several (message id, receipt nonce) pairs at once: one outcome each,
        in order."""

    async def defer_store_delete(self, queue: QueueIdentity, message_id: str) -> None:
        """Remember a delete the durable store could not take yet; fills skip the message."""

    async def change_visibility(
        self, queue: QueueIdentity, message_id: str, receipt_nonce: str, visible_at_ms: int
    ) -> VisibilityOutcome:
        """Move a received message's return time (visible_at <= now makes it visible); also
        one whose timeout ran out, while the latest receive's handle is the one given."""

    async def counts(self, queue: QueueIdentity, now_ms: int) -> MessageCounts: ...

    async def purge(self, queue: QueueIdentity) -> None:
        """Remove every message and FIFO deduplication entry, keeping the queue READY."""

    async def listen(self, queue: QueueIdentity, ttl_ms: int) -> None:
        """Announce that a long poll waits on the queue for up to `ttl_ms` (refreshable)."""

    def arrivals(self) -> AsyncIterator[QueueIdentity]:
        """The queues that got visible messages while someone listened, from every
        server, as they are published; runs until cancelled and rides out server outages."""


class CacheFill(Protocol):
    """Loading a queue's cache from the durable store, under a lease one process holds."""

    async def begin_fill(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        """Atomically move ABSENT -> FILLING for `owner`; False if the state was not ABSENT.
        Clears what an earlier incarnation left, but a standard queue's messages in flight."""

    async def renew_fill(self, queue: QueueIdentity, owner: str, lease_ms: int) -> bool:
        """Extend `owner`'s fill lease; False if the lease was lost."""

    async def load(
        self,
        queue: QueueIdentity,
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
        queue: QueueIdentity,
        owner: str,
        now_ms: int | None = None,
        hidden_until: Mapping[str, int] | None = None,
        gone: Sequence[str] = (),
    ) -> bool:
        """FILLING -> READY if `owner` still holds the lease.

        Messages in `gone` (kept in flight through the refill, no longer in the store) are
        removed first. Messages in `hidden_until` (handed out by the filler from the store
        after their page was loaded) that are visible in the cache go in flight until their
        time first.
        """

    async def in_flight_ids(self, queue: QueueIdentity) -> list[str]:
        """The ids the cache holds in flight (those a fill keeps, when it begins)."""

    async def hide_store_deliveries(
        self, queue: QueueIdentity, now_ms: int, hidden_until: Mapping[str, int]
    ) -> set[str]:
        """Of messages just claimed in the store (id -> claim end), those that may be handed
        out, hidden in the cache until then: not one the cache has in flight under another
        delivery, nor one a READY cache no longer holds (deleted since the store was read)."""

    async def load_deduplications(
        self, queue: QueueIdentity, queue_id: str, records: Sequence[Deduplication], now_ms: int
    ) -> int:
        """Merge deduplication records of the durable store (keys already held are kept)."""

    async def drop(self, queue: QueueIdentity) -> None:
        """Forget the queue entirely (state and messages): it is ABSENT again."""

    async def reset(self, queue: QueueIdentity, deleted: Sequence[str] = ()) -> None:
        """The cache missed writes: make it ABSENT to be refilled, removing `deleted` (ids
        deleted in the store meanwhile) and keeping a standard queue's messages in flight
        for the refill (`begin_fill`), so that their consumers' deliveries stand."""


class DueSweeper(Protocol):
    """Upkeep over every reachable server, run periodically by one process or several."""

    async def release_due(
        self, now_ms: int, limit: int, sweeper: str, lease_ms: int
    ) -> list[QueueIdentity]:
        """On every Redis server whose sweep lease `sweeper` holds or can take, make due
        in-flight and delayed messages visible.

        One sweeper per server at a time (the lease expires after `lease_ms` unless renewed
        by the next call), so several processes do not repeat each other's work, and a
        survivor takes over when the sweeper dies. Work is proportional to the due
        messages. Returns the queues that got visible messages back. A server
        that cannot be reached is skipped.
        """

    async def trim_expired(self, queue: QueueIdentity, now_ms: int, retention_ms: int) -> int:
        """Remove visible messages older than the retention period; return how many."""

    async def deferred_store_deletes(self, limit: int) -> dict[QueueIdentity, list[str]]:
        """Up to `limit` remembered deletes, by queue, from every reachable server."""

    async def forget_store_deletes(self, queue: QueueIdentity, message_ids: Sequence[str]) -> None:
        """The store took these deletes: stop remembering them."""


class CacheInspection(Protocol):
    """What operators read (the admin console's inspection); read only."""

    async def state(self, queue: QueueIdentity) -> CacheState:
        """READY, FILLING or ABSENT (never UNAVAILABLE: that is raised)."""

    def server_label_for(self, queue: QueueIdentity) -> str:
        """The name of the server holding the queue (`host:port/db`, never a password)."""

    async def describe_servers(self, now_ms: int) -> dict[str, dict[str, str]]:
        """Per server name: its own figures (version, memory, clients, uptime) and the
        revisibility state (queues with due messages, the earliest due ms, the sweeper);
        an empty dict for a server that cannot be reached."""

    async def message_states(
        self, queue: QueueIdentity, message_ids: Sequence[str], now_ms: int
    ) -> dict[str, CachedMessageState]:
        """Where each cached message is, with its receive count and first receive ms; ids
        the cache does not hold are left out. Reads only: no visibility or receive count
        changes."""


class MessageCache(CachedMessages, CacheFill, DueSweeper, CacheInspection, Protocol):
    """Every role at once: what `cqs/redis_cache/` implements and the composition root
    hands out, each user typing its parameter by the role it needs."""
