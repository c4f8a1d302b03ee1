"""The durable store's side of `cqs migrate`, in queue language, and the values it answers with.

Owns the interface `cqs.operations.migrate` drives: which tables of an earlier cqs version
the keyspace still holds, the record of a finished migration, copying every queue, deletion
record and live message into today's tables, finding legacy rows written after a migration,
and dropping the legacy tables. No shard numbers, buckets or driver types appear here beyond
counts; `cqs/cassandra_store/migration.py` implements it. Imports only `cqs.domain.model` and the
standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cqs.domain.model import QueueNamespace


@dataclass(frozen=True, slots=True)
class MigrationCounts:
    """Rows of the legacy tables: copied, or found by a check."""

    queues: int = 0
    deletion_records: int = 0  # when a queue name was last deleted (QueueDeletedRecently)
    buckets: int = 0  # entries of the index of each queue's message partitions
    messages: int = 0

    @property
    def total(self) -> int:
        return self.queues + self.deletion_records + self.buckets + self.messages


@dataclass(frozen=True, slots=True)
class MigrationRecord:
    """What a finished migration left in the keyspace (the server's go-ahead)."""

    account_id: str
    region: str
    started_ms: int  # wall clock when the copy that finished began
    finished_ms: int
    copied: MigrationCounts


class LegacyKeyspace(Protocol):
    """A keyspace that may hold the tables of a cqs version before queue identity held the
    account and region, opened without the server's refusal of such a keyspace."""

    @property
    def name(self) -> str:
        """The keyspace's name, for messages to the operator."""

    async def legacy_tables(self) -> list[str]:
        """The earlier version's tables still in the keyspace (empty: nothing to migrate)."""

    async def migration_record(self) -> MigrationRecord | None:
        """The record of a finished migration, or None when none finished."""

    async def copy(
        self, namespace: QueueNamespace, progress: Callable[[MigrationCounts], None]
    ) -> MigrationCounts:
        """Copy every legacy queue into `namespace`, with its deletion records, message
        index and live messages, keeping each row's remaining time to live and write time;
        `progress` hears the running counts after each page. Rewriting what an earlier,
        interrupted copy wrote changes nothing."""

    async def record_migration(self, record: MigrationRecord) -> None:
        """Mark the keyspace migrated: servers of this version serve it from now on."""

    async def written_since(self, since_ms: int) -> MigrationCounts:
        """Rows of the legacy tables written at or after `since_ms` (by a process of the
        earlier version still running during or after the migration)."""

    async def drop_legacy_tables(self) -> list[str]:
        """Drop the legacy tables; the ones dropped."""

    async def close(self) -> None: ...
