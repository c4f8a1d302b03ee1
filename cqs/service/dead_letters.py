"""DeadLetters: RedrivePolicy as the service applies it.

Owns the checks a RedrivePolicy must pass when it is set (an existing target of the same
queue type that allows this source), where a queue's dead letters go, moving the messages
the cache took out for exceeding maxReceiveCount to the dead-letter queue, and which queues
dead-letter into a queue (ListDeadLetterSourceQueues). The pure rules live in
`cqs.domain.dead_letter_policy`. Imports model, errors, ports and sibling mechanisms; never an
adapter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from cqs.domain import arns, dead_letter_policy
from cqs.domain.errors import InvalidParameterValue, QueueDoesNotExist, StorageError
from cqs.domain.model import Message, MessageAttributeValue, Queue, QueueIdentity
from cqs.ports import Telemetry
from cqs.service import pagination
from cqs.service.clock import epoch_ms
from cqs.service.fifo import FifoSender
from cqs.service.messages import prior_receive_count
from cqs.service.queue_storage import QueueStorage

log = logging.getLogger(__name__)


class DeadLetters:
    def __init__(
        self,
        storage: QueueStorage,
        fifo: FifoSender,
        *,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._storage = storage
        self._fifo = fifo
        self._telemetry = telemetry
        self._clock = clock

    async def check_redrive_policy(
        self, source: QueueIdentity, given: Mapping[str, str], fifo: bool
    ) -> None:
        """A RedrivePolicy must name an existing queue of the same type (FIFO to FIFO,
        standard to standard) of the same account and region, whose RedriveAllowPolicy lets
        this queue use it."""
        value = given.get("RedrivePolicy")
        policy = dead_letter_policy.parse_redrive_policy(value)
        if policy is None:
            return
        named = arns.queue_identity_from_arn(policy.dead_letter_target_arn)
        reason: str | None
        if named is not None and named.namespace != source.namespace:
            reason = "Dead-letter target must be in the same account and region as the source."
        else:
            reason = await self._target_refusal(source, policy.dead_letter_target_arn, fifo)
        if reason is not None:
            raise InvalidParameterValue(
                f"Value {value} for parameter RedrivePolicy is invalid. Reason: {reason}"
            )

    async def _target_refusal(
        self, source: QueueIdentity, target_arn: str, fifo: bool
    ) -> str | None:
        """Why the queue `target_arn` names cannot be `source`'s dead-letter queue, or None."""
        try:
            target = await self._storage.directory.for_arn(target_arn)
        except QueueDoesNotExist:
            return "Dead letter target does not exist."
        if target.fifo != fifo:
            return (
                "Dead-letter target must be a FIFO queue for a FIFO source queue."
                if fifo
                else "Dead-letter target must be a standard queue for a standard source queue."
            )
        if not dead_letter_policy.redrive_allowed(
            target.attributes.get("RedriveAllowPolicy"), self._storage.directory.arn(source)
        ):
            return "Dead-letter target owner does not allow this source queue to redrive messages."
        return None

    async def target(self, queue: Queue) -> tuple[Queue | None, int]:
        """The queue's dead-letter queue and maxReceiveCount; (None, 0) without a usable
        RedrivePolicy (unset, or its target deleted since)."""
        policy = dead_letter_policy.parse_redrive_policy(queue.attributes.get("RedrivePolicy"))
        if policy is None or policy.max_receive_count < 1:
            return None, 0
        try:
            target = await self._storage.directory.for_arn(policy.dead_letter_target_arn)
        except QueueDoesNotExist:
            return None, 0
        return target, policy.max_receive_count

    async def move(self, source: Queue, target: Queue, messages: Sequence[Message]) -> None:
        """Move messages the cache took out of `source` for exceeding maxReceiveCount.

        Kept: the MessageId, body, attributes and SentTimestamp. As AWS documents for
        standard queues, expiry stays based on the original enqueue time, so a message
        expires from the dead-letter queue once it is older than that queue's retention
        period; a FIFO dead-letter queue resets the enqueue time, as AWS does, and numbers
        the message anew (group and deduplication id kept). The source queue's ARN is kept
        in a hidden system attribute for move tasks and shown as DeadLetterQueueSourceArn,
        and the receives so far in another, so ApproximateReceiveCount goes on, as AWS's. Order: the dead-letter queue's store,
        then its cache, then the delete from the source's store, so a failure in between
        duplicates a message rather than losing it. Never raises a storage error: the receive
        that took the messages out has deliveries to answer. An outage or back-pressure
        (`StorageBusy`) marks the source's cache stale, so the messages the cache took out
        come back from the source's store with its refill; a failed add to the dead-letter
        queue's cache marks that one (`CacheFiller.add`).
        """
        now_ms = epoch_ms(self._clock)
        source_attribute = MessageAttributeValue(
            "String", string_value=self._storage.directory.arn(source.identity)
        )
        # The cache moves a message on the receive after its maxReceiveCount-th.
        policy = dead_letter_policy.parse_redrive_policy(source.attributes.get("RedrivePolicy"))
        received_before = policy.max_receive_count if policy is not None else 0
        moved = [
            replace(
                message,
                visible_at_ms=now_ms,
                system_attributes={
                    **message.system_attributes,
                    dead_letter_policy.DEAD_LETTER_SOURCE_ATTRIBUTE: source_attribute,
                    dead_letter_policy.PRIOR_RECEIVES_ATTRIBUTE: MessageAttributeValue(
                        "Number", string_value=str(_prior_receives(message) + received_before)
                    ),
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
                await self._fifo.send(target, live, deduplicate=False)
                live = []
            await asyncio.gather(*(
                self._storage.store.put(
                    target, [m], keep_seconds=_retention_left(target, m, now_ms)
                )
                for m in live
            ))
            if live:
                await self._storage.cache_fill.add(target, live, now_ms)
            await self._storage.store.delete_many(source, [m.message_id for m in messages])
        except StorageError as exc:
            # The messages are still in the source's store: reload the source's cache.
            log.warning(
                "moving %d messages of %s to its DLQ failed: %s", len(messages), source.name, exc
            )
            self._storage.cache_fill.mark_stale(source.identity)
            return
        for message in messages:
            self._storage.cache_fill.deliveries.forget(source.queue_id, message.message_id)
        self._telemetry.messages_moved_to_dead_letter_queue(source.name, len(messages))

    async def source_queue_names(self, dead_letter_queue: QueueIdentity) -> list[str]:
        """Every queue of the same account and region whose RedrivePolicy names
        `dead_letter_queue`, sorted (a RedrivePolicy cannot name a queue elsewhere)."""
        arn = self._storage.directory.arn(dead_letter_queue)
        account_id, region, _ = dead_letter_queue

        async def points_here(name: str) -> bool:
            try:
                queue = await self._storage.directory.get(QueueIdentity(account_id, region, name))
            except QueueDoesNotExist:
                return False
            policy = dead_letter_policy.parse_redrive_policy(queue.attributes.get("RedrivePolicy"))
            return policy is not None and policy.dead_letter_target_arn == arn

        names = await self._storage.catalog.list_names(account_id, region)
        found = await asyncio.gather(*(points_here(name) for name in names))
        return sorted(name for name, hit in zip(names, found, strict=True) if hit)

    async def list_source_queues(
        self, identity: QueueIdentity, max_results: int | None, next_token: str | None
    ) -> tuple[list[str], str | None]:
        """ListDeadLetterSourceQueues: one page of the queues dead-lettering into the queue."""
        await self._storage.directory.get(identity)
        pagination.check_max_results(max_results)
        names = await self.source_queue_names(identity)
        # The token is read only when there are names to page through (as it always was).
        after = pagination.read_name_token(next_token) if next_token and names else None
        return pagination.page(names, max_results, after)


def _retention_left(queue: Queue, message: Message, now_ms: int) -> int:
    """Seconds (at least 1) a moved message has left in `queue`: its expiry stays based on
    its original enqueue time."""
    remaining_ms = message.sent_timestamp_ms + queue.retention_seconds * 1000 - now_ms
    return max(1, -(-remaining_ms // 1000))


def _prior_receives(message: Message) -> int:
    """Receives a message had in queues it was dead-lettered from before (0: none)."""
    return prior_receive_count(message.system_attributes)
