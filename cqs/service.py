"""QueueService: one async method per SQS action, over the storage ports.

Owns SQS semantics (validation, defaults, visibility, delays, retention, receipt handles)
and the cache decisions of the CQS design: every message is written to the durable store
first; the cache serves it while READY; while a queue's cache is ABSENT or FILLING, or its
Redis is unreachable, messages are served from the store (Return-From-Cassandra) and one
process refills the cache. Takes and returns queue names and model values, never URLs or
wire formats. Imports model, errors, ports and pure helpers; never an adapter, aiohttp,
redis or cassandra.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from cqs import checksums, validation
from cqs.deliveries import DeliveryLog
from cqs.errors import (
    CqsError,
    InvalidParameterValue,
    MessageNotInflight,
    QueueDoesNotExist,
    QueueNameExists,
    ReceiptHandleIsInvalid,
    StorageUnavailable,
    UnsupportedOperation,
)
from cqs.model import (
    DEFAULT_QUEUE_ATTRIBUTES,
    BatchFailure,
    BatchResult,
    CacheState,
    DeleteOutcome,
    Delivery,
    Message,
    MessageAttributeValue,
    MessageCounts,
    Queue,
    ReceiptHandle,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
    SendResult,
    VisibilityOutcome,
)
from cqs.ports import MessageCache, MessageStore, QueueCatalog
from cqs.receipts import ReceiptSigner, new_nonce

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH_PAYLOAD_BYTES = 1_048_576
LIST_QUEUES_LIMIT = 1000
COUNT_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
SYSTEM_ATTRIBUTE_NAMES = (
    "SenderId",
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "AWSTraceHeader",
)


def new_message_id() -> str:
    """A version-1 UUID (time-ordered, as the store's layout wants) with a random node.

    The random node keeps the host's MAC address out of message ids; the random clock
    sequence spreads messages over the store's shards.
    """
    return str(uuid.uuid1(node=random.getrandbits(48) | 0x010000000000))


@dataclass
class ServiceTuning:
    """Timing knobs of the service, taken from Settings by the composition root."""

    long_poll_recheck_seconds: float = 0.2
    cache_fill_lease_seconds: float = 30.0
    cache_fill_page_size: int = 500
    metadata_ttl_seconds: float = 1.0


class QueueService:
    def __init__(
        self,
        catalog: QueueCatalog,
        store: MessageStore,
        cache: MessageCache,
        signer: ReceiptSigner,
        *,
        account_id: str,
        region: str,
        tuning: ServiceTuning | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._catalog = catalog
        self._store = store
        self._cache = cache
        self._signer = signer
        self._account_id = account_id
        self._region = region
        self._tuning = tuning or ServiceTuning()
        self._clock = clock
        self._owner = uuid.uuid4().hex  # this process, as a cache-fill lease holder
        self._queues: dict[str, tuple[Queue, float]] = {}
        self._arrivals: dict[str, asyncio.Event] = {}
        self._fills: dict[str, asyncio.Task[None]] = {}
        self._fill_attempted_at: dict[str, float] = {}
        # Queues whose cache missed a write while Redis was unreachable: refilled once it
        # answers again, so messages stored meanwhile are not left out of the cache.
        self._stale_caches: set[str] = set()
        # Every delivery this process made, so that it stays hidden through a Redis loss.
        self._deliveries = DeliveryLog()
        # queue name -> messages loaded so far, for every fill this process is running
        self.fills_in_progress: dict[str, int] = {}

    # --- helpers ---------------------------------------------------------------------------
    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def queue_arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self._region}:{self._account_id}:{name}"

    async def _queue(self, name: str) -> Queue:
        cached = self._queues.get(name)
        now = self._clock()
        if cached and now - cached[1] < self._tuning.metadata_ttl_seconds:
            return cached[0]
        try:
            queue = await self._catalog.get(name)
        except StorageUnavailable:
            if cached:  # a known queue keeps working from Redis while Cassandra is away
                return cached[0]
            raise
        if queue is None:
            self._queues.pop(name, None)
            raise QueueDoesNotExist("The specified queue does not exist.")
        self._queues[name] = (queue, now)
        return queue

    def _forget(self, name: str) -> None:
        self._queues.pop(name, None)

    def notify_messages_available(self, names: Sequence[str]) -> None:
        """Wake this process's long polls on these queues (called on send and by the worker)."""
        for name in names:
            event = self._arrivals.pop(name, None)
            if event is not None:
                event.set()

    async def relay_arrivals(self) -> None:
        """Wake local long polls for messages announced by any process; runs until cancelled."""
        async for name in self._cache.arrivals():
            self.notify_messages_available([name])

    async def close(self) -> None:
        for task in list(self._fills.values()):
            task.cancel()
        for task in list(self._fills.values()):
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    # --- queues ----------------------------------------------------------------------------
    async def create_queue(
        self, name: str, attributes: Mapping[str, str], tags: Mapping[str, str]
    ) -> None:
        fifo = attributes.get("FifoQueue", "false").lower() == "true"
        validation.validate_queue_name(name, fifo)
        if fifo:
            raise UnsupportedOperation("FIFO queues are not supported yet.")
        given = validation.normalize_queue_attributes(attributes, creating=True)
        given.pop("FifoQueue", None)
        validation.validate_tags(tags, queue_name=name)
        now_s = int(self._clock())
        candidate = Queue(
            name=name,
            queue_id=uuid.uuid4().hex,
            attributes={**DEFAULT_QUEUE_ATTRIBUTES, **given},
            tags=dict(tags),
            created_timestamp=now_s,
            last_modified_timestamp=now_s,
        )
        stored = await self._catalog.create(candidate)
        if stored.queue_id == candidate.queue_id:
            await self._start_empty_cache(name)
        else:
            differing = [k for k, v in given.items() if stored.attributes.get(k) != v]
            if differing:
                raise QueueNameExists(
                    "A queue already exists with the same name and a different value for "
                    f"attribute {differing[0]}"
                )
        self._queues[name] = (stored, self._clock())

    async def _start_empty_cache(self, name: str) -> None:
        """A new queue has nothing in the store to load: its cache is READY at once."""
        lease_ms = int(self._tuning.cache_fill_lease_seconds * 1000)
        try:
            if await self._cache.begin_fill(name, self._owner, lease_ms):
                await self._cache.finish_fill(name, self._owner)
        except StorageUnavailable:
            log.warning("queue %s created while its Redis is unreachable", name)

    async def get_queue_url(self, name: str) -> None:
        await self._queue(name)

    async def list_queues(
        self, prefix: str | None, max_results: int | None, next_token: str | None
    ) -> tuple[list[str], str | None]:
        if max_results is not None and not 1 <= max_results <= LIST_QUEUES_LIMIT:
            raise InvalidParameterValue(
                f"Value {max_results} for parameter MaxResults is invalid. "
                "Reason: MaxResults must be an integer between 1 and 1000."
            )
        names = [n for n in await self._catalog.list_names() if n.startswith(prefix or "")]
        if next_token:
            try:
                after = base64.urlsafe_b64decode(next_token.encode()).decode()
            except (ValueError, UnicodeDecodeError) as exc:
                raise InvalidParameterValue("Invalid NextToken value.") from exc
            names = [n for n in names if n > after]
        if max_results is None:
            return names[:LIST_QUEUES_LIMIT], None
        page = names[:max_results]
        more = len(names) > max_results
        token = base64.urlsafe_b64encode(page[-1].encode()).decode() if more else None
        return page, token

    async def delete_queue(self, name: str) -> None:
        queue = await self._queue(name)
        await self._catalog.delete(name)
        self._forget(name)
        self._deliveries.forget_queue(queue.queue_id)
        await self._store.purge(queue)
        try:
            await self._cache.drop(name)
        except StorageUnavailable:
            log.warning("queue %s deleted while its Redis is unreachable", name)

    async def get_queue_attributes(self, name: str, names: Sequence[str]) -> dict[str, str]:
        queue = await self._queue(name)
        wanted = validation.validate_attribute_names_for_get(names)
        result: dict[str, str] = {}
        if any(n in wanted for n in COUNT_ATTRIBUTES):
            counts = await self._counts(queue)
            result["ApproximateNumberOfMessages"] = str(counts.visible)
            result["ApproximateNumberOfMessagesNotVisible"] = str(counts.in_flight)
            result["ApproximateNumberOfMessagesDelayed"] = str(counts.delayed)
        result["CreatedTimestamp"] = str(queue.created_timestamp)
        result["LastModifiedTimestamp"] = str(queue.last_modified_timestamp)
        result["QueueArn"] = self.queue_arn(name)
        result.update(queue.attributes)
        return {n: result[n] for n in wanted if n in result}

    async def _counts(self, queue: Queue) -> MessageCounts:
        try:
            if await self._cache.state(queue.name) is CacheState.READY:
                return await self._cache.counts(queue.name, self._now_ms())
        except StorageUnavailable:
            pass
        # Without a filled cache only the store knows: every live message counts as visible.
        return MessageCounts(visible=await self._store.count(queue), in_flight=0, delayed=0)

    async def set_queue_attributes(self, name: str, attributes: Mapping[str, str]) -> None:
        queue = await self._queue(name)
        given = validation.normalize_queue_attributes(attributes, creating=False)
        updated = replace(
            queue,
            attributes={**queue.attributes, **given},
            last_modified_timestamp=int(self._clock()),
        )
        await self._catalog.save(updated)
        self._queues[name] = (updated, self._clock())

    async def purge_queue(self, name: str) -> None:
        queue = await self._queue(name)
        await self._store.purge(queue)
        self._deliveries.forget_queue(queue.queue_id)
        try:
            await self._cache.purge(name)
        except StorageUnavailable:
            self._stale_caches.add(name)

    async def tag_queue(self, name: str, tags: Mapping[str, str]) -> None:
        queue = await self._queue(name)
        validation.validate_tags(tags, queue.tags.keys(), name)
        merged = {**queue.tags, **tags}
        await self._save(replace(queue, tags=merged))

    async def untag_queue(self, name: str, tag_keys: Sequence[str]) -> None:
        queue = await self._queue(name)
        validation.validate_tag_keys(tag_keys)
        remaining = {k: v for k, v in queue.tags.items() if k not in set(tag_keys)}
        await self._save(replace(queue, tags=remaining))

    async def list_queue_tags(self, name: str) -> dict[str, str]:
        return dict((await self._queue(name)).tags)

    async def _save(self, queue: Queue) -> None:
        await self._catalog.save(queue)
        self._queues[queue.name] = (queue, self._clock())

    # --- sending ---------------------------------------------------------------------------
    def _build_message(self, queue: Queue, request: SendRequest, now_ms: int) -> Message:
        validation.validate_message_body(request.body)
        validation.validate_message_attributes(request.message_attributes)
        validation.validate_message_system_attributes(request.system_attributes)
        size = validation.message_size(request.body, request.message_attributes)
        validation.validate_message_size(size, queue.maximum_message_size)
        if request.delay_seconds is None:
            delay = queue.delay_seconds
        else:
            validation.validate_delay_seconds(request.delay_seconds)
            delay = request.delay_seconds
        return Message(
            message_id=new_message_id(),
            body=request.body,
            md5_of_body=checksums.md5_of_body(request.body),
            sent_timestamp_ms=now_ms,
            visible_at_ms=now_ms + delay * 1000,
            sender_id=self._account_id,
            message_attributes=dict(request.message_attributes),
            md5_of_message_attributes=checksums.md5_of_message_attributes(
                request.message_attributes
            ),
            system_attributes=dict(request.system_attributes),
            md5_of_system_attributes=checksums.md5_of_system_attributes(
                request.system_attributes
            ),
        )

    async def _deliver(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Store durably (the acknowledgement point), then add to the cache if it is up."""
        await self._store.put(queue, messages)
        try:
            added = await self._cache.add(queue.name, messages, self._now_ms())
        except StorageUnavailable:
            self._stale_caches.add(queue.name)
            added = False
        if not added:
            self._start_fill_soon(queue)
        self.notify_messages_available([queue.name])

    @staticmethod
    def _sent(message: Message) -> SendResult:
        return SendResult(
            message_id=message.message_id,
            md5_of_body=message.md5_of_body,
            md5_of_message_attributes=message.md5_of_message_attributes,
            md5_of_system_attributes=message.md5_of_system_attributes,
        )

    async def send_message(self, name: str, request: SendRequest) -> SendResult:
        queue = await self._queue(name)
        message = self._build_message(queue, request, self._now_ms())
        await self._deliver(queue, [message])
        return self._sent(message)

    async def send_message_batch(
        self, name: str, entries: Sequence[tuple[str, SendRequest]]
    ) -> BatchResult[SendResult]:
        queue = await self._queue(name)
        validation.validate_batch_entries([entry_id for entry_id, _ in entries])
        total = sum(validation.message_size(r.body, r.message_attributes) for _, r in entries)
        validation.validate_batch_size(total, MAX_BATCH_PAYLOAD_BYTES)
        now_ms = self._now_ms()
        built: list[tuple[str, Message]] = []
        failed: list[BatchFailure] = []
        for entry_id, request in entries:
            try:
                built.append((entry_id, self._build_message(queue, request, now_ms)))
            except CqsError as error:
                failed.append(BatchFailure(entry_id, error))
        if built:
            await self._deliver(queue, [m for _, m in built])
        return BatchResult([(i, self._sent(m)) for i, m in built], failed)

    # --- receiving -------------------------------------------------------------------------
    async def receive_message(self, name: str, request: ReceiveRequest) -> list[ReceivedMessage]:
        queue = await self._queue(name)
        validation.validate_max_number_of_messages(request.max_number_of_messages)
        if request.visibility_timeout is not None:
            validation.validate_visibility_timeout(request.visibility_timeout)
            timeout = request.visibility_timeout
        else:
            timeout = queue.visibility_timeout
        if request.wait_time_seconds is not None:
            validation.validate_wait_time_seconds(request.wait_time_seconds)
            wait = request.wait_time_seconds
        else:
            wait = queue.receive_wait_seconds
        deadline = self._clock() + wait
        listening = False
        while True:
            deliveries = await self._receive_once(queue, request.max_number_of_messages, timeout)
            remaining = deadline - self._clock()
            if deliveries or remaining <= 0:
                break
            if not listening:  # sends through other processes publish a wake-up for us
                listening = await self._listen(name, remaining)
            event = self._arrivals.setdefault(name, asyncio.Event())
            pause = min(remaining, self._tuning.long_poll_recheck_seconds)
            try:
                await asyncio.wait_for(event.wait(), pause)
            except TimeoutError:
                pass
            queue = await self._queue(name)
        return [self._received(queue, d, request) for d in deliveries]

    async def _listen(self, name: str, seconds: float) -> bool:
        try:
            await self._cache.listen(name, int(seconds * 1000) + 1000)
        except StorageUnavailable:
            return False
        return True

    async def _receive_once(self, queue: Queue, count: int, timeout: int) -> list[Delivery]:
        now_ms = self._now_ms()
        nonces = [new_nonce() for _ in range(count)]
        try:
            await self._refresh_if_stale(queue)
            deliveries = await self._cache.receive(
                queue.name, count, timeout * 1000, now_ms, queue.retention_seconds * 1000, nonces
            )
        except StorageUnavailable:
            deliveries = None
        if deliveries is None:
            self._start_fill_soon(queue)
            deliveries = await self._receive_from_store(queue, count, now_ms)
        if timeout > 0:
            for delivery in deliveries:
                self._deliveries.record(
                    queue.queue_id, delivery.message.message_id, now_ms + timeout * 1000
                )
        return deliveries

    async def _receive_from_store(self, queue: Queue, count: int, now_ms: int) -> list[Delivery]:
        """Return-From-Cassandra: serve live messages straight from the durable store,
        skipping those this process handed out and that are still hidden."""
        hidden = self._deliveries.hidden(queue.queue_id, now_ms)
        sample = await self._store.sample(queue, count + min(len(hidden), 100), now_ms)
        chosen = [m for m in sample if m.message_id not in hidden][:count]
        return [Delivery(m, 1, now_ms, new_nonce()) for m in chosen]

    def _received(self, queue: Queue, delivery: Delivery, request: ReceiveRequest) -> ReceivedMessage:
        message = delivery.message
        handle = self._signer.issue(
            ReceiptHandle(queue.name, message.message_id, delivery.receipt_nonce)
        )
        wanted = set(request.system_attribute_names)
        everything = "All" in wanted
        system: dict[str, str] = {
            "SenderId": message.sender_id,
            "SentTimestamp": str(message.sent_timestamp_ms),
            "ApproximateReceiveCount": str(delivery.receive_count),
            "ApproximateFirstReceiveTimestamp": str(delivery.first_receive_timestamp_ms),
        }
        trace = message.system_attributes.get("AWSTraceHeader")
        if trace is not None and trace.string_value is not None:
            system["AWSTraceHeader"] = trace.string_value
        attributes = {k: v for k, v in system.items() if everything or k in wanted}
        selected = {
            k: v
            for k, v in message.message_attributes.items()
            if validation.message_attribute_selected(k, request.message_attribute_names)
        }
        return ReceivedMessage(
            delivery=delivery, receipt_handle=handle, attributes=attributes,
            message_attributes=selected,
        )

    # --- cache fill --------------------------------------------------------------------------
    async def _refresh_if_stale(self, queue: Queue) -> None:
        """After a Redis outage this process missed writes: reload the queue from the store."""
        if queue.name in self._stale_caches:
            await self._cache.drop(queue.name)
            self._stale_caches.discard(queue.name)

    def _start_fill_soon(self, queue: Queue) -> None:
        """Take the queue's fill lease if nobody holds it, and fill in the background."""
        if queue.name in self._fills:
            return
        now = self._clock()
        if now - self._fill_attempted_at.get(queue.name, 0.0) < 0.5:
            return
        self._fill_attempted_at[queue.name] = now
        name = queue.name
        task = asyncio.get_running_loop().create_task(self._fill(queue))
        self._fills[name] = task

        def forget(_: asyncio.Task[None]) -> None:
            self._fills.pop(name, None)

        task.add_done_callback(forget)

    async def _fill(self, queue: Queue) -> None:
        """Load the queue from the store page by page, holding (and renewing) the fill lease.

        Runs as a background task: other queues and requests go on meanwhile. Progress is
        logged every few seconds and kept in `fills_in_progress` for the metrics.
        """
        lease_ms = int(self._tuning.cache_fill_lease_seconds * 1000)
        name = queue.name
        try:
            if not await self._cache.begin_fill(name, self._owner, lease_ms):
                return
            started = last_report = self._clock()
            log.info("filling the cache of queue %s from the store", name)
            loaded = 0
            self.fills_in_progress[name] = 0
            async for page in self._store.scan(queue, self._tuning.cache_fill_page_size):
                now_ms = self._now_ms()
                hidden = self._deliveries.hidden(queue.queue_id, now_ms)
                if not await self._cache.load(name, self._owner, page, now_ms, hidden):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                loaded += len(page)
                self.fills_in_progress[name] = loaded
                if not await self._cache.renew_fill(name, self._owner, lease_ms):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                if self._clock() - last_report >= 5:
                    last_report = self._clock()
                    log.info("filling queue %s: %d messages loaded so far", name, loaded)
            if await self._cache.finish_fill(name, self._owner):
                log.info(
                    "cache of queue %s filled with %d messages in %.1f s",
                    name, loaded, self._clock() - started,
                )
                self.notify_messages_available([name])
        except StorageUnavailable as exc:
            log.warning("cache fill of queue %s interrupted: %s", name, exc)
        finally:
            self.fills_in_progress.pop(name, None)

    # --- deleting and visibility -------------------------------------------------------------
    def _handle(self, name: str, receipt_handle: str) -> ReceiptHandle:
        return self._signer.read(receipt_handle, name)

    async def delete_message(self, name: str, receipt_handle: str) -> None:
        queue = await self._queue(name)
        handle = self._handle(name, receipt_handle)
        try:
            outcome = await self._cache.delete(name, handle.message_id, handle.receipt_nonce)
        except StorageUnavailable:
            self._stale_caches.add(name)
            outcome = DeleteOutcome.NOT_CACHED
        if outcome is DeleteOutcome.STALE_HANDLE:
            raise ReceiptHandleIsInvalid(
                f'The input receipt handle "{receipt_handle}" is not a valid receipt handle: '
                "the message was received again since."
            )
        self._deliveries.forget(queue.queue_id, handle.message_id)
        try:
            await self._store.delete(queue, handle.message_id)
        except StorageUnavailable:
            if outcome is not DeleteOutcome.DELETED or not await self._defer_store_delete(
                name, handle.message_id
            ):
                raise

    async def _defer_store_delete(self, name: str, message_id: str) -> bool:
        """The store is away but the cache took the delete: remember it in the cache (fills
        skip it) and flush it to the store later; False if the cache cannot remember it."""
        try:
            await self._cache.defer_store_delete(name, message_id)
        except StorageUnavailable:
            return False
        return True

    async def flush_deferred_store_deletes(self, limit: int = 500) -> int:
        """Apply the deletes the store missed while it was away; return how many landed."""
        applied = 0
        for name, message_ids in (await self._cache.deferred_store_deletes(limit)).items():
            try:
                queue = await self._queue(name)
            except QueueDoesNotExist:  # its messages went with it
                await self._cache.forget_store_deletes(name, message_ids)
                continue
            await asyncio.gather(*(self._store.delete(queue, mid) for mid in message_ids))
            await self._cache.forget_store_deletes(name, message_ids)
            applied += len(message_ids)
        return applied

    async def trim_expired_messages(self) -> int:
        """Drop cached messages older than their queue's retention period (Cassandra's TTL
        expires them there); return how many were dropped."""
        trimmed = 0
        now_ms = self._now_ms()
        for name in await self._catalog.list_names():
            try:
                queue = await self._queue(name)
                trimmed += await self._cache.trim_expired(
                    name, now_ms, queue.retention_seconds * 1000
                )
            except (StorageUnavailable, QueueDoesNotExist):
                continue
        return trimmed

    def prune_deliveries(self) -> int:
        """Forget deliveries whose visibility timeout passed; return how many remain."""
        return self._deliveries.prune(self._now_ms())

    async def change_message_visibility(
        self, name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        queue = await self._queue(name)
        validation.validate_visibility_timeout(visibility_timeout)
        handle = self._handle(name, receipt_handle)
        visible_at = self._now_ms() + visibility_timeout * 1000
        cache_ready = True
        try:
            outcome = await self._cache.change_visibility(
                name, handle.message_id, handle.receipt_nonce, visible_at
            )
            if outcome is VisibilityOutcome.NOT_IN_FLIGHT:
                cache_ready = await self._cache.state(name) is CacheState.READY
        except StorageUnavailable:
            outcome, cache_ready = VisibilityOutcome.NOT_IN_FLIGHT, False
        if outcome is VisibilityOutcome.STALE_HANDLE:
            raise ReceiptHandleIsInvalid(
                f'The input receipt handle "{receipt_handle}" is not a valid receipt handle: '
                "the message was received again since."
            )
        if outcome is VisibilityOutcome.CHANGED:
            self._deliveries.extend(queue.queue_id, handle.message_id, visible_at)
            return
        # Without a ready cache, a message this process handed out from the store is in
        # flight as far as anyone can know.
        if not cache_ready and self._deliveries.extend(queue.queue_id, handle.message_id, visible_at):
            return
        raise MessageNotInflight(
            f"Value {receipt_handle} for parameter ReceiptHandle is invalid. Reason: Message "
            "does not exist or is not available for visibility timeout change."
        )

    async def delete_message_batch(
        self, name: str, entries: Sequence[tuple[str, str]]
    ) -> BatchResult[None]:
        await self._queue(name)
        validation.validate_batch_entries(
            [entry_id for entry_id, _ in entries], "DeleteMessageBatch"
        )
        outcomes = await asyncio.gather(
            *(self.delete_message(name, handle) for _, handle in entries),
            return_exceptions=True,
        )
        return _batch_result([entry_id for entry_id, _ in entries], outcomes)

    async def change_message_visibility_batch(
        self, name: str, entries: Sequence[tuple[str, str, int]]
    ) -> BatchResult[None]:
        await self._queue(name)
        validation.validate_batch_entries(
            [entry_id for entry_id, _, _ in entries], "ChangeMessageVisibilityBatch"
        )
        outcomes = await asyncio.gather(
            *(self.change_message_visibility(name, h, t) for _, h, t in entries),
            return_exceptions=True,
        )
        return _batch_result([entry_id for entry_id, _, _ in entries], outcomes)


def _batch_result(entry_ids: Sequence[str], outcomes: Sequence[object]) -> BatchResult[None]:
    """Split per-entry outcomes: SQS errors become failed entries, anything else is raised."""
    successful: list[tuple[str, None]] = []
    failed: list[BatchFailure] = []
    for entry_id, outcome in zip(entry_ids, outcomes, strict=True):
        if isinstance(outcome, StorageUnavailable):
            raise outcome
        if isinstance(outcome, CqsError):
            failed.append(BatchFailure(entry_id, outcome))
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            successful.append((entry_id, None))
    return BatchResult(successful, failed)


__all__ = ["MessageAttributeValue", "QueueService", "ServiceTuning", "new_message_id"]
