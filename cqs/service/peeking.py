"""MessagePeeker: looking at a queue's messages without receiving them (CqsExtensions.PeekMessages,
the admin console's browser, Spark's batch read).

Owns a peek: pages of the durable store's messages in its browse order, each with what the
cache knows of it (where it is, its receive count) read without changing it, the
visible-only filter a PeekMessages answer applies, the resume token, and which attributes
a peeked message shows (those a ReceiveMessage would, less the receipt handle). Nothing
here changes a queue: no visibility, no receive count, no cache fill. Imports model,
errors, validation, ports and the service clock; never an adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cqs.domain import validation
from cqs.domain.errors import InvalidParameterValue, StorageError
from cqs.domain.extension_model import PeekRequest
from cqs.domain.model import CacheState, Message, MessageAttributeValue, MessagePlace, Queue
from cqs.ports import CacheInspection, MessageStore
from cqs.ports.inspection import (
    DELETED,
    MAX_PEEK,
    NOT_CACHED,
    UNKNOWN,
    MessagePage,
    PeekedMessage,
)
from cqs.service.clock import epoch_ms
from cqs.service.delivery_log import DeliveryLog
from cqs.service.messages import carried_system_attributes, prior_receive_count

# Rows one peek looks at, at most, to fill a page of visible messages: a queue with most
# messages in flight answers a short page (with a token) rather than reading on and on.
MAX_ROWS_PER_PEEK = 10 * MAX_PEEK


class MessagePeeker:
    def __init__(
        self,
        cache: CacheInspection,
        store: MessageStore,
        deliveries: DeliveryLog,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._cache = cache
        self._store = store
        self._deliveries = deliveries  # this process's deliveries, hidden without a cache
        self._clock = clock

    async def peek(self, queue: Queue, request: PeekRequest) -> MessagePage:
        """Up to `max_number_of_messages` messages, after `next_token`; a page may be
        short (even empty) while a token says more follow."""
        limit = request.max_number_of_messages
        if not 1 <= limit <= MAX_PEEK:
            raise InvalidParameterValue(
                f"Value {limit} for parameter MaxNumberOfMessages is invalid. Reason: Must be"
                f" between 1 and {MAX_PEEK}, if provided."
            )
        position, looked_at = request.next_token, 0
        found: list[PeekedMessage] = []
        while True:
            try:
                messages, position = await self._store.browse(queue, position, limit - len(found))
            except ValueError as exc:
                raise InvalidParameterValue("Invalid NextToken value.") from exc
            looked_at += len(messages)
            for peeked in await self._with_states(queue, messages):
                if not request.visible_only or _visible(peeked):
                    found.append(peeked)
            if position is None or len(found) >= limit or looked_at >= MAX_ROWS_PER_PEEK:
                return MessagePage(found, position)

    async def message(self, queue: Queue, message_id: str) -> PeekedMessage | None:
        """One message by id (None: deleted, expired or never sent)."""
        found = await self._store.get(queue, message_id)
        if found is None:
            return None
        return (await self._with_states(queue, [found]))[0]

    async def _with_states(self, queue: Queue, messages: list[Message]) -> list[PeekedMessage]:
        now_ms = epoch_ms(self._clock)
        expired_before = now_ms - queue.retention_seconds * 1000
        messages = [m for m in messages if m.sent_timestamp_ms > expired_before]
        if not messages:
            return []
        try:
            ready = await self._cache.state(queue.identity) is CacheState.READY
            if ready:
                states = await self._cache.message_states(
                    queue.identity, [message.message_id for message in messages], now_ms
                )
        except StorageError:  # a receive would be served from the store: judge as it would
            ready = False
            served_from_store = UNKNOWN
        else:
            served_from_store = NOT_CACHED
        if not ready:
            hidden = self._deliveries.hidden(queue.queue_id, now_ms)
            return [_from_store(m, now_ms, hidden, served_from_store) for m in messages]
        peeked: list[PeekedMessage] = []
        for message in messages:
            known = states.get(message.message_id)
            if known is None:  # a delete or an expiry the store has not seen yet
                peeked.append(PeekedMessage(message, DELETED))
            else:
                peeked.append(PeekedMessage(
                    message, known.place.value, known.receive_count, known.first_receive_ms
                ))
        return peeked


def _from_store(
    message: Message, now_ms: int, hidden: dict[str, int], deliverable: str
) -> PeekedMessage:
    """What the store alone tells (the cache is not filled or cannot be reached): delayed
    until its delay passes, in flight if this process handed it out, else `deliverable`
    (a receive would serve it from the store); receive counts are unknown."""
    if message.visible_at_ms > now_ms:
        return PeekedMessage(message, MessagePlace.DELAYED.value)
    if message.message_id in hidden:
        return PeekedMessage(message, MessagePlace.IN_FLIGHT.value)
    return PeekedMessage(message, deliverable)


def _visible(peeked: PeekedMessage) -> bool:
    """A receive could take it now (from the cache, or from the store without one)."""
    return peeked.state in (MessagePlace.VISIBLE.value, NOT_CACHED, UNKNOWN)


def peeked_attributes(
    peeked: PeekedMessage, system_names: Sequence[str], message_names: Sequence[str]
) -> tuple[dict[str, str], dict[str, MessageAttributeValue]]:
    """The system attributes and message attributes a peek shows for the names asked, as
    ReceiveMessage selects them. ApproximateReceiveCount is the count so far (a peek is not
    a receive); it and ApproximateFirstReceiveTimestamp are left out when not known."""
    message = peeked.message
    system: dict[str, str] = {
        "SenderId": message.sender_id,
        "SentTimestamp": str(message.sent_timestamp_ms),
    }
    if peeked.receive_count is not None:
        system["ApproximateReceiveCount"] = str(
            peeked.receive_count + prior_receive_count(message.system_attributes)
        )
        if peeked.receive_count > 0 and peeked.first_receive_ms:
            system["ApproximateFirstReceiveTimestamp"] = str(peeked.first_receive_ms)
    system.update(carried_system_attributes(message))
    return (
        {k: v for k, v in system.items() if validation.message_attribute_selected(k, system_names)},
        {k: v for k, v in message.message_attributes.items()
         if validation.message_attribute_selected(k, message_names)},
    )
