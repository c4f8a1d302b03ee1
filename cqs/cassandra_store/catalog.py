"""CassandraQueueCatalog: queue metadata and the shared signing secret, in Cassandra.

Owns the use of the catalog and `settings` tables, the purge and deletion records and the
message move tasks. Queues are found by `QueueIdentity` (account id, region, name); one
partition per account and region holds its queues in name order. Without lightweight
transactions (CQL 3.0.0),
`create` reads, inserts when absent and returns what is stored; two racing creators of one
name converge on the last write. Imports `cqs.domain.model`, `cqs.domain.errors` and this package; never
the service, Redis or aiohttp.
"""

from __future__ import annotations

from cqs.cassandra_store import rows, schema
from cqs.cassandra_store.connection import CassandraConnection, connect
from cqs.cassandra_store.session import CassandraSession, Row
from cqs.domain.model import MessageMoveTask, MoveTaskStatus, Queue, QueueIdentity

SHARED_SECRET_SETTING = "receipt_handles.secret"
_LIST_PAGE = 1000

_NAMESPACE = "account_id = ? AND region = ?"
_SELECT_QUEUE = (
    "SELECT name, queue_id, attributes, tags, created_s, modified_s"
    f" FROM {schema.QUEUES_TABLE} WHERE {_NAMESPACE} AND name = ?"
)


