"""Queues: the actions on a queue as a whole: create, list, delete, purge, attributes, tags
and permissions, and the operator's description of a queue.

Owns the defaults and checks of CreateQueue (an existing queue with other attributes is a
conflict), what GetQueueAttributes reports, what SetQueueAttributes and the permission
actions change, and the order of a delete or a purge across the catalog, the store and the
cache. Imports model, errors, validation, the pure rule modules and sibling mechanisms (the
ports come in `QueueStorage`); never an adapter.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from cqs.domain import arns, dead_letter_policy, group_names, permissions, validation
from cqs.domain.errors import InvalidAttributeName, PurgeQueueInProgress, QueueNameExists
from cqs.domain.model import (
    DEFAULT_QUEUE_ATTRIBUTES,
    Queue,
    QueueDescription,
    QueueIdentity,
    QueueListing,
    QueueNamespace,
)
from cqs.service import pagination
from cqs.service.clock import epoch_ms
from cqs.service.dead_letters import DeadLetters
from cqs.service.queue_storage import QueueStorage

PURGE_INTERVAL_MS = 60_000
COUNT_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


class Queues:
    def __init__(
        self,
        storage: QueueStorage,
        dead_letters: DeadLetters,
        *,
        clock: Callable[[], float],
    ) -> None:
        self._storage = storage
        self._dead_letters = dead_letters
        self._clock = clock

    async def create_queue(
        self, identity: QueueIdentity, attributes: Mapping[str, str], tags: Mapping[str, str]
    ) -> bool:
        """True if this call created the queue (False: it existed with these attributes)."""
        name = identity.name
        fifo = attributes.get("FifoQueue", "false").lower() == "true"
        validation.validate_queue_name(name, fifo)
        given = validation.normalize_queue_attributes(attributes, creating=True)
        if not fifo and "FifoQueue" in given:
            # AWS refuses FifoQueue (even `false`) for a standard queue.
            raise InvalidAttributeName("Unknown Attribute FifoQueue.")
        defaults = {**DEFAULT_QUEUE_ATTRIBUTES}
        if fifo:
            defaults.update(validation.FIFO_QUEUE_DEFAULTS)
        validation.validate_queue_type_attributes({**defaults, **given}, fifo)
        attributes_of_new_queue = validation.apply_encryption_attributes(defaults, given)
        validation.validate_tags(tags, queue_name=name)
        await self._dead_letters.check_redrive_policy(identity, given, fifo)
        await self._storage.directory.check_not_deleted_recently(identity)
        now_s = int(self._clock())
        candidate = Queue(
            account_id=identity.account_id,
            region=identity.region,
            name=name,
            queue_id=uuid.uuid4().hex,
            attributes=attributes_of_new_queue,
            tags=dict(tags),
            created_timestamp=now_s,
            last_modified_timestamp=now_s,
        )
        stored = await self._storage.catalog.create(candidate)
        created = stored.queue_id == candidate.queue_id
        if created:
            await self._storage.cache_fill.start_empty(identity)
        else:
            differing = [
                k for k in given if stored.attributes.get(k) != attributes_of_new_queue.get(k)
            ]
            if differing:
                raise QueueNameExists(
                    "A queue already exists with the same name and a different value for "
                    f"attribute {differing[0]}"
                )
        self._storage.directory.remember(stored)
        return created

    async def list_queues(
        self, namespace: QueueNamespace, listing: QueueListing
    ) -> tuple[list[str], str | None]:
        """Names of one account's queues in one region."""
        pagination.check_max_results(listing.max_results)
        prefix = listing.prefix or ""
        names = [  # consumer groups (`<queue>/<group>`) are listed by ListConsumerGroups
            n for n in await self._storage.catalog.list_names(*namespace)
            if n.startswith(prefix) and group_names.split_group_queue_name(n) is None
        ]
        token = listing.next_token
        after = pagination.read_name_token(token) if token else None
        return pagination.page(names, listing.max_results, after)

    async def delete_queue(self, identity: QueueIdentity) -> None:
        queue = await self._storage.directory.get(identity)
        await self._storage.catalog.delete(identity)
        await self._storage.catalog.record_deletion(identity, epoch_ms(self._clock))
        self._storage.directory.forget(identity)
        await self._storage.store.drop(queue)
        await self._storage.cache_fill.drop(queue)

    async def get_queue_attributes(
        self, identity: QueueIdentity, names: Sequence[str]
    ) -> dict[str, str]:
        queue = await self._storage.directory.get(identity)
        wanted = validation.validate_attribute_names_for_get(names)
        result: dict[str, str] = {}
        if any(n in wanted for n in COUNT_ATTRIBUTES):
            counts = await self._storage.cache_fill.counts(queue)
            result["ApproximateNumberOfMessages"] = str(counts.visible)
            result["ApproximateNumberOfMessagesNotVisible"] = str(counts.in_flight)
            result["ApproximateNumberOfMessagesDelayed"] = str(counts.delayed)
        result["CreatedTimestamp"] = str(queue.created_timestamp)
        result["LastModifiedTimestamp"] = str(queue.last_modified_timestamp)
        result["QueueArn"] = self._storage.directory.arn(identity)
        result.update(queue.attributes)
        result["SqsManagedSseEnabled"] = validation.reported_sqs_managed_sse(queue.attributes)
        # cqs's own attributes: by name with their defaults, under All only when set.
        for name, default in validation.EXTENSION_QUEUE_ATTRIBUTES.items():
            if name in names:
                result.setdefault(name, default)
            elif "All" in names and name in queue.attributes:
                wanted.append(name)
        return {n: result[n] for n in wanted if n in result}

    async def set_queue_attributes(
        self, identity: QueueIdentity, attributes: Mapping[str, str]
    ) -> None:
        queue = await self._storage.directory.get(identity)
        given = validation.normalize_queue_attributes(
            attributes, creating=False, queue_is_fifo=queue.fifo
        )
        validation.validate_queue_type_attributes({**queue.attributes, **given}, queue.fifo)
        await self._dead_letters.check_redrive_policy(identity, given, queue.fifo)
        merged = validation.apply_encryption_attributes(queue.attributes, given)
        for cleared in [k for k in dead_letter_policy.CLEARABLE_ATTRIBUTES if merged.get(k) == ""]:
            del merged[cleared]  # an empty policy removes it, as in SQS
        await self._storage.directory.save(
            replace(queue, attributes=merged, last_modified_timestamp=int(self._clock()))
        )

    async def purge_queue(self, identity: QueueIdentity) -> None:
        queue = await self._storage.directory.get(identity)
        now_ms = epoch_ms(self._clock)
        last_purge = await self._storage.catalog.last_purge_ms(queue)
        if last_purge is not None and 0 <= now_ms - last_purge < PURGE_INTERVAL_MS:
            raise PurgeQueueInProgress(
                f"Only one PurgeQueue operation on {identity.name} is allowed every 60 seconds."
            )
        await self._storage.catalog.record_purge(queue, now_ms)
        await self._storage.store.purge(queue)
        await self._storage.cache_fill.purge(queue)

    async def tag_queue(self, identity: QueueIdentity, tags: Mapping[str, str]) -> None:
        queue = await self._storage.directory.get(identity)
        validation.validate_tags_given(tags)
        validation.validate_tags(tags, queue.tags.keys(), identity.name)
        await self._storage.directory.save(replace(queue, tags={**queue.tags, **tags}))

    async def untag_queue(self, identity: QueueIdentity, tag_keys: Sequence[str]) -> None:
        queue = await self._storage.directory.get(identity)
        validation.validate_tag_keys(tag_keys)
        remaining = {k: v for k, v in queue.tags.items() if k not in set(tag_keys)}
        await self._storage.directory.save(replace(queue, tags=remaining))

    async def list_queue_tags(self, identity: QueueIdentity) -> dict[str, str]:
        return dict((await self._storage.directory.get(identity)).tags)

    async def describe_queue(self, identity: QueueIdentity) -> QueueDescription:
        """The queue as an operator's view shows it (the admin console)."""
        queue = await self._storage.directory.get(identity)
        policy = dead_letter_policy.parse_redrive_policy(queue.attributes.get("RedrivePolicy"))
        return QueueDescription(
            name=identity.name,
            arn=self._storage.directory.arn(identity),
            fifo=queue.fifo,
            attributes=await self.get_queue_attributes(identity, ["All"]),
            tags=dict(queue.tags),
            dead_letter_queue=(
                arns.queue_name_from_arn(policy.dead_letter_target_arn) if policy else None
            ),
            max_receive_count=policy.max_receive_count if policy else None,
        )

    async def add_permission(
        self,
        identity: QueueIdentity,
        label: str,
        account_ids: Sequence[str],
        actions: Sequence[str],
    ) -> None:
        queue = await self._storage.directory.get(identity)
        policy = permissions.add_permission(
            queue.attributes.get("Policy"), self._storage.directory.arn(identity), label,
            account_ids, actions,
        )
        await self._storage.directory.save(replace(
            queue, attributes={**queue.attributes, "Policy": policy},
            last_modified_timestamp=int(self._clock()),
        ))

    async def remove_permission(self, identity: QueueIdentity, label: str) -> None:
        queue = await self._storage.directory.get(identity)
        policy = permissions.remove_permission(queue.attributes.get("Policy"), label)
        attributes = {k: v for k, v in queue.attributes.items() if k != "Policy"}
        if policy is not None:
            attributes["Policy"] = policy
        await self._storage.directory.save(replace(
            queue, attributes=attributes, last_modified_timestamp=int(self._clock())
        ))
