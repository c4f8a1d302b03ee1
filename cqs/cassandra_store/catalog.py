"""CassandraQueueCatalog: queue metadata and the shared signing secret, in Cassandra.

Owns the `queues` and `settings` tables' use. Without lightweight transactions (CQL 3.0.0),
`create` reads, inserts when absent and returns what is stored; two racing creators of one
name converge on the last write. Imports `cqs.model`, `cqs.errors` and this package; never
the service, Redis or aiohttp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.session import DEFAULT_REPLICATION, CassandraSession, connect
from cqs.model import Queue

SHARED_SECRET_SETTING = "receipt_handles.secret"
_LIST_PAGE = 1000

_SELECT_QUEUE = (
    "SELECT name, queue_id, attributes, tags, created_s, modified_s"
    f" FROM {schema.QUEUES_TABLE} WHERE name = ?"
)


class CassandraQueueCatalog:
    def __init__(self, session: CassandraSession, *, owns_session: bool = False) -> None:
        self._session = session
        self._owns_session = owns_session

    @classmethod
    async def open(
        cls,
        contact_points: Sequence[str],
        keyspace: str,
        replication: str | Mapping[str, str | int] = DEFAULT_REPLICATION,
        protocol_version: int = 1,
        read_consistency: str = "ONE",
        write_consistency: str = "ONE",
        request_timeout: float = 5.0,
    ) -> CassandraQueueCatalog:
        """Connect with a session of its own (closed by `close()`)."""
        session = await connect(
            contact_points,
            keyspace,
            replication=replication,
            protocol_version=protocol_version,
            read_consistency=read_consistency,
            write_consistency=write_consistency,
            request_timeout=request_timeout,
        )
        return cls(session, owns_session=True)

    async def create(self, queue: Queue) -> Queue:
        existing = await self.get(queue.name)
        if existing is not None:
            return existing
        row = rows.queue_to_row(queue)
        await self._session.write(
            f"INSERT INTO {schema.QUEUES_TABLE}"
            " (name, queue_id, attributes, tags, created_s, modified_s)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [row.name, row.queue_id, row.attributes, row.tags, row.created_s, row.modified_s],
        )
        stored = await self.get(queue.name)
        return stored if stored is not None else queue  # deleted again meanwhile

    async def get(self, name: str) -> Queue | None:
        found = await self._session.read(_SELECT_QUEUE, [name])
        if not found or found[0].queue_id is None:
            return None
        row = found[0]
        return rows.queue_from_row(
            row.name, row.queue_id, row.attributes, row.tags, row.created_s, row.modified_s
        )

    async def list_names(self) -> list[str]:
        """Every name, paging by token (protocol v1 has no driver paging)."""
        names: list[str] = []
        page = await self._session.read(
            f"SELECT name, queue_id FROM {schema.QUEUES_TABLE} LIMIT {_LIST_PAGE}"
        )
        while page:
            names.extend(row.name for row in page if row.queue_id is not None)
            if len(page) < _LIST_PAGE:
                break
            page = await self._session.read(
                f"SELECT name, queue_id FROM {schema.QUEUES_TABLE}"
                f" WHERE token(name) > token(?) LIMIT {_LIST_PAGE}",
                [page[-1].name],
            )
        return sorted(names)

    async def save(self, queue: Queue) -> None:
        """Only the incarnation named by `queue.queue_id`: a deleted queue is not revived."""
        current = await self.get(queue.name)
        if current is None or current.queue_id != queue.queue_id:
            return
        row = rows.queue_to_row(queue)
        await self._session.write(
            f"UPDATE {schema.QUEUES_TABLE} SET attributes = ?, tags = ?, modified_s = ?"
            " WHERE name = ?",
            [row.attributes, row.tags, row.modified_s, row.name],
        )

    async def delete(self, name: str) -> None:
        await self._session.write(f"DELETE FROM {schema.QUEUES_TABLE} WHERE name = ?", [name])

    async def shared_secret(self, candidate: bytes) -> bytes:
        return await self._session.agreed_setting(SHARED_SECRET_SETTING, candidate)

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()
