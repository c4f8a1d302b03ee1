"""The delivery ledger's verdict (benchmarks/harness/delivery_ledger.py): lost messages, expected
and early repeat deliveries, deliveries after a delete, availability in a time window, and
ledgers merged across processes. Pure: no server, and every time is given.
"""

from __future__ import annotations

import pickle

from benchmarks.harness.delivery_ledger import (
    Acknowledged,
    DeleteOutcome,
    Delivery,
    DeliveryLedger,
    percentile,
)

VISIBILITY = 30.0


def sent(ledger: DeliveryLedger, message_id: str, at: float = 0.0) -> None:
    ledger.record_acknowledged(Acknowledged(message_id, f"body-{message_id}", "q", at, at + 0.01))


def delivered(
    ledger: DeliveryLedger, message_id: str, asked: float, answered: float,
    receive_count: int | None = None,
) -> None:
    ledger.record_delivery(Delivery(
        message_id, f"body-{message_id}", "q", asked, answered, VISIBILITY, receive_count
    ))


def deleted(
    ledger: DeliveryLedger, message_id: str, answered: float, error: str | None = None
) -> None:
    ledger.record_delete(DeleteOutcome(message_id, answered - 0.01, answered, error))


def test_acknowledged_message_never_received_is_lost() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    sent(ledger, "b")
    delivered(ledger, "a", 1.0, 1.1)
    verdict = ledger.verdict()
    assert verdict.lost == ("b",)
    assert (verdict.sent, verdict.received) == (2, 1)
    assert not verdict.clean


def test_single_delivery_of_each_message_is_clean() -> None:
    ledger = DeliveryLedger()
    for n in range(3):
        sent(ledger, str(n))
        delivered(ledger, str(n), 1.0, 1.2)
        deleted(ledger, str(n), 1.3)
    verdict = ledger.verdict()
    assert verdict.clean
    assert (verdict.duplicates, verdict.not_deleted, verdict.lost) == (0, (), ())


def test_repeat_answered_after_the_visibility_timeout_is_expected() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 10.0, 10.5)
    delivered(ledger, "a", 39.0, 10.0 + VISIBILITY)  # answered exactly at asked + timeout
    verdict = ledger.verdict()
    assert (verdict.expected_duplicates, verdict.early_duplicates) == (1, 0)
    assert verdict.clean


def test_repeat_answered_before_the_visibility_timeout_is_early() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 10.0, 10.5)
    delivered(ledger, "a", 10.1, 10.6)  # a concurrent poll got it too
    delivered(ledger, "a", 20.0, 10.0 + VISIBILITY - 1)
    verdict = ledger.verdict()
    assert (verdict.early_duplicates, verdict.expected_duplicates) == (2, 0)
    assert verdict.unexpected_duplicates == 2
    assert [e.kind for e in verdict.examples] == ["early", "early"]
    assert not verdict.clean


def test_each_repeat_is_judged_against_the_delivery_before_it() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 0.0, 0.1)
    delivered(ledger, "a", 30.0, 31.0)  # on time after the first
    delivered(ledger, "a", 35.0, 35.1)  # early after the second, though late after the first
    verdict = ledger.verdict()
    assert (verdict.expected_duplicates, verdict.early_duplicates) == (1, 1)


def test_delivery_asked_for_after_a_successful_delete_is_unexpected_whatever_its_timing() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 1.0, 1.1)
    deleted(ledger, "a", 1.2)
    delivered(ledger, "a", 100.0, 100.1)  # long after the visibility timeout
    verdict = ledger.verdict()
    assert (verdict.deliveries_after_delete, verdict.expected_duplicates) == (1, 0)
    assert verdict.unexpected_duplicates == 1
    assert verdict.examples[0].kind == "after delete"


def test_delivery_asked_for_before_the_delete_was_answered_is_judged_by_its_timing() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 1.0, 1.1)
    delivered(ledger, "a", 1.15, 1.3)  # asked while the delete was on its way
    deleted(ledger, "a", 1.2)
    verdict = ledger.verdict()
    assert (verdict.early_duplicates, verdict.deliveries_after_delete) == (1, 0)


def test_failed_delete_leaves_the_message_undeleted_and_its_repeat_expected() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 1.0, 1.1)
    deleted(ledger, "a", 1.2, error="ReceiptHandleIsInvalid")
    delivered(ledger, "a", 40.0, 40.1)
    verdict = ledger.verdict()
    assert (verdict.expected_duplicates, verdict.deliveries_after_delete) == (1, 0)
    assert verdict.not_deleted == ("a",)
    assert ledger.undeleted_count() == 1


def test_received_id_whose_send_was_not_acknowledged_is_counted_apart() -> None:
    ledger = DeliveryLedger()
    delivered(ledger, "stored-despite-timeout", 1.0, 1.1)
    verdict = ledger.verdict()
    assert (verdict.received_unacknowledged, verdict.sent, verdict.lost) == (1, 0, ())


def test_receive_count_that_does_not_grow_on_a_repeat_is_counted() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    delivered(ledger, "a", 1.0, 1.1, receive_count=1)
    delivered(ledger, "a", 1.2, 1.3, receive_count=1)
    delivered(ledger, "a", 40.0, 40.1, receive_count=2)
    assert ledger.verdict().receive_count_not_grown == 1


