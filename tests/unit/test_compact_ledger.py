"""The compact ledger of the two-million-message run (benchmarks/harness/compact_ledger.py): the
same verdict rules as the delivery ledger (lost, expected and early repeats, deliveries
after a delete), records arriving out of order, wrong message ids, and its size.
Pure: no server, no clock (every time is given).
"""

from __future__ import annotations

import uuid

from benchmarks.harness.compact_ledger import CompactLedger, id_bytes

VISIBILITY = 30.0
IDS = [uuid.uuid4().bytes for _ in range(8)]


def ledger_of(size: int = 8) -> CompactLedger:
    return CompactLedger(size, VISIBILITY)


def sent_delivered_deleted(ledger: CompactLedger, n: int, at: float = 1.0) -> None:
    ledger.record_attempt(n)
    ledger.record_acknowledged(n, IDS[n], at)
    ledger.record_delivery(n, IDS[n], at + 0.1, at + 0.2)
    ledger.record_delete(n, at + 0.3, ok=True)


def test_every_message_sent_received_and_deleted_once_is_clean() -> None:
    ledger = ledger_of()
    for n in range(8):
        sent_delivered_deleted(ledger, n)
    verdict = ledger.verdict()
    assert verdict.clean
    assert (verdict.sent, verdict.received, verdict.deliveries) == (8, 8, 8)
    assert (verdict.lost, verdict.not_deleted, verdict.expected_duplicates) == (0, 0, 0)
    assert ledger.backlog == 0


def test_acknowledged_message_never_delivered_is_lost() -> None:
    ledger = ledger_of()
    sent_delivered_deleted(ledger, 0)
    ledger.record_acknowledged(5, IDS[5], 1.0)
    verdict = ledger.verdict()
    assert (verdict.lost, verdict.lost_examples) == (1, (5,))
    assert not verdict.clean
    assert ledger.backlog == 1


def test_attempted_but_unacknowledged_message_is_not_lost() -> None:
    ledger = ledger_of()
    ledger.record_attempt(3)
    verdict = ledger.verdict()
    assert (verdict.attempted, verdict.sent, verdict.lost) == (1, 0, 0)
    assert verdict.clean


def test_repeat_before_the_visibility_timeout_is_early() -> None:
    ledger = ledger_of()
    ledger.record_acknowledged(0, IDS[0], 1.0)
    ledger.record_delivery(0, IDS[0], 2.0, 2.1)
    ledger.record_delivery(0, IDS[0], 12.0, 12.1)  # 10 s after the first request, not 30
    verdict = ledger.verdict()
    assert (verdict.early_duplicates, verdict.expected_duplicates) == (1, 0)
    assert verdict.early_examples == ((0, 12.1 - 2.0),)
    assert not verdict.clean


def test_repeat_after_the_visibility_timeout_is_expected() -> None:
    ledger = ledger_of()
    ledger.record_acknowledged(0, IDS[0], 1.0)
    ledger.record_delivery(0, IDS[0], 2.0, 2.1)
    ledger.record_delivery(0, IDS[0], 31.0, 32.5)
    ledger.record_delete(0, 33.0, ok=True)
    verdict = ledger.verdict()
    assert (verdict.expected_duplicates, verdict.early_duplicates) == (1, 0)
    assert verdict.clean


def test_repeat_asked_for_after_a_delete_was_answered_is_after_delete() -> None:
    ledger = ledger_of()
    ledger.record_acknowledged(0, IDS[0], 1.0)
    ledger.record_delivery(0, IDS[0], 2.0, 2.1)
    ledger.record_delete(0, 2.5, ok=True)
    ledger.record_delivery(0, IDS[0], 40.0, 40.1)
    verdict = ledger.verdict()
    assert (verdict.deliveries_after_delete, verdict.unexpected_duplicates) == (1, 1)
    assert not verdict.clean


def test_records_arriving_out_of_order_are_judged_by_answer_time() -> None:
    # The second delivery's record arrives first (another client process shipped sooner),
    # and the delete arrives before the acknowledgement.
    ledger = ledger_of()
    ledger.record_delivery(0, IDS[0], 33.0, 33.1)
    ledger.record_delivery(0, IDS[0], 2.0, 2.1)
    ledger.record_delete(0, 34.0, ok=True)
    ledger.record_acknowledged(0, IDS[0], 1.0)
    verdict = ledger.verdict()
    assert (verdict.expected_duplicates, verdict.early_duplicates) == (1, 0)
    assert (verdict.lost, verdict.received_unacknowledged) == (0, 0)
    assert ledger.backlog == 0


def test_failed_delete_leaves_the_message_not_deleted() -> None:
    ledger = ledger_of()
    ledger.record_acknowledged(0, IDS[0], 1.0)
    ledger.record_delivery(0, IDS[0], 2.0, 2.1)
    ledger.record_delete(0, 2.5, ok=False)
    verdict = ledger.verdict()
    assert verdict.not_deleted == 1
    assert ledger.delete_errors == 1
    assert ledger.backlog == 1


def test_delivery_with_another_message_id_than_the_send_returned_is_wrong() -> None:
    ledger = ledger_of()
    ledger.record_acknowledged(0, IDS[0], 1.0)
    ledger.record_delivery(0, IDS[1], 2.0, 2.1)
    verdict = ledger.verdict()
    assert verdict.wrong_ids == 1
    assert not verdict.clean


def test_non_uuid_message_ids_still_fit_sixteen_bytes() -> None:
    assert len(id_bytes("not-a-uuid")) == 16
    assert id_bytes("not-a-uuid") != id_bytes("another")
    known = uuid.uuid4()
    assert id_bytes(str(known)) == known.bytes


def test_two_million_messages_fit_in_a_few_hundred_megabytes() -> None:
    ledger = CompactLedger(2_000_000, VISIBILITY)
    arrays = (ledger.attempted, ledger.acknowledged, ledger.sent_at, ledger.sent_id,
              ledger.delivery_count, ledger.first_requested, ledger.first_answered,
              ledger.first_id, ledger.deleted_at)
    size = sum(len(a) * getattr(a, "itemsize", 1) for a in arrays)
    assert size < 160 * 2**20
