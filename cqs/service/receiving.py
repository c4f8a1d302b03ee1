"""Receiver: ReceiveMessage, one path for standard and FIFO queues.

Owns a receive: its parameters (visibility timeout, wait time, ReceiveRequestAttemptId),
the long-poll loop (look, then wait to be woken or for the wait time to pass), one pass
over the cache with the dead-letter check, the fallback when the cache is not ready, and
the telemetry of deliveries. Standard and FIFO queues differ in the cache call (FIFO's
keeps group order and locks) and in the fallback: a standard queue is served from the store
(Return-From-Cassandra) while its cache is absent, being filled or gone with its Redis; a
FIFO queue gets nothing meanwhile, since only the cache knows which groups are locked.
Neither is served while the queue's Redis is unreachable but may live on with its data. Imports model, errors, validation,
ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cqs.domain import validation
from cqs.domain.errors import (
    CacheUnreachable,
    StorageBusy,
    StorageError,
    StorageUnavailable,
)
from cqs.domain.model import (
    Delivery,
    Queue,
    QueueIdentity,
    ReceivedMessage,
    ReceiveOutcome,
    ReceiveRequest,
    Redelivery,
)
from cqs.domain.receipts import ReceiptSigner, new_nonce
from cqs.ports import CachedMessages, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.dead_letters import DeadLetters
from cqs.service.long_poll import LongPollWaiters
from cqs.service.messages import received_message
from cqs.service.queue_directory import QueueDirectory


class Receiver:
    def __init__(
        self,
        messages: CachedMessages,
        directory: QueueDirectory,
        cache_fill: CacheFiller,
        dead_letters: DeadLetters,
        waiters: LongPollWaiters,
        signer: ReceiptSigner,
        *,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._messages = messages
        self._directory = directory
        self._cache_fill = cache_fill
        self._dead_letters = dead_letters
        self._waiters = waiters
        self._signer = signer
        self._telemetry = telemetry
        self._clock = clock

    async def receive_message(
        self, identity: QueueIdentity, request: ReceiveRequest
    ) -> list[ReceivedMessage]:
        queue = await self._directory.get(identity)
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
                deliveries = await self.receive_once(
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
                listening = await self._listen(identity, remaining)
            self._telemetry.long_poll_waiting(1)
            try:
                await self._waiters.wait(identity, remaining)
            finally:
                self._telemetry.long_poll_waiting(-1)
            queue = await self._directory.get(identity)
        self._waiters.pass_on(identity, len(deliveries), request.max_number_of_messages)
        return [received_message(queue, d, request, self._signer) for d in deliveries]

    async def _listen(self, identity: QueueIdentity, seconds: float) -> bool:
        try:
            await self._messages.listen(identity, int(seconds * 1000) + 1000)
        except StorageError:
            return False
        return True

    async def receive_once(
        self, queue: Queue, count: int, timeout: int, attempt_id: str | None = None
    ) -> list[Delivery]:
        """One look at the queue: up to `count` deliveries, hidden for `timeout` seconds.

        From the store while the cache is absent or being filled, or its Redis is gone
        with its data; nothing while that Redis is unreachable but may live on
        (`CacheUnreachable`: a stall, a cut link, a failover): other processes may be
        handing the same messages out of it (issue 26). Sends still succeed meanwhile
        (the store holds them) and are delivered once Redis answers."""
        now_ms = epoch_ms(self._clock)
        nonces = [new_nonce() for _ in range(count)]
        try:
            await self._cache_fill.refresh_if_stale(queue)
            dead_letter_queue, max_receives = await self._dead_letters.target(queue)
            outcome = await self._from_cache(
                queue, count, timeout, now_ms, nonces, max_receives, attempt_id
            )
            if outcome is not None and outcome.dead_letters and dead_letter_queue is not None:
                await self._dead_letters.move(queue, dead_letter_queue, outcome.dead_letters)
        except CacheUnreachable:
            self._telemetry.serving_from_store(queue.name, False)
            return []
        except StorageUnavailable:  # Redis is gone, and its cache with it
            outcome = None
        if outcome is not None:
            deliveries, from_cache = outcome.deliveries, True
        else:
            self._cache_fill.start_soon(queue)
            if queue.fifo:  # the store cannot say which message groups are locked
                return []
            deliveries = await self._cache_fill.receive_from_store(
                queue, count, now_ms, timeout * 1000
            )
            from_cache = False
        self._count_deliveries(queue, deliveries, from_cache)
        if timeout > 0:
            for delivery in deliveries:
                self._cache_fill.deliveries.record(
                    queue.queue_id, delivery.message.message_id, now_ms + timeout * 1000
                )
        return deliveries

    async def _from_cache(
        self,
        queue: Queue,
        count: int,
        timeout: int,
        now_ms: int,
        nonces: Sequence[str],
        max_receives: int,
        attempt_id: str | None,
    ) -> ReceiveOutcome | None:
        """The cache's deliveries and the messages it took out for the dead-letter queue;
        None when the cache is not ready."""
        timeout_ms, retention_ms = timeout * 1000, queue.retention_seconds * 1000
        if queue.fifo:
            return await self._messages.receive_fifo(
                queue.identity, count, timeout_ms, now_ms, retention_ms, nonces, max_receives,
                attempt_id,
            )
        return await self._messages.receive(
            queue.identity, count, timeout_ms, now_ms, retention_ms, nonces, max_receives
        )

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
