"""`spark.readStream.format("cqs")`: at-least-once consumption of a queue.

Owns the driver-side stream reader and its offsets. A queue cannot be replayed from an
offset, so the offset is a counter of messages this reader has handed to Spark, tagged
with the id of the reader's run: `{"run": "<id>", "seq": N}`.

The life of a message:

1. `latestOffset(start, limit)` receives up to the batch's limit on the driver (hidden for
   `visibilityTimeout` seconds) and holds the rows and receipt handles under the new end
   offset.
2. `partitions(start, end)` hands the held rows to partitions; `read()` on the executors
   only yields them, so re-running a stage never receives again.
3. Spark writes the batch to the sink, then its end offset to the commit log. Only then
   does it call `latestOffset(start)` with that end offset as `start` (Spark 4.3 calls
   `commit(end)` for batch N only when it plans batch N+1, so an idle stream would keep the
   last batch forever if deletion waited for it). Everything held up to `start` is
   deleted there, and in `commit()` when Spark does call it.
4. Held messages beyond `start` were never part of a committed batch (Spark runs one batch
   at a time): they are made visible again.

A restart from the checkpoint replays the uncommitted batch with offsets of the old run;
this reader holds no rows for them and plans it empty. Those messages were never deleted:
they come back after their visibility timeout and arrive in a later batch, so nothing is
lost. A message whose batch reached the sink but whose delete did not happen (a crash in
between) is delivered again: delivery is at least once, and a sink that must not see
duplicates dedupes on `message_id` (see pyspark_cqs/jobs/queue_to_parquet.py).

`trigger(availableNow=True)` drains what the queue holds when the query starts: at most
the ApproximateNumberOfMessages counted then, and nothing after a receive comes back
empty. The query then stops, with every consumed message deleted.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from pyspark_cqs.options import ReadOptions
from pyspark_cqs.queue import SqsQueue
from pyspark_cqs.receiving import MessagesPartition, Received, receive_up_to, release, split_rows
from pyspark_cqs.rows import Row

log = logging.getLogger(__name__)


@dataclass
class HeldBatch:
    """Messages handed to Spark as the range (start, end] of this run, not yet deleted."""

    start: int
    end: int
    received: Received


class QueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Lives on the driver for the whole query; the executors' copies only run `read()`."""

    def __init__(self, options: ReadOptions) -> None:
        # Cheap on purpose: Spark also builds a reader just to pickle `read` to executors.
        self.options = options
        self.queue = SqsQueue(options.connection)
        self.run = uuid.uuid4().hex[:16]
        self.held: dict[int, HeldBatch] = {}
        # availableNow: messages this query may still take; None for other triggers.
        self.remaining: int | None = None

    # --- offsets ------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, object]:
        return {"run": self.run, "seq": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.options.max_messages_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        self.remaining = self.queue.visible_count()
        log.info("availableNow: draining up to %d messages of %s", self.remaining,
                 self.options.connection.queue)

    def latestOffset(self, start: dict[str, object], limit: ReadLimit) -> dict[str, object]:
        start_seq = _seq(start)
        # Spark calls this only once the batch ending at `start` is in the commit log.
        self._settle(start_seq)
        room = self.options.max_messages_per_batch
        if isinstance(limit, ReadMaxRows):
            room = min(room, limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            log.debug("read limit %r is not supported; using maxMessagesPerBatch", limit)
        if self.remaining is not None:
            room = min(room, self.remaining)
        if room <= 0:
            return start
        o = self.options
        received = receive_up_to(
            self.queue,
            room,
            wait_seconds=o.wait_time_seconds,
            visibility_timeout=o.visibility_timeout,
            parallel_receivers=o.parallel_receivers,
        )
        if self.remaining is not None:
            # An empty receive means the queue is drained, whatever the count said.
            self.remaining = self.remaining - len(received) if len(received) else 0
        if not len(received):
            return start
        end_seq = start_seq + len(received)
        self.held[end_seq] = HeldBatch(start_seq, end_seq, received)
        return {"run": self.run, "seq": end_seq}

    def partitions(
        self, start: dict[str, object], end: dict[str, object]
    ) -> Sequence[InputPartition]:
        batch = self.held.get(_seq(end)) if end.get("run") == self.run else None
        if batch is None or batch.start != _seq(start):
            # A batch of an earlier run, replayed after a restart: its messages were never
            # deleted and come back after their visibility timeout.
            return []
        rows = batch.received.rows
        return split_rows(rows, self.options.partition_count(len(rows)))

    def read(self, partition: InputPartition) -> Iterator[Row]:
        assert isinstance(partition, MessagesPartition)
        yield from partition.rows

    def commit(self, end: dict[str, object]) -> None:
        if end.get("run") == self.run:
            self._delete_through(_seq(end))

    def stop(self) -> None:
        # The query is over; whether its last batch was committed is unknown here. Make the
        # held messages visible at once rather than after their timeout (at least once).
        for seq in sorted(self.held):
            release(self.queue, self.held.pop(seq).received, self.options.parallel_receivers)

    # --- settling held batches ------------------------------------------------------------

    def _settle(self, committed_seq: int) -> None:
        self._delete_through(committed_seq)
        for seq in sorted(self.held):
            # Planned beyond the committed offset but never run: give the messages back.
            release(self.queue, self.held.pop(seq).received, self.options.parallel_receivers)

    def _delete_through(self, committed_seq: int) -> None:
        for seq in sorted(self.held):
            if seq > committed_seq:
                break
            batch = self.held.pop(seq)
            handles = list(batch.received.handles.values())
            failed = self.queue.delete(handles, self.options.parallel_receivers)
            if failed:
                # Typically a stale handle: the message outlived its visibility timeout and
                # was received again; it will be delivered again (at least once).
                log.warning(
                    "%d of %d committed messages of %s were not deleted (%s: %s); raise "
                    "visibilityTimeout above the time a micro-batch takes",
                    len(failed), len(handles), self.options.connection.queue,
                    failed[0].code, failed[0].message,
                )


def _seq(offset: dict[str, object]) -> int:
    value = offset.get("seq", 0)
    return int(value) if isinstance(value, (int, str)) else 0
