"""QueueDirectory: this process's copy of queue metadata, and queues from ARNs.

Owns the metadata cache (a queue read from the catalog is served for `ttl_seconds`, then
served stale up to METADATA_STALE_SECONDS while one background read refreshes it; while the
catalog cannot be read, a known queue is served from its last copy however old, except
through `get_recent`, and once a read has failed no caller waits on the catalog for a known
queue until a background read succeeds), what a create, change or delete does to that
copy, queue ARNs, and the "deleted recently" rule of CreateQueue. Queues are known by `QueueIdentity` (account id, region, name). Imports model,
errors, ports, `cqs.domain.arns`, `cqs.domain.validation` and the service clock; never an adapter, aiohttp or a driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from cqs.domain import arns, group_names, validation
from cqs.domain.errors import QueueDeletedRecently, QueueDoesNotExist, StorageUnavailable
from cqs.domain.model import Queue, QueueIdentity
from cqs.ports import QueueCatalog
from cqs.service.clock import epoch_ms

# A queue's cached metadata is served (and refreshed in the background) up to this age.
METADATA_STALE_SECONDS = 30.0


class QueueDirectory:
    def __init__(
        self,
        catalog: QueueCatalog,
        *,
        ttl_seconds: float,
        deleted_recently_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self._catalog = catalog
        self._ttl_seconds = ttl_seconds
        self._deleted_recently_seconds = deleted_recently_seconds
        self._clock = clock
        # identity -> (queue, read at)
        self._directory: dict[QueueIdentity, tuple[Queue, float]] = {}
        self._refreshing: set[QueueIdentity] = set()
        # The last catalog read failed (an outage): known queues are served from their copy
        # and refreshed behind the request, so a long outage does not make every call wait
        # out the Cassandra timeout. Cleared by the next read that succeeds.
        self._catalog_down = False

    @staticmethod
    def arn(identity: QueueIdentity) -> str:
        return arns.queue_arn(identity.region, identity.account_id, identity.name)

    async def get(self, identity: QueueIdentity) -> Queue:
        """The queue of that identity; QueueDoesNotExist if there is none."""
        if not (
            validation.is_possible_queue_name(identity.name)
            or group_names.is_group_queue_name(identity.name)
        ):
            # No queue has it, and storage is not asked: a 64 KiB name is past what
            # Cassandra takes in a key (it answered a server error, seen as a 503).
            raise QueueDoesNotExist("The specified queue does not exist.")
        cached = self._directory.get(identity)
        if cached:
            age = self._clock() - cached[1]
            if age < self._ttl_seconds:
                return cached[0]
            if age < METADATA_STALE_SECONDS or self._catalog_down:
                # Serve the known copy now and refresh behind the request: a request never
                # waits on a catalog read for a queue it knows (nor twice on a slow Cassandra).
                self._refresh_soon(identity)
                return cached[0]
        return await self._load(identity)

    async def get_recent(self, identity: QueueIdentity) -> Queue:
        """Like `get`, but never from a copy read more than METADATA_STALE_SECONDS ago: where
        `get` would fall back on an older copy because the catalog cannot be read, this raises
        StorageUnavailable (for decisions that must not rest on an old Policy)."""
        queue = await self.get(identity)
        cached = self._directory.get(identity)
        if cached is not None and self._clock() - cached[1] >= METADATA_STALE_SECONDS:
            queue = await self._load(identity)  # `get` served the old copy: ask the catalog
            cached = self._directory.get(identity)
        if cached is not None and self._clock() - cached[1] >= METADATA_STALE_SECONDS:
            raise StorageUnavailable(
                "The queue's metadata cannot be read to check access; try again."
            )
        return queue

    async def for_arn(self, arn: str) -> Queue:
        """The queue an SQS queue ARN names; QueueDoesNotExist otherwise."""
        identity = arns.queue_identity_from_arn(arn)
        if identity is None or arn != self.arn(identity):
            raise QueueDoesNotExist("The specified queue does not exist.")
        return await self.get(identity)

    def _refresh_soon(self, identity: QueueIdentity) -> None:
        if identity in self._refreshing:
            return
        self._refreshing.add(identity)

        async def refresh() -> None:
            try:
                await self._load(identity)
            except (StorageUnavailable, QueueDoesNotExist):
                pass
            finally:
                self._refreshing.discard(identity)

        asyncio.get_running_loop().create_task(refresh())

    async def _load(self, identity: QueueIdentity) -> Queue:
        cached = self._directory.get(identity)
        now = self._clock()
        try:
            queue = await self._catalog.get(identity)
        except StorageUnavailable:
            self._catalog_down = True
            if cached:  # a known queue keeps working from Redis while Cassandra is away
                return cached[0]
            raise
        self._catalog_down = False
        if queue is None:
            self._directory.pop(identity, None)
            raise QueueDoesNotExist("The specified queue does not exist.")
        # A create, change or delete of the queue while we read must not be overwritten by
        # what we read before it (a background pass over every queue reads for long).
        if self._directory.get(identity) is cached:
            self._directory[identity] = (queue, now)
        return queue

    def remember(self, queue: Queue) -> None:
        """The catalog now holds `queue` (this process created or changed it)."""
        self._directory[queue.identity] = (queue, self._clock())

    def forget(self, identity: QueueIdentity) -> None:
        self._directory.pop(identity, None)

    async def save(self, queue: Queue) -> None:
        await self._catalog.save(queue)
        self.remember(queue)

    async def check_not_deleted_recently(self, identity: QueueIdentity) -> None:
        """QueueDeletedRecently while the name of a deleted queue is still cooling down."""
        cooldown = self._deleted_recently_seconds
        if cooldown <= 0:
            return
        deleted = await self._catalog.deleted_ms(identity)
        if deleted is None or epoch_ms(self._clock) - deleted >= cooldown * 1000:
            return
        if await self._catalog.get(identity) is not None:
            return  # re-created since: CreateQueue answers with the existing queue
        raise QueueDeletedRecently(
            f"You must wait {cooldown:g} seconds after deleting a queue before you can create"
            " another with the same name."
        )
