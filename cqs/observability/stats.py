"""Per-queue statistics: the figures behind the queue gauges and the `/stats/queues` JSON.

Owns reading every queue's figures cheaply (the queue names from the catalog, then one
pipelined read per Redis server through the cache adapter's `queue_stats`), keeping the
result for a couple of seconds so that a burst of scrapes costs one read, and the JSON shape
of the statistics view (what CQS's admin page and CassieQ's statistics endpoint showed).
Imports `cqs.domain.model` and the standard library; never Prometheus, aiohttp or an adapter (the
composition root hands in the catalog and the cache). The statistics cover the queues of one
namespace (account and region): the deployment's own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cqs.domain.errors import StorageError
from cqs.domain.model import CacheState, QueueIdentity, QueueNamespace, Redelivery

log = logging.getLogger(__name__)

DEFAULT_TTL_SECONDS = 2.0
DEFAULT_NAMES_TTL_SECONDS = 10.0


class QueueFigures(Protocol):
    """What the cache knows of one queue (`RedisMessageCache.queue_stats` values)."""

    @property
    def state(self) -> CacheState: ...
    @property
    def visible(self) -> int: ...
    @property
    def in_flight(self) -> int: ...
    @property
    def delayed(self) -> int: ...
    @property
    def oldest_visible_sent_ms(self) -> int | None: ...


class QueueFiguresSource(Protocol):
    async def queue_stats(
        self, queues: Sequence[QueueIdentity]
    ) -> Mapping[QueueIdentity, QueueFigures]: ...


class QueueNameSource(Protocol):
    async def list_names(self, account_id: str, region: str) -> list[str]: ...


@dataclass(frozen=True)
class QueueSnapshot:
    """Every queue's figures, read at `taken_ms` (wall clock) in `read_seconds`."""

    taken_ms: int
    read_seconds: float
    queues: Mapping[str, QueueFigures] = field(default_factory=dict)

    def oldest_age_seconds(self, queue_name: str) -> float:
        sent_ms = self.queues[queue_name].oldest_visible_sent_ms
        return 0.0 if sent_ms is None else max(0.0, (self.taken_ms - sent_ms) / 1000)


class QueueStatistics:
    """Reads every queue's figures at most once per `ttl_seconds`; concurrent callers share
    the read in progress. Queue names are re-listed every `names_ttl_seconds`; while the
    catalog is unreachable the last known names are used."""

    def __init__(
        self,
        catalog: QueueNameSource,
        source: QueueFiguresSource,
        namespace: QueueNamespace,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        names_ttl_seconds: float = DEFAULT_NAMES_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._catalog = catalog
        self._source = source
        self._namespace = namespace
        self._ttl = ttl_seconds
        self._names_ttl = names_ttl_seconds
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = asyncio.Lock()
        self._snapshot: QueueSnapshot | None = None
        self._snapshot_at = 0.0
        self._names: list[str] = []
        self._names_at: float | None = None

    async def snapshot(self) -> QueueSnapshot:
        if self._snapshot is not None and self._clock() - self._snapshot_at < self._ttl:
            return self._snapshot
        async with self._lock:
            if self._snapshot is not None and self._clock() - self._snapshot_at < self._ttl:
                return self._snapshot
            self._snapshot = await self.read(await self._queue_names())
            self._snapshot_at = self._clock()
            return self._snapshot

    async def read(self, queue_names: Sequence[str]) -> QueueSnapshot:
        """The figures of `queue_names`, read now (not cached)."""
        started = time.perf_counter()
        figures = await self._source.queue_stats([self._namespace.queue(n) for n in queue_names])
        return QueueSnapshot(
            taken_ms=int(self._wall_clock() * 1000),
            read_seconds=time.perf_counter() - started,
            queues={queue.name: found for queue, found in figures.items()},
        )

    async def _queue_names(self) -> list[str]:
        if self._names_at is None or self._clock() - self._names_at >= self._names_ttl:
            try:
                self._names = list(await self._catalog.list_names(*self._namespace))
                self._names_at = self._clock()
            except StorageError:
                log.debug("queue statistics: catalog unreachable, using the last queue names")
        return self._names


COUNTER_FIELDS: Mapping[str, str] = {
    "cqs_messages_sent": "sent",
    "cqs_messages_received": "received",
    "cqs_messages_deleted": "deleted",
    "cqs_messages_expired": "expired",
    "cqs_messages_moved_to_dead_letter_queue": "moved_to_dead_letter_queue",
    "cqs_messages_redelivered": "redelivered",  # by reason: redelivered_<reason>
    "cqs_cache_serving_from_store_seconds": "served_from_cassandra_seconds",
}


# The per-queue totals: one per counter, the redeliveries one per reason.
TOTAL_FIELDS: tuple[str, ...] = tuple(
    field
    for name in COUNTER_FIELDS.values()
    for field in (
        [f"{name}_{reason.value}" for reason in Redelivery] if name == "redelivered" else [name]
    )
)


def queue_view(
    queue_name: str, snapshot: QueueSnapshot, totals: Mapping[str, float]
) -> dict[str, object]:
    """One queue as the statistics view shows it: figures now and totals since start."""
    figures = snapshot.queues[queue_name]
    return {
        "name": queue_name,
        "cache_state": figures.state.value,
        "serving_from": "redis" if figures.state is CacheState.READY else "cassandra",
        "visible_messages": figures.visible,
        "in_flight_messages": figures.in_flight,
        "delayed_messages": figures.delayed,
        "oldest_message_age_seconds": round(snapshot.oldest_age_seconds(queue_name), 3),
        "totals": {field_name: totals.get(field_name, 0) for field_name in TOTAL_FIELDS},
    }


def statistics_view(
    snapshot: QueueSnapshot, totals: Mapping[str, Mapping[str, float]]
) -> dict[str, object]:
    """Every queue, sorted by name, with the time the figures were read."""
    return {
        "taken_ms": snapshot.taken_ms,
        "read_seconds": round(snapshot.read_seconds, 6),
        "queues": [
            queue_view(name, snapshot, totals.get(name, {})) for name in sorted(snapshot.queues)
        ],
    }
