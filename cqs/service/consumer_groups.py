"""ConsumerGroups: named consumer groups of a standard queue, each served as a queue.

Owns creating, listing, re-filtering and deleting groups, and the fan-out of a send: a copy of each
message sent to a queue goes to every group of the queue whose filter policy matches it.
A group is the queue `<queue>/<group>` (`cqs.domain.group_names`): its own catalog row, store rows
and cache keys, so receive, delete, visibility, redrive, retention and the revisibility
worker treat it as any other queue. Its row carries the filter policy and the id of the
queue incarnation it belongs to (hidden attributes: GetQueueAttributes names neither), so
the groups of a deleted queue never receive the sends of a queue re-created with its name.

Which groups a queue has is read from the catalog (one partition slice) and kept for
`ttl_seconds`; past that it is served while one background read refreshes it, so a send
waits on the catalog only for a queue it has never sent to. A group created or deleted
through this process, or its filter changed, counts at once; through another, within
about `ttl_seconds`.
Imports model, errors, the pure rule modules and sibling mechanisms (the ports come in
`QueueStorage`); never an adapter.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from cqs.domain import filter_policy, group_names, validation
from cqs.domain.errors import (
    InvalidAttributeName,
    InvalidParameterValue,
    QueueDoesNotExist,
    QueueNameExists,
    StorageUnavailable,
)
from cqs.domain.extension_model import ConsumerGroup
from cqs.domain.model import Message, Queue, QueueIdentity
from cqs.service.dead_letters import DeadLetters
from cqs.service.queue_storage import QueueStorage
from cqs.service.queues import Queues

log = logging.getLogger(__name__)

FILTER_POLICY = "FilterPolicy"
START_AT = "StartAt"
# Hidden attributes of a group's queue row (never in GetQueueAttributes' answer).
FILTER_POLICY_ATTRIBUTE = "cqs.FilterPolicy"
GROUP_OF_ATTRIBUTE = "cqs.GroupOf"  # the queue_id of the queue incarnation it belongs to
# The queue attributes a group has of its own (the rest follow the queue's at creation).
GROUP_QUEUE_ATTRIBUTES = frozenset({
    "VisibilityTimeout", "RedrivePolicy", "ReceiveMessageWaitTimeSeconds",
    # How long the group keeps what its consumers consume (its replay window).
    "cqs.ConsumedRetentionSeconds",
})
# Attributes a group never takes from its queue: its own dead letters and access policy.
_NOT_INHERITED = frozenset({"RedrivePolicy", "RedriveAllowPolicy", "Policy"})
_BACKFILL_PAGE = 500

Deliver = Callable[[Queue, Sequence[Message]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class _Group:
    queue: Queue
    policy: filter_policy.FilterPolicy | None

    def wants(self, message: Message) -> bool:
        return self.policy is None or self.policy.matches(message.message_attributes)


class ConsumerGroups:
    def __init__(
        self,
        storage: QueueStorage,
        dead_letters: DeadLetters,
        queues: Queues,
        deliver: Deliver,
        *,
        ttl_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self._storage = storage
        self._dead_letters = dead_letters
        self._queues = queues
        self._deliver = deliver
        self._ttl_seconds = ttl_seconds
        self._clock = clock
        # queue identity -> (its groups, read at)
        self._known: dict[QueueIdentity, tuple[list[_Group], float]] = {}
        self._loading: dict[QueueIdentity, asyncio.Task[list[_Group]]] = {}

    # --- management --------------------------------------------------------------------------
    async def create(
        self, identity: QueueIdentity, group_name: str, attributes: Mapping[str, str]
    ) -> ConsumerGroup:
        queue = await self._parent(identity)
        group_names.validate_group_name(group_name)
        given = dict(attributes)
        policy_text = given.pop(FILTER_POLICY, None)
        policy = filter_policy.parse(policy_text) if policy_text is not None else None
        now = self._clock()
        start_ms = _start_at_ms(given.pop(START_AT, "now"), now, queue.retention_seconds)
        unknown = sorted(set(given) - GROUP_QUEUE_ATTRIBUTES)
        if unknown:
            raise InvalidAttributeName(f"Unknown Attribute {unknown[0]}.")
        own = validation.normalize_queue_attributes(given, creating=True)
        group = identity.namespace.queue(group_names.group_queue_name(identity.name, group_name))
        await self._dead_letters.check_redrive_policy(group, own, False)
        hidden = {GROUP_OF_ATTRIBUTE: queue.queue_id}
        if policy is not None:
            hidden[FILTER_POLICY_ATTRIBUTE] = policy.text
        inherited = {k: v for k, v in queue.attributes.items() if k not in _NOT_INHERITED}
        candidate = Queue(
            account_id=group.account_id, region=group.region, name=group.name,
            queue_id=uuid.uuid4().hex, attributes={**inherited, **own, **hidden},
            created_timestamp=int(now), last_modified_timestamp=int(now),
        )
        stored = await self._storage.catalog.create(candidate)
        if stored.queue_id != candidate.queue_id:
            wanted = {**own, **hidden}
            if any(stored.attributes.get(k) != v for k, v in wanted.items() if k != GROUP_OF_ATTRIBUTE):
                raise QueueNameExists(
                    f"A consumer group named {group_name} already exists with other attributes."
                )
            self._storage.directory.remember(stored)
            return _described(stored)
        await self._storage.cache_fill.start_empty(group)
        self._storage.directory.remember(stored)
        self._forget(identity)
        if start_ms < int(now * 1000):
            await self._backfill(queue, _Group(stored, policy), start_ms, int(now * 1000))
        return _described(stored)

    async def set_attributes(
        self, identity: QueueIdentity, group_name: str, attributes: Mapping[str, str]
    ) -> ConsumerGroup:
        """Change a group's FilterPolicy in place ("" removes it): later sends are matched
        against the new one, here at once and in other processes within the metadata TTL.
        The group's queue attributes are set on its URL with SetQueueAttributes, as on any
        queue, and StartAt has no meaning after creation."""
        queue = await self._parent(identity)
        group_names.validate_group_name(group_name)
        unknown = sorted(set(attributes) - {FILTER_POLICY})
        if unknown:
            name = unknown[0]
            if name in GROUP_QUEUE_ATTRIBUTES:
                reason = f"{name} is set on the group's URL with SetQueueAttributes."
            elif name == START_AT:
                reason = "StartAt is given only when the group is created."
            else:
                reason = f"Unknown Attribute {name}."
            raise InvalidAttributeName(reason)
        group = identity.namespace.queue(group_names.group_queue_name(identity.name, group_name))
        stored = await self._storage.directory.get(group)  # QueueDoesNotExist when there is none
        if stored.attributes.get(GROUP_OF_ATTRIBUTE) != queue.queue_id:
            raise QueueDoesNotExist("The specified queue does not exist.")
        changed = dict(stored.attributes)
        if FILTER_POLICY in attributes:
            text = attributes[FILTER_POLICY]
            if text == "":
                changed.pop(FILTER_POLICY_ATTRIBUTE, None)
            else:
                changed[FILTER_POLICY_ATTRIBUTE] = filter_policy.parse(text).text
        updated = replace(stored, attributes=changed, last_modified_timestamp=int(self._clock()))
        await self._storage.directory.save(updated)
        self._forget(identity)
        return _described(updated)

    async def list_groups(self, identity: QueueIdentity) -> list[ConsumerGroup]:
        queue = await self._parent(identity)
        return [_described(group.queue) for group in await self._read(queue)]

    async def delete(self, identity: QueueIdentity, group_name: str) -> None:
        group = await self.group_queue(identity, group_name)
        await self._queues.delete_queue(group)  # QueueDoesNotExist when there is none
        self._forget(identity)

    async def group_queue(self, identity: QueueIdentity, group_name: str) -> QueueIdentity:
        """The queue the group `group_name` of the queue `identity` is served as (whether
        the group exists is for whoever reads that queue to find)."""
        await self._parent(identity)
        group_names.validate_group_name(group_name)
        return identity.namespace.queue(group_names.group_queue_name(identity.name, group_name))

    def queue_created(self, identity: QueueIdentity) -> None:
        """This process just created the queue, so it has no groups yet: its first sends skip
        the catalog read (which can time out while a Cassandra node is dying unseen)."""
        self._known[identity] = ([], self._clock())

    async def queue_deleted(self, identity: QueueIdentity) -> None:
        """DeleteQueue took `identity`: a queue's groups go with it; a group (deleted through
        its URL) stops receiving its queue's sends at once in this process."""
        parts = group_names.split_group_queue_name(identity.name)
        if parts is not None:
            self._forget(identity.namespace.queue(parts[0]))
            return
        for group in await self._storage.catalog.consumer_groups(identity):
            await self._queues.delete_queue(group.identity)
        self._forget(identity)

    # --- the send path -------------------------------------------------------------------------
    def fan_out(
        self, queue: Queue, messages: Sequence[Message], deliver: Deliver | None = None
    ) -> Awaitable[None] | None:
        """Store a copy of each message in every group of `queue` whose filter matches it,
        through `deliver` if given (timer messages: near ones delayed, far ones scheduled).

        What to await, or None when the queue has no groups this process knows of: most
        queues have none, and their sends then wait on their own delivery alone."""
        if queue.fifo or group_names.split_group_queue_name(queue.name) is not None:
            return None
        known = self._known.get(queue.identity)
        if known is None:
            return self._copy_to_groups(queue, messages, deliver, self._load_soon(queue))
        if self._clock() - known[1] >= self._ttl_seconds:
            self._load_soon(queue)
        if not known[0]:
            return None
        return self._copy_to_groups(queue, messages, deliver, known[0])

    async def _copy_to_groups(
        self,
        queue: Queue,
        messages: Sequence[Message],
        deliver: Deliver | None,
        groups: list[_Group] | Awaitable[list[_Group]],
    ) -> None:
        deliveries = []
        for group in groups if isinstance(groups, list) else await groups:
            if group.queue.attributes.get(GROUP_OF_ATTRIBUTE) != queue.queue_id:
                continue  # read for an earlier queue of this name, not yet refreshed
            wanted = [message for message in messages if group.wants(message)]
            if wanted:
                deliveries.append((deliver or self._deliver)(group.queue, wanted))
        if deliveries:
            await asyncio.gather(*deliveries)

    def _load_soon(self, queue: Queue) -> asyncio.Task[list[_Group]]:
        """One catalog read at a time per queue, shared by every send that waits on it."""
        loading = self._loading.get(queue.identity)
        if loading is None:
            loading = asyncio.get_running_loop().create_task(self._load(queue))
            self._loading[queue.identity] = loading
            loading.add_done_callback(lambda _: self._loading.pop(queue.identity, None))
        return loading

    async def _load(self, queue: Queue) -> list[_Group]:
        read_at = self._clock()
        try:
            groups = await self._read(queue)
        except StorageUnavailable:
            known = self._known.get(queue.identity)
            if known is not None:
                return known[0]  # keep fanning out to the groups we knew
            raise
        self._known[queue.identity] = (groups, read_at)
        return groups

    async def _read(self, queue: Queue) -> list[_Group]:
        groups = []
        for stored in await self._storage.catalog.consumer_groups(queue.identity):
            if stored.attributes.get(GROUP_OF_ATTRIBUTE) != queue.queue_id:
                continue  # left behind by an earlier queue of the same name
            text = stored.attributes.get(FILTER_POLICY_ATTRIBUTE)
            try:
                policy = filter_policy.parse(text) if text is not None else None
            except InvalidParameterValue:
                log.error("consumer group %s has an unreadable filter policy", stored.name)
                continue
            groups.append(_Group(stored, policy))
        return groups

    def _forget(self, identity: QueueIdentity) -> None:
        self._known.pop(identity, None)

    async def _parent(self, identity: QueueIdentity) -> Queue:
        if group_names.split_group_queue_name(identity.name) is not None:
            raise InvalidParameterValue(
                "QueueUrl must name a queue, not a consumer group: groups have no groups."
            )
        queue = await self._storage.directory.get(identity)
        if queue.fifo:
            raise InvalidParameterValue("Consumer groups are for standard queues only.")
        return queue

    async def _backfill(self, queue: Queue, group: _Group, start_ms: int, until_ms: int) -> None:
        """Copy the messages the queue still holds that were sent from `start_ms` until the
        group existed (those sent since reach it by fan-out)."""
        async for page in self._storage.store.scan(queue, _BACKFILL_PAGE):
            wanted = [
                m for m in page if start_ms <= m.sent_timestamp_ms < until_ms and group.wants(m)
            ]
            if wanted:
                await self._deliver(group.queue, wanted)


def _described(stored: Queue) -> ConsumerGroup:
    parts = group_names.split_group_queue_name(stored.name)
    assert parts is not None
    visible = {
        k: v for k, v in stored.attributes.items()
        if k in GROUP_QUEUE_ATTRIBUTES
    }
    return ConsumerGroup(
        queue_name=parts[0], group_name=parts[1],
        filter_policy=stored.attributes.get(FILTER_POLICY_ATTRIBUTE),
        attributes=visible, created_timestamp=stored.created_timestamp,
    )


def _start_at_ms(value: str, now: float, retention_seconds: int) -> int:
    """StartAt: "now", epoch seconds, or an ISO 8601 time, within the retention period."""
    text = value.strip()
    if text.lower() == "now":
        return int(now * 1000)
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidParameterValue(
                f"StartAt must be \"now\", epoch seconds or an ISO 8601 time, not {value!r}."
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
        seconds = moment.timestamp()
    if not now - retention_seconds <= seconds <= now:
        raise InvalidParameterValue(
            "StartAt must lie within the queue's retention period and not in the future."
        )
    return int(seconds * 1000)
