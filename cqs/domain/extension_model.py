"""Values of the extensions beyond SQS (docs/compatibility.md "Extensions"): peek and
replay, consumer groups and timer messages. Frozen dataclasses, no I/O.

Kept apart from cqs.domain.model, whose core SQS shapes they build on; the same rule holds: no
adapter, aiohttp, redis or cassandra.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cqs.domain.model import Message, QueueIdentity

# --- peek and replay ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PeekRequest:
    """CqsExtensions.PeekMessages: a page of a queue's messages, looked at, not received.

    `visible_only`: only messages a receive could take now (the extension's answer); False
    shows in-flight and delayed ones too, with where each is (the admin console)."""

    max_number_of_messages: int = 10
    next_token: str | None = None
    system_attribute_names: tuple[str, ...] = ()
    message_attribute_names: tuple[str, ...] = ()
    visible_only: bool = True


@dataclass(frozen=True, slots=True)
class ConsumedMessage:
    """A message as it was when a DeleteMessage consumed it, kept for replay."""

    message: Message
    consumed_ms: int


@dataclass(frozen=True, slots=True)
class ConsumedRange:
    """Consumed messages whose delete happened in [start_ms, end_ms)."""

    start_ms: int
    end_ms: int


@dataclass(frozen=True, slots=True)
class Replay:
    """A ReplayMessages run and its durable progress, so that an interrupted run resumes.

    `span` is the range as asked (a repeated call must ask for the same one); `until_ms`
    where the run stops (the asked end cut at the moment the replay began); `position` the
    consumed-message store's cursor after the last batch sent (None: from the start);
    `running`: a call is (or was, if it died) sending a batch past `position`."""

    replay_id: str
    span: ConsumedRange
    until_ms: int
    position: str | None = None
    replayed: int = 0
    done: bool = False
    running: bool = False


# --- consumer groups ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    """A named consumer group of a queue: served as the queue `<queue>/<group>`, it gets a
    copy of every message sent to the queue that its filter policy (if any) matches."""

    queue_name: str
    group_name: str
    filter_policy: str | None  # SNS filter-policy JSON on message attributes; None: all
    attributes: Mapping[str, str]  # the group's own queue attributes (VisibilityTimeout, ...)
    created_timestamp: int  # seconds since the epoch


# --- timer messages: messages due beyond the cache horizon ------------------------------------


@dataclass(frozen=True, slots=True)
class ScheduledQueue:
    """A queue incarnation that has (or had) timer messages waiting in the durable store."""

    identity: QueueIdentity
    queue_id: str


@dataclass(frozen=True, slots=True)
class ScheduledSummary:
    """A queue's timer messages still waiting in the durable store (not yet promoted).

    `count` is approximate (a counter kept beside the messages); `earliest_due_ms` is when
    the first of them is due, None when none waits.
    """

    count: int
    earliest_due_ms: int | None
