"""What the service reports as it works (`Telemetry`), in queue words, and `NullTelemetry`,
which records nothing. `cqs/observability/` implements it for Prometheus. Imports only
`cqs.domain.model`.
"""

from __future__ import annotations

from typing import Protocol

from cqs.domain.model import (
    Redelivery,
)


class Telemetry(Protocol):
    """What the service, the revisibility worker and the API tier report about their work,
    in queue words, for whatever records it (metrics, logs). Every method returns at once
    and never raises; `NullTelemetry` records nothing.
    """

    def messages_sent(self, queue_name: str, count: int) -> None:
        """`count` messages were stored durably (the send was acknowledged)."""

    def messages_received(self, queue_name: str, count: int, from_cache: bool) -> None:
        """One receive pass over the queue handed out `count` messages (maybe 0), answered
        by the cache or, with `from_cache` False, by the durable store."""

    def messages_deleted(self, queue_name: str, count: int) -> None: ...

    def messages_expired(self, queue_name: str, count: int) -> None:
        """`count` cached messages passed their retention period and were dropped."""

    def messages_moved_to_dead_letter_queue(self, queue_name: str, count: int) -> None:
        """`count` messages of `queue_name` exceeded maxReceiveCount and went to its DLQ."""

    def messages_redelivered(self, queue_name: str, reason: Redelivery, count: int) -> None:
        """`count` deliveries repeat (or may repeat) an earlier one, for `reason`."""

    def serving_from_store(self, queue_name: str, active: bool) -> None:
        """The queue is (`active`) or is no longer served from the durable store
        (Return-From-Cassandra); reported on every receive pass."""

    def fill_started(self, queue_name: str) -> None: ...

    def fill_progress(self, queue_name: str, messages: int) -> None:
        """The running fill loaded `messages` more messages into the cache."""

    def fill_finished(self, queue_name: str, completed: bool) -> None:
        """The fill ended: the cache is READY (`completed`), or the fill was abandoned."""

    def long_poll_waiting(self, delta: int) -> None:
        """A long poll started (+1) or stopped (-1) waiting for messages."""

    def sweep(self, duration_seconds: float, released_queues: int, lag_ms: int) -> None:
        """One revisibility pass; `lag_ms` bounds how late its messages became visible."""

    def request_finished(self, action: str, outcome: str, duration_seconds: float) -> None:
        """One API request: its action, and "success" or the error code it was answered with."""


class NullTelemetry:
    """Telemetry that records nothing: the default wherever none is given."""

    def messages_sent(self, queue_name: str, count: int) -> None:
        pass

    def messages_received(self, queue_name: str, count: int, from_cache: bool) -> None:
        pass

    def messages_deleted(self, queue_name: str, count: int) -> None:
        pass

    def messages_expired(self, queue_name: str, count: int) -> None:
        pass

    def messages_moved_to_dead_letter_queue(self, queue_name: str, count: int) -> None:
        pass

    def messages_redelivered(self, queue_name: str, reason: Redelivery, count: int) -> None:
        pass

    def serving_from_store(self, queue_name: str, active: bool) -> None:
        pass

    def fill_started(self, queue_name: str) -> None:
        pass

    def fill_progress(self, queue_name: str, messages: int) -> None:
        pass

    def fill_finished(self, queue_name: str, completed: bool) -> None:
        pass

    def long_poll_waiting(self, delta: int) -> None:
        pass

    def sweep(self, duration_seconds: float, released_queues: int, lag_ms: int) -> None:
        pass

    def request_finished(self, action: str, outcome: str, duration_seconds: float) -> None:
        pass
