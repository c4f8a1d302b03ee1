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
import contextlib
import hashlib
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from cqs import checksums, redrive, validation
from cqs.deliveries import DeliveryLog
from cqs.errors import (
    CqsError,
    InvalidParameterValue,
    MessageNotInflight,
    PurgeQueueInProgress,
    QueueDeletedRecently,
    QueueDoesNotExist,
    QueueNameExists,
    ReceiptHandleIsInvalid,
    ResourceNotFound,
    StorageBusy,
    StorageError,
    StorageUnavailable,
)
from cqs.long_poll import LongPollWaiters
from cqs.model import (
    DEFAULT_QUEUE_ATTRIBUTES,
    BatchFailure,
    BatchResult,
    CacheState,
    Deduplication,
    DeleteOutcome,
    Delivery,
    FifoAdmission,
    Message,
    MessageAttributeValue,
    MessageCounts,
    MessageMoveTask,
    MoveTaskStatus,
    Queue,
    ReceiptHandle,
    ReceivedMessage,
    ReceiveRequest,
    Redelivery,
    SendRequest,
    SendResult,
    VisibilityOutcome,
)
from cqs.ports import MessageCache, MessageStore, NullTelemetry, QueueCatalog, Telemetry
from cqs.receipts import ReceiptSigner, new_nonce

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_BATCH_PAYLOAD_BYTES = 1_048_576
PURGE_INTERVAL_MS = 60_000
MAX_MOVE_TASK_RATE = 500  # MaxNumberOfMessagesPerSecond, per the AWS API reference
# How long a move task holds the batch it is moving: short, so that a batch held by a
# process that died is soon visible again to the process that takes the task over.
MOVE_TASK_VISIBILITY_TIMEOUT = 5
LIST_QUEUES_LIMIT = 1000
# A fill that failed tries this many times, a second apart, to hand its lease back.
FILL_LEASE_RELEASE_ATTEMPTS = 5
# FIFO: AWS keeps a MessageDeduplicationId for five minutes.
DEDUPLICATION_INTERVAL_MS = 300_000
# How long a FIFO send waits for an earlier send with the same deduplication id to be stored.
FIFO_ADMISSION_WAIT_SECONDS = 5.0
# A queue's cached metadata is served (and refreshed in the background) up to this age.
METADATA_STALE_SECONDS = 30.0
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


def format_sequence_number(sequence: int) -> str:
    """SequenceNumber as SQS shows it: a 20-digit decimal string (zero-padded, so that
    comparing the strings compares the numbers)."""
    return f"{sequence:020d}"


def new_message_id() -> str:
    """A version-1 UUID (time-ordered, as the store's layout wants) with a random node.

    The random node keeps the host's MAC address out of message ids; the random clock
    sequence spreads messages over the store's shards.
    """
    return str(uuid.uuid1(node=random.getrandbits(48) | 0x010000000000))


