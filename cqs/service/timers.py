"""TimerMessages: sends that ask for a delivery time (issue #19), and what a queue shows of
the timer messages waiting for theirs.

Owns where a timer message goes on send: due within the cache horizon (by default AWS's
900 s), the ordinary delayed path (`Sender.store_and_cache`: the store, then the cache's
delayed set); due later, only the durable `ScheduledMessages`, which `TimerPromoter` moves into the
ordinary path shortly before the due time; the same for the copy each matching consumer
group of the queue gets (`fan_out`, as `Sender` fans out a plain send). Also the queue attributes
`cqs.ApproximateNumberOfScheduledMessages` and `cqs.EarliestScheduledDeliveryTimestamp`.
Imports model, errors, validation, ports and sibling mechanisms; never an adapter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from cqs.domain.errors import InvalidParameterValue, UnsupportedOperation
from cqs.domain.extension_model import ScheduledSummary
from cqs.domain.model import BatchResult, Message, Queue, SendRequest, SendResult
from cqs.ports import ScheduledMessages, Telemetry
from cqs.service.messages import send_result
from cqs.service.sending import Sender, build_entries, validate_batch, with_group_copies
from cqs.service.timer_requests import asks_for_timer, requested_due_ms

SCHEDULED_COUNT_ATTRIBUTE = "cqs.ApproximateNumberOfScheduledMessages"
EARLIEST_DUE_ATTRIBUTE = "cqs.EarliestScheduledDeliveryTimestamp"
# Read only by name: "All" stays the SQS attributes.
TIMER_QUEUE_ATTRIBUTES = (SCHEDULED_COUNT_ATTRIBUTE, EARLIEST_DUE_ATTRIBUTE)


Place = Callable[[Queue, Sequence[Message]], Awaitable[None]]


class TimerMessages:
    # Set by the service (consumer groups, #19): places copies of a send's messages in the
    # queue's matching groups with the `Place` it is given.
    fan_out: Callable[[Queue, Sequence[Message], Place], Awaitable[None] | None] | None = None

    def __init__(
        self,
        scheduled: ScheduledMessages | None,
        sender: Sender,
        *,
        horizon_seconds: int,
        telemetry: Telemetry,
    ) -> None:
        self._scheduled = scheduled
        self._sender = sender  # builds the messages (its clock, its sender id) and sends near ones
        self._horizon_ms = horizon_seconds * 1000
        self._telemetry = telemetry

    async def send_message(self, queue: Queue, request: SendRequest) -> SendResult:
        now_ms = self._sender.now_ms()
        message = self._build(queue, request, now_ms)
        await self._place_sent(queue, [message], now_ms)
        return send_result(message)

    async def send_message_batch(
        self, queue: Queue, entries: Sequence[tuple[str, SendRequest]]
    ) -> BatchResult[SendResult]:
        """A batch where some entry asks for a timer; the others are sent as usual."""
        validate_batch(entries)
        if queue.fifo:
            raise InvalidParameterValue(
                "Timer messages (cqs.DeliverAt, cqs.DelaySeconds) are not supported on FIFO"
                " queues."
            )
        now_ms = self._sender.now_ms()
        built, failed = build_entries(entries, lambda request: self._build(queue, request, now_ms))
        await self._place_sent(queue, [message for _, message in built], now_ms)
        return BatchResult([(i, send_result(m)) for i, m in built], failed)

    def _build(self, queue: Queue, request: SendRequest, now_ms: int) -> Message:
        due_ms = requested_due_ms(
            request, now_ms, retention_seconds=queue.retention_seconds, fifo=queue.fifo
        )
        message = self._sender.build(queue, request, now_ms)
        return message if due_ms is None else replace(message, visible_at_ms=due_ms)

    async def _place_sent(self, queue: Queue, messages: Sequence[Message], now_ms: int) -> None:
        """A send: into the queue and, at the same time, into its matching groups (each copy
        due when the queue's is); acknowledged once every copy is stored."""
        async def place(target: Queue, copies: Sequence[Message]) -> None:
            await self._place(target, copies, now_ms)

        group_copies = self.fan_out(queue, messages, place) if self.fan_out is not None else None
        await with_group_copies(self._place(queue, messages, now_ms), group_copies)

    async def _place(self, queue: Queue, messages: Sequence[Message], now_ms: int) -> None:
        """Near ones the ordinary way; far ones only into the durable scheduled store."""
        near = [m for m in messages if m.visible_at_ms - now_ms <= self._horizon_ms]
        far = [m for m in messages if m.visible_at_ms - now_ms > self._horizon_ms]
        if far and self._scheduled is None:
            raise UnsupportedOperation(
                "This server keeps no timer messages due beyond"
                f" {self._horizon_ms // 1000} seconds."
            )
        if far and self._scheduled is not None:
            await self._scheduled.schedule(queue, far)
            self._telemetry.messages_sent(queue.name, len(far))
        if near:
            await self._sender.store_and_cache(queue, near)

    async def purge(self, queue: Queue) -> None:
        if self._scheduled is not None:
            await self._scheduled.drop(queue)

    async def summary(self, queue: Queue) -> ScheduledSummary:
        if self._scheduled is None:
            return ScheduledSummary(0, None)
        return await self._scheduled.summary(queue)

    async def queue_attributes(self, queue: Queue, names: Sequence[str]) -> dict[str, str]:
        """The timer attributes among `names` (the earliest time only when one waits)."""
        summary = await self.summary(queue)
        shown = {SCHEDULED_COUNT_ATTRIBUTE: str(summary.count)}
        if summary.earliest_due_ms is not None:
            shown[EARLIEST_DUE_ATTRIBUTE] = str(summary.earliest_due_ms // 1000)
        return {name: shown[name] for name in names if name in shown}


def wants_timer(requests: Sequence[SendRequest]) -> bool:
    """Whether any of these sends names a timer attribute (the service's routing test)."""
    return any(asks_for_timer(request) for request in requests)
