"""The delivery ledger of the load tools: what the clients saw, and its verdict.

Owns the records a load client keeps (a message acknowledged by a send, a delivery, a delete
outcome, a failed call, a call's duration; `record_receive` takes a whole ReceiveMessage
answer) and their classification, so that the concurrency soak, the idle long-poll
benchmark and the CI test (tests/wire/test_concurrent_consumers.py) judge a run by the same
rules:

- lost: an id a send acknowledged that no receive ever returned;
- a repeat delivery of an id is *expected* when its answer arrived at or after the previous
  delivery's request was sent plus the visibility timeout that request asked for (the
  server cannot have started that timeout before the request left the client, and the
  repeat cannot have left the server before the timeout ran out); anything earlier is
  *early*;
- a delivery asked for after a successful delete of the same id had been answered is a
  delivery *after delete*, whatever the timing;
- early deliveries and deliveries after delete are the unexpected duplicates: without
  faults there must be none;
- a delivery whose body differs from the body its send acknowledged is a *changed body*
  (reported beside the verdict; it does not enter `clean`).

Times are wall-clock seconds (`time.time()`): the consumers run in several processes on
the machine of the server, and the server's visibility deadlines are wall-clock too.

A ledger is plain data (pickles): a client process fills one and ships `take()` to the
parent, which `absorb()`s them all before `verdict()`. Pure: imports only the standard
library. Imported as `benchmarks.harness.delivery_ledger` (the scripts put the repository root
on sys.path; pytest has it there already).
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The server rounds its clock to milliseconds; a repeat this close to the visibility
# deadline is taken as on time rather than as early.
CLOCK_SLACK_SECONDS = 0.005


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """A message a send acknowledged: its id, its body, and when the send was asked/answered."""

    message_id: str
    body: str
    queue: str
    requested_at: float
    answered_at: float
    delay_seconds: int = 0  # the send's DelaySeconds


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message in one ReceiveMessage answer."""

    message_id: str
    body: str
    queue: str
    requested_at: float  # when the ReceiveMessage request was sent
    answered_at: float  # when its answer arrived
    visibility_seconds: float  # the VisibilityTimeout the request asked for
    receive_count: int | None = None  # ApproximateReceiveCount, when the server gave it

    @classmethod
    def of_message(
        cls, message: Mapping[str, Any], queue: str, requested_at: float, answered_at: float,
        visibility_seconds: float,
    ) -> Delivery:
        """A message as ReceiveMessage returns it (boto3 or the JSON protocol): its id, its
        body and, when its Attributes carry one, its ApproximateReceiveCount."""
        count = (message.get("Attributes") or {}).get("ApproximateReceiveCount")
        return cls(message["MessageId"], message["Body"], queue, requested_at, answered_at,
                   visibility_seconds, int(count) if count else None)


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    """One entry of a DeleteMessageBatch: deleted (error None) or the error code."""

    message_id: str
    requested_at: float
    answered_at: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EarlyRepeat:
    """An unexpected duplicate, for diagnostics: which id, how, and how long after the
    previous delivery's request it arrived."""

    message_id: str
    kind: str  # "early" or "after delete"
    seconds_after_previous_request: float


@dataclass(frozen=True, slots=True)
class Verdict:
    sent: int  # distinct ids acknowledged by a send
    received: int  # of those, how many were delivered at least once
    deliveries: int  # every delivery, acknowledged ids or not
    lost: tuple[str, ...]  # acknowledged ids never delivered
    expected_duplicates: int
    early_duplicates: int
    deliveries_after_delete: int
    received_unacknowledged: int  # distinct ids delivered whose send was not acknowledged
    not_deleted: tuple[str, ...]  # delivered ids without a successful delete
    receive_count_not_grown: int  # repeats whose ApproximateReceiveCount was not higher
    examples: tuple[EarlyRepeat, ...]  # up to ten unexpected duplicates
    changed_bodies: int = 0  # deliveries of an acknowledged id with another body than sent
    # delivered (answered) before its send was even asked plus its DelaySeconds
    delivered_before_delay: int = 0

    @property
    def duplicates(self) -> int:
        return self.expected_duplicates + self.early_duplicates + self.deliveries_after_delete

    @property
    def unexpected_duplicates(self) -> int:
        return self.early_duplicates + self.deliveries_after_delete

    @property
    def clean(self) -> bool:
        """Nothing lost and no unexpected duplicate."""
        return not self.lost and self.unexpected_duplicates == 0


