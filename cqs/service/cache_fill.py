"""The cache state machine of docs/architecture.md, as this process drives it.

Owns, per queue: the background fills (ABSENT -> FILLING -> READY under a lease, page by
page from the store), the caches that missed a write while Redis was away or pushed back
(stale: reset in Redis as soon as it answers again, so that whichever process serves the
queue next refills it from the store, keeping what consumers hold in flight), adding
stored messages to the cache (or starting a fill when it cannot take them), counting
messages with or without a ready cache, and Return-From-Cassandra (serving a receive from
the store, each delivery claimed in the store so that only one process hands it out).
This process's own deliveries are in its `DeliveryLog` (`delivery_log.py`); fills also
load other processes' claimed deliveries in flight. Imports model, errors, ports and
sibling mechanisms; never an adapter, aiohttp or a driver.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence

from cqs.domain.errors import (
    CacheUnreachable,
    StorageBusy,
    StorageError,
    StorageUnavailable,
)
from cqs.domain.model import (
    CacheState,
    Deduplication,
    Delivery,
    Message,
    MessageCounts,
    Queue,
    QueueIdentity,
)
from cqs.domain.receipts import new_nonce
from cqs.ports import CachedMessages, CacheFill, MessageStore, Telemetry
from cqs.service.clock import epoch_ms
from cqs.service.delivery_log import DeliveryLog

log = logging.getLogger(__name__)

# A fill that failed tries this many times, a second apart, to hand its lease back.
FILL_LEASE_RELEASE_ATTEMPTS = 5
# A queue whose fill could not start is tried again at most this often.
FILL_RETRY_SECONDS = 0.5
# Messages kept in flight through a refill, looked up in the store this many at a time.
GONE_CHECK_BATCH = 100
# A stale cache whose Redis does not answer yet is tried again this often.
STALE_REPAIR_SECONDS = 0.5


class CacheFiller:
    """Fills, stale caches and the store fallback of every queue this process serves."""

    def __init__(
        self,
        messages: CachedMessages,
        fill: CacheFill,
        store: MessageStore,
        *,
        owner: str,
        lease_seconds: float,
        page_size: int,
        telemetry: Telemetry,
        clock: Callable[[], float],
        wake: Callable[[QueueIdentity], None],
    ) -> None:
        self._messages = messages
        self._fill_port = fill
        self._store = store
        self._owner = owner  # this process, as a fill lease holder
        self._lease_ms = int(lease_seconds * 1000)
        self._page_size = page_size
        self._telemetry = telemetry
        self._clock = clock
        self._wake = wake  # long polls of the queue: messages may be there now
        self.deliveries = DeliveryLog()
        self._fills: dict[QueueIdentity, asyncio.Task[None]] = {}
        self._attempted_at: dict[QueueIdentity, float] = {}
        # Queues whose cache missed a write (Redis unreachable or pushing back), with the ids
        # deleted in the store meanwhile: reset in Redis by `_repair` once it answers, so the
        # next process to serve the queue, any process, refills it and messages stored
        # meanwhile are not left out of the cache.
        self._stale: dict[QueueIdentity, set[str]] = {}
        self._repair: asyncio.Task[None] | None = None
        # messages loaded so far, for every fill this process is running
        self.fills_in_progress: dict[QueueIdentity, int] = {}

    async def start_empty(self, identity: QueueIdentity) -> None:
        """A new queue has nothing in the store to load: its cache is READY at once."""
        try:
            if await self._fill_port.begin_fill(identity, self._owner, self._lease_ms):
                await self._fill_port.finish_fill(identity, self._owner)
        except StorageError:
            log.warning("queue %s created while its Redis is unreachable", identity.name)

    async def drop(self, queue: Queue) -> None:
        """The queue is deleted: forget its deliveries and its cache."""
        self.deliveries.forget_queue(queue.queue_id)
        try:
            await self._fill_port.drop(queue.identity)
        except StorageError:
            log.warning("queue %s deleted while its Redis is unreachable", queue.name)
            self.mark_stale(queue.identity)  # its old cache goes once Redis answers

    async def purge(self, queue: Queue) -> None:
        """The queue's store was purged: empty its cache (or reload it once Redis is back)."""
        self.deliveries.forget_queue(queue.queue_id)
        try:
            await self._messages.purge(queue.identity)
        except StorageError:
            self.mark_stale(queue.identity)

    def mark_stale(self, identity: QueueIdentity, deleted: Sequence[str] = ()) -> None:
        """The queue's cache missed a write (`deleted`: deletes of these ids): have it reset
        in Redis as soon as Redis answers, so that whichever process serves the queue next
        reloads it from the store, keeping what consumers hold in flight.

        The mark must reach Redis: a mark kept only here would be acted on by this process's
        own receives alone, and a process that only sends never receives (issue 26)."""
        self._stale.setdefault(identity, set()).update(deleted)
        if self._repair is None or self._repair.done():
            self._repair = asyncio.get_running_loop().create_task(self._repair_stale())

    async def refresh_if_stale(self, queue: Queue) -> None:
        """After a Redis outage this process missed writes: reload the queue from the store
        (at once, rather than when the background repair next tries)."""
        if queue.identity in self._stale:
            await self._reset(queue.identity)

    async def _repair_stale(self) -> None:
        """Reset every stale cache once its Redis answers; runs while any is left.

        Reset, the cache is ABSENT: the next receive or send of any process starts a fill
        from the store, which holds every acknowledged message. Until then the cache may lack
        some messages (they wait in the store; none is lost). If this process dies before
        Redis answers again, the mark dies with it: docs/reliability.md."""
        while self._stale:
            for identity in list(self._stale):
                try:
                    await self._reset(identity)
                except StorageError:
                    continue
                log.info("cache of queue %s reset to be refilled: it missed writes",
                         identity.name)
                self._wake(identity)
            if self._stale:
                await asyncio.sleep(STALE_REPAIR_SECONDS)

    async def _reset(self, identity: QueueIdentity) -> None:
        """Reset the queue's cache in Redis with the deletes it missed; the mark stays if
        Redis does not take it. A mark made meanwhile asks for another reset."""
        deleted = self._stale.pop(identity, set())
        try:
            await self._fill_port.reset(identity, sorted(deleted))
        except BaseException:
            self._stale.setdefault(identity, set()).update(deleted)
            raise
        self._attempted_at.pop(identity, None)

    async def add(
        self,
        queue: Queue,
        stored: Sequence[Message],
        now_ms: int,
        deduplication_keys: Mapping[str, str] | None = None,
    ) -> None:
        """Add messages the store already holds to the cache; a cache that is down or not
        filled misses them, so it is marked for a refill instead.

        Never raises: the store holds the messages, so the send is acknowledged whatever the
        cache answers (a 503 would make the client store a second copy). A failed add is
        ambiguous (after back-pressure or a timeout Redis may still run it), so the cache is
        marked stale rather than added to again: a refill is right either way, where a
        second add could bring back a message already received and deleted."""
        try:
            added = await self._messages.add(
                queue.identity, stored, now_ms, queue.queue_id, deduplication_keys
            )
        except StorageError as exc:
            if queue.identity not in self._stale:
                log.warning("queue %s: cache add failed (%s); to be refilled", queue.name, exc)
            self.mark_stale(queue.identity)
            added = False
        if not added:
            self.start_soon(queue)
        self._wake(queue.identity)

    async def load_deduplications(self, queue: Queue, records: Sequence[Deduplication]) -> None:
        """Give a cache that is being (re)filled deduplication records only the store knew."""
        await self._fill_port.load_deduplications(
            queue.identity, queue.queue_id, records, epoch_ms(self._clock)
        )

    async def counts(self, queue: Queue) -> MessageCounts:
        try:
            if await self._messages.state(queue.identity) is CacheState.READY:
                return await self._messages.counts(queue.identity, epoch_ms(self._clock))
        except StorageUnavailable:
            pass
        # Without a filled cache only the store knows: every live message counts as visible.
        return MessageCounts(visible=await self._store.count(queue), in_flight=0, delayed=0)

    async def receive_from_store(
        self, queue: Queue, count: int, now_ms: int, timeout_ms: int
    ) -> list[Delivery]:
        """Return-From-Cassandra: serve live messages straight from the durable store,
        skipping those this process or another handed out and that are still hidden.

        Each message handed out with a visibility timeout is claimed first (a lightweight
        transaction in the store), so that of the processes serving the queue from the
        store meanwhile only one hands it out until the timeout passes."""
        hidden = self.deliveries.hidden(queue.queue_id, now_ms)
        # Read more than asked and pick at random: processes serving the same queue from the
        # store then contend for fewer of the same messages.
        sample = await self._store.sample(queue, 2 * count + min(len(hidden), 100), now_ms)
        candidates = [m for m in sample if m.message_id not in hidden]
        if timeout_ms > 0 and candidates:
            held = await self._store.claims(queue, now_ms, [m.message_id for m in candidates])
            candidates = [m for m in candidates if m.message_id not in held]
        chosen = random.sample(candidates, min(count, len(candidates)))
        if timeout_ms > 0 and chosen:
            hidden_until_ms = now_ms + timeout_ms
            won = await self._store.claim(
                queue, [m.message_id for m in chosen], hidden_until_ms, now_ms
            )
            chosen = [m for m in chosen if m.message_id in won]
            # Read again after the claim: a consumer may have deleted one since the sample
            # was read, and with it gone from the cache too, Redis could not tell.
            gone = set(await self._gone_from_store(queue, [m.message_id for m in chosen]))
            chosen = [m for m in chosen if m.message_id not in gone]
            allowed = await self._settle_with_cache(
                queue, {m.message_id: hidden_until_ms for m in chosen}
            )
            chosen = [m for m in chosen if m.message_id in allowed]
        return [Delivery(m, 1, now_ms, new_nonce()) for m in chosen]

    async def _settle_with_cache(self, queue: Queue, claimed: Mapping[str, int]) -> set[str]:
        """Which claimed messages may go out, as the cache sees them now (it may have become
        READY or loaded them since the store was read): hidden there too, and not one the
        cache handed out or deleted meanwhile. All of them when Redis is gone with its
        data (a later fill reads the claims); none when it does not answer yet may live on,
        as READY with them visible: their claims keep them hidden until they end, and a
        fill loads them in flight, so they come back after the visibility timeout."""
        if not claimed:
            return set()
        try:
            return await self._fill_port.hide_store_deliveries(
                queue.identity, epoch_ms(self._clock), claimed
            )
        except (CacheUnreachable, StorageBusy):
            return set()
        except StorageError:
            return set(claimed)

    def _hidden_now(
        self, queue: Queue, claimed: Mapping[str, int]
    ) -> tuple[int, dict[str, int]]:
        """(now, what a fill loads in flight: this process's deliveries and the claims of
        every process's deliveries from the store, each until its later end)."""
        now_ms = epoch_ms(self._clock)
        hidden = {k: v for k, v in claimed.items() if v > now_ms}
        for message_id, until_ms in self.deliveries.hidden(queue.queue_id, now_ms).items():
            hidden[message_id] = max(until_ms, hidden.get(message_id, 0))
        return now_ms, hidden

    def start_soon(self, queue: Queue) -> None:
        """Take the queue's fill lease if nobody holds it, and fill in the background."""
        identity = queue.identity
        if identity in self._fills:
            return
        now = self._clock()
        if now - self._attempted_at.get(identity, 0.0) < FILL_RETRY_SECONDS:
            return
        self._attempted_at[identity] = now
        task = asyncio.get_running_loop().create_task(self._fill(queue))
        self._fills[identity] = task

        def forget(_: asyncio.Task[None]) -> None:
            self._fills.pop(identity, None)

        task.add_done_callback(forget)

    async def _fill(self, queue: Queue) -> None:
        """Load the queue from the store page by page, holding (and renewing) the fill lease.

        Runs as a background task: other queues and requests go on meanwhile. Progress is
        logged every few seconds and kept in `fills_in_progress` for the metrics.
        """
        name, identity = queue.name, queue.identity
        try:
            if not await self._fill_port.begin_fill(identity, self._owner, self._lease_ms):
                return
            kept = await self._fill_port.in_flight_ids(identity)
            started = last_report = self._clock()
            log.info("filling the cache of queue %s from the store", name)
            if queue.fifo:  # deduplication outlives a Redis loss: the store keeps the keys
                await self.load_deduplications(queue, await self._store.deduplications(queue))
            loaded = 0
            self.fills_in_progress[identity] = 0
            self._telemetry.fill_started(name)
            claimed = await self._store.claims(queue, epoch_ms(self._clock))
            async for page in self._store.scan(queue, self._page_size):
                now_ms, hidden = self._hidden_now(queue, claimed)
                if not await self._fill_port.load(identity, self._owner, page, now_ms, hidden):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                loaded += len(page)
                self.fills_in_progress[identity] = loaded
                self._telemetry.fill_progress(name, len(page))
                if not await self._fill_port.renew_fill(identity, self._owner, self._lease_ms):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                if self._clock() - last_report >= 5:
                    last_report = self._clock()
                    log.info("filling queue %s: %d messages loaded so far", name, loaded)
            gone = await self._gone_from_store(queue, kept)
            # Claims taken while the fill ran (the queue was served from the store meanwhile).
            now_ms, late = self._hidden_now(
                queue, await self._store.claims(queue, epoch_ms(self._clock))
            )
            if await self._fill_port.finish_fill(identity, self._owner, now_ms, late, gone):
                self._telemetry.fill_finished(name, True)
                log.info(
                    "cache of queue %s filled with %d messages in %.1f s",
                    name, loaded, self._clock() - started,
                )
                self._wake(identity)
        except StorageError as exc:
            log.warning("cache fill of queue %s interrupted: %s", name, exc)
            await self._give_up_lease(identity)
        finally:
            if self.fills_in_progress.pop(identity, None) is not None:
                self._telemetry.fill_finished(name, False)  # no-op once reported as completed

    async def _gone_from_store(self, queue: Queue, message_ids: Sequence[str]) -> list[str]:
        """Of these messages, those the store no longer holds (deleted meanwhile)."""
        gone: list[str] = []
        for start in range(0, len(message_ids), GONE_CHECK_BATCH):
            batch = message_ids[start : start + GONE_CHECK_BATCH]
            found = await asyncio.gather(*(self._store.get(queue, mid) for mid in batch))
            gone += [mid for mid, message in zip(batch, found, strict=True) if message is None]
        return gone

    async def _give_up_lease(self, identity: QueueIdentity) -> None:
        """Give the fill lease up (if still ours) so the next request retries the fill,
        instead of every process waiting for the lease to expire. Tried for a few seconds:
        right after a failure the cache refuses calls for a moment (its circuit breaker)."""
        for attempt in range(FILL_LEASE_RELEASE_ATTEMPTS):
            try:
                await self._fill_port.renew_fill(identity, self._owner, 1)
                return
            except StorageError:
                if attempt + 1 < FILL_LEASE_RELEASE_ATTEMPTS:
                    await asyncio.sleep(1.0)

    def running(self) -> list[asyncio.Task[None]]:
        """The fills and the stale-cache repair this process runs (to stop on shutdown:
        another process takes over)."""
        repair = [self._repair] if self._repair is not None and not self._repair.done() else []
        return list(self._fills.values()) + repair
