"""FifoSender: how a FIFO queue takes messages in: admission, deduplication, numbering.

Owns the order of a FIFO send: the cache numbers the messages and holds their deduplication
keys before anything is stored (`admit`), so that order and deduplication are decided in
one place; the store then keeps the messages and the deduplication records (which a
refilled cache loads back), and only then does the cache mark the keys as taken. A send
that fails before that gives its keys up. FIFO sends need the queue's Redis: while it is
unreachable they fail with ServiceUnavailable (which SDKs retry) rather than risk order or
a duplicate. Imports model, errors, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from cqs.domain.errors import StorageUnavailable
from cqs.domain.model import (
    DEDUPLICATION_INTERVAL_MS,
    AdmissionOutcome,
    Deduplication,
    DeduplicationClaim,
    FifoAdmission,
    Message,
    Queue,
    SendResult,
)
from cqs.ports import CachedMessages, MessageStore, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.messages import format_sequence_number, send_result

# How long a FIFO send waits for an earlier send with the same deduplication id to be stored.
FIFO_ADMISSION_WAIT_SECONDS = 5.0


def deduplication_key(queue: Queue, message: Message, *, per_group: bool | None = None) -> str:
    """Under DeduplicationScope=messageGroup the same id in two groups is two messages
    (a newline cannot occur in either id, so it separates them)."""
    if queue.deduplication_per_group if per_group is None else per_group:
        return f"{message.group_id}\n{message.deduplication_id}"
    return message.deduplication_id or ""


def deduplication_claim(queue: Queue, message: Message) -> DeduplicationClaim:
    """The key of the queue's DeduplicationScope, and the other scope's key to look up too:
    a message sent before the scope changed keeps deduplicating as it did (as AWS does)."""
    if not message.deduplication_id:
        return DeduplicationClaim("", message.message_id)
    return DeduplicationClaim(
        deduplication_key(queue, message),
        message.message_id,
        deduplication_key(queue, message, per_group=not queue.deduplication_per_group),
    )


class FifoSender:
    def __init__(
        self,
        messages: CachedMessages,
        store: MessageStore,
        cache_fill: CacheFiller,
        *,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._messages = messages
        self._store = store
        self._cache_fill = cache_fill
        self._telemetry = telemetry
        self._clock = clock

    async def send(
        self, queue: Queue, messages: Sequence[Message], *, deduplicate: bool = True
    ) -> list[SendResult]:
        """Number, deduplicate, store and cache FIFO messages; one result per message, in
        order (a duplicate answers with the MessageId and SequenceNumber of the original).
        `deduplicate=False` for messages moved by a redrive or a move task."""
        if not messages:
            return []
        claims = [
            deduplication_claim(queue, m) if deduplicate else DeduplicationClaim("", m.message_id)
            for m in messages
        ]
        keys = [claim.key for claim in claims]
        outcomes = await self._admit(queue, claims)
        by_key_in_store: dict[str, Deduplication] = {}
        if not outcomes.cache_ready and deduplicate:
            # A cache that is being (re)filled may not know every key yet: ask the store.
            fresh = [
                c for c, o in zip(claims, outcomes.outcomes, strict=True)
                if c.key and o.outcome is AdmissionOutcome.NEW
            ]
            records = await self._store.deduplications(
                queue, [k for c in fresh for k in (c.key, c.also) if k]
            )
            found = {r.key: r for r in records}
            for claim in fresh:
                record = found.get(claim.key) or found.get(claim.also)
                if record is not None:
                    by_key_in_store[claim.key] = record
            if by_key_in_store:
                await self._abandon(queue, [c for c in claims if c.key in by_key_in_store])
                await self._cache_fill.load_deduplications(queue, records)
        numbered: list[Message] = []
        results: list[SendResult] = []
        now_ms = epoch_ms(self._clock)
        for key, message, admission in zip(keys, messages, outcomes.outcomes, strict=True):
            original, sequence = admission.message_id, admission.sequence_number
            if key in by_key_in_store:
                original = by_key_in_store[key].message_id
                sequence = by_key_in_store[key].sequence_number
            elif admission.outcome is AdmissionOutcome.NEW:
                numbered.append(replace(message, sequence_number=sequence))
            results.append(replace(send_result(message), message_id=original,
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
                await self._abandon(
                    queue, [DeduplicationClaim(r.key, r.message_id) for r in records]
                )
            raise
        self._telemetry.messages_sent(queue.name, len(numbered))
        await self._cache_fill.add(
            queue, numbered, now_ms, {r.message_id: r.key for r in records}
        )
        return results

    async def _admit(self, queue: Queue, claims: list[DeduplicationClaim]) -> FifoAdmission:
        """`CachedMessages.admit`, waiting a little while another send holding one of the
        keys is still being stored (its outcome decides whether these are duplicates)."""
        deadline = self._clock() + FIFO_ADMISSION_WAIT_SECONDS
        while True:
            admission = await self._messages.admit(
                queue.identity, queue.queue_id, claims, epoch_ms(self._clock)
            )
            if all(o.outcome is not AdmissionOutcome.PENDING for o in admission.outcomes):
                return admission
            if self._clock() >= deadline:
                await self._abandon(queue, [
                    c for c, o in zip(claims, admission.outcomes, strict=True)
                    if o.outcome is AdmissionOutcome.NEW
                ])
                raise StorageUnavailable(
                    "A message with the same deduplication id is still being stored; retry."
                )
            await asyncio.sleep(0.05)

    async def _abandon(self, queue: Queue, admitted: Sequence[DeduplicationClaim]) -> None:
        admitted = [claim for claim in admitted if claim.key]
        if admitted:
            await self._messages.abandon(queue.identity, queue.queue_id, admitted)