def percentile(values: Iterable[float], fraction: float) -> float:
    """Nearest-rank percentile (0.0 for no values)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


@dataclass
class DeliveryLedger:
    acknowledged: list[Acknowledged] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)
    deletes: list[DeleteOutcome] = field(default_factory=list)
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)  # (action, code) -> n
    durations: dict[str, list[float]] = field(default_factory=dict)  # action -> seconds
    # (whole second of the wall clock, answered?) -> calls that ended then: availability
    ended_by_second: Counter[tuple[int, bool]] = field(default_factory=Counter)
    # Running sets, so that "is everything deleted yet?" is cheap to ask during a run.
    _acknowledged_ids: set[str] = field(default_factory=set, repr=False)
    _deleted_ids: set[str] = field(default_factory=set, repr=False)

    # --- recording -----------------------------------------------------------------------

    def record_acknowledged(self, sent: Acknowledged) -> None:
        self.acknowledged.append(sent)
        self._acknowledged_ids.add(sent.message_id)

    def record_delivery(self, delivery: Delivery) -> None:
        self.deliveries.append(delivery)

    def record_receive(
        self, queue: str, messages: Iterable[Mapping[str, Any]], requested_at: float,
        answered_at: float, visibility_seconds: float,
    ) -> None:
        """One ReceiveMessage answer: its duration ("ReceiveMessage", or "ReceiveMessage
        (empty)" for an answer without messages) and a delivery per message."""
        messages = list(messages)
        action = "ReceiveMessage" if messages else "ReceiveMessage (empty)"
        self.record_duration(action, answered_at - requested_at)
        for message in messages:
            self.record_delivery(Delivery.of_message(
                message, queue, requested_at, answered_at, visibility_seconds))

    def record_delete(self, outcome: DeleteOutcome) -> None:
        self.deletes.append(outcome)
        if outcome.error is None:
            self._deleted_ids.add(outcome.message_id)

    def record_error(self, action: str, code: str, count: int = 1) -> None:
        self.errors[(action, code)] += count
        if not action.endswith(" entry"):  # a batch entry's failure is not a call's
            self.ended_by_second[(int(time.time()), False)] += count

    def record_duration(self, action: str, seconds: float) -> None:
        self.durations.setdefault(action, []).append(seconds)
        self.ended_by_second[(int(time.time()), True)] += 1

    def take(self) -> DeliveryLedger:
        """Everything recorded so far, as a ledger of its own; this one starts empty."""
        taken = copy.copy(self)  # shares the containers, which this one now lets go of
        self.acknowledged, self.deliveries, self.deletes = [], [], []
        self.errors, self.durations, self.ended_by_second = Counter(), {}, Counter()
        self._acknowledged_ids, self._deleted_ids = set(), set()
        return taken

    def absorb(self, other: DeliveryLedger) -> None:
        """Add another ledger's records (a client process's) to this one."""
        self.acknowledged.extend(other.acknowledged)
        self.deliveries.extend(other.deliveries)
        self.deletes.extend(other.deletes)
        self.errors.update(other.errors)
        self.ended_by_second.update(other.ended_by_second)
        for action, seconds in other.durations.items():
            self.durations.setdefault(action, []).extend(seconds)
        self._acknowledged_ids |= other._acknowledged_ids
        self._deleted_ids |= other._deleted_ids

    @property
    def is_empty(self) -> bool:
        return not (self.acknowledged or self.deliveries or self.deletes or self.errors
                    or self.durations)

    # --- reading -------------------------------------------------------------------------

    def answered_share(self, start: float, end: float) -> float | None:
        """Of the calls that ended within [start, end] (wall clock, whole seconds), the
        share answered successfully; None if none ended then."""
        answered = failed = 0
        for (second, ok), n in self.ended_by_second.items():
            if start - 1 < second <= end:
                if ok:
                    answered += n
                else:
                    failed += n
        return None if answered + failed == 0 else answered / (answered + failed)

    def undeleted_count(self) -> int:
        """Acknowledged ids that no delete has removed yet."""
        return len(self._acknowledged_ids - self._deleted_ids)

    def undelivered_count(self) -> int:
        """Acknowledged ids that no delivery has carried yet (counted afresh on each call:
        for a drain loop that asks between rounds, not for every delivery)."""
        return len(self._acknowledged_ids - {d.message_id for d in self.deliveries})

    def sent_count(self) -> int:
        return len(self._acknowledged_ids)

    def errors_of(self, *actions: str) -> int:
        return sum(n for (action, _), n in self.errors.items() if action in actions)

    def end_to_end_seconds(self) -> list[float]:
        """Per acknowledged id delivered: first answer carrying it minus when it was sent."""
        first: dict[str, float] = {}
        for delivery in self.deliveries:
            seen = first.get(delivery.message_id)
            if seen is None or delivery.answered_at < seen:
                first[delivery.message_id] = delivery.answered_at
        return [
            first[sent.message_id] - sent.requested_at
            for sent in self.acknowledged
            if sent.message_id in first
        ]

    def verdict(self) -> Verdict:
        by_id: dict[str, list[Delivery]] = {}
        for delivery in self.deliveries:
            by_id.setdefault(delivery.message_id, []).append(delivery)
        deleted_at: dict[str, list[float]] = {}
        for outcome in self.deletes:
            if outcome.error is None:
                deleted_at.setdefault(outcome.message_id, []).append(outcome.answered_at)
        for times in deleted_at.values():
            times.sort()

        expected = early = after_delete = not_grown = 0
        examples: list[EarlyRepeat] = []
        for message_id, deliveries in by_id.items():
            deliveries.sort(key=lambda d: (d.answered_at, d.requested_at))
            deletes = deleted_at.get(message_id, [])
            for previous, current in itertools.pairwise(deliveries):
                gap = current.answered_at - previous.requested_at
                if deletes and deletes[0] < current.requested_at:
                    after_delete += 1
                    kind = "after delete"
                elif gap + CLOCK_SLACK_SECONDS >= previous.visibility_seconds:
                    expected += 1
                    kind = ""
                else:
                    early += 1
                    kind = "early"
                if kind and len(examples) < 10:
                    examples.append(EarlyRepeat(message_id, kind, gap))
                if (previous.receive_count is not None and current.receive_count is not None
                        and current.receive_count <= previous.receive_count):
                    not_grown += 1

        acknowledged = self._acknowledged_ids
        body_sent = {sent.message_id: sent.body for sent in self.acknowledged}
        due_at = {s.message_id: s.requested_at + s.delay_seconds
                  for s in self.acknowledged if s.delay_seconds}
        before_delay = sum(
            1 for message_id, due in due_at.items()
            if message_id in by_id
            and min(d.answered_at for d in by_id[message_id]) + CLOCK_SLACK_SECONDS < due
        )
        changed = sum(
            1 for d in self.deliveries
            if d.message_id in body_sent and d.body != body_sent[d.message_id]
        )
        return Verdict(
            sent=len(acknowledged),
            received=sum(1 for i in acknowledged if i in by_id),
            deliveries=len(self.deliveries),
            lost=tuple(sorted(i for i in acknowledged if i not in by_id)),
            expected_duplicates=expected,
            early_duplicates=early,
            deliveries_after_delete=after_delete,
            received_unacknowledged=sum(1 for i in by_id if i not in acknowledged),
            not_deleted=tuple(sorted(i for i in by_id if i not in deleted_at)),
            receive_count_not_grown=not_grown,
            examples=tuple(examples),
            changed_bodies=changed,
            delivered_before_delay=before_delay,
        )