class CassandraQueueCatalog:
    def __init__(self, session: CassandraSession, *, owns_session: bool = False) -> None:
        self._session = session
        self._owns_session = owns_session

    @classmethod
    async def open(cls, connection: CassandraConnection) -> CassandraQueueCatalog:
        """Connect with a session of its own (closed by `close()`)."""
        session = await connect(connection)
        return cls(session, owns_session=True)

    async def create(self, queue: Queue) -> Queue:
        existing = await self.get(queue.identity)
        if existing is not None:
            return existing
        row = rows.queue_to_row(queue)
        # The driver stamps each write in microseconds, strictly increasing in a process
        # (protocol v3+), so a delete of the name just before cannot shadow this insert.
        await self._session.write(
            f"INSERT INTO {schema.QUEUES_TABLE}"
            " (account_id, region, name, queue_id, attributes, tags, created_s, modified_s)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [row.account_id, row.region, row.name, row.queue_id, row.attributes, row.tags,
             row.created_s, row.modified_s],
        )
        stored = await self.get(queue.identity)
        return stored if stored is not None else queue  # a delete racing this create

    async def get(self, identity: QueueIdentity) -> Queue | None:
        found = await self._session.read(_SELECT_QUEUE, list(identity))
        if not found or found[0].queue_id is None:
            return None
        row = found[0]
        return rows.queue_from_row(
            identity, row.queue_id, row.attributes, row.tags, row.created_s, row.modified_s
        )

    async def list_names(self, account_id: str, region: str) -> list[str]:
        """The names of one account's queues in one region, sorted (one partition)."""
        select = f"SELECT name, queue_id FROM {schema.QUEUES_TABLE} WHERE {_NAMESPACE}"
        names: list[str] = []
        page = await self._session.read(f"{select} LIMIT {_LIST_PAGE}", [account_id, region])
        while page:
            names.extend(row.name for row in page if row.queue_id is not None)
            if len(page) < _LIST_PAGE:
                break
            page = await self._session.read(
                f"{select} AND name > ? LIMIT {_LIST_PAGE}", [account_id, region, page[-1].name]
            )
        return names

    async def list_all(self) -> list[QueueIdentity]:
        """Every queue of every account and region, sorted.

        Pages by partition token, finishing a partition cut off by a page first (protocol
        v1 has no driver paging).
        """
        columns = f"account_id, region, name, queue_id FROM {schema.QUEUES_TABLE}"
        found: list[QueueIdentity] = []

        def collect(page: list[Row]) -> None:
            found.extend(
                QueueIdentity(row.account_id, row.region, row.name)
                for row in page if row.queue_id is not None
            )

        page = await self._session.read(f"SELECT {columns} LIMIT {_LIST_PAGE}")
        while page:
            collect(page)
            if len(page) < _LIST_PAGE:
                break
            last = page[-1]
            while True:  # the rest of the last row's partition
                rest = await self._session.read(
                    f"SELECT {columns} WHERE {_NAMESPACE} AND name > ? LIMIT {_LIST_PAGE}",
                    [last.account_id, last.region, last.name],
                )
                collect(rest)
                if len(rest) < _LIST_PAGE:
                    break
                last = rest[-1]
            page = await self._session.read(
                f"SELECT {columns} WHERE token(account_id, region) > token(?, ?)"
                f" LIMIT {_LIST_PAGE}",
                [last.account_id, last.region],
            )
        return sorted(found)

    async def save(self, queue: Queue) -> None:
        """Only the incarnation named by `queue.queue_id`: a deleted queue is not revived."""
        current = await self.get(queue.identity)
        if current is None or current.queue_id != queue.queue_id:
            return
        row = rows.queue_to_row(queue)
        await self._session.write(
            f"UPDATE {schema.QUEUES_TABLE} SET attributes = ?, tags = ?, modified_s = ?"
            f" WHERE {_NAMESPACE} AND name = ?",
            [row.attributes, row.tags, row.modified_s, row.account_id, row.region, row.name],
        )

    async def delete(self, identity: QueueIdentity) -> None:
        await self._session.write(
            f"DELETE FROM {schema.QUEUES_TABLE} WHERE {_NAMESPACE} AND name = ?", list(identity)
        )

    async def shared_secret(self, candidate: bytes) -> bytes:
        return await self._session.agreed_setting(SHARED_SECRET_SETTING, candidate)

    # --- purge and deletion records ---------------------------------------------------------

    async def record_purge(self, queue: Queue, purged_ms: int) -> None:
        await self._session.write(
            f"INSERT INTO {schema.QUEUE_PURGES_TABLE} (queue_id, purged_ms) VALUES (?, ?)"
            f" USING TTL {schema.EVENT_RECORD_TTL_SECONDS}",
            [queue.queue_id, purged_ms],
        )

    async def last_purge_ms(self, queue: Queue) -> int | None:
        found = await self._session.read(
            f"SELECT purged_ms FROM {schema.QUEUE_PURGES_TABLE} WHERE queue_id = ?",
            [queue.queue_id],
        )
        return int(found[0].purged_ms) if found and found[0].purged_ms is not None else None

    async def record_deletion(self, identity: QueueIdentity, deleted_ms: int) -> None:
        await self._session.write(
            f"INSERT INTO {schema.DELETED_QUEUES_TABLE}"
            " (account_id, region, name, deleted_ms) VALUES (?, ?, ?, ?)"
            f" USING TTL {schema.EVENT_RECORD_TTL_SECONDS}",
            [*identity, deleted_ms],
        )

    async def deleted_ms(self, identity: QueueIdentity) -> int | None:
        found = await self._session.read(
            f"SELECT deleted_ms FROM {schema.DELETED_QUEUES_TABLE}"
            f" WHERE {_NAMESPACE} AND name = ?",
            list(identity),
        )
        return int(found[0].deleted_ms) if found and found[0].deleted_ms is not None else None

    # --- message move tasks ------------------------------------------------------------------

    async def save_move_task(self, task: MessageMoveTask) -> None:
        columns = ", ".join(rows.MOVE_TASK_COLUMNS)
        markers = ", ".join("?" * len(rows.MOVE_TASK_COLUMNS))
        await self._session.write(
            f"INSERT INTO {schema.MOVE_TASKS_TABLE} ({columns}) VALUES ({markers})",
            rows.move_task_to_row(task),
        )

    async def record_move_progress(self, task: MessageMoveTask) -> None:
        await self._session.write(
            f"UPDATE {schema.MOVE_TASKS_TABLE} SET moved = ?, heartbeat_ms = ?"
            " WHERE source_arn = ? AND task_id = ?",
            [task.moved, task.heartbeat_ms, task.source_arn, task.task_id],
        )

    async def request_move_cancel(self, source_arn: str, task_id: str) -> None:
        await self._session.write(
            f"UPDATE {schema.MOVE_TASKS_TABLE} SET status = ?"
            " WHERE source_arn = ? AND task_id = ?",
            [MoveTaskStatus.CANCELLING.value, source_arn, task_id],
        )

    async def move_task(self, source_arn: str, task_id: str) -> MessageMoveTask | None:
        found = await self._session.read(
            f"SELECT {', '.join(rows.MOVE_TASK_COLUMNS)} FROM {schema.MOVE_TASKS_TABLE}"
            " WHERE source_arn = ? AND task_id = ?",
            [source_arn, task_id],
        )
        return rows.move_task_from_row(found[0]._asdict()) if found else None

    async def move_tasks(self, source_arn: str) -> list[MessageMoveTask]:
        found = await self._session.read(
            f"SELECT {', '.join(rows.MOVE_TASK_COLUMNS)} FROM {schema.MOVE_TASKS_TABLE}"
            f" WHERE source_arn = ? LIMIT {_LIST_PAGE}",
            [source_arn],
        )
        tasks = [rows.move_task_from_row(row._asdict()) for row in found]
        return sorted(tasks, key=lambda task: (task.started_ms, task.task_id), reverse=True)

    async def active_move_tasks(self) -> list[MessageMoveTask]:
        """A full scan of the (small) task table, paged by partition token."""
        columns = ", ".join(rows.MOVE_TASK_COLUMNS)
        found: list[MessageMoveTask] = []
        page = await self._session.read(
            f"SELECT {columns} FROM {schema.MOVE_TASKS_TABLE} LIMIT {_LIST_PAGE}"
        )
        while page:
            found.extend(rows.move_task_from_row(row._asdict()) for row in page)
            if len(page) < _LIST_PAGE:
                break
            page = await self._session.read(
                f"SELECT {columns} FROM {schema.MOVE_TASKS_TABLE}"
                f" WHERE token(source_arn) > token(?) LIMIT {_LIST_PAGE}",
                [page[-1].source_arn],
            )
        return [task for task in found if task.status.active]

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()

    # --- consumer groups (#19) ---------------------------------------------------------------
    async def consumer_groups(self, identity: QueueIdentity) -> list[Queue]:
        """Names from `<name>/` up to (not including) `<name>0`: "0" follows "/" in UTF-8
        order, so the slice holds exactly the names that start with `<name>/`."""
        select = (
            "SELECT name, queue_id, attributes, tags, created_s, modified_s"
            f" FROM {schema.QUEUES_TABLE} WHERE {_NAMESPACE} AND name > ? AND name < ?"
        )
        account_id, region, name = identity
        found: list[Queue] = []
        after = f"{name}/"
        while True:
            page = await self._session.read(
                f"{select} LIMIT {_LIST_PAGE}", [account_id, region, after, f"{name}0"]
            )
            found.extend(
                rows.queue_from_row(
                    QueueIdentity(account_id, region, row.name), row.queue_id, row.attributes,
                    row.tags, row.created_s, row.modified_s,
                )
                for row in page if row.queue_id is not None
            )
            if len(page) < _LIST_PAGE:
                return found
            after = page[-1].name
