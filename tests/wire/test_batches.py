"""Batch actions over both protocols: happy paths, per-entry failures, whole-request errors.

Owns SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch scenarios of the
wire suite. Must not import cqs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from .conftest import (
    BatchOutcome,
    Speaker,
    SqsError,
    md5_hex,
    md5_of_message_attributes,
    receive_within,
)

FORGED_HANDLE = "AQEBforgedreceipthandleZm9yZ2VkLWhhbmRsZQ=="


def receive_all(speaker: Speaker, url: str, expected: int, **options: Any) -> list[Any]:
    got: dict[str, Any] = {}
    for _ in range(20):
        for message in speaker.receive(url, max_messages=10, wait_seconds=1, **options):
            got[message.message_id] = message
        if len(got) >= expected:
            break
    return list(got.values())


# --- SendMessageBatch ---------------------------------------------------------------------


def test_send_batch_delivers_every_entry(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    entries = [{"Id": f"e{n}", "MessageBody": f"body {n}"} for n in range(10)]
    outcome = speaker.send_batch(url, entries)
    assert outcome.failed == {}
    assert set(outcome.successful) == {f"e{n}" for n in range(10)}
    for n in range(10):
        result = outcome.successful[f"e{n}"]
        assert result["MD5OfMessageBody"] == md5_hex(f"body {n}")
        assert result["MessageId"]

    received = receive_all(speaker, url, 10)
    assert sorted(m.body for m in received) == sorted(f"body {n}" for n in range(10))
    assert {m.message_id for m in received} == {r["MessageId"] for r in outcome.successful.values()}


def test_send_batch_entries_keep_attributes_and_delays(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    attributes: dict[str, dict[str, Any]] = {
        "kind": {"DataType": "String", "StringValue": "batch"},
        "raw": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
    }
    outcome = speaker.send_batch(
        url,
        [
            {"Id": "now", "MessageBody": "now", "MessageAttributes": attributes},
            {"Id": "later", "MessageBody": "later", "DelaySeconds": 60},
        ],
    )
    assert outcome.failed == {}
    assert outcome.successful["now"]["MD5OfMessageAttributes"] == md5_of_message_attributes(
        attributes
    )
    [message] = speaker.receive(
        url, max_messages=10, wait_seconds=1, message_attribute_names=["All"]
    )
    assert message.body == "now"
    assert message.message_attributes == attributes
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesDelayed"]) == {
        "ApproximateNumberOfMessagesDelayed": "1"
    }


def test_send_batch_with_one_bad_body_fails_only_that_entry(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    outcome = speaker.send_batch(
        url,
        [
            {"Id": "good1", "MessageBody": "fine"},
            {"Id": "bad", "MessageBody": "nul \u0000 inside"},
            {"Id": "good2", "MessageBody": "also fine"},
        ],
    )
    assert set(outcome.successful) == {"good1", "good2"}
    assert set(outcome.failed) == {"bad"}
    assert outcome.failed["bad"]["Code"] == "InvalidMessageContents"
    assert outcome.failed["bad"]["SenderFault"] is True
    assert sorted(m.body for m in receive_all(speaker, url, 2)) == ["also fine", "fine"]


def test_send_batch_whose_entries_add_up_past_the_limit_is_batch_request_too_long(
    speaker: Speaker, make_queue: Any
) -> None:
    # Each entry alone is fine; together they pass 1 MiB, the largest payload SQS accepts.
    url = make_queue()
    entries = [{"Id": f"e{n}", "MessageBody": "x" * 110_000} for n in range(10)]
    with pytest.raises(SqsError) as caught:
        speaker.send_batch(url, entries)
    assert caught.value.code == "AWS.SimpleQueueService.BatchRequestTooLong"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


# --- DeleteMessageBatch -------------------------------------------------------------------


def test_delete_batch_deletes_every_entry(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(VisibilityTimeout=1)
    speaker.send_batch(url, [{"Id": f"e{n}", "MessageBody": f"m{n}"} for n in range(4)])
    received = receive_all(speaker, url, 4, visibility_timeout=60)
    assert len(received) == 4
    outcome = speaker.delete_batch(
        url, [(f"d{n}", m.receipt_handle) for n, m in enumerate(received)]
    )
    assert outcome.failed == {}
    assert set(outcome.successful) == {"d0", "d1", "d2", "d3"}
    assert speaker.queue_attributes(
        url, ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    ) == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}


def test_delete_batch_with_forged_handle_fails_only_that_entry(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send_batch(url, [{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])
    received = receive_all(speaker, url, 2)
    outcome = speaker.delete_batch(
        url,
        [
            ("first", received[0].receipt_handle),
            ("forged", FORGED_HANDLE),
            ("second", received[1].receipt_handle),
        ],
    )
    assert set(outcome.successful) == {"first", "second"}
    assert set(outcome.failed) == {"forged"}
    assert outcome.failed["forged"]["Code"] == "ReceiptHandleIsInvalid"
    assert outcome.failed["forged"]["SenderFault"] is True
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesNotVisible"]) == {
        "ApproximateNumberOfMessagesNotVisible": "0"
    }


# --- ChangeMessageVisibilityBatch ---------------------------------------------------------


def test_change_visibility_batch_releases_every_entry(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(VisibilityTimeout=600)
    speaker.send_batch(url, [{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])
    received = receive_all(speaker, url, 2)
    outcome = speaker.change_visibility_batch(
        url, [(f"c{n}", m.receipt_handle, 0) for n, m in enumerate(received)]
    )
    assert outcome.failed == {}
    assert set(outcome.successful) == {"c0", "c1"}
    again: dict[str, str] = {}
    for _ in range(20):
        for message in receive_within(speaker, url, 5.0, max_messages=10):
            again[message.message_id] = message.body
        if len(again) == 2:
            break
    assert sorted(again.values()) == ["a", "b"]


def test_change_visibility_batch_with_forged_handle_fails_only_that_entry(
    speaker: Speaker, make_queue: Any, advance: Callable[[float], None]
) -> None:
    url = make_queue(VisibilityTimeout=10)
    speaker.send(url, "extend me")
    [message] = speaker.receive(url, wait_seconds=2)
    outcome = speaker.change_visibility_batch(
        url, [("real", message.receipt_handle, 60), ("forged", FORGED_HANDLE, 60)]
    )
    assert set(outcome.successful) == {"real"}
    assert outcome.failed["forged"]["Code"] == "ReceiptHandleIsInvalid"
    advance(30)  # past the queue's timeout, not the extended one
    assert receive_within(speaker, url, 0.5) == []  # the real entry was extended


# --- whole-request errors, the same for the three batch actions ---------------------------

BatchCall = Callable[[Speaker, str, Sequence[str]], BatchOutcome]


def _send(speaker: Speaker, url: str, ids: Sequence[str]) -> BatchOutcome:
    return speaker.send_batch(url, [{"Id": i, "MessageBody": "body"} for i in ids])


def _delete(speaker: Speaker, url: str, ids: Sequence[str]) -> BatchOutcome:
    return speaker.delete_batch(url, [(i, FORGED_HANDLE) for i in ids])


def _change(speaker: Speaker, url: str, ids: Sequence[str]) -> BatchOutcome:
    return speaker.change_visibility_batch(url, [(i, FORGED_HANDLE, 10) for i in ids])


BATCH_ACTIONS = pytest.mark.parametrize(
    "batch", [_send, _delete, _change], ids=["send", "delete", "change-visibility"]
)


@BATCH_ACTIONS
def test_batch_of_eleven_entries_is_too_many(
    speaker: Speaker, make_queue: Any, batch: BatchCall
) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        batch(speaker, url, [f"e{n}" for n in range(11)])
    assert caught.value.code == "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


@BATCH_ACTIONS
def test_batch_without_entries_is_empty_batch_request(
    speaker: Speaker, make_queue: Any, batch: BatchCall
) -> None:
    with pytest.raises(SqsError) as caught:
        batch(speaker, make_queue(), [])
    assert caught.value.code == "AWS.SimpleQueueService.EmptyBatchRequest"
    assert caught.value.status == 400


@BATCH_ACTIONS
def test_batch_with_repeated_id_is_ids_not_distinct(
    speaker: Speaker, make_queue: Any, batch: BatchCall
) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        batch(speaker, url, ["same", "other", "same"])
    assert caught.value.code == "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


@BATCH_ACTIONS
@pytest.mark.parametrize("bad_id", ["has space", "dot.ted", "bang!", "x" * 81])
def test_batch_with_malformed_id_is_invalid_batch_entry_id(
    speaker: Speaker, make_queue: Any, batch: BatchCall, bad_id: str
) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        batch(speaker, url, ["fine", bad_id])
    assert caught.value.code == "AWS.SimpleQueueService.InvalidBatchEntryId"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


def test_batch_ids_of_80_letters_digits_hyphens_and_underscores_are_accepted(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    long_id = ("Az09-_" * 20)[:80]
    outcome = speaker.send_batch(
        url, [{"Id": long_id, "MessageBody": "a"}, {"Id": "B-2_c", "MessageBody": "b"}]
    )
    assert set(outcome.successful) == {long_id, "B-2_c"}


# --- empty lists ---------------------------------------------------------------------------


def test_empty_result_lists_are_left_out_as_aws_leaves_them_out(
    sqs: Any, make_queue: Any
) -> None:
    """An answer with nothing failed has no `Failed` member at all (JSON: no `"Failed": []`;
    query: no entry), nor `Successful` when nothing succeeded, nor `queueUrls` when a queue
    is nobody's dead-letter queue."""
    url = make_queue()
    sent = sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}])
    assert [e["Id"] for e in sent["Successful"]] == ["a"]
    assert "Failed" not in sent
    refused = sqs.delete_message_batch(QueueUrl=url, Entries=[
        {"Id": "x", "ReceiptHandle": FORGED_HANDLE}])
    assert [e["Id"] for e in refused["Failed"]] == ["x"]
    assert "Successful" not in refused
    assert "queueUrls" not in sqs.list_dead_letter_source_queues(QueueUrl=url)
