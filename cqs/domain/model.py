"""Queue and message values shared by every layer: frozen dataclasses, no I/O.

Owns the shapes of queues, messages, deliveries and batch results, and the SQS queue
attribute defaults. Must not import any adapter, aiohttp, redis or cassandra.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from cqs.domain.errors import CqsError

# FIFO: AWS keeps a MessageDeduplicationId (and a ReceiveRequestAttemptId) for five minutes.
DEDUPLICATION_INTERVAL_MS = 300_000

# The account and region of queues when nobody says otherwise (the single-tenant default).
DEFAULT_ACCOUNT_ID = "000000000000"
DEFAULT_REGION = "us-east-1"

# SQS defaults for the queue attributes a client may set (AWS SQS API reference, CreateQueue).
DEFAULT_QUEUE_ATTRIBUTES: Mapping[str, str] = {
    "DelaySeconds": "0",
    "MaximumMessageSize": "1048576",
    "MessageRetentionPeriod": "345600",
    "ReceiveMessageWaitTimeSeconds": "0",
    "VisibilityTimeout": "30",
}


# The queue attribute (an extension, see docs/compatibility.md) that keeps consumed
# (deleted) messages for replay, in seconds; 0 or absent: they are not kept.
CONSUMED_RETENTION_ATTRIBUTE = "cqs.ConsumedRetentionSeconds"


@dataclass(frozen=True, slots=True)
class MessageAttributeValue:
    """One message attribute: DataType is String, Number or Binary, optionally `.custom`."""

    data_type: str
    string_value: str | None = None
    binary_value: bytes | None = None


class QueueIdentity(NamedTuple):
    """Which queue: SQS queue names are unique only within one account and one region."""

    account_id: str
    region: str
    name: str

    @property
    def key(self) -> str:
        """`<account>:<region>:<name>`, the queue's key in the cache (no part holds a colon)."""
        return f"{self.account_id}:{self.region}:{self.name}"

    @classmethod
    def from_key(cls, key: str) -> QueueIdentity:
        account_id, region, name = key.split(":", 2)
        return cls(account_id, region, name)

    @property
    def fifo(self) -> bool:
        """FIFO queue names end in ".fifo" (CreateQueue refuses any other combination)."""
        return self.name.endswith(".fifo")

    @property
    def namespace(self) -> QueueNamespace:
        return QueueNamespace(self.account_id, self.region)


class QueueNamespace(NamedTuple):
    """One account's queues in one region: the scope in which queue names are unique."""

    account_id: str
    region: str

    def queue(self, name: str) -> QueueIdentity:
        return QueueIdentity(self.account_id, self.region, name)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request, as access control sees it. With auth off every request is the
    server's own account (`access_key_id` None); with auth verify, the signing key's."""

    account_id: str
    region: str
    access_key_id: str | None = None
    name: str | None = None  # the key's name in the credentials file, for logs
    secure_transport: bool = False  # the request came over TLS (aws:SecureTransport)

    @property
    def principal_arn(self) -> str:
        """The caller as policies name it: its account's root (cqs has no IAM users)."""
        return f"arn:aws:iam::{self.account_id}:root"

    @property
    def namespace(self) -> QueueNamespace:
        return QueueNamespace(self.account_id, self.region)


@dataclass(frozen=True, slots=True)
class Queue:
    """A queue's durable metadata. `attributes` holds every settable attribute, defaults filled."""

    name: str
    queue_id: str  # identifies this incarnation: a deleted and re-created name gets a new one
    attributes: Mapping[str, str]
    tags: Mapping[str, str] = field(default_factory=dict)
    created_timestamp: int = 0  # seconds since the epoch, as SQS reports it
    last_modified_timestamp: int = 0
    account_id: str = DEFAULT_ACCOUNT_ID
    region: str = DEFAULT_REGION

    @property
    def identity(self) -> QueueIdentity:
        return QueueIdentity(self.account_id, self.region, self.name)

    def _int(self, name: str) -> int:
        return int(self.attributes.get(name, DEFAULT_QUEUE_ATTRIBUTES[name]))

    @property
    def visibility_timeout(self) -> int:
        return self._int("VisibilityTimeout")

    @property
    def delay_seconds(self) -> int:
        return self._int("DelaySeconds")

    @property
    def retention_seconds(self) -> int:
        return self._int("MessageRetentionPeriod")

    @property
    def maximum_message_size(self) -> int:
        return self._int("MaximumMessageSize")

    @property
    def receive_wait_seconds(self) -> int:
        return self._int("ReceiveMessageWaitTimeSeconds")

    @property
    def fifo(self) -> bool:
        return self.attributes.get("FifoQueue") == "true"

    @property
    def content_based_deduplication(self) -> bool:
        return self.attributes.get("ContentBasedDeduplication") == "true"

    @property
    def deduplication_per_group(self) -> bool:
        """DeduplicationScope=messageGroup: the same id in two groups is two messages."""
        return self.attributes.get("DeduplicationScope") == "messageGroup"

    @property
    def consumed_retention_seconds(self) -> int:
        """cqs.ConsumedRetentionSeconds: how long deleted messages are kept for replay
        (0, the default: not at all)."""
        return int(self.attributes.get(CONSUMED_RETENTION_ATTRIBUTE, "0"))


