"""Chores: the periodic upkeep of the service's mechanisms, for `cqs.service.housekeeping` to run.

Owns what each chore does: flushing the store deletes the cache remembered while the store
was away, trimming cached messages past their retention period, forgetting delivery
records whose time passed, and taking over message move tasks whose process stopped. The
cadence belongs to the housekeeper. Imports errors, ports and sibling mechanisms; never an
adapter.
"""

from __future__ import annotations

from collections.abc import Callable

from cqs.domain.errors import QueueDoesNotExist, StorageUnavailable
from cqs.ports import DueSweeper, MessageStore, QueueCatalog, Telemetry
from cqs.service.cache_fill import CacheFiller
from cqs.service.clock import epoch_ms
from cqs.service.move_tasks import MoveTasks
from cqs.service.queue_directory import QueueDirectory


class Chores:
    def __init__(
        self,
        sweeper: DueSweeper,
        catalog: QueueCatalog,
        store: MessageStore,
        directory: QueueDirectory,
        cache_fill: CacheFiller,
        move_tasks: MoveTasks,
        *,
        telemetry: Telemetry,
        clock: Callable[[], float],
    ) -> None:
        self._sweeper = sweeper
        self._catalog = catalog
        self._store = store
        self._directory = directory
        self._cache_fill = cache_fill
        self._move_tasks = move_tasks
        self._telemetry = telemetry
        self._clock = clock

    async def flush_deferred_store_deletes(self, limit: int = 500) -> int:
        """Apply the deletes the store missed while it was away; return how many landed."""
        applied = 0
        for identity, message_ids in (await self._sweeper.deferred_store_deletes(limit)).items():
            try:
                queue = await self._directory.get(identity)
            except QueueDoesNotExist:  # its messages went with it
                await self._sweeper.forget_store_deletes(identity, message_ids)
                continue
            await self._store.delete_many(queue, message_ids)
            await self._sweeper.forget_store_deletes(identity, message_ids)
            applied += len(message_ids)
        return applied

    async def trim_expired_messages(self) -> int:
        """Drop cached messages older than their queue's retention period (Cassandra's TTL
        expires them there); return how many were dropped."""
        trimmed = 0
        now_ms = epoch_ms(self._clock)
        for identity in await self._catalog.list_all():
            try:
                queue = await self._directory.get(identity)
                expired = await self._sweeper.trim_expired(
                    identity, now_ms, queue.retention_seconds * 1000
                )
                self._telemetry.messages_expired(identity.name, expired)
                trimmed += expired
            except (StorageUnavailable, QueueDoesNotExist):
                continue
        return trimmed

    def prune_deliveries(self) -> int:
        """Forget deliveries whose visibility timeout passed; return how many remain."""
        return self._cache_fill.deliveries.prune(epoch_ms(self._clock))

    async def resume_message_move_tasks(self) -> int:
        """Take over the move tasks whose process stopped reporting; return how many."""
        return await self._move_tasks.resume_stopped_tasks()
