"""QueueInspector: the read-only views operators need that the SQS API does not give.

Owns the interface the admin console reads through (which queue dead-letters into which,
which Redis server owns a queue, the cluster) and the values it answers with, and the
values of a peek (`PeekedMessage`, `MessagePage`), which `QueueService.peek_messages`
answers with (the service's `peeking` owns looking at messages). Nothing here changes a queue: changes
go through `QueueService`. Imports only `cqs.domain.model` and the standard library; the
implementation over the storage ports is `cqs.service.inspection.StorageQueueInspector`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from cqs.domain.model import Message

MAX_PEEK = 100  # messages in one peek

# Where a peeked message is, besides the cache's own answers ("visible", "in flight",
# "delayed").
NOT_CACHED = "not cached"  # the queue's cache is not filled: it is served from Cassandra
UNKNOWN = "unknown"  # the queue's Redis does not answer
DELETED = "deleted"  # gone from a ready cache: a delete or expiry the store has not seen yet


@dataclass(frozen=True, slots=True)
class PeekedMessage:
    """A message as the durable store holds it, with what the cache knows of it."""

    message: Message
    state: str
    receive_count: int | None = None  # None: not known (the cache does not hold it)
    first_receive_ms: int | None = None  # None or 0: never received, as far as is known


@dataclass(frozen=True, slots=True)
class MessagePage:
    messages: list[PeekedMessage]
    next_position: str | None  # opaque; None: this was the last page


@dataclass(frozen=True, slots=True)
class RedisServerView:
    name: str  # host:port/db, never a password
    reachable: bool
    figures: Mapping[str, str]  # INFO figures and the sweep state, as the cache reports them
    queues: list[str]
    revisibility_lag_ms: int  # how long the earliest due message is overdue (0: on time)


@dataclass(frozen=True, slots=True)
class CassandraView:
    reachable: bool
    figures: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ProcessView:
    pid: int
    this_process: bool
    rss_bytes: int | None = None
    cpu_seconds: float | None = None
    uptime_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class ClusterView:
    taken_ms: int
    redis: list[RedisServerView]
    cassandra: CassandraView
    processes: list[ProcessView]
    queue_count: int | None  # None: the catalog did not answer


class QueueInspector(Protocol):
    """Read-only views of queues and the storage behind them."""

    async def dead_letter_links(self) -> dict[str, str]:
        """Source queue name -> the name of its dead-letter queue, for every queue with a
        RedrivePolicy; may be a few seconds old."""
        ...

    def forget_links(self) -> None:
        """A queue or its RedrivePolicy changed: read the links again on next use."""
        ...

    def server_label_for(self, queue_name: str) -> str:
        """The Redis server that holds the queue's cache (host:port/db)."""
        ...

    async def cluster(self) -> ClusterView:
        """Redis servers with their queues, Cassandra, and this deployment's processes."""
        ...

    # --- consumer groups (#19): the console's group counts and history ----------------------
    async def all_queue_names(self) -> list[str]:
        """Every queue's name, consumer groups (`<queue>/<group>`) included, sorted: one
        catalog read (ListQueues leaves the groups out)."""
        ...
