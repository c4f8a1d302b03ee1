"""A delivery ledger for millions of messages: flat arrays indexed by message number.

benchmarks/harness/delivery_ledger.py keeps one object per send, delivery and delete, which is
right for tens of thousands of messages and too heavy for the two-million-message run of
benchmarks/duplicate_rate.py. Here every message is a number n in [0, capacity) carried in
its body, and the ledger holds per n: whether a send acknowledged it, when that send was
asked, the 16 bytes of the message id the send returned, the first delivery (when its
receive was asked and answered, and the message id it carried), how many deliveries there
were, and the earliest successful delete. Repeat deliveries (rare) are kept whole in a list.
About 70 bytes per message, so 2,000,000 messages take about 140 MB.

The verdict uses delivery_ledger's rules: lost = acknowledged, never delivered; a repeat
is *expected* when it was answered at or after the previous delivery's request plus the
visibility timeout, *early* otherwise, and *after delete* when it was asked for after a
successful delete of the same message was answered. Records may arrive in any order (from
several client processes); repeats are judged at the end, sorted by answer time.

Pure: imports only the standard library. Imported as `benchmarks.harness.compact_ledger`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import uuid
from array import array
from dataclasses import dataclass

from benchmarks.harness.delivery_ledger import CLOCK_SLACK_SECONDS

ID_BYTES = 16
NEVER = 0.0  # a time slot not filled (wall-clock times are far above it)


def id_bytes(message_id: str) -> bytes:
    """A message id in 16 bytes: the UUID's, or an MD5 of an id that is not a UUID."""
    try:
        return uuid.UUID(message_id).bytes
    except ValueError:
        return hashlib.md5(message_id.encode()).digest()


@dataclass(frozen=True)
class CompactVerdict:
    attempted: int  # numbers a send was asked for
    sent: int  # acknowledged
    received: int  # acknowledged and delivered at least once
    deliveries: int
    lost: int
    expected_duplicates: int
    early_duplicates: int
    deliveries_after_delete: int
    received_unacknowledged: int  # delivered, but no send acknowledged it
    not_deleted: int  # delivered, never deleted successfully
    wrong_ids: int  # deliveries whose message id is not the one its send returned
    lost_examples: tuple[int, ...]
    early_examples: tuple[tuple[int, float], ...]  # (n, seconds after the previous request)

    @property
    def unexpected_duplicates(self) -> int:
        return self.early_duplicates + self.deliveries_after_delete

    @property
    def clean(self) -> bool:
        return not self.lost and not self.unexpected_duplicates and not self.wrong_ids


class CompactLedger:
    def __init__(self, capacity: int, visibility_seconds: float) -> None:
        self.capacity = capacity
        self.visibility_seconds = visibility_seconds
        self.attempted = bytearray(capacity)
        self.acknowledged = bytearray(capacity)
        self.sent_at = array("d", bytes(8 * capacity))
        self.sent_id = bytearray(ID_BYTES * capacity)
        self.delivery_count = bytearray(capacity)  # saturates at 255
        self.first_requested = array("d", bytes(8 * capacity))
        self.first_answered = array("d", bytes(8 * capacity))
        self.first_id = bytearray(ID_BYTES * capacity)
        self.deleted_at = array("d", bytes(8 * capacity))
        self.repeats: list[tuple[int, float, float, bytes]] = []  # (n, asked, answered, id)
        self.acknowledged_total = 0
        self.delivered_total = 0  # distinct numbers delivered
        self.deleted_total = 0  # distinct numbers deleted
        self.deliveries_total = 0
        self.delete_errors = 0

    # --- recording -----------------------------------------------------------------------

    def record_attempt(self, n: int) -> None:
        self.attempted[n] = 1

    def record_acknowledged(self, n: int, message_id: bytes, requested: float) -> None:
        if not self.acknowledged[n]:
            self.acknowledged_total += 1
        self.acknowledged[n] = 1
        self.sent_at[n] = requested
        self.sent_id[n * ID_BYTES:(n + 1) * ID_BYTES] = message_id

    def record_delivery(self, n: int, message_id: bytes, requested: float,
                        answered: float) -> None:
        self.deliveries_total += 1
        count = self.delivery_count[n]
        self.delivery_count[n] = min(255, count + 1)
        if count == 0:
            self.delivered_total += 1
            self.first_requested[n] = requested
            self.first_answered[n] = answered
            self.first_id[n * ID_BYTES:(n + 1) * ID_BYTES] = message_id
        else:
            self.repeats.append((n, requested, answered, message_id))

    def record_delete(self, n: int, answered: float, ok: bool) -> None:
        if not ok:
            self.delete_errors += 1
            return
        if self.deleted_at[n] == NEVER:
            self.deleted_total += 1
            self.deleted_at[n] = answered
        else:
            self.deleted_at[n] = min(self.deleted_at[n], answered)

    @property
    def backlog(self) -> int:
        """Acknowledged and not yet deleted (deleted before acknowledged counts as deleted)."""
        return self.acknowledged_total - self.deleted_total

    # --- reading -------------------------------------------------------------------------

    def end_to_end_seconds(self) -> array[float]:
        """First delivery's answer minus the send's request, per acknowledged message."""
        return array("d", (
            self.first_answered[n] - self.sent_at[n]
            for n in range(self.capacity) if self.acknowledged[n] and self.delivery_count[n]
        ))

    def verdict(self) -> CompactVerdict:
        lost: list[int] = []
        received = unacknowledged = not_deleted = wrong = 0
        for n in range(self.capacity):
            delivered = self.delivery_count[n] > 0
            if self.acknowledged[n]:
                if not delivered:
                    lost.append(n)
                    continue
                received += 1
                span = slice(n * ID_BYTES, (n + 1) * ID_BYTES)
                wrong += self.first_id[span] != self.sent_id[span]
            elif delivered:
                unacknowledged += 1
            if delivered and self.deleted_at[n] == NEVER:
                not_deleted += 1
        expected, early, after_delete, examples = self._judge_repeats()
        wrong += sum(
            1 for n, _, _, message_id in self.repeats
            if self.acknowledged[n] and message_id != self.sent_id[n * ID_BYTES:(n + 1) * ID_BYTES]
        )
        return CompactVerdict(
            attempted=sum(self.attempted), sent=self.acknowledged_total, received=received,
            deliveries=self.deliveries_total, lost=len(lost), expected_duplicates=expected,
            early_duplicates=early, deliveries_after_delete=after_delete,
            received_unacknowledged=unacknowledged, not_deleted=not_deleted, wrong_ids=wrong,
            lost_examples=tuple(lost[:10]), early_examples=tuple(examples[:10]),
        )

    def _judge_repeats(self) -> tuple[int, int, int, list[tuple[int, float]]]:
        by_number: dict[int, list[tuple[float, float]]] = {}
        for n, requested, answered, _ in self.repeats:
            by_number.setdefault(n, []).append((answered, requested))
        expected = early = after_delete = 0
        examples: list[tuple[int, float]] = []
        for n, later in by_number.items():
            deliveries = sorted([(self.first_answered[n], self.first_requested[n]), *later])
            deleted = self.deleted_at[n]
            for (_, previous_asked), (answered, asked) in itertools.pairwise(deliveries):
                gap = answered - previous_asked
                if deleted != NEVER and deleted < asked:
                    after_delete += 1
                    examples.append((n, gap))
                elif gap + CLOCK_SLACK_SECONDS >= self.visibility_seconds:
                    expected += 1
                else:
                    early += 1
                    examples.append((n, gap))
        return expected, early, after_delete, examples


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of an already sorted list (0.0 when empty)."""
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]
