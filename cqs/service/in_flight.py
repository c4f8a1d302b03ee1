"""InFlightMessages: what happens to a received message through its receipt handle.

Owns DeleteMessage and ChangeMessageVisibility (and their batches): reading the receipt
handle, the cache's verdict (done, stale handle, not in flight, unknown; as in SQS a delete
with a handle from before the latest receive succeeds and deletes nothing, a visibility change
with one applies to the message, and one whose timeout already ran out still applies while no
receive has handed the message out since; a FIFO delete with a handle whose timeout ran
out is refused, as in SQS), the store delete (deferred
through the cache while the store is away), and what this process's own deliveries allow
while the cache is not ready. Also gives back or deletes the messages a move task holds.
Imports model, errors, validation, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from cqs.domain import validation
from cqs.domain.errors import (
    CqsError,
    InvalidParameterValue,
    MessageNotInflight,
    ReceiptHandleIsInvalid,
    StorageError,
    StorageUnavailable,
)
from cqs.domain.model import (
    BatchFailure,
    BatchResult,
    CacheState,
    DeleteOutcome,
    Delivery,
    Queue,
    QueueIdentity,
    VisibilityOutcome,
)
from cqs.domain.receipts import ReceiptSigner
from cqs.ports import CachedMessages, MessageStore, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms


class InFlightMessages:
    def __init__(
        self,
        messages: CachedMessages,
        store: MessageStore,
        cache_fill: CacheFiller,
        signer: ReceiptSigner,
        *,
        telemetry: Telemetry,
        clock: Callable[[], float],
        delete_stored: Callable[[Queue, Sequence[str]], Awaitable[None]] | None = None,
    ) -> None:
        self._messages = messages
        self._store = store
        # The store delete of DeleteMessage (peek and replay: it may keep a consumed copy).
        self._delete_stored = delete_stored or store.delete_many
        self._cache_fill = cache_fill
        self._deliveries = cache_fill.deliveries
        self._signer = signer
        self._telemetry = telemetry
        self._clock = clock

    async def delete_message(self, queue: Queue, receipt_handle: str) -> None:
        identity = queue.identity
        handle = self._signer.read(receipt_handle, identity.key)
        try:
            outcome = await self._messages.delete(
                identity, handle.message_id, handle.receipt_nonce
            )
        except StorageUnavailable:
            self._cache_fill.mark_stale(identity, [handle.message_id])
            outcome = DeleteOutcome.NOT_CACHED
        if outcome is DeleteOutcome.STALE_HANDLE:
            # As SQS: a handle from before the latest receive succeeds and deletes nothing;
            # the message stays with its current holder.
            return
        if outcome is DeleteOutcome.EXPIRED_HANDLE:
            # SQS's troubleshooting guide ("ReceiptHandle error") gives this code and text.
            raise InvalidParameterValue(
                f"Value {receipt_handle} for parameter ReceiptHandle is invalid. Reason: "
                "The receipt handle has expired."
            )
        self._deliveries.forget(queue.queue_id, handle.message_id)
        try:
            await self._delete_stored(queue, [handle.message_id])
        except StorageUnavailable:
            if outcome is not DeleteOutcome.DELETED or not await self._defer_store_delete(
                identity, handle.message_id
            ):
                raise
        self._telemetry.messages_deleted(queue.name, 1)

    async def _defer_store_delete(self, identity: QueueIdentity, message_id: str) -> bool:
        """The store is away but the cache took the delete: remember it in the cache (fills
        skip it) and flush it to the store later; False if the cache cannot remember it."""
        try:
            await self._messages.defer_store_delete(identity, message_id)
        except StorageUnavailable:
            return False
        return True

    async def change_message_visibility(
        self, queue: Queue, receipt_handle: str, visibility_timeout: int
    ) -> None:
        identity = queue.identity
        validation.validate_visibility_timeout(visibility_timeout)
        handle = self._signer.read(receipt_handle, identity.key)
        visible_at = epoch_ms(self._clock) + visibility_timeout * 1000
        cache_ready = True
        try:
            outcome = await self._messages.change_visibility(
                identity, handle.message_id, handle.receipt_nonce, visible_at
            )
            if outcome is not VisibilityOutcome.CHANGED:
                cache_ready = await self._messages.state(identity) is CacheState.READY
        except StorageUnavailable:
            outcome, cache_ready = VisibilityOutcome.NOT_IN_FLIGHT, False
        # Any handle of the message applies (as SQS), one from an earlier receive too.
        if outcome is VisibilityOutcome.CHANGED:
            self._deliveries.extend(queue.queue_id, handle.message_id, visible_at)
            return
        # Without a ready cache, a message this process handed out from the store is in
        # flight as far as anyone can know; its claim keeps other processes off it as long.
        if not cache_ready and self._deliveries.extend(
            queue.queue_id, handle.message_id, visible_at
        ):
            now_ms = epoch_ms(self._clock)
            await self._store.renew_claim(queue, handle.message_id, visible_at, now_ms)
            return
        reason = (
            f"Value {receipt_handle} for parameter ReceiptHandle is invalid. Reason: Message "
            "does not exist or is not available for visibility timeout change."
        )
        # As SQS: a deleted message's handle is an invalid value, not a message out of flight.
        if cache_ready and outcome is VisibilityOutcome.UNKNOWN:
            raise InvalidParameterValue(reason)
        raise MessageNotInflight(reason)

    async def delete_message_batch(
        self, queue: Queue, entries: Sequence[tuple[str, str]]
    ) -> BatchResult[None]:
        """One cache call and one store write for the whole batch; an entry whose handle
        cannot be read fails alone."""
        entry_ids = [entry_id for entry_id, _ in entries]
        validation.validate_batch_entries(entry_ids, "DeleteMessageBatch")
        identity = queue.identity
        outcomes: list[object] = []
        handles: list[tuple[str, str]] = []
        read: list[int] = []  # the index in `outcomes` of each readable handle
        for _, receipt_handle in entries:
            try:
                handle = self._signer.read(receipt_handle, identity.key)
            except CqsError as refused:
                outcomes.append(refused)
                continue
            read.append(len(outcomes))
            outcomes.append(None)
            handles.append((handle.message_id, handle.receipt_nonce))
        try:
            cached = await self._messages.delete_many(identity, handles)
        except StorageUnavailable:
            self._cache_fill.mark_stale(identity, [message_id for message_id, _ in handles])
            cached = [DeleteOutcome.NOT_CACHED] * len(handles)
        for index, outcome in zip(read, cached, strict=True):
            if outcome is DeleteOutcome.EXPIRED_HANDLE:
                # A FIFO batch entry as AWS answered one (sqsmover issue 54's log).
                outcomes[index] = ReceiptHandleIsInvalid("The receipt handle has expired")
        # As SQS: a handle from before the latest receive succeeds and deletes nothing.
        to_delete = [
            (message_id, outcome)
            for (message_id, _), outcome in zip(handles, cached, strict=True)
            if outcome not in (DeleteOutcome.STALE_HANDLE, DeleteOutcome.EXPIRED_HANDLE)
        ]
        for message_id, _ in to_delete:
            self._deliveries.forget(queue.queue_id, message_id)
        try:
            await self._delete_stored(queue, [message_id for message_id, _ in to_delete])
        except StorageUnavailable:
            for message_id, outcome in to_delete:
                if outcome is not DeleteOutcome.DELETED or not await self._defer_store_delete(
                    identity, message_id
                ):
                    raise
        self._telemetry.messages_deleted(queue.name, len(to_delete))
        return _batch_result(entry_ids, outcomes)

    async def change_message_visibility_batch(
        self, queue: Queue, entries: Sequence[tuple[str, str, int]]
    ) -> BatchResult[None]:
        validation.validate_batch_entries(
            [entry_id for entry_id, _, _ in entries], "ChangeMessageVisibilityBatch"
        )
        outcomes = await asyncio.gather(
            *(self.change_message_visibility(queue, h, t) for _, h, t in entries),
            return_exceptions=True,
        )
        return _batch_result([entry_id for entry_id, _, _ in entries], outcomes)

    async def delete_delivered(self, queue: Queue, delivery: Delivery) -> None:
        """Delete a message this process received itself (a move task moved it on)."""
        message_id = delivery.message.message_id
        try:
            await self._messages.delete(queue.identity, message_id, delivery.receipt_nonce)
        except StorageUnavailable:
            self._cache_fill.mark_stale(queue.identity, [message_id])
        self._deliveries.forget(queue.queue_id, message_id)
        await self._store.delete(queue, message_id)

    async def release(self, queue: Queue, deliveries: Sequence[Delivery]) -> None:
        """Make messages a failed move task held visible again."""
        now_ms = epoch_ms(self._clock)
        for delivery in deliveries:
            message_id = delivery.message.message_id
            self._deliveries.forget(queue.queue_id, message_id)
            try:
                await self._messages.change_visibility(
                    queue.identity, message_id, delivery.receipt_nonce, now_ms
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
