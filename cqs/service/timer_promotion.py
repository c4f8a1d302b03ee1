"""TimerPromoter: moves timer messages from the durable scheduled store into the ordinary
delayed path shortly before they are due (issue #19).

Owns one promotion round, which the housekeeper runs in every process about once a second:
for each queue with timer messages due within the lead time, take the queue's promotion
lease and, page by page, write the messages into the message store (due time as their
`visible_at_ms`, so neither the cache nor Return-From-Cassandra hands one out early), add
them to the cache (a cache that is absent or filling gets them through the fill), then
remove them from the scheduled store. Every step may be repeated: the store write is an
upsert of the same row, the cache skips ids it holds, removal of a missing row is no error.
A process dying mid-page leaves the page for the next lease holder. Messages sent before
the queue's last purge, or past their retention period, are dropped instead. Imports
model, errors, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Sequence

from cqs.domain.errors import QueueDoesNotExist, StorageUnavailable
from cqs.domain.extension_model import ScheduledQueue
from cqs.domain.model import Message, Queue
from cqs.ports import MessageStore, PromotionLeases, QueueCatalog, ScheduledMessages, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.queue_directory import QueueDirectory

log = logging.getLogger(__name__)

# Store TTLs are rounded up to this, so that few distinct statements are prepared.
KEEP_GRANULARITY_SECONDS = 3600


class TimerPromoter:
    def __init__(
        self,
        scheduled: ScheduledMessages,
        leases: PromotionLeases,
        store: MessageStore,
        catalog: QueueCatalog,
        directory: QueueDirectory,
        cache_fill: CacheFiller,
        *,
        owner: str,
        lead_seconds: float,
        lease_seconds: float,
        page_size: int,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._scheduled = scheduled
        self._leases = leases
        self._store = store
        self._catalog = catalog
        self._directory = directory
        self._cache_fill = cache_fill
        self._owner = owner
        self._lead_ms = int(lead_seconds * 1000)
        self._lease_ms = int(lease_seconds * 1000)
        self._page_size = page_size
        self._telemetry = telemetry
        self._clock = clock

    async def promote_due(self) -> int:
        """One round over every queue with timer messages; returns how many were promoted."""
        promoted = 0
        for scheduled in await self._scheduled.queues():
            queue = await self._live_queue(scheduled)
            if queue is None:
                continue
            try:
                promoted += await self._promote_queue(queue)
            except StorageUnavailable as error:  # this queue's Redis or store: next round
                log.warning("timer promotion of queue %s postponed: %s", queue.name, error)
        return promoted

    async def _live_queue(self, scheduled: ScheduledQueue) -> Queue | None:
        """The queue if this incarnation still exists; a deleted one's timers are dropped."""
        try:
            queue = await self._directory.get(scheduled.identity)
        except QueueDoesNotExist:
            queue = None
        if queue is None or queue.queue_id != scheduled.queue_id:
            await self._scheduled.forget_queue(scheduled)
            return None
        return queue

    async def _promote_queue(self, queue: Queue) -> int:
        until_ms = epoch_ms(self._clock) + self._lead_ms
        if not await self._scheduled.due(queue, until_ms, 1):
            # Nothing to promote, but a minute may have ended since the last promotion: its
            # count goes (a count left high by a process killed mid-promotion would else
            # be reported for good). Under the lease, as the promotion's own finish.
            if await self._scheduled.has_finished_minutes(queue, until_ms):
                if await self._leases.claim(queue.identity, self._owner, self._lease_ms):
                    try:
                        await self._scheduled.finish_through(queue, until_ms)
                    finally:
                        await self._leases.release(queue.identity, self._owner)
            return 0
        identity = queue.identity
        if not await self._leases.claim(identity, self._owner, self._lease_ms):
            return 0  # another process promotes this queue
        promoted = 0
        try:
            purged_ms = await self._catalog.last_purge_ms(queue) or 0
            while True:
                # Read after taking the lease: a page read before may be promoted already.
                page = await self._scheduled.due(queue, until_ms, self._page_size)
                promoted += await self._promote_page(queue, page, purged_ms)
                if len(page) < self._page_size:
                    break
                if not await self._leases.claim(identity, self._owner, self._lease_ms):
                    return promoted  # lease lost (a long pause): the holder goes on
            await self._scheduled.finish_through(queue, until_ms)
        finally:
            await self._leases.release(identity, self._owner)
        return promoted

    async def _promote_page(self, queue: Queue, page: Sequence[Message], purged_ms: int) -> int:
        now_ms = epoch_ms(self._clock)
        retention_ms = queue.retention_seconds * 1000
        live = [
            m for m in page
            if m.sent_timestamp_ms >= purged_ms and m.sent_timestamp_ms + retention_ms > now_ms
        ]
        by_keep: dict[int, list[Message]] = defaultdict(list)
        for message in live:  # a message still expires at its send time plus retention
            left = (message.sent_timestamp_ms + retention_ms - now_ms) / 1000
            keep = math.ceil(left / KEEP_GRANULARITY_SECONDS) * KEEP_GRANULARITY_SECONDS
            by_keep[min(keep, queue.retention_seconds)].append(message)
        for keep, messages in by_keep.items():
            await self._store.put(queue, messages, keep_seconds=keep)
        if live:
            await self._cache_fill.add(queue, live, now_ms)
        await self._scheduled.remove(queue, page)
        return len(live)