def test_ledgers_taken_in_client_processes_merge_into_one_verdict() -> None:
    producer, consumer_one, consumer_two = DeliveryLedger(), DeliveryLedger(), DeliveryLedger()
    sent(producer, "a")
    sent(producer, "b")
    delivered(consumer_one, "a", 1.0, 1.1)
    delivered(consumer_two, "a", 1.05, 1.12)  # the same message in another process: early
    deleted(consumer_one, "a", 1.2)
    consumer_one.record_error("ReceiveMessage", "ServiceUnavailable")
    consumer_one.record_duration("ReceiveMessage", 0.1)

    parent = DeliveryLedger()
    for ledger in (producer, consumer_one, consumer_two):
        parent.absorb(pickle.loads(pickle.dumps(ledger.take())))  # as over a process pipe
        assert ledger.is_empty
    verdict = parent.verdict()
    assert (verdict.sent, verdict.lost, verdict.early_duplicates) == (2, ("b",), 1)
    assert parent.errors == {("ReceiveMessage", "ServiceUnavailable"): 1}
    assert parent.durations == {"ReceiveMessage": [0.1]}
    assert parent.undeleted_count() == 1  # "b"


def test_end_to_end_time_runs_from_the_send_to_the_first_delivery() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a", at=10.0)
    delivered(ledger, "a", 11.0, 12.5)
    delivered(ledger, "a", 11.0, 12.0)
    assert ledger.end_to_end_seconds() == [2.0]


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert [percentile(values, p) for p in (0.5, 0.9, 0.99, 1.0)] == [50.0, 90.0, 99.0, 100.0]
    assert percentile([], 0.5) == 0.0
    assert percentile([7.0], 0.99) == 7.0


def test_undelivered_count_is_acknowledged_ids_no_delivery_carried() -> None:
    ledger = DeliveryLedger()
    for message_id in ("a", "b", "c"):
        sent(ledger, message_id)
    delivered(ledger, "a", 1.0, 1.1)
    delivered(ledger, "a", 40.0, 40.1)
    delivered(ledger, "x", 1.0, 1.1)  # a delivery of an id no send acknowledged
    assert ledger.undelivered_count() == 2


def test_delivery_with_another_body_than_sent_is_a_changed_body() -> None:
    ledger = DeliveryLedger()
    sent(ledger, "a")
    sent(ledger, "b")
    delivered(ledger, "a", 1.0, 1.1)
    ledger.record_delivery(Delivery("b", "not what was sent", "q", 1.0, 1.1, VISIBILITY))
    verdict = ledger.verdict()
    assert verdict.changed_bodies == 1
    assert verdict.lost == ()


def test_receive_answer_records_its_duration_and_each_message_with_its_receive_count() -> None:
    ledger = DeliveryLedger()
    ledger.record_receive("q", [], 1.0, 1.5, VISIBILITY)
    ledger.record_receive("q", [
        {"MessageId": "a", "Body": "body-a", "Attributes": {"ApproximateReceiveCount": "2"}},
        {"MessageId": "b", "Body": "body-b"},  # a server that left the attribute out
    ], 2.0, 2.25, VISIBILITY)
    assert ledger.durations == {"ReceiveMessage (empty)": [0.5], "ReceiveMessage": [0.25]}
    assert ledger.deliveries == [
        Delivery("a", "body-a", "q", 2.0, 2.25, VISIBILITY, 2),
        Delivery("b", "body-b", "q", 2.0, 2.25, VISIBILITY, None),
    ]


def test_availability_is_the_share_of_calls_that_ended_answered_within_a_window() -> None:
    ledger = DeliveryLedger()
    # as recorded at three whole seconds of the wall clock (set here, not read)
    ledger.ended_by_second.update({(100, True): 9, (100, False): 1, (101, False): 5,
                                   (200, True): 4})
    other = DeliveryLedger()
    other.ended_by_second.update({(101, True): 5})
    ledger.absorb(other)

    assert ledger.answered_share(100.0, 101.5) == 14 / 20
    assert ledger.answered_share(150.0, 160.0) is None
    assert ledger.answered_share(199.2, 200.0) == 1.0
    # a batch entry's failure is not a failed call
    ledger.record_error("SendMessageBatch entry", "InvalidParameterValue")
    assert sum(n for (_, ok), n in ledger.ended_by_second.items() if not ok) == 6
    assert pickle.loads(pickle.dumps(ledger)).ended_by_second == ledger.ended_by_second


def test_a_delivery_before_the_sends_delay_ran_out_is_counted() -> None:
    ledger = DeliveryLedger()
    ledger.record_acknowledged(Acknowledged("m1", "b1", "q", 100.0, 100.1, delay_seconds=2))
    ledger.record_acknowledged(Acknowledged("m2", "b2", "q", 100.0, 100.1, delay_seconds=2))
    ledger.record_acknowledged(Acknowledged("m3", "b3", "q", 100.0, 100.1))
    for message_id, body, answered in (("m1", "b1", 101.5), ("m2", "b2", 102.2),
                                       ("m3", "b3", 100.2)):
        ledger.record_delivery(Delivery(message_id, body, "q", answered - 0.1, answered, 30))

    assert ledger.verdict().delivered_before_delay == 1  # m1, answered 1.5 s after its send
