"""The options of the `cqs` data source: their names, defaults and parsing.

Owns everything a user passes with `.option(...)`: where the queue is (endpoint, region,
credentials, queue name or URL), how the readers receive and how the writers send. Spark
hands options over as a case-insensitive mapping of strings; each `parse` turns it into a
frozen dataclass once, on the driver, so a bad option fails before any task starts.
Imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Limits of the SQS API itself.
MAX_RECEIVE_PER_CALL = 10
MAX_WAIT_SECONDS = 20
MAX_VISIBILITY_TIMEOUT = 43200
MAX_BATCH_ENTRIES = 10
MAX_BATCH_BYTES = 1_048_576


class OptionError(ValueError):
    """An option of the `cqs` data source is missing or out of range."""


def _lookup(options: Mapping[str, str], name: str) -> str | None:
    # Spark lower-cases option names; a plain dict from a test may not have.
    value = options.get(name.lower(), options.get(name))
    if value is None or str(value).strip() == "":
        return None
    return str(value).strip()


def _int(options: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = _lookup(options, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise OptionError(f"option {name} must be between {low} and {high}, got {value}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _lookup(options, name)
    if raw is None:
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name} must be true or false, got {raw!r}")


PEEK_MODES = ("extension", "receive")


def _seconds(options: Mapping[str, str], name: str) -> float | None:
    """A time in seconds since the epoch (an integer or a fraction)."""
    raw = _lookup(options, name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"option {name} must be seconds since the epoch, got {raw!r}") from None
    if not 0 <= value <= 1e11:
        raise OptionError(f"option {name} must be seconds since the epoch, got {raw!r}")
    return value


@dataclass(frozen=True)
class Connection:
    """Where the queue is and how to reach it. Without credentials, boto3's own chain
    (environment, shared files, instance roles) supplies them on each machine."""

    queue_url: str | None
    queue_name: str | None
    endpoint: str | None = None
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    max_attempts: int = 5
    read_timeout_seconds: int = 60

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> Connection:
        queue_url = _lookup(options, "queueUrl")
        queue_name = _lookup(options, "queueName")
        # `.load("orders")` / `.save(url)` arrive as the `path` option.
        path = _lookup(options, "path")
        if path is not None and queue_url is None and queue_name is None:
            if path.startswith(("http://", "https://")):
                queue_url = path
            else:
                queue_name = path
        if queue_url is None and queue_name is None:
            raise OptionError("the cqs data source needs option queueName or queueUrl")
        access_key_id = _lookup(options, "accessKeyId")
        secret_access_key = _lookup(options, "secretAccessKey")
        if (access_key_id is None) != (secret_access_key is None):
            raise OptionError("options accessKeyId and secretAccessKey go together")
        return cls(
            queue_url=queue_url,
            queue_name=queue_name,
            endpoint=_lookup(options, "endpoint"),
            region=_lookup(options, "region") or "us-east-1",
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            session_token=_lookup(options, "sessionToken"),
            max_attempts=_int(options, "maxAttempts", 5, 1, 20),
            read_timeout_seconds=_int(options, "readTimeoutSeconds", 60, 1, 3600),
        )

    @property
    def queue(self) -> str:
        """The queue as the user named it, for messages."""
        return self.queue_url or self.queue_name or "?"


@dataclass(frozen=True)
class ReadOptions:
    """How `read` (a peek) and `readStream` receive."""

    connection: Connection
    # Long-poll wait of each ReceiveMessage; a receive that comes back empty ends a fill.
    wait_time_seconds: int = 1
    # ReceiveMessage calls in flight at once on the driver.
    parallel_receivers: int = 4
    # Partitions the received rows are spread over; 0: one per `rows_per_partition` rows.
    num_partitions: int = 0
    rows_per_partition: int = 1000
    # Stream: messages per micro-batch, and how long they stay hidden while Spark
    # processes the batch (they are deleted once the batch is committed).
    max_messages_per_batch: int = 1000
    visibility_timeout: int = 120
    # Peek: how many messages at most, and how long they are hidden before being released.
    max_messages: int = 1000
    peek_visibility_timeout: int = 30
    # Peek through cqs's PeekMessages extension (nothing changes in the queue), or, for an
    # SQS endpoint without it, by receiving and releasing (receive counts grow by one).
    peek_mode: str = "extension"
    # Read the messages consumed in [start, end) (epoch seconds) instead of the queue's
    # current ones (a queue with cqs.ConsumedRetentionSeconds; extension mode only).
    consumed_start_time: float | None = None
    consumed_end_time: float | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        peek_mode = (_lookup(options, "peekMode") or "extension").lower()
        if peek_mode not in PEEK_MODES:
            raise OptionError(f"option peekMode must be one of {', '.join(PEEK_MODES)}, got {peek_mode!r}")
        start = _seconds(options, "consumedStartTime")
        end = _seconds(options, "consumedEndTime")
        if (start is None) != (end is None):
            raise OptionError("options consumedStartTime and consumedEndTime go together")
        if start is not None and end is not None and end <= start:
            raise OptionError("option consumedEndTime must be after consumedStartTime")
        if start is not None and peek_mode != "extension":
            raise OptionError("consumed messages are read with peekMode extension only")
        return cls(
            peek_mode=peek_mode,
            consumed_start_time=start,
            consumed_end_time=end,
            connection=Connection.parse(options),
            wait_time_seconds=_int(options, "waitTimeSeconds", 1, 0, MAX_WAIT_SECONDS),
            parallel_receivers=_int(options, "parallelReceivers", 4, 1, 64),
            num_partitions=_int(options, "numPartitions", 0, 0, 10_000),
            rows_per_partition=_int(options, "rowsPerPartition", 1000, 1, 10_000_000),
            max_messages_per_batch=_int(options, "maxMessagesPerBatch", 1000, 1, 10_000_000),
            visibility_timeout=_int(options, "visibilityTimeout", 120, 1, MAX_VISIBILITY_TIMEOUT),
            max_messages=_int(options, "maxMessages", 1000, 1, 10_000_000),
            peek_visibility_timeout=_int(
                options, "peekVisibilityTimeout", 30, 1, MAX_VISIBILITY_TIMEOUT
            ),
        )

    def partition_count(self, rows: int) -> int:
        if rows == 0:
            return 0
        if self.num_partitions:
            return min(self.num_partitions, rows)
        return -(-rows // self.rows_per_partition)


@dataclass(frozen=True)
class WriteOptions:
    """How `write` and `writeStream` turn rows into SendMessageBatch entries."""

    connection: Connection
    body_column: str = "body"
    # None: the column of the default name when the DataFrame has one (see `columns`).
    message_attributes_column: str | None = None
    message_group_id_column: str | None = None
    deduplication_id_column: str | None = None
    delay_seconds_column: str | None = None
    # One group id for every row (FIFO queues), when there is no group id column.
    message_group_id: str | None = None
    # Derive MessageDeduplicationId from (write id, batch id, partition, row number).
    deterministic_deduplication_ids: bool = False
    # Names this write for deterministic ids; batch writes default to one id per write,
    # streaming writes use the query id (stable across restarts from a checkpoint).
    write_id: str | None = None
    # SendMessageBatch calls in flight at once in each task.
    send_parallelism: int = 4
    max_batch_bytes: int = MAX_BATCH_BYTES

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> WriteOptions:
        return cls(
            connection=Connection.parse(options),
            body_column=_lookup(options, "bodyColumn") or "body",
            message_attributes_column=_lookup(options, "messageAttributesColumn"),
            message_group_id_column=_lookup(options, "messageGroupIdColumn"),
            deduplication_id_column=_lookup(options, "deduplicationIdColumn"),
            delay_seconds_column=_lookup(options, "delaySecondsColumn"),
            message_group_id=_lookup(options, "messageGroupId"),
            deterministic_deduplication_ids=_bool(
                options, "deterministicDeduplicationIds", False
            ),
            write_id=_lookup(options, "writeId"),
            send_parallelism=_int(options, "sendParallelism", 4, 1, 64),
            max_batch_bytes=_int(options, "maxBatchBytes", MAX_BATCH_BYTES, 1024, MAX_BATCH_BYTES),
        )
