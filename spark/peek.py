"""`spark.read.format("cqs")`: a bounded, non-destructive peek of a queue.

Owns the batch reader. When Spark plans the scan, the driver receives up to `maxMessages`
messages with a short visibility timeout (`peekVisibilityTimeout`), makes them visible
again at once (ChangeMessageVisibility to 0) and hands the rows to partitions. Nothing is
deleted. A peek is a receive as far as the queue is concerned: ApproximateReceiveCount
grows by one, and a queue with a RedrivePolicy moves a message to its dead-letter queue
once peeks and real receives together pass maxReceiveCount.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import DataSourceReader, InputPartition

from spark.options import ReadOptions
from spark.queue import SqsQueue
from spark.receiving import MessagesPartition, receive_up_to, release, split_rows
from spark.rows import Row


class PeekReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.queue = SqsQueue(options.connection)

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        received = receive_up_to(
            self.queue,
            o.max_messages,
            wait_seconds=o.wait_time_seconds,
            visibility_timeout=o.peek_visibility_timeout,
            parallel_receivers=o.parallel_receivers,
        )
        release(self.queue, received, o.parallel_receivers)
        # An empty list would make Spark plan one partition of None; say "no rows" instead.
        return split_rows(received.rows, o.partition_count(len(received))) or [
            MessagesPartition([])
        ]

    def read(self, partition: InputPartition) -> Iterator[Row]:
        assert isinstance(partition, MessagesPartition)
        yield from partition.rows
