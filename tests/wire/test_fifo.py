"""FIFO queues over the wire, through boto3 (JSON 1.0) and the query protocol: order within
a message group, group locks, deduplication (explicit and content-based, per queue and per
group), sequence numbers, ReceiveRequestAttemptId, the FIFO rules of SendMessage and FIFO
dead-letter queues."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.wire.conftest import (
    ACCOUNT_ID,
    REGION,
    Speaker,
    SpokenQueue,
    SqsError,
    receive_within,
    unique_name,
)

Advance = Callable[[float], None]

FIFO_VALUES = {"FifoQueue": "true"}


@pytest.fixture
def fifo_queue(spoken_queue: SpokenQueue) -> Callable[..., str]:
    """Create FIFO queues through the speaker under test; delete them afterwards."""
    return lambda **attributes: spoken_queue("fifo-", attributes, fifo=True)


def bodies(received: list[Any]) -> list[str]:
    return [m.body for m in received]


def receive_all(speaker: Speaker, url: str, **options: Any) -> list[Any]:
    return speaker.receive(url, max_messages=10, system_attribute_names=["All"], **options)


def arn_of(url: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{url.rsplit('/', 1)[-1]}"


# --- queues ------------------------------------------------------------------------------------


def test_a_fifo_queue_reports_its_fifo_attributes_with_their_defaults(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    attributes = speaker.queue_attributes(url)
    assert attributes["FifoQueue"] == "true"
    assert attributes["ContentBasedDeduplication"] == "false"
    assert attributes["DeduplicationScope"] == "queue"
    assert attributes["FifoThroughputLimit"] == "perQueue"


def test_a_fifo_queue_name_must_end_in_dot_fifo(speaker: Speaker) -> None:
    with pytest.raises(SqsError) as raised:
        speaker.create_queue(unique_name("plain-"), FIFO_VALUES)
    assert (raised.value.code, raised.value.status) == ("InvalidParameterValue", 400)


def test_a_standard_queue_does_not_know_fifo_attributes(speaker: Speaker) -> None:
    with pytest.raises(SqsError) as raised:
        speaker.create_queue(unique_name("std-"), {"ContentBasedDeduplication": "true"})
    assert (raised.value.code, raised.value.status) == ("InvalidAttributeName", 400)


def test_per_group_throughput_needs_per_group_deduplication(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    with pytest.raises(SqsError) as raised:
        fifo_queue(FifoThroughputLimit="perMessageGroupId")
    assert raised.value.code == "InvalidAttributeValue"
    url = fifo_queue(FifoThroughputLimit="perMessageGroupId", DeduplicationScope="messageGroup")
    attributes = speaker.queue_attributes(url)
    assert attributes["FifoThroughputLimit"] == "perMessageGroupId"
    assert attributes["DeduplicationScope"] == "messageGroup"


def test_content_based_deduplication_can_be_switched_on_later(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    speaker.set_queue_attributes(url, {"ContentBasedDeduplication": "true"})
    assert speaker.queue_attributes(url)["ContentBasedDeduplication"] == "true"
    sent = speaker.send(url, "no explicit id", group_id="g")
    assert sent.message_id


# --- send rules --------------------------------------------------------------------------------


def test_a_send_without_message_group_id_is_refused(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    with pytest.raises(SqsError) as raised:
        speaker.send(url, "x")
    assert (raised.value.code, raised.value.status) == ("MissingParameter", 400)


def test_a_send_without_deduplication_id_needs_content_based_deduplication(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    with pytest.raises(SqsError) as raised:
        speaker.send(url, "x", group_id="g")
    assert raised.value.code == "InvalidParameterValue"
    assert "ContentBasedDeduplication" in str(raised.value)


def test_a_per_message_delay_is_refused_on_a_fifo_queue(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    with pytest.raises(SqsError) as raised:
        speaker.send(url, "x", group_id="g", deduplication_id="d", delay_seconds=5)
    assert raised.value.code == "InvalidParameterValue"
    assert "DelaySeconds" in str(raised.value)


def test_a_group_id_with_a_space_is_refused(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    with pytest.raises(SqsError) as raised:
        speaker.send(url, "x", group_id="has space", deduplication_id="d")
    assert raised.value.code == "InvalidParameterValue"


# --- order and group locks ---------------------------------------------------------------------


def test_messages_of_a_group_arrive_in_the_order_they_were_sent(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    sent = [speaker.send(url, f"m{i}", group_id="g", deduplication_id=f"d{i}") for i in range(6)]
    numbers = [int(s.sequence_number or "0") for s in sent]
    assert numbers == sorted(numbers) and len(set(numbers)) == 6
    assert all(len(s.sequence_number or "") == 20 for s in sent)
    received = receive_all(speaker, url)
    assert bodies(received) == [f"m{i}" for i in range(6)]
    first = received[0].attributes
    assert first["MessageGroupId"] == "g"
    assert first["MessageDeduplicationId"] == "d0"
    assert first["SequenceNumber"] == sent[0].sequence_number


def test_no_later_message_of_a_group_is_delivered_while_an_earlier_one_is_in_flight(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    for body, group in (("a1", "A"), ("a2", "A"), ("b1", "B")):
        speaker.send(url, body, group_id=group)
    first = speaker.receive(url, max_messages=1)
    assert bodies(first) == ["a1"]
    assert bodies(speaker.receive(url, max_messages=10)) == ["b1"]  # group A is locked
    assert speaker.receive(url, max_messages=10) == []
    speaker.delete(url, first[0].receipt_handle)
    assert bodies(speaker.receive(url, max_messages=10)) == ["a2"]


def test_a_message_back_from_flight_comes_before_the_rest_of_its_group(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    for body in ("first", "second", "third"):
        speaker.send(url, body, group_id="g")
    held = speaker.receive(url, max_messages=2, visibility_timeout=20)
    assert bodies(held) == ["first", "second"]
    assert speaker.receive(url, max_messages=10) == []
    advance(21)
    again = receive_within(speaker, url, 5.0, max_messages=10, system_attribute_names=["All"])
    assert bodies(again) == ["first", "second", "third"]
    assert again[0].attributes["ApproximateReceiveCount"] == "2"


def test_changing_visibility_to_zero_releases_the_group(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    speaker.send(url, "one", group_id="g")
    speaker.send(url, "two", group_id="g")
    held = speaker.receive(url, max_messages=1)
    speaker.change_visibility(url, held[0].receipt_handle, 0)
    assert bodies(speaker.receive(url, max_messages=10)) == ["one", "two"]


def test_groups_interleave_and_each_keeps_its_order(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    for index in range(4):
        speaker.send(url, f"a{index}", group_id="A")
        speaker.send(url, f"b{index}", group_id="B")
    seen: dict[str, list[str]] = {"A": [], "B": []}
    for _ in range(8):
        batch = speaker.receive(url, max_messages=3, system_attribute_names=["MessageGroupId"])
        for message in batch:
            seen[message.attributes["MessageGroupId"]].append(message.body)
            speaker.delete(url, message.receipt_handle)
        if len(seen["A"]) + len(seen["B"]) == 8:
            break
    assert seen == {"A": [f"a{i}" for i in range(4)], "B": [f"b{i}" for i in range(4)]}


def test_queue_level_delay_holds_fifo_messages_back(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue(DelaySeconds="30", ContentBasedDeduplication="true")
    speaker.send(url, "later", group_id="g")
    assert speaker.receive(url) == []
    advance(28)
    assert receive_within(speaker, url, 0.5) == []
    advance(3)
    assert bodies(receive_within(speaker, url, 5.0)) == ["later"]


# --- deduplication -----------------------------------------------------------------------------


def test_a_duplicate_send_returns_the_original_message_and_is_delivered_once(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    first = speaker.send(url, "once", group_id="g", deduplication_id="same")
    second = speaker.send(url, "once again", group_id="g", deduplication_id="same")
    assert second.message_id == first.message_id
    assert second.sequence_number == first.sequence_number
    received = receive_all(speaker, url)
    assert bodies(received) == ["once"]


def test_content_based_deduplication_drops_a_repeated_body(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    first = speaker.send(url, "same body", group_id="g")
    second = speaker.send(url, "same body", group_id="g")
    other = speaker.send(url, "other body", group_id="g")
    assert second.message_id == first.message_id != other.message_id
    received = receive_all(speaker, url)
    assert bodies(received) == ["same body", "other body"]
    # the deduplication id of a content-based send is the SHA-256 of the body
    expected = hashlib.sha256(b"same body").hexdigest()
    assert received[0].attributes["MessageDeduplicationId"] == expected


def test_per_group_deduplication_keeps_the_same_id_in_two_groups(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(DeduplicationScope="messageGroup")
    a = speaker.send(url, "in A", group_id="A", deduplication_id="id")
    b = speaker.send(url, "in B", group_id="B", deduplication_id="id")
    again = speaker.send(url, "in A again", group_id="A", deduplication_id="id")
    assert a.message_id != b.message_id
    assert again.message_id == a.message_id
    assert sorted(bodies(receive_all(speaker, url))) == ["in A", "in B"]


def test_queue_wide_deduplication_spans_groups(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    a = speaker.send(url, "in A", group_id="A", deduplication_id="id")
    b = speaker.send(url, "in B", group_id="B", deduplication_id="id")
    assert b.message_id == a.message_id
    assert bodies(receive_all(speaker, url)) == ["in A"]


def test_a_deleted_message_still_deduplicates_within_the_interval(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    first = speaker.send(url, "x", group_id="g", deduplication_id="d")
    speaker.delete(url, speaker.receive(url)[0].receipt_handle)
    again = speaker.send(url, "x", group_id="g", deduplication_id="d")
    assert again.message_id == first.message_id
    assert speaker.receive(url) == []


def test_a_batch_numbers_its_messages_and_deduplicates_within_itself(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    outcome = speaker.send_batch(url, [
        {"Id": "one", "MessageBody": "1", "MessageGroupId": "g", "MessageDeduplicationId": "a"},
        {"Id": "two", "MessageBody": "2", "MessageGroupId": "g", "MessageDeduplicationId": "b"},
        {"Id": "dup", "MessageBody": "3", "MessageGroupId": "g", "MessageDeduplicationId": "a"},
        {"Id": "bad", "MessageBody": "4", "MessageGroupId": "a b", "MessageDeduplicationId": "c"},
    ])
    # A malformed id fails its entry; a missing one would fail the whole batch (see
    # test_request_rules.py).
    assert set(outcome.successful) == {"one", "two", "dup"}
    assert outcome.failed["bad"]["Code"] == "InvalidParameterValue"
    one, two, dup = (outcome.successful[k] for k in ("one", "two", "dup"))
    assert dup["MessageId"] == one["MessageId"]
    assert int(one["SequenceNumber"]) < int(two["SequenceNumber"])
    assert bodies(receive_all(speaker, url)) == ["1", "2"]


# --- ReceiveRequestAttemptId --------------------------------------------------------------------


def test_a_retried_receive_with_the_same_attempt_id_gets_the_same_messages(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    for body in ("a", "b", "c"):
        speaker.send(url, body, group_id="g")
    first = speaker.receive(url, max_messages=2, attempt_id="attempt-1")
    retried = speaker.receive(url, max_messages=2, attempt_id="attempt-1")
    assert bodies(first) == ["a", "b"]
    assert [m.message_id for m in retried] == [m.message_id for m in first]
    assert [m.receipt_handle for m in retried] == [m.receipt_handle for m in first]
    assert speaker.receive(url, max_messages=10, attempt_id="attempt-2") == []  # group locked
    for message in retried:
        speaker.delete(url, message.receipt_handle)
    assert bodies(speaker.receive(url, attempt_id="attempt-3")) == ["c"]


def test_an_attempt_id_must_be_alphanumeric_or_punctuation(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    with pytest.raises(SqsError) as raised:
        speaker.receive(url, attempt_id="with space")
    assert raised.value.code == "InvalidParameterValue"


# --- dead-letter queues --------------------------------------------------------------------------


def test_a_fifo_queue_needs_a_fifo_dead_letter_queue(
    speaker: Speaker, fifo_queue: Callable[..., str], sqs: Any
) -> None:
    standard = speaker.create_queue(unique_name("std-dlq-"))
    try:
        with pytest.raises(SqsError) as raised:
            fifo_queue(RedrivePolicy=json.dumps(
                {"deadLetterTargetArn": arn_of(standard), "maxReceiveCount": 1}
            ))
        assert raised.value.code == "InvalidParameterValue"
    finally:
        sqs.delete_queue(QueueUrl=standard)


def test_a_fifo_message_received_too_often_moves_to_the_fifo_dead_letter_queue(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    dead_letters = fifo_queue()
    source = fifo_queue(
        ContentBasedDeduplication="true",
        RedrivePolicy=json.dumps({"deadLetterTargetArn": arn_of(dead_letters),
                                  "maxReceiveCount": 1}),
    )
    speaker.send(source, "poison", group_id="g")
    speaker.send(source, "next", group_id="g")
    first = speaker.receive(source, visibility_timeout=20, system_attribute_names=["All"])
    assert bodies(first) == ["poison"]
    advance(21)
    # the poison message is moved out instead of delivered; its group goes on with "next"
    assert bodies(receive_within(speaker, source, 5.0)) == ["next"]
    moved = receive_all(speaker, dead_letters)
    assert bodies(moved) == ["poison"]
    assert moved[0].attributes["MessageGroupId"] == "g"
    # AWS resets the enqueue time of a message moved to a FIFO dead-letter queue
    # (the move happened at least 21 s, by the server's clock, after the send)
    sent_before = int(first[0].attributes["SentTimestamp"])
    assert int(moved[0].attributes["SentTimestamp"]) >= sent_before + 20_000


def test_a_move_task_returns_fifo_dead_letters_to_their_source_in_order(
    speaker: Speaker, fifo_queue: Callable[..., str], sqs: Any
) -> None:
    dead_letters = fifo_queue()
    source = fifo_queue(
        ContentBasedDeduplication="true",
        RedrivePolicy=json.dumps({"deadLetterTargetArn": arn_of(dead_letters),
                                  "maxReceiveCount": 1}),
    )
    for body in ("m1", "m2", "m3"):
        speaker.send(source, body, group_id="g")
    for _ in range(4):  # each receive hands one out at once and moves it on the next
        speaker.receive(source, max_messages=10, visibility_timeout=0)
    assert speaker.queue_attributes(dead_letters)["ApproximateNumberOfMessages"] == "3"
    task = sqs.start_message_move_task(SourceArn=arn_of(dead_letters))
    assert task["TaskHandle"]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = sqs.list_message_move_tasks(SourceArn=arn_of(dead_letters))["Results"][0]
        if status["Status"] == "COMPLETED":
            break
        time.sleep(0.2)
    assert status["Status"] == "COMPLETED"
    back = receive_all(speaker, source)
    assert bodies(back) == ["m1", "m2", "m3"]
    assert {m.attributes["MessageGroupId"] for m in back} == {"g"}
    numbers = [int(m.attributes["SequenceNumber"]) for m in back]
    assert numbers == sorted(numbers)