@dataclass(frozen=True, slots=True)
class Message:
    """A message as stored: immutable from send until delete or expiry.

    `message_id` is a version-1 (time-based) UUID string; the durable store derives the
    message's storage location from it.
    """

    message_id: str
    body: str
    md5_of_body: str
    sent_timestamp_ms: int
    visible_at_ms: int  # sent time plus the effective delay
    sender_id: str
    message_attributes: Mapping[str, MessageAttributeValue] = field(default_factory=dict)
    md5_of_message_attributes: str | None = None
    system_attributes: Mapping[str, MessageAttributeValue] = field(default_factory=dict)
    md5_of_system_attributes: str | None = None
    # FIFO queues only: MessageGroupId, MessageDeduplicationId (given or content-based) and
    # the queue's SequenceNumber, which grows with every message sent to the queue.
    group_id: str | None = None
    deduplication_id: str | None = None
    sequence_number: int | None = None


@dataclass(frozen=True, slots=True)
class Deduplication:
    """A FIFO send remembered for the deduplication interval: a send with the same `key`
    (the deduplication id, prefixed by the group under DeduplicationScope=messageGroup)
    returns this message instead of adding one."""

    key: str
    message_id: str
    sequence_number: int
    expires_ms: int


class AdmissionOutcome(enum.StrEnum):
    NEW = "new"
    DUPLICATE = "duplicate"
    PENDING = "pending"


class DeduplicationClaim(NamedTuple):
    """A FIFO send's claim on a deduplication key for the message it would store ("" as
    the key: number the message without deduplicating it). `also`: a key looked up but not
    claimed (the other DeduplicationScope's, for messages sent before the scope changed)."""

    key: str
    message_id: str
    also: str = ""


class MessagePlace(enum.StrEnum):
    """Where a cached message is now."""

    VISIBLE = "visible"
    IN_FLIGHT = "in flight"
    DELAYED = "delayed"


@dataclass(frozen=True, slots=True)
class CachedMessageState:
    """What the cache knows of one message, read without changing it (for operators)."""

    place: MessagePlace
    receive_count: int
    first_receive_ms: int  # 0: never received


@dataclass(frozen=True, slots=True)
class Admission:
    """The cache's answer for one FIFO send: NEW (the deduplication key is now held for
    this message, numbered `sequence_number`), DUPLICATE (an earlier send owns the key:
    its id and number) or PENDING (an earlier send owns it and is still being stored)."""

    outcome: AdmissionOutcome
    message_id: str
    sequence_number: int


