"""`spark.read.format("cqs")`: a bounded, non-destructive peek of a queue.

Owns the batch reader. When Spark plans the scan, the driver pages through up to
`maxMessages` messages and hands the rows to partitions; nothing of the queue changes.

- `peekMode` "extension" (the default, for cqs): cqs's PeekMessages answers the visible
  messages without receiving them: no visibility change, ApproximateReceiveCount as it is
  (0 for a message never received), so a RedrivePolicy never sees a peek. With
  `consumedStartTime` and `consumedEndTime` it reads the messages DeleteMessage consumed in
  that range instead (PeekConsumedMessages; a queue with cqs.ConsumedRetentionSeconds),
  each row's `attributes` holding its `ConsumedTimestamp`.
- `peekMode` "receive" (any SQS endpoint): messages are received with a short visibility
  timeout (`peekVisibilityTimeout`) and made visible again at once. That is a receive as
  far as the queue is concerned: ApproximateReceiveCount grows by one, and a queue with a
  RedrivePolicy moves a message to its dead-letter queue once peeks and real receives
  together pass maxReceiveCount.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from pyspark_cqs.options import ReadOptions
from pyspark_cqs.queue import SqsQueue
from pyspark_cqs.receiving import MessagesPartition, receive_up_to, release, split_rows
from pyspark_cqs.rows import Row, message_row

PEEK_PAGE = 100  # PeekMessages' largest page
# Error codes an SQS endpoint without cqs's extensions answers them with.
_NO_EXTENSIONS = ("UnknownOperationException", "InvalidAction", "UnknownOperation")


class PeekReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.queue = SqsQueue(options.connection)

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        rows = self._peeked() if o.peek_mode == "extension" else self._received()
        # An empty list would make Spark plan one partition of None; say "no rows" instead.
        return split_rows(rows, o.partition_count(len(rows))) or [MessagesPartition([])]

    def _peeked(self) -> list[Row]:
        """Pages of PeekMessages (or PeekConsumedMessages) until `maxMessages` or the end."""
        from cqs.client import ExtensionError

        o = self.options
        rows: list[Row] = []
        token: str | None = None
        try:
            while len(rows) < o.max_messages:
                count = min(PEEK_PAGE, o.max_messages - len(rows))
                if o.consumed_start_time is not None and o.consumed_end_time is not None:
                    page, token = self.queue.peek_consumed(
                        o.consumed_start_time, o.consumed_end_time, count, token
                    )
                else:
                    page, token = self.queue.peek(count, token)
                rows.extend(_row(message) for message in page)
                if not token:
                    break
        except ExtensionError as error:
            if error.code in _NO_EXTENSIONS:
                raise RuntimeError(
                    f"{o.connection.queue}: the endpoint has no cqs PeekMessages ({error.code});"
                    " read it with option peekMode=receive"
                ) from error
            raise
        return rows[: o.max_messages]

    def _received(self) -> list[Row]:
        o = self.options
        received = receive_up_to(
            self.queue,
            o.max_messages,
            wait_seconds=o.wait_time_seconds,
            visibility_timeout=o.peek_visibility_timeout,
            parallel_receivers=o.parallel_receivers,
        )
        release(self.queue, received, o.parallel_receivers)
        return received.rows

    def read(self, partition: InputPartition) -> Iterator[Row]:
        assert isinstance(partition, MessagesPartition)
        yield from partition.rows


def _row(message: dict[str, Any]) -> Row:
    consumed = message.get("ConsumedTimestamp")
    if consumed is not None:  # a consumed copy: when it was consumed, among its attributes
        message = {**message, "Attributes": {**message.get("Attributes", {}),
                                             "ConsumedTimestamp": consumed}}
    return message_row(message)