@dataclass
class ServiceTuning:
    """Timing knobs of the service, taken from Settings by the composition root."""

    long_poll_recheck_seconds: float = 1.0
    cache_fill_lease_seconds: float = 30.0
    cache_fill_page_size: int = 500
    metadata_ttl_seconds: float = 1.0
    # A deleted queue's name cannot be used again for this long (AWS: 60); 0 = at once.
    queue_deleted_recently_seconds: float = 0.0
    # A message move task whose process has not reported for this long is taken over.
    move_task_lease_seconds: float = 6.0


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
        telemetry: Telemetry | None = None,
    ) -> None:
        self._catalog = catalog
        self._telemetry: Telemetry = telemetry or NullTelemetry()
        self._store = store
        self._cache = cache
        self._signer = signer
        self._account_id = account_id
        self._region = region
        self._tuning = tuning or ServiceTuning()
        self._clock = clock
        self._owner = uuid.uuid4().hex  # this process, as a cache-fill lease holder
        self._queues: dict[str, tuple[Queue, float]] = {}
        self._refreshing: set[str] = set()
        self._waiters = LongPollWaiters(self._tuning.long_poll_recheck_seconds)
        self._fills: dict[str, asyncio.Task[None]] = {}
        self._fill_attempted_at: dict[str, float] = {}
        # Queues whose cache missed a write while Redis was unreachable: refilled once it
        # answers again, so messages stored meanwhile are not left out of the cache.
        self._stale_caches: set[str] = set()
        # Every delivery this process made, so that it stays hidden through a Redis loss.
        self._deliveries = DeliveryLog()
        # task id -> the message move tasks this process runs
        self._move_runners: dict[str, asyncio.Task[None]] = {}
        # queue name -> messages loaded so far, for every fill this process is running
        self.fills_in_progress: dict[str, int] = {}

    # --- helpers ---------------------------------------------------------------------------
    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def queue_arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self._region}:{self._account_id}:{name}"

    async def _queue(self, name: str) -> Queue:
        cached = self._queues.get(name)
        if cached:
            age = self._clock() - cached[1]
            if age < self._tuning.metadata_ttl_seconds:
                return cached[0]
            if age < METADATA_STALE_SECONDS:
                # Serve the known copy now and refresh behind the request: a request never
                # waits on a catalog read for a queue it knows (nor twice on a slow Cassandra).
                self._refresh_queue_soon(name)
                return cached[0]
        return await self._load_queue(name)

    def _refresh_queue_soon(self, name: str) -> None:
        if name in self._refreshing:
            return
        self._refreshing.add(name)

        async def refresh() -> None:
            try:
                await self._load_queue(name)
            except (StorageUnavailable, QueueDoesNotExist):
                pass
            finally:
                self._refreshing.discard(name)

        asyncio.get_running_loop().create_task(refresh())

    async def _load_queue(self, name: str) -> Queue:
        cached = self._queues.get(name)
        now = self._clock()
        try:
            queue = await self._catalog.get(name)
        except StorageUnavailable:
            if cached:  # a known queue keeps working from Redis while Cassandra is away
                return cached[0]
            raise
        if queue is None:
            self._queues.pop(name, None)
            raise QueueDoesNotExist("The specified queue does not exist.")
        # A create, change or delete of the queue while we read must not be overwritten by
        # what we read before it (a background pass over every queue reads for long).
        if self._queues.get(name) is cached:
            self._queues[name] = (queue, now)
        return queue

    def _forget(self, name: str) -> None:
        self._queues.pop(name, None)

    def notify_messages_available(self, names: Sequence[str]) -> None:
        """Wake this process's long polls on these queues (called on send and by the worker)."""
        for name in names:
            self._waiters.wake(name)

    async def relay_arrivals(self) -> None:
        """Wake local long polls for messages announced by any process; runs until cancelled."""
        async for name in self._cache.arrivals():
            self.notify_messages_available([name])

    async def close(self) -> None:
        await self._waiters.close()
        runners = list(self._fills.values()) + list(self._move_runners.values())
        for task in runners:
            task.cancel()
        for task in runners:
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
        given = validation.normalize_queue_attributes(attributes, creating=True)
        if not fifo:
            given.pop("FifoQueue", None)
        defaults = {**DEFAULT_QUEUE_ATTRIBUTES}
        if fifo:
            defaults.update(validation.FIFO_QUEUE_DEFAULTS)
        validation.validate_queue_type_attributes({**defaults, **given}, fifo)
        validation.validate_tags(tags, queue_name=name)
        await self._check_redrive_policy(name, given, fifo)
        await self._check_not_deleted_recently(name)
        now_s = int(self._clock())
        candidate = Queue(
            name=name,
            queue_id=uuid.uuid4().hex,
            attributes={**defaults, **given},
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
        await self._catalog.record_deletion(name, self._now_ms())
        self._forget(name)
        self._deliveries.forget_queue(queue.queue_id)
        await self._store.drop(queue)
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
        validation.validate_queue_type_attributes({**queue.attributes, **given}, queue.fifo)
        await self._check_redrive_policy(name, given, queue.fifo)
        merged = {**queue.attributes, **given}
        for cleared in [k for k in redrive.CLEARABLE_ATTRIBUTES if merged.get(k) == ""]:
            del merged[cleared]  # an empty policy removes it, as in SQS
        updated = replace(
            queue,
            attributes=merged,
            last_modified_timestamp=int(self._clock()),
        )
        await self._catalog.save(updated)
        self._queues[name] = (updated, self._clock())

    async def purge_queue(self, name: str) -> None:
        queue = await self._queue(name)
        now_ms = self._now_ms()
        last_purge = await self._catalog.last_purge_ms(queue)
        if last_purge is not None and 0 <= now_ms - last_purge < PURGE_INTERVAL_MS:
            raise PurgeQueueInProgress(
                f"Only one PurgeQueue operation on {name} is allowed every 60 seconds."
            )
        await self._catalog.record_purge(queue, now_ms)
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
        group_id = deduplication_id = None
        if queue.fifo:
            validation.validate_fifo_send(
                request.message_group_id, request.message_deduplication_id,
                request.delay_seconds, queue.content_based_deduplication,
            )
            group_id = request.message_group_id
            deduplication_id = request.message_deduplication_id or hashlib.sha256(
                request.body.encode("utf-8")
            ).hexdigest()
        if request.delay_seconds is None or queue.fifo:
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
            group_id=group_id,
            deduplication_id=deduplication_id,
        )

    async def _deliver(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Store durably (the acknowledgement point), then add to the cache if it is up.

        FIFO queues number the messages first (no deduplication: messages moved by a
        redrive or a move task)."""
        if queue.fifo:
            await self._send_fifo(queue, messages, deduplicate=False)
            return
        await self._store.put(queue, messages)
        self._telemetry.messages_sent(queue.name, len(messages))
        await self._add_to_cache(queue, messages, self._now_ms())

    async def _add_to_cache(
        self,
        queue: Queue,
        stored: Sequence[Message],
        now_ms: int,
        deduplication_keys: Mapping[str, str] | None = None,
    ) -> None:
        """Add messages the store already holds to the cache; a cache that is down or not
        filled misses them, so it is marked for a refill instead."""
        try:
            added = await self._cache.add(
                queue.name, stored, now_ms, queue.queue_id, deduplication_keys
            )
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
        if queue.fifo:
            return (await self._send_fifo(queue, [message]))[0]
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
        if built and queue.fifo:
            results = await self._send_fifo(queue, [m for _, m in built])
            return BatchResult([(i, r) for (i, _), r in zip(built, results, strict=True)], failed)
        if built:
            await self._deliver(queue, [m for _, m in built])
        return BatchResult([(i, self._sent(m)) for i, m in built], failed)

    # --- FIFO sending ------------------------------------------------------------------------
    @staticmethod
    def _deduplication_key(queue: Queue, message: Message) -> str:
        """Under DeduplicationScope=messageGroup the same id in two groups is two messages
        (a newline cannot occur in either id, so it separates them)."""
        if queue.deduplication_per_group:
            return f"{message.group_id}\n{message.deduplication_id}"
        return message.deduplication_id or ""

    async def _send_fifo(
        self, queue: Queue, messages: Sequence[Message], *, deduplicate: bool = True
    ) -> list[SendResult]:
        """Number, deduplicate, store and cache FIFO messages; one result per message, in
        order (a duplicate answers with the MessageId and SequenceNumber of the original).

        The cache numbers the messages and holds their deduplication keys before anything
        is stored (`admit`), so that order and deduplication are decided in one place; the
        store then keeps the messages and the deduplication records (which a refilled cache
        loads back), and only then does the cache mark the keys as taken. A send that fails
        before that gives its keys up. FIFO sends need the queue's Redis: while it is
        unreachable they fail with ServiceUnavailable (which SDKs retry) rather than risk
        order or a duplicate.
        """
        if not messages:
            return []
        keys = [self._deduplication_key(queue, m) if deduplicate else "" for m in messages]
        candidates = list(zip(keys, (m.message_id for m in messages), strict=True))
        outcomes = await self._admit(queue, candidates)
        by_key_in_store: dict[str, Deduplication] = {}
        if not outcomes.cache_ready and deduplicate:
            # A cache that is being (re)filled may not know every key yet: ask the store.
            fresh = [k for k, o in zip(keys, outcomes.outcomes, strict=True) if o.outcome == "new"]
            records = await self._store.deduplications(queue, fresh)
            by_key_in_store = {r.key: r for r in records}
            if by_key_in_store:
                await self._abandon(queue, [
                    (k, m.message_id) for k, m in zip(keys, messages, strict=True)
                    if k in by_key_in_store
                ])
                await self._cache.load_deduplications(
                    queue.name, queue.queue_id, records, self._now_ms()
                )
        numbered: list[Message] = []
        results: list[SendResult] = []
        now_ms = self._now_ms()
        for key, message, admission in zip(keys, messages, outcomes.outcomes, strict=True):
            original, sequence = admission.message_id, admission.sequence_number
            if key in by_key_in_store:
                original = by_key_in_store[key].message_id
                sequence = by_key_in_store[key].sequence_number
            elif admission.outcome == "new":
                numbered.append(replace(message, sequence_number=sequence))
            results.append(replace(self._sent(message), message_id=original,
                                   sequence_number=format_sequence_number(sequence)))
        if not numbered:
            return results
        sequences = {m.message_id: m.sequence_number or 0 for m in numbered}
        records = [
            Deduplication(key, m.message_id, sequences[m.message_id],
                          now_ms + DEDUPLICATION_INTERVAL_MS)
            for key, m in zip(keys, messages, strict=True)
            if key and m.message_id in sequences
        ]
        try:
            await asyncio.gather(
                self._store.put(queue, numbered),
                self._store.record_deduplications(queue, records),
            )
        except BaseException:
            with contextlib.suppress(StorageUnavailable):
                await self._abandon(queue, [(r.key, r.message_id) for r in records])
            raise
        self._telemetry.messages_sent(queue.name, len(numbered))
        await self._add_to_cache(
            queue, numbered, now_ms, {r.message_id: r.key for r in records}
        )
        return results

    async def _admit(self, queue: Queue, candidates: list[tuple[str, str]]) -> FifoAdmission:
        """`MessageCache.admit`, waiting a little while another send holding one of the
        keys is still being stored (its outcome decides whether these are duplicates)."""
        deadline = self._clock() + FIFO_ADMISSION_WAIT_SECONDS
        while True:
            admission = await self._cache.admit(
                queue.name, queue.queue_id, candidates, self._now_ms()
            )
            if all(o.outcome != "pending" for o in admission.outcomes):
                return admission
            if self._clock() >= deadline:
                await self._abandon(queue, [
                    c for c, o in zip(candidates, admission.outcomes, strict=True)
                    if o.outcome == "new"
                ])
                raise StorageUnavailable(
                    "A message with the same deduplication id is still being stored; retry."
                )
            await asyncio.sleep(0.05)

    async def _abandon(self, queue: Queue, admitted: Sequence[tuple[str, str]]) -> None:
        admitted = [(k, i) for k, i in admitted if k]
        if admitted:
            await self._cache.abandon(queue.name, queue.queue_id, admitted)

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
        attempt_id = request.receive_request_attempt_id if queue.fifo else None
        if attempt_id is not None:
            validation.validate_fifo_identifier(attempt_id, "ReceiveRequestAttemptId")
        deadline = self._clock() + wait
        listening = False
        while True:
            try:
                deliveries = await self._receive_once(
                    queue, request.max_number_of_messages, timeout, attempt_id
                )
            except StorageBusy:
                if wait <= 0:
                    raise
                deliveries = []  # this process is loaded: look again when woken
            remaining = deadline - self._clock()
            if deliveries or remaining <= 0:
                break
            if not listening:  # sends through other processes publish a wake-up for us
                listening = await self._listen(name, remaining)
            self._telemetry.long_poll_waiting(1)
            try:
                await self._waiters.wait(name, remaining)
            finally:
                self._telemetry.long_poll_waiting(-1)
            queue = await self._queue(name)
        self._waiters.pass_on(name, len(deliveries), request.max_number_of_messages)
        return [self._received(queue, d, request) for d in deliveries]

    async def _listen(self, name: str, seconds: float) -> bool:
        try:
            await self._cache.listen(name, int(seconds * 1000) + 1000)
        except StorageError:
            return False
        return True

    async def _receive_once(
        self, queue: Queue, count: int, timeout: int, attempt_id: str | None = None
    ) -> list[Delivery]:
        if queue.fifo:
            return await self._receive_fifo_once(queue, count, timeout, attempt_id)
        now_ms = self._now_ms()
        nonces = [new_nonce() for _ in range(count)]
        try:
            await self._refresh_if_stale(queue)
            dead_letter_queue, max_receives = await self._dead_letter_target(queue)
            outcome = await self._cache.receive_redriving(
                queue.name, count, timeout * 1000, now_ms, queue.retention_seconds * 1000, nonces,
                max_receives,
            )
            deliveries = None if outcome is None else outcome[0]
            if outcome is not None and outcome[1] and dead_letter_queue is not None:
                await self._move_to_dead_letter_queue(queue, dead_letter_queue, outcome[1])
        except StorageUnavailable:
            deliveries = None
        from_cache = deliveries is not None
        if deliveries is None:
            self._start_fill_soon(queue)
            deliveries = await self._receive_from_store(queue, count, now_ms)
        self._count_deliveries(queue, deliveries, from_cache)
        if timeout > 0:
            for delivery in deliveries:
                self._deliveries.record(
                    queue.queue_id, delivery.message.message_id, now_ms + timeout * 1000
                )
        return deliveries

    async def _receive_fifo_once(
        self, queue: Queue, count: int, timeout: int, attempt_id: str | None
    ) -> list[Delivery]:
        """One receive from a FIFO queue. Order and group locks live in the cache, so while
        it is not ready (or its Redis is away) nothing is handed out: the store cannot say
        which groups are locked. The cache is refilled meanwhile, as for standard queues."""
        now_ms = self._now_ms()
        nonces = [new_nonce() for _ in range(count)]
        try:
            await self._refresh_if_stale(queue)
            dead_letter_queue, max_receives = await self._dead_letter_target(queue)
            outcome = await self._cache.receive_fifo(
                queue.name, count, timeout * 1000, now_ms, queue.retention_seconds * 1000,
                nonces, max_receives, attempt_id,
            )
            if outcome is not None and outcome[1] and dead_letter_queue is not None:
                await self._move_to_dead_letter_queue(queue, dead_letter_queue, outcome[1])
        except StorageUnavailable:
            outcome = None
        if outcome is None:
            self._start_fill_soon(queue)
            return []
        deliveries = outcome[0]
        self._count_deliveries(queue, deliveries, True)
        if timeout > 0:
            for delivery in deliveries:
                self._deliveries.record(
                    queue.queue_id, delivery.message.message_id, now_ms + timeout * 1000
                )
        return deliveries

    def _count_deliveries(
        self, queue: Queue, deliveries: Sequence[Delivery], from_cache: bool
    ) -> None:
        """Report a receive pass, with the deliveries that repeat (or may repeat) earlier
        ones by reason, so operators can see why duplicates happen."""
        telemetry = self._telemetry
        telemetry.messages_received(queue.name, len(deliveries), from_cache)
        telemetry.serving_from_store(queue.name, not from_cache)
        if not from_cache:
            telemetry.messages_redelivered(queue.name, Redelivery.STORE_FALLBACK, len(deliveries))
            return
        again = sum(1 for delivery in deliveries if delivery.receive_count > 1)
        reloaded = sum(1 for delivery in deliveries if delivery.reloaded)
        telemetry.messages_redelivered(queue.name, Redelivery.VISIBILITY_TIMEOUT, again)
        telemetry.messages_redelivered(queue.name, Redelivery.REFILL, reloaded)

    async def _receive_from_store(self, queue: Queue, count: int, now_ms: int) -> list[Delivery]:
        """Return-From-Cassandra: serve live messages straight from the durable store,
        skipping those this process handed out and that are still hidden."""
        hidden = self._deliveries.hidden(queue.queue_id, now_ms)
        # Read more than asked and pick at random: processes serving the same queue from the
        # store then hand out fewer of the same messages.
        sample = await self._store.sample(queue, 2 * count + min(len(hidden), 100), now_ms)
        candidates = [m for m in sample if m.message_id not in hidden]
        chosen = random.sample(candidates, min(count, len(candidates)))
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
        if message.group_id is not None:
            system["MessageGroupId"] = message.group_id
        if message.deduplication_id is not None:
            system["MessageDeduplicationId"] = message.deduplication_id
        if message.sequence_number is not None:
            system["SequenceNumber"] = format_sequence_number(message.sequence_number)
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
            if queue.fifo:  # deduplication outlives a Redis loss: the store keeps the keys
                await self._cache.load_deduplications(
                    name, queue.queue_id, await self._store.deduplications(queue),
                    self._now_ms(),
                )
            loaded = 0
            self.fills_in_progress[name] = 0
            self._telemetry.fill_started(name)
            async for page in self._store.scan(queue, self._tuning.cache_fill_page_size):
                now_ms = self._now_ms()
                hidden = self._deliveries.hidden(queue.queue_id, now_ms)
                if not await self._cache.load(name, self._owner, page, now_ms, hidden):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                loaded += len(page)
                self.fills_in_progress[name] = loaded
                self._telemetry.fill_progress(name, len(page))
                if not await self._cache.renew_fill(name, self._owner, lease_ms):
                    log.warning("lost the fill lease of queue %s after %d messages", name, loaded)
                    return
                if self._clock() - last_report >= 5:
                    last_report = self._clock()
                    log.info("filling queue %s: %d messages loaded so far", name, loaded)
            now_ms = self._now_ms()
            late = self._deliveries.hidden(queue.queue_id, now_ms)
            if await self._cache.finish_fill(name, self._owner, now_ms, late):
                self._telemetry.fill_finished(name, True)
                log.info(
                    "cache of queue %s filled with %d messages in %.1f s",
                    name, loaded, self._clock() - started,
                )
                self.notify_messages_available([name])
        except StorageError as exc:
            log.warning("cache fill of queue %s interrupted: %s", name, exc)
            await self._give_up_fill_lease(name)
        finally:
            if self.fills_in_progress.pop(name, None) is not None:
                self._telemetry.fill_finished(name, False)  # no-op once reported as completed

    async def _give_up_fill_lease(self, name: str) -> None:
        """Give the fill lease up (if still ours) so the next request retries the fill,
        instead of every process waiting for the lease to expire. Tried for a few seconds:
        right after a failure the cache refuses calls for a moment (its circuit breaker)."""
        for attempt in range(FILL_LEASE_RELEASE_ATTEMPTS):
            try:
                await self._cache.renew_fill(name, self._owner, 1)
                return
            except StorageError:
                if attempt + 1 < FILL_LEASE_RELEASE_ATTEMPTS:
                    await asyncio.sleep(1.0)

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
        self._telemetry.messages_deleted(name, 1)

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
                expired = await self._cache.trim_expired(
                    name, now_ms, queue.retention_seconds * 1000
                )
                self._telemetry.messages_expired(name, expired)
                trimmed += expired
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

    # --- dead-letter queues ------------------------------------------------------------------
    async def _queue_for_arn(self, arn: str) -> Queue:
        """The queue an ARN of this service names; QueueDoesNotExist otherwise."""
        name = redrive.queue_name_from_arn(arn)
        if name is None or arn != self.queue_arn(name):
            raise QueueDoesNotExist("The specified queue does not exist.")
        return await self._queue(name)

    async def _check_redrive_policy(
        self, name: str, given: Mapping[str, str], fifo: bool
    ) -> None:
        """A RedrivePolicy must name an existing queue of the same type (FIFO to FIFO,
        standard to standard) whose RedriveAllowPolicy lets this queue use it."""
        value = given.get("RedrivePolicy")
        policy = redrive.parse_redrive_policy(value)
        if policy is None:
            return
        reason = None
        try:
            target = await self._queue_for_arn(policy.dead_letter_target_arn)
        except QueueDoesNotExist:
            reason = "Dead letter target does not exist."
        else:
            if target.fifo != fifo:
                reason = (
                    "Dead-letter target must be a FIFO queue for a FIFO source queue."
                    if fifo
                    else "Dead-letter target must be a standard queue for a standard source queue."
                )
            elif not redrive.redrive_allowed(
                target.attributes.get("RedriveAllowPolicy"), self.queue_arn(name)
            ):
                reason = (
                    "Dead-letter target owner does not allow this source queue to redrive"
                    " messages."
                )
        if reason is not None:
            raise InvalidParameterValue(
                f"Value {value} for parameter RedrivePolicy is invalid. Reason: {reason}"
            )

    async def _dead_letter_target(self, queue: Queue) -> tuple[Queue | None, int]:
        """The queue's dead-letter queue and maxReceiveCount; (None, 0) without a usable
        RedrivePolicy (unset, or its target deleted since)."""
        policy = redrive.parse_redrive_policy(queue.attributes.get("RedrivePolicy"))
        if policy is None or policy.max_receive_count < 1:
            return None, 0
        try:
            return await self._queue_for_arn(policy.dead_letter_target_arn), policy.max_receive_count
        except QueueDoesNotExist:
            return None, 0

    async def _move_to_dead_letter_queue(
        self, source: Queue, target: Queue, messages: Sequence[Message]
    ) -> None:
        """Move messages the cache took out of `source` for exceeding maxReceiveCount.

        Kept: the MessageId, body, attributes and SentTimestamp. As AWS documents for
        standard queues, expiry stays based on the original enqueue time, so a message
        expires from the dead-letter queue once it is older than that queue's retention
        period; a FIFO dead-letter queue resets the enqueue time, as AWS does, and numbers
        the message anew (group and deduplication id kept). The source queue's ARN is kept in a hidden system attribute for move tasks.
        Order: the dead-letter queue's store, then its cache, then the delete from the
        source's store, so a failure in between duplicates a message rather than losing it.
        """
        now_ms = self._now_ms()
        redrive_attribute = MessageAttributeValue(
            "String", string_value=self.queue_arn(source.name)
        )
        moved = [
            replace(
                message,
                visible_at_ms=now_ms,
                system_attributes={
                    **message.system_attributes,
                    redrive.DEAD_LETTER_SOURCE_ATTRIBUTE: redrive_attribute,
                },
            )
            for message in messages
        ]
        retention_ms = target.retention_seconds * 1000
        if target.fifo:
            # AWS resets the enqueue time of a message moved to a FIFO dead-letter queue.
            moved = [replace(m, sent_timestamp_ms=now_ms) for m in moved]
        live = [m for m in moved if m.sent_timestamp_ms + retention_ms > now_ms]
        try:
            if target.fifo:
                await self._send_fifo(target, live, deduplicate=False)
                live = []
            await asyncio.gather(*(
                self._store.put(_with_retention(target, m, now_ms), [m]) for m in live
            ))
            if live:
                await self._add_to_cache(target, live, now_ms)
            await asyncio.gather(*(self._store.delete(source, m.message_id) for m in messages))
        except StorageUnavailable:
            # The messages are still in the source's store: reload the source's cache.
            log.warning("moving %d messages of %s to its DLQ failed", len(messages), source.name)
            self._stale_caches.add(source.name)
            return
        for message in messages:
            self._deliveries.forget(source.queue_id, message.message_id)
        self._telemetry.messages_moved_to_dead_letter_queue(source.name, len(messages))

    async def _source_queue_names(self, dead_letter_queue: str) -> list[str]:
        """Every queue whose RedrivePolicy names `dead_letter_queue`, sorted."""
        arn = self.queue_arn(dead_letter_queue)

        async def points_here(name: str) -> bool:
            try:
                queue = await self._queue(name)
            except QueueDoesNotExist:
                return False
            policy = redrive.parse_redrive_policy(queue.attributes.get("RedrivePolicy"))
            return policy is not None and policy.dead_letter_target_arn == arn

        names = await self._catalog.list_names()
        found = await asyncio.gather(*(points_here(name) for name in names))
        return sorted(name for name, hit in zip(names, found, strict=True) if hit)

    async def list_dead_letter_source_queues(
        self, name: str, max_results: int | None, next_token: str | None
    ) -> tuple[list[str], str | None]:
        await self._queue(name)
        if max_results is not None and not 1 <= max_results <= LIST_QUEUES_LIMIT:
            raise InvalidParameterValue(
                f"Value {max_results} for parameter MaxResults is invalid. "
                "Reason: MaxResults must be an integer between 1 and 1000."
            )
        names = await self._source_queue_names(name)
        if next_token:
            names = [n for n in names if n > _read_name_token(next_token)]
        if max_results is None:
            return names[:LIST_QUEUES_LIMIT], None
        page = names[:max_results]
        more = len(names) > max_results
        return page, _name_token(page[-1]) if more else None

    # --- permissions -------------------------------------------------------------------------
    async def add_permission(
        self, name: str, label: str, account_ids: Sequence[str], actions: Sequence[str]
    ) -> None:
        queue = await self._queue(name)
        policy = redrive.add_permission(
            queue.attributes.get("Policy"), self.queue_arn(name), label, account_ids, actions
        )
        await self._save(replace(
            queue, attributes={**queue.attributes, "Policy": policy},
            last_modified_timestamp=int(self._clock()),
        ))

    async def remove_permission(self, name: str, label: str) -> None:
        queue = await self._queue(name)
        policy = redrive.remove_permission(queue.attributes.get("Policy"), label)
        attributes = {k: v for k, v in queue.attributes.items() if k != "Policy"}
        if policy is not None:
            attributes["Policy"] = policy
        await self._save(replace(
            queue, attributes=attributes, last_modified_timestamp=int(self._clock())
        ))

    async def _check_not_deleted_recently(self, name: str) -> None:
        cooldown = self._tuning.queue_deleted_recently_seconds
        if cooldown <= 0:
            return
        deleted = await self._catalog.deleted_ms(name)
        if deleted is None or self._now_ms() - deleted >= cooldown * 1000:
            return
        if await self._catalog.get(name) is not None:
            return  # re-created since: CreateQueue answers with the existing queue
        raise QueueDeletedRecently(
            f"You must wait {cooldown:g} seconds after deleting a queue before you can create"
            " another with the same name."
        )

    # --- message move tasks ------------------------------------------------------------------
    async def _queue_named_by(self, arn: str, parameter: str) -> Queue:
        try:
            return await self._queue_for_arn(arn)
        except QueueDoesNotExist:
            raise ResourceNotFound(
                f"The resource that you specified for the {parameter} parameter doesn't exist."
            ) from None

    async def start_message_move_task(
        self, source_arn: str, destination_arn: str | None, max_per_second: int | None
    ) -> str:
        """Start moving the messages of a dead-letter queue; returns the task handle."""
        source = await self._queue_named_by(source_arn, "SourceArn")
        if max_per_second is not None and not 1 <= max_per_second <= MAX_MOVE_TASK_RATE:
            raise InvalidParameterValue(
                f"Value {max_per_second} for parameter MaxNumberOfMessagesPerSecond is"
                f" invalid. Reason: must be between 1 and {MAX_MOVE_TASK_RATE}."
            )
        if destination_arn:
            await self._queue_named_by(destination_arn, "DestinationArn")
        if not await self._source_queue_names(source.name):
            raise InvalidParameterValue("Source queue must be configured as a Dead Letter Queue.")
        if any(task.status.active for task in await self._catalog.move_tasks(source_arn)):
            raise InvalidParameterValue(
                "There is already a task running. Only one active task is allowed for a source"
                " queue arn at a given time."
            )
        now_ms = self._now_ms()
        task = MessageMoveTask(
            task_id=uuid.uuid4().hex,
            source_arn=source_arn,
            destination_arn=destination_arn or None,
            max_per_second=max_per_second,
            status=MoveTaskStatus.RUNNING,
            started_ms=now_ms,
            to_move=(await self._counts(source)).visible,
            owner=self._owner,
            heartbeat_ms=now_ms,
        )
        await self._catalog.save_move_task(task)
        self._run_move_task(task)
        return redrive.task_handle(task)

    async def list_message_move_tasks(
        self, source_arn: str, max_results: int | None
    ) -> list[MessageMoveTask]:
        """The most recent tasks of the source queue, newest first (1 unless asked for up
        to 10)."""
        await self._queue_named_by(source_arn, "SourceArn")
        limit = 1 if max_results is None else max_results
        if not 1 <= limit <= 10:
            raise InvalidParameterValue(
                f"Value {limit} for parameter MaxResults is invalid. Reason: You must enter a"
                " number that's between 1 and 10."
            )
        return (await self._catalog.move_tasks(source_arn))[:limit]

    async def cancel_message_move_task(self, handle: str) -> int:
        """Ask a RUNNING task to stop; returns how many messages it has moved so far."""
        source_arn, task_id = redrive.read_task_handle(handle)
        await self._queue_named_by(source_arn, "SourceArn")
        task = await self._catalog.move_task(source_arn, task_id)
        if task is None:
            raise ResourceNotFound("Task does not exist.")
        if task.status is not MoveTaskStatus.RUNNING:
            raise InvalidParameterValue(
                "Only active tasks can be cancelled."
            )
        await self._catalog.request_move_cancel(source_arn, task_id)
        return task.moved

    def _run_move_task(self, task: MessageMoveTask) -> None:
        if task.task_id in self._move_runners:
            return
        runner = asyncio.get_running_loop().create_task(
            self._move_messages(task), name=f"cqs-move-task {task.task_id}"
        )
        self._move_runners[task.task_id] = runner
        runner.add_done_callback(lambda _: self._move_runners.pop(task.task_id, None))

    async def resume_message_move_tasks(self) -> int:
        """Take over the active move tasks whose process stopped reporting (it died or was
        restarted); returns how many this process took over."""
        lease_ms = int(self._tuning.move_task_lease_seconds * 1000)
        taken = 0
        for task in await self._catalog.active_move_tasks():
            if task.task_id in self._move_runners:
                continue
            if self._now_ms() - task.heartbeat_ms < lease_ms:
                continue
            claimed = replace(task, owner=self._owner, heartbeat_ms=self._now_ms())
            await self._catalog.save_move_task(claimed)
            # No lightweight transactions: let a racing claimer's write land, then re-read.
            await asyncio.sleep(0.2)
            current = await self._catalog.move_task(task.source_arn, task.task_id)
            if current is not None and current.owner == self._owner:
                log.info("resuming message move task %s of %s", task.task_id, task.source_arn)
                self._run_move_task(current)
                taken += 1
        return taken

    async def _finish_move_task(
        self, task: MessageMoveTask, status: MoveTaskStatus, reason: str | None = None
    ) -> None:
        await self._catalog.save_move_task(replace(
            task, status=status, failure_reason=reason, heartbeat_ms=self._now_ms()
        ))

    async def _move_messages(self, task: MessageMoveTask) -> None:
        """Run one move task until it completes, fails, is cancelled or is taken over:
        receive a batch from the dead-letter queue (through the cache), send each message to
        its destination as a new message, delete it from the dead-letter queue, report."""
        while True:
            try:
                current = await self._catalog.move_task(task.source_arn, task.task_id)
                if current is None or current.owner != self._owner:
                    return
                task = current
                if task.status is MoveTaskStatus.CANCELLING:
                    await self._finish_move_task(task, MoveTaskStatus.CANCELLED)
                    return
                if task.status is not MoveTaskStatus.RUNNING:
                    return
                if task.moved >= task.to_move:
                    await self._finish_move_task(task, MoveTaskStatus.COMPLETED)
                    return
                started = self._clock()
                outcome = await self._move_batch(task)
                if isinstance(outcome, str):
                    await self._finish_move_task(task, MoveTaskStatus.FAILED, outcome)
                    return
                if outcome == 0:
                    if await self._move_source_in_flight(task):
                        task = replace(task, heartbeat_ms=self._now_ms())
                        await self._catalog.record_move_progress(task)
                        await asyncio.sleep(1.0)  # held by a consumer or a dead runner
                        continue
                    await self._finish_move_task(task, MoveTaskStatus.COMPLETED)
                    return
                task = replace(task, moved=task.moved + outcome, heartbeat_ms=self._now_ms())
                await self._catalog.record_move_progress(task)
                if task.max_per_second:
                    pause = outcome / task.max_per_second - (self._clock() - started)
                    await asyncio.sleep(max(0.0, pause))
            except asyncio.CancelledError:
                raise
            except StorageUnavailable as exc:
                log.warning("message move task %s waits for storage: %s", task.task_id, exc)
                await asyncio.sleep(1.0)
            except Exception:
                log.exception("message move task %s failed", task.task_id)
                await self._finish_move_task(task, MoveTaskStatus.FAILED, "InternalError")
                return

    async def _move_batch(self, task: MessageMoveTask) -> int | str:
        """Move up to ten messages; how many moved, or the failure reason that stops the task."""
        try:
            source = await self._queue_for_arn(task.source_arn)
        except QueueDoesNotExist:
            return "AWS.SimpleQueueService.NonExistentQueue"
        count = min(10, task.to_move - task.moved, task.max_per_second or 10)
        deliveries = await self._receive_once(source, count, MOVE_TASK_VISIBILITY_TIMEOUT)
        moved = 0
        for index, delivery in enumerate(deliveries):
            message = delivery.message
            origin = message.system_attributes.get(redrive.DEAD_LETTER_SOURCE_ATTRIBUTE)
            target_arn = task.destination_arn or (origin.string_value if origin else None)
            reason = None
            if not target_arn:
                reason = "CouldNotDetermineMessageSource"
            else:
                try:
                    destination = await self._queue_for_arn(target_arn)
                except QueueDoesNotExist:
                    reason = "AWS.SimpleQueueService.NonExistentQueue"
            if reason is not None:
                await self._release(source, deliveries[index:])
                return reason
            await self._deliver(destination, [self._redriven(message)])
            await self._delete_delivered(source, delivery)
            moved += 1
        return moved

    async def _move_source_in_flight(self, task: MessageMoveTask) -> bool:
        """Whether messages the task still has to move are in flight in its source queue."""
        try:
            source = await self._queue_for_arn(task.source_arn)
        except QueueDoesNotExist:
            return False
        return (await self._counts(source)).in_flight > 0

    def _redriven(self, message: Message) -> Message:
        """A moved-back message is a new message (new MessageId, SentTimestamp and
        retention period, as AWS documents for redrive), with the same body and attributes."""
        now_ms = self._now_ms()
        system = {
            k: v for k, v in message.system_attributes.items()
            if k != redrive.DEAD_LETTER_SOURCE_ATTRIBUTE
        }
        return replace(
            message,
            message_id=new_message_id(),
            sent_timestamp_ms=now_ms,
            visible_at_ms=now_ms,
            system_attributes=system,
            md5_of_system_attributes=checksums.md5_of_system_attributes(system),
        )

    async def _delete_delivered(self, queue: Queue, delivery: Delivery) -> None:
        message_id = delivery.message.message_id
        try:
            await self._cache.delete(queue.name, message_id, delivery.receipt_nonce)
        except StorageUnavailable:
            self._stale_caches.add(queue.name)
        self._deliveries.forget(queue.queue_id, message_id)
        await self._store.delete(queue, message_id)

    async def _release(self, queue: Queue, deliveries: Sequence[Delivery]) -> None:
        """Make messages a failed move task held visible again."""
        now_ms = self._now_ms()
        for delivery in deliveries:
            message_id = delivery.message.message_id
            self._deliveries.forget(queue.queue_id, message_id)
            try:
                await self._cache.change_visibility(
                    queue.name, message_id, delivery.receipt_nonce, now_ms
                )
            except StorageUnavailable:
                pass


def _batch_result(entry_ids: Sequence[str], outcomes: Sequence[object]) -> BatchResult[None]:
    """Split per-entry outcomes: SQS errors become failed entries, anything else is raised."""
    successful: list[tuple[str, None]] = []
    failed: list[BatchFailure] = []
    for entry_id, outcome in zip(entry_ids, outcomes, strict=True):
        if isinstance(outcome, StorageError):
            raise outcome
        if isinstance(outcome, CqsError):
            failed.append(BatchFailure(entry_id, outcome))
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            successful.append((entry_id, None))
    return BatchResult(successful, failed)


def _with_retention(queue: Queue, message: Message, now_ms: int) -> Queue:
    """`queue` with the retention left to a moved message whose expiry stays based on its
    original enqueue time (the store writes it with that TTL)."""
    remaining_ms = message.sent_timestamp_ms + queue.retention_seconds * 1000 - now_ms
    seconds = max(1, -(-remaining_ms // 1000))
    return replace(queue, attributes={**queue.attributes, "MessageRetentionPeriod": str(seconds)})


def _name_token(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def _read_name_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidParameterValue("Invalid NextToken value.") from exc


__all__ = ["MessageAttributeValue", "QueueService", "ServiceTuning", "new_message_id"]
