"""Sender: SendMessage and SendMessageBatch, and delivering messages the service moves.

Owns the acknowledgement order of a send: the durable store first (the acknowledgement
point), then the cache if it can take the messages; FIFO queues go through `FifoSender`.
Imports model, errors, validation, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from cqs.domain import validation
from cqs.domain.errors import CqsError
from cqs.domain.model import BatchFailure, BatchResult, Message, Queue, SendRequest, SendResult
from cqs.ports import MessageStore, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.fifo import FifoSender
from cqs.service.messages import build_message, send_result

MAX_BATCH_PAYLOAD_BYTES = 1_048_576


def validate_batch(entries: Sequence[tuple[str, SendRequest]]) -> None:
    """Refuse the whole batch: bad or repeated entry ids, or over 1 MiB of payload."""
    validation.validate_batch_entries([entry_id for entry_id, _ in entries])
    total = sum(validation.message_size(r.body, r.message_attributes) for _, r in entries)
    validation.validate_batch_size(total, MAX_BATCH_PAYLOAD_BYTES)


def build_entries(
    entries: Sequence[tuple[str, SendRequest]], build: Callable[[SendRequest], Message]
) -> tuple[list[tuple[str, Message]], list[BatchFailure]]:
    """Each entry's message, or its failure (an entry's error fails that entry alone)."""
    built: list[tuple[str, Message]] = []
    failed: list[BatchFailure] = []
    for entry_id, request in entries:
        try:
            built.append((entry_id, build(request)))
        except CqsError as error:
            failed.append(BatchFailure(entry_id, error))
    return built, failed


async def with_group_copies(
    delivery: Awaitable[None], group_copies: Awaitable[None] | None
) -> None:
    """A send is acknowledged once its queue's copy and every consumer group's are stored;
    the two are written at the same time."""
    if group_copies is None:  # no groups: no tasks to gather
        await delivery
        return
    await asyncio.gather(delivery, group_copies)


class Sender:
    def __init__(
        self,
        store: MessageStore,
        cache_fill: CacheFiller,
        fifo: FifoSender,
        *,
        sender_id: str,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._cache_fill = cache_fill
        self._fifo = fifo
        self._sender_id = sender_id
        self._telemetry = telemetry
        self._clock = clock

    def now_ms(self) -> int:
        """The service clock in milliseconds: the sent time of a message built now."""
        return epoch_ms(self._clock)

    def build(self, queue: Queue, request: SendRequest, now_ms: int) -> Message:
        """The message a send asks for, sent at `now_ms` by this service's sender id."""
        return build_message(queue, request, now_ms, self._sender_id)

    async def send_message(self, queue: Queue, request: SendRequest) -> SendResult:
        message = self.build(queue, request, self.now_ms())
        if queue.fifo:
            return (await self._fifo.send(queue, [message]))[0]
        await self._deliver_sent(queue, [message])
        return send_result(message)

    async def send_message_batch(
        self, queue: Queue, entries: Sequence[tuple[str, SendRequest]], *, to_groups: bool = True
    ) -> BatchResult[SendResult]:
        """`to_groups=False`: no copies to the queue's consumer groups (a replay re-delivers
        to the consumers that consumed, each group replaying its own)."""
        validate_batch(entries)
        if queue.fifo:  # an entry without them fails the whole batch, as in SQS
            for _, request in entries:
                validation.validate_fifo_requirements(
                    request.message_group_id, request.message_deduplication_id,
                    queue.content_based_deduplication, in_batch=True,
                )
        now_ms = self.now_ms()
        built, failed = build_entries(
            entries, lambda request: self.build(queue, request, now_ms)
        )
        if built and queue.fifo:
            results = await self._fifo.send(queue, [m for _, m in built])
            return BatchResult([(i, r) for (i, _), r in zip(built, results, strict=True)], failed)
        if built and to_groups:
            await self._deliver_sent(queue, [m for _, m in built])
        elif built:
            await self.store_and_cache(queue, [m for _, m in built])
        return BatchResult([(i, send_result(m)) for i, m in built], failed)

    async def store_and_cache(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Store durably (the acknowledgement point), then add to the cache if it is up.

        FIFO queues number the messages first (no deduplication: messages moved by a
        redrive or a move task)."""
        if queue.fifo:
            await self._fifo.send(queue, messages, deduplicate=False)
            return
        await self._store.put(queue, messages)
        self._telemetry.messages_sent(queue.name, len(messages))
        await self._cache_fill.add(queue, messages, self.now_ms())

    # --- replays (issue 26): the store first, the cache only once the replay's cursor is
    # past the copies, so a copy no consumer can have seen is all a failure leaves in doubt.
    def build_replayed(self, queue: Queue, request: SendRequest, message_id: str) -> Message:
        """The message a replay sends, under the copy id its ledger holds."""
        message = self.build(queue, request, self.now_ms())
        return replace(message, message_id=message_id)

    async def store_replayed(self, queue: Queue, messages: Sequence[Message]) -> None:
        """Standard queues: store the copies (no cache add: `cache_replayed` follows)."""
        await self._store.put(queue, messages)
        self._telemetry.messages_sent(queue.name, len(messages))

    async def cache_replayed(self, queue: Queue, messages: Sequence[Message]) -> None:
        await self._cache_fill.add(queue, messages, self.now_ms())

    async def send_replayed_fifo(self, queue: Queue, messages: Sequence[Message]) -> None:
        """FIFO queues: numbered, deduplicated (by the original message id), stored, cached."""
        await self._fifo.send(queue, messages)

    def refill(self, queue: Queue) -> None:
        """Have the queue's cache reloaded from the store (copies stored but not cached)."""
        self._cache_fill.mark_stale(queue.identity)

    # --- consumer groups (#19) ---------------------------------------------------------------
    # Set by the service: stores copies of a send's messages in the queue's consumer groups.
    fan_out: Callable[[Queue, Sequence[Message]], Awaitable[None] | None] | None = None

    async def _deliver_sent(self, queue: Queue, messages: Sequence[Message]) -> None:
        """A send (not a move): to the queue and, at the same time, to its consumer groups;
        acknowledged once every copy is stored."""
        group_copies = self.fan_out(queue, messages) if self.fan_out is not None else None
        await with_group_copies(self.store_and_cache(queue, messages), group_copies)