@dataclass(frozen=True, slots=True)
class FifoAdmission:
    """`cache_ready`: the cache knows every live deduplication key of the queue (when not,
    the durable store's records must be asked too)."""

    cache_ready: bool
    outcomes: list[Admission]


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message handed out by one receive: the cache's answer, before a handle is signed.

    `receipt_nonce` is unique to this receive; the receipt handle carries it so that a handle
    from an earlier receive of the same message can be told apart.
    """

    message: Message
    receive_count: int
    first_receive_timestamp_ms: int
    receipt_nonce: str
    # First delivery from a refilled cache: it may repeat one made before the cache was lost.
    reloaded: bool = False


@dataclass(frozen=True, slots=True)
class ReceiveOutcome:
    """What one receive took from the cache: the deliveries, and the messages it took out
    instead of delivering them because they reached the RedrivePolicy's maxReceiveCount
    (for the caller to move to the dead-letter queue)."""

    deliveries: list[Delivery]
    dead_letters: list[Message]


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """What a signed receipt handle says: which message of which queue, from which receive."""

    queue_key: str  # QueueIdentity.key: a handle of one account's queue fits no other
    message_id: str
    receipt_nonce: str


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """A delivery as the API returns it."""

    delivery: Delivery
    receipt_handle: str
    attributes: Mapping[str, str]  # the system attributes the client asked for
    message_attributes: Mapping[str, MessageAttributeValue]  # the ones the client asked for


class DeleteOutcome(enum.Enum):
    DELETED = "deleted"  # the handle was current; the message is gone from the cache
    NOT_CACHED = "not_cached"  # the cache does not hold the message (deleted, or never filled)
    STALE_HANDLE = "stale_handle"  # the message was received again since this handle was issued
    # FIFO only: the handle's visibility timeout is over (the message kept, the delete refused)
    EXPIRED_HANDLE = "expired_handle"


@dataclass(frozen=True, slots=True)
class QueueDescription:
    """What an operator's view needs of a queue, already interpreted: its type, and where
    its dead letters go (so no caller parses RedrivePolicy or guesses FIFO from the name)."""

    name: str
    arn: str
    fifo: bool
    attributes: Mapping[str, str]  # as GetQueueAttributes All answers
    tags: Mapping[str, str]
    dead_letter_queue: str | None  # the name RedrivePolicy's target ARN gives
    max_receive_count: int | None


class Redelivery(enum.Enum):
    """Why a delivery repeats, or may repeat, an earlier delivery of the same message."""

    VISIBILITY_TIMEOUT = "visibility_timeout"  # received before; its timeout passed (expected)
    STORE_FALLBACK = "store_fallback"  # handed out from the store while the cache was not ready
    REFILL = "refill"  # first delivery from a refilled cache


class VisibilityOutcome(enum.Enum):
    CHANGED = "changed"
    NOT_IN_FLIGHT = "not_in_flight"  # visible to others since, or delayed: nothing to change
    UNKNOWN = "unknown"  # not cached: deleted (or past its retention)
    STALE_HANDLE = "stale_handle"


class CacheState(enum.Enum):
    READY = "ready"  # the cache holds every live message of the queue
    FILLING = "filling"  # some process is loading the queue from the durable store
    ABSENT = "absent"  # nobody has loaded the queue yet (or its Redis restarted empty)
    UNAVAILABLE = "unavailable"  # the queue's Redis server cannot be reached


@dataclass(frozen=True, slots=True)
class MessageCounts:
    visible: int
    in_flight: int
    delayed: int


@dataclass(frozen=True, slots=True)
class SendResult:
    message_id: str
    md5_of_body: str
    md5_of_message_attributes: str | None
    md5_of_system_attributes: str | None = None
    sequence_number: str | None = None


@dataclass(frozen=True, slots=True)
class SendRequest:
    body: str
    delay_seconds: int | None = None
    message_attributes: Mapping[str, MessageAttributeValue] = field(default_factory=dict)
    system_attributes: Mapping[str, MessageAttributeValue] = field(default_factory=dict)
    message_group_id: str | None = None
    message_deduplication_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReceiveRequest:
    max_number_of_messages: int = 1
    visibility_timeout: int | None = None
    wait_time_seconds: int | None = None
    system_attribute_names: tuple[str, ...] = ()
    message_attribute_names: tuple[str, ...] = ()
    receive_request_attempt_id: str | None = None


@dataclass(frozen=True, slots=True)
class QueueListing:
    """ListQueues: the queue names starting with `prefix` (None: every name), a page of
    `max_results` of them (None: up to the limit, no NextToken) after `next_token`."""

    prefix: str | None = None
    max_results: int | None = None
    next_token: str | None = None


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class BatchFailure:
    entry_id: str
    error: CqsError


@dataclass(frozen=True, slots=True)
class BatchResult(Generic[T]):
    """Per-entry outcome of a batch action: successes keep the entry id and their result."""

    successful: list[tuple[str, T]]
    failed: list[BatchFailure]


class MoveTaskStatus(enum.Enum):
    """The states of a message move task, as ListMessageMoveTasks names them."""

    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    CANCELLING = "CANCELLING"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"

    @property
    def active(self) -> bool:
        return self in (MoveTaskStatus.RUNNING, MoveTaskStatus.CANCELLING)


@dataclass(frozen=True, slots=True)
class MessageMoveTask:
    """A message move task (StartMessageMoveTask): messages from a dead-letter queue back
    to their source queues, or to `destination_arn`.

    `owner` is the process running it and `heartbeat_ms` when that process last reported
    progress; a task whose heartbeat is older than the lease is taken over by another
    process (after a restart, for instance).
    """

    task_id: str
    source_arn: str
    destination_arn: str | None
    max_per_second: int | None
    status: MoveTaskStatus
    started_ms: int
    moved: int = 0
    to_move: int = 0
    failure_reason: str | None = None
    owner: str = ""
    heartbeat_ms: int = 0
