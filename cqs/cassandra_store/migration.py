"""`cqs migrate`'s CQL: copying a keyspace of the earlier schema into today's tables.

Owns reading the tables cqs wrote before queue identity held the account and region
(`schema.LEGACY_*`: the catalog and deletion records keyed by name alone, and the message
tables: regular, or compact ones converted to regular on 3.x before the upgrade to 4.0+,
which keeps their columns) and writing their rows into today's tables: catalog rows and
deletion records get the account and region given, each queue's bucket index and live
messages keep their keys. Every row keeps its remaining time to live and its write time, so
a copy never overrides a newer write, and rewriting what an interrupted run copied changes
nothing. Also the record of a finished migration (`schema.SCHEMA_MIGRATED_SETTING` in
`settings`, the server's go-ahead), the count of legacy rows written after a migration, and
dropping the legacy tables.

Messages are found through the bucket index of each queue in the legacy catalog, shard by
shard (an IN over the shards, then resuming inside one), so the messages of queues whose
catalog row is gone (deleted queues, unreachable already) are not copied. Each copy keeps
its cell's time to live and write time (`USING TTL ... AND TIMESTAMP ...`), which differ
row by row, so the copies are unprepared statements with every value written into the
text as a CQL literal (blobs as `0x...` constants).
Imports the driver's encoder, `cqs.domain.model`, `cqs.ports` and this package; never the
service, Redis or aiohttp.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, fields

from cassandra.encoder import Encoder

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.connection import CassandraConnection, connect
from cqs.cassandra_store.partitions import NO_LIMIT, shard_pages
from cqs.cassandra_store.session import CassandraSession, Row, all_or_first_error
from cqs.domain.model import QueueNamespace
from cqs.ports.migration import MigrationCounts, MigrationRecord

# Rows of one read of the legacy catalog or deletion records (paged by partition token).
_LIST_PAGE = 1000
# Messages of one read (and of one round of concurrent copies): payloads reach 256 KiB.
MESSAGE_PAGE = 200
# Dropped in this order: the catalog last, as the server's refusal looks for it.
_DROP_ORDER = (
    schema.LEGACY_MESSAGES_TABLE,
    schema.LEGACY_MESSAGE_BUCKETS_TABLE,
    schema.LEGACY_DELETED_QUEUES_TABLE,
    schema.LEGACY_QUEUES_TABLE,
)
_CATALOG_COLUMNS = (
    "name, queue_id, attributes, tags, created_s, modified_s,"
    " WRITETIME(queue_id), WRITETIME(modified_s)"
)


@dataclass(frozen=True, slots=True)
class _Cell:
    """When a legacy cell was written (microseconds) and how long it has left (seconds;
    None: it never expires)."""

    ttl: int | None
    written_us: int | None

    @property
    def expired(self) -> bool:
        return self.ttl is not None and self.ttl < 1

    def written_since(self, since_ms: int) -> bool:
        return self.written_us is not None and self.written_us >= since_ms * 1000


@dataclass(slots=True)
class _Tally:
    queues: int = 0
    deletion_records: int = 0
    buckets: int = 0
    messages: int = 0

    def counts(self) -> MigrationCounts:
        return MigrationCounts(self.queues, self.deletion_records, self.buckets, self.messages)


class CassandraLegacyKeyspace:
    """The keyspace `cqs migrate` works on, over a session opened with `migrating=True`
    (today's tables are created when missing, the legacy ones are no reason to refuse)."""

    def __init__(
        self,
        session: CassandraSession,
        keyspace: str,
        *,
        owns_session: bool = False,
        message_page: int = MESSAGE_PAGE,
    ) -> None:
        self._session = session
        self._keyspace = schema.checked_identifier(keyspace)
        self._owns_session = owns_session
        self._message_page = message_page
        self._literals = _Literals()

    @classmethod
    async def open(cls, connection: CassandraConnection) -> CassandraLegacyKeyspace:
        """Connect with a session of its own (closed by `close()`). Raises
        KeyspaceNotFound when the keyspace does not exist (none is created)."""
        session = await connect(connection, migrating=True)
        return cls(session, connection.keyspace, owns_session=True)

    @property
    def name(self) -> str:
        return self._keyspace

    async def legacy_tables(self) -> list[str]:
        tables = await self._session.table_names()
        return [table for table in schema.LEGACY_TABLES if table in tables]

    # --- the record of a finished migration -------------------------------------------------

    async def migration_record(self) -> MigrationRecord | None:
        found = await self._session.read(
            f"SELECT value, written_ms FROM {schema.SETTINGS_TABLE} WHERE name = ?",
            [schema.SCHEMA_MIGRATED_SETTING],
        )
        if not found or found[0].value is None:
            return None
        return _record_from_value(bytes(found[0].value), int(found[0].written_ms or 0))

    async def record_migration(self, record: MigrationRecord) -> None:
        await self._session.write(
            f"INSERT INTO {schema.SETTINGS_TABLE} (name, value, written_ms) VALUES (?, ?, ?)",
            [schema.SCHEMA_MIGRATED_SETTING, _record_value(record), record.finished_ms],
        )

    # --- copying ----------------------------------------------------------------------------

    async def copy(
        self, namespace: QueueNamespace, progress: Callable[[MigrationCounts], None]
    ) -> MigrationCounts:
        tables = set(await self.legacy_tables())
        tally = _Tally()
        queue_ids: list[str] = []
        if schema.LEGACY_QUEUES_TABLE in tables:
            async for page in self._catalog_pages():
                queue_ids.extend(str(row.queue_id) for row in page)
                tally.queues += await _copy_all(self._copy_queue(namespace, row) for row in page)
                progress(tally.counts())
        if schema.LEGACY_DELETED_QUEUES_TABLE in tables:
            async for rows in self._deletion_pages():
                copied = await _copy_all(self._copy_deletion(namespace, row) for row in rows)
                tally.deletion_records += copied
                progress(tally.counts())
        if schema.LEGACY_MESSAGE_BUCKETS_TABLE not in tables:
            return tally.counts()
        with_messages = schema.LEGACY_MESSAGES_TABLE in tables
        for queue_id in queue_ids:
            buckets = await self._buckets(queue_id)
            tally.buckets += await _copy_all(self._copy_bucket(queue_id, row) for row in buckets)
            progress(tally.counts())
            if not with_messages:
                continue
            for bucket_row in buckets:
                async for page in self._message_pages(queue_id, int(bucket_row.bucket)):
                    tally.messages += await _copy_all(
                        self._copy_message(queue_id, int(bucket_row.bucket), row) for row in page
                    )
                    progress(tally.counts())
        return tally.counts()

    async def _copy_queue(self, namespace: QueueNamespace, row: Row) -> bool:
        written = [stamp for stamp in (row[6], row[7]) if stamp is not None]
        return await self._copy(
            schema.QUEUES_TABLE,
            {
                "account_id": namespace.account_id,
                "region": namespace.region,
                "name": row.name,
                "queue_id": row.queue_id,
                # maps in the legacy table, JSON text in today's (rows.QueueRow)
                "attributes": rows.catalog_json(row.attributes or {}),
                "tags": rows.catalog_json(row.tags or {}),
                "created_s": row.created_s,
                "modified_s": row.modified_s,
            },
            _Cell(None, max(written) if written else None),
        )

    async def _copy_deletion(self, namespace: QueueNamespace, row: Row) -> bool:
        return await self._copy(
            schema.DELETED_QUEUES_TABLE,
            {
                "account_id": namespace.account_id,
                "region": namespace.region,
                "name": row.name,
                "deleted_ms": row.deleted_ms,
            },
            _Cell(row[2], row[3]),
        )

    async def _copy_bucket(self, queue_id: str, row: Row) -> bool:
        return await self._copy(
            schema.MESSAGE_BUCKETS_TABLE,
            {"queue_id": queue_id, "bucket": int(row.bucket), "registered_ms": row.registered_ms},
            _Cell(row[2], row[3]),
        )

    async def _copy_message(self, queue_id: str, bucket: int, row: Row) -> bool:
        return await self._copy(
            schema.MESSAGES_TABLE,
            {
                "queue_id": queue_id,
                "bucket": bucket,
                "shard": int(row.shard),
                "message_id": row.message_id,
                "payload": bytes(row.payload),
            },
            _Cell(row[3], row[4]),
        )

    async def _copy(self, table: str, values: Mapping[str, object], cell: _Cell) -> bool:
        """One legacy row into today's `table`, keeping its write time and remaining TTL; a
        cell that has expired is not copied (False)."""
        if cell.expired:
            return False
        await self._session.write_text(
            self._literals.insert(f"{self._keyspace}.{table}", values, cell)
        )
        return True

    # --- rows written after a migration -----------------------------------------------------

    async def written_since(self, since_ms: int) -> MigrationCounts:
        tables = set(await self.legacy_tables())
        tally = _Tally()
        queue_ids: list[str] = []
        if schema.LEGACY_QUEUES_TABLE in tables:
            async for page in self._catalog_pages():
                for row in page:
                    queue_ids.append(str(row.queue_id))
                    if any(_Cell(None, stamp).written_since(since_ms) for stamp in row[6:8]):
                        tally.queues += 1
        if schema.LEGACY_DELETED_QUEUES_TABLE in tables:
            async for rows in self._deletion_pages():
                tally.deletion_records += sum(
                    _Cell(row[2], row[3]).written_since(since_ms) for row in rows
                )
        if schema.LEGACY_MESSAGE_BUCKETS_TABLE not in tables:
            return tally.counts()
        for queue_id in queue_ids:
            buckets = await self._buckets(queue_id)
            tally.buckets += sum(_Cell(row[2], row[3]).written_since(since_ms) for row in buckets)
            if schema.LEGACY_MESSAGES_TABLE not in tables:
                continue
            for bucket_row in buckets:
                async for page in self._message_pages(queue_id, int(bucket_row.bucket)):
                    tally.messages += sum(
                        _Cell(row[3], row[4]).written_since(since_ms) for row in page
                    )
        return tally.counts()

    # --- reading the legacy tables ----------------------------------------------------------

    def _catalog_pages(self) -> AsyncIterator[list[Row]]:
        """Pages of the legacy catalog's live rows, by partition token."""
        return self._pages_by_name_token(
            f"SELECT {_CATALOG_COLUMNS} FROM {schema.LEGACY_QUEUES_TABLE}",
            lambda row: row.queue_id is not None,
        )

    def _deletion_pages(self) -> AsyncIterator[list[Row]]:
        return self._pages_by_name_token(
            "SELECT name, deleted_ms, TTL(deleted_ms), WRITETIME(deleted_ms)"
            f" FROM {schema.LEGACY_DELETED_QUEUES_TABLE}",
            lambda row: row.deleted_ms is not None,
        )

    async def _pages_by_name_token(
        self, select: str, live: Callable[[Row], bool]
    ) -> AsyncIterator[list[Row]]:
        """Pages of the `live` rows of a legacy table partitioned by `name`, by partition token."""
        page = await self._session.read(f"{select} LIMIT {_LIST_PAGE}")
        while page:
            kept = [row for row in page if live(row)]
            if kept:
                yield kept
            if len(page) < _LIST_PAGE:
                return
            page = await self._session.read(
                f"{select} WHERE token(name) > token(?) LIMIT {_LIST_PAGE}", [page[-1].name]
            )

    async def _buckets(self, queue_id: str) -> list[Row]:
        """The queue's legacy bucket index entries, oldest bucket first (one partition)."""
        found = await self._session.read(
            "SELECT bucket, registered_ms, TTL(registered_ms), WRITETIME(registered_ms)"
            f" FROM {schema.LEGACY_MESSAGE_BUCKETS_TABLE} WHERE queue_id = ? LIMIT {NO_LIMIT}",
            [queue_id],
        )
        return [row for row in found if row.registered_ms is not None]

    def _message_pages(self, queue_id: str, bucket: int) -> AsyncIterator[list[Row]]:
        """Pages of one bucket's live messages (`partitions.shard_pages`)."""
        select = (
            "SELECT shard, message_id, payload, TTL(payload), WRITETIME(payload)"
            f" FROM {schema.LEGACY_MESSAGES_TABLE} WHERE queue_id = ? AND bucket = ?"
        )
        limit = self._message_page

        async def read_shards(remaining: list[int]) -> list[Row]:
            markers = ", ".join("?" * len(remaining))
            return await self._session.read(
                f"{select} AND shard IN ({markers}) LIMIT {limit}", [queue_id, bucket, *remaining]
            )

        async def read_after(shard: int, after: uuid.UUID) -> list[Row]:
            return await self._session.read(
                f"{select} AND shard = ? AND message_id > ? LIMIT {limit}",
                [queue_id, bucket, shard, after],
            )

        return shard_pages(
            read_shards, read_after, shard_count=schema.SHARD_COUNT, page_size=limit,
            keep=lambda page: [row for row in page if row.payload is not None],
        )

    # --- dropping ---------------------------------------------------------------------------

    async def drop_legacy_tables(self) -> list[str]:
        present = set(await self.legacy_tables())
        dropped: list[str] = []
        for table in _DROP_ORDER:
            if table in present:
                await self._session.change_schema(f"DROP TABLE {self._keyspace}.{table}")
                dropped.append(table)
        return dropped

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()


async def _copy_all(copies: Iterable[Awaitable[bool]]) -> int:
    """Run the copies concurrently (the session bounds what is in flight); how many wrote
    (a row whose time to live ran out meanwhile is not written)."""
    outcomes: list[bool] = []

    async def run(copy: Awaitable[bool]) -> None:
        outcomes.append(await copy)

    await all_or_first_error([run(copy) for copy in copies])
    return sum(outcomes)


class _Literals:
    """INSERT statements with every value a CQL literal."""

    def __init__(self) -> None:
        self._encoder = Encoder()

    def insert(self, table: str, values: Mapping[str, object], cell: _Cell) -> str:
        """Absent values (None, an empty map) are left out: absent is how they read back."""
        present = {name: value for name, value in values.items() if value not in (None, {})}
        literals = ", ".join(self._encoder.cql_encode_all_types(value) for value in present.values())
        using = []
        if cell.ttl is not None:
            using.append(f"TTL {int(cell.ttl)}")
        if cell.written_us is not None:
            using.append(f"TIMESTAMP {int(cell.written_us)}")
        clause = f" USING {' AND '.join(using)}" if using else ""
        return f"INSERT INTO {table} ({', '.join(present)}) VALUES ({literals}){clause}"


_COUNT_FIELDS = tuple(field.name for field in fields(MigrationCounts))


def _record_value(record: MigrationRecord) -> bytes:
    """The record as the `settings` row's value: JSON, readable with cqlsh."""
    document: dict[str, object] = {
        "account_id": record.account_id,
        "region": record.region,
        "started_ms": record.started_ms,
        "finished_ms": record.finished_ms,
        "copied": {name: getattr(record.copied, name) for name in _COUNT_FIELDS},
    }
    return json.dumps(document, sort_keys=True).encode("utf-8")


def _record_from_value(value: bytes, written_ms: int) -> MigrationRecord:
    """The record; one that cannot be read counts as a migration of unknown start (so every
    legacy row counts as written after it)."""
    try:
        document = json.loads(value.decode("utf-8"))
        copied = document.get("copied", {})
        return MigrationRecord(
            account_id=str(document["account_id"]),
            region=str(document["region"]),
            started_ms=int(document["started_ms"]),
            finished_ms=int(document["finished_ms"]),
            copied=MigrationCounts(**{name: int(copied.get(name, 0)) for name in _COUNT_FIELDS}),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return MigrationRecord("?", "?", 0, written_ms, MigrationCounts())
