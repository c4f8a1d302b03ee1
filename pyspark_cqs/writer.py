"""`df.write.format("cqs")` and `df.writeStream.format("cqs")`: rows become messages.

Owns the batch and stream writers. Each task turns its rows into SendMessageBatch calls
(at most 10 entries and `maxBatchBytes` per call, `sendParallelism` calls in flight) from
the executor it runs on. Entries SQS refuses for its own reasons (SenderFault false) are
sent again a few times; an entry refused as invalid fails the task, naming the row.

A failed task is retried by Spark and sends its rows again, so a standard queue gets every
row at least once. With `deterministicDeduplicationIds`, each row's
MessageDeduplicationId is derived from (write id, batch id, partition, row number): a retry
or a re-run micro-batch sends the same ids and a FIFO queue drops the repeats within its
5-minute deduplication interval, which makes the write exactly once into FIFO queues
(provided the input rows of a partition come in the same order on a retry).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)

from pyspark_cqs.options import MAX_BATCH_ENTRIES, WriteOptions
from pyspark_cqs.queue import EntryFailure, SqsQueue
from pyspark_cqs.rows import RowLayout, deduplication_id, entry_size

log = logging.getLogger(__name__)

# Spark's local properties of a micro-batch job (MicroBatchExecution / StreamExecution).
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
RETRIES = 5


class SendFailed(RuntimeError):
    """SQS refused a message of this task as invalid; retrying the task would not help."""


@dataclass
class SentMessages(WriterCommitMessage):
    """What one task sent."""

    partition: int
    messages: int


@dataclass(frozen=True)
class Identity:
    """Which write, batch and partition a task's rows belong to, for deduplication ids."""

    write_id: str
    batch_id: int
    partition: int


def send_rows(
    queue: SqsQueue, layout: RowLayout, rows: Iterator[Any], options: WriteOptions,
    identity: Identity | None,
) -> int:
    """Send every row with a non-null body; return how many messages were sent."""
    sent = 0
    pending: set[Future[int]] = set()
    with ThreadPoolExecutor(
        max_workers=options.send_parallelism, thread_name_prefix="cqs-send"
    ) as pool:

        def submit(batch: list[dict[str, Any]]) -> None:
            nonlocal sent
            # A bounded window: the partition is never buffered whole.
            while len(pending) >= options.send_parallelism * 2:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    pending.discard(future)
                    sent += future.result()
            pending.add(pool.submit(_send_batch, queue, batch))

        batch: list[dict[str, Any]] = []
        batch_bytes = 0
        for number, row in enumerate(rows):
            dedup = (
                deduplication_id(identity.write_id, identity.batch_id, identity.partition, number)
                if identity is not None
                else None
            )
            entry = layout.entry(row, dedup)
            if entry is None:
                continue
            size = entry_size(entry)
            if batch and (
                len(batch) == MAX_BATCH_ENTRIES or batch_bytes + size > options.max_batch_bytes
            ):
                submit(batch)
                batch, batch_bytes = [], 0
            batch.append(entry)
            batch_bytes += size
        if batch:
            submit(batch)
        for future in pending:
            sent += future.result()
    return sent


def _send_batch(queue: SqsQueue, entries: list[dict[str, Any]]) -> int:
    todo = entries
    for attempt in range(RETRIES + 1):
        failures = queue.send_batch(todo)
        if not failures:
            return len(entries)
        invalid = [f for f in failures if f.sender_fault]
        if invalid:
            raise SendFailed(_describe(invalid[0], todo))
        if attempt == RETRIES:
            raise RuntimeError(_describe(failures[0], todo))
        todo = [todo[f.index] for f in failures]
        time.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")


def _describe(failure: EntryFailure, entries: list[dict[str, Any]]) -> str:
    body = entries[failure.index]["MessageBody"]
    preview = body if len(body) <= 80 else body[:77] + "..."
    return (f"SendMessageBatch refused a message ({failure.code}: {failure.message}); "
            f"body {preview!r}")


def _partition_id() -> int:
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


class QueueWriter(DataSourceWriter):
    """Batch write; `write_id` is fixed on the driver, so task retries reuse it."""

    def __init__(self, options: WriteOptions, layout: RowLayout) -> None:
        self.options = options
        self.layout = layout
        self.queue = SqsQueue(options.connection)
        self.write_id = options.write_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> SentMessages:
        partition = _partition_id()
        identity = (
            Identity(self.write_id, 0, partition)
            if self.options.deterministic_deduplication_ids
            else None
        )
        return SentMessages(
            partition, send_rows(self.queue, self.layout, iterator, self.options, identity)
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.messages for m in messages if isinstance(m, SentMessages))
        log.info("sent %d messages to %s", total, self.options.connection.queue)


class QueueStreamWriter(DataSourceStreamWriter):
    """Micro-batch write; deterministic ids use the query id, which a checkpoint keeps."""

    def __init__(self, options: WriteOptions, layout: RowLayout) -> None:
        self.options = options
        self.layout = layout
        self.queue = SqsQueue(options.connection)

    def write(self, iterator: Iterator[Any]) -> SentMessages:
        partition = _partition_id()
        identity = None
        if self.options.deterministic_deduplication_ids:
            context = TaskContext.get()
            batch_id = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
            query_id = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
            write_id = self.options.write_id or query_id
            if batch_id is None or write_id is None:
                raise RuntimeError(
                    "deterministic deduplication ids need the micro-batch id and the query id, "
                    "which Spark did not pass to this task; set option writeId"
                )
            identity = Identity(write_id, int(batch_id), partition)
        return SentMessages(
            partition, send_rows(self.queue, self.layout, iterator, self.options, identity)
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.messages for m in messages if isinstance(m, SentMessages))
        log.info("batch %d: sent %d messages to %s", batchId, total,
                 self.options.connection.queue)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        sent = sum(m.messages for m in messages if isinstance(m, SentMessages))
        log.warning("batch %d aborted after %d messages were sent to %s; the retry sends "
                    "them again", batchId, sent, self.options.connection.queue)
