"""Sending, receiving and deleting messages over both protocols: bodies, receipt handles, limits.

Owns the single-message scenarios of the wire suite. Must not import cqs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Speaker, SqsError, md5_hex, receive_within

FORGED_HANDLE = "AQEBforgedreceipthandleZm9yZ2VkLWhhbmRsZQ=="


def test_sent_message_is_received_with_its_body_and_md5(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    body = "hello, queue — ünïcødé ✓ 🐇"
    sent = speaker.send(url, body)
    assert sent.md5_of_body == md5_hex(body)
    assert sent.message_id

    received = speaker.receive(url, wait_seconds=2)
    assert len(received) == 1
    message = received[0]
    assert message.body == body
    assert message.message_id == sent.message_id
    assert message.md5_of_body == md5_hex(body)
    assert message.receipt_handle


def test_deleted_message_is_never_received_again(
    speaker: Speaker, make_queue: Any, advance: Callable[[float], None]
) -> None:
    url = make_queue(VisibilityTimeout=30)
    speaker.send(url, "once")
    [message] = speaker.receive(url, wait_seconds=2)
    speaker.delete(url, message.receipt_handle)
    advance(31)  # past the visibility timeout it would have come back after
    assert receive_within(speaker, url, 0.5) == []
    counts = speaker.queue_attributes(
        url, ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )
    assert counts == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
    }


def test_every_sent_message_is_received_exactly_once(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    sent = {speaker.send(url, f"message {n}").message_id: f"message {n}" for n in range(15)}
    got: dict[str, str] = {}
    for _ in range(30):
        batch = speaker.receive(url, max_messages=10, wait_seconds=1)
        for message in batch:
            assert message.message_id not in got, "a message was delivered twice"
            got[message.message_id] = message.body
        if len(got) == len(sent):
            break
    assert got == sent


def test_receive_returns_at_most_max_number_of_messages(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    for n in range(5):
        speaker.send(url, f"m{n}")
    assert 1 <= len(speaker.receive(url, max_messages=3, wait_seconds=1)) <= 3
    assert len(speaker.receive(url, max_messages=1, wait_seconds=1)) == 1


def test_receive_from_empty_queue_returns_no_messages(speaker: Speaker, make_queue: Any) -> None:
    assert speaker.receive(make_queue()) == []


def test_message_ids_are_distinct(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    ids = {speaker.send(url, "same body").message_id for _ in range(5)}
    assert len(ids) == 5


# --- receipt handles ----------------------------------------------------------------------


def test_each_receive_gives_a_new_receipt_handle(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "again and again")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 0)
    [second] = receive_within(speaker, url, 5.0)
    assert second.message_id == first.message_id
    assert second.receipt_handle != first.receipt_handle


def test_delete_with_forged_handle_is_receipt_handle_is_invalid(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send(url, "keep me")
    with pytest.raises(SqsError) as caught:
        speaker.delete(url, FORGED_HANDLE)
    assert caught.value.code == "ReceiptHandleIsInvalid"
    assert caught.value.status == 404  # SQS answers this one with 404, not 400
    assert len(speaker.receive(url, wait_seconds=2)) == 1


def test_delete_with_garbage_handle_is_receipt_handle_is_invalid(
    speaker: Speaker, make_queue: Any
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.delete(make_queue(), "not a handle at all")
    assert caught.value.code == "ReceiptHandleIsInvalid"


def test_handle_from_another_queue_is_receipt_handle_is_invalid(
    speaker: Speaker, make_queue: Any
) -> None:
    first, second = make_queue(), make_queue()
    speaker.send(first, "lives in the first queue")
    [message] = speaker.receive(first, wait_seconds=2)
    with pytest.raises(SqsError) as caught:
        speaker.delete(second, message.receipt_handle)
    assert caught.value.code == "ReceiptHandleIsInvalid"


def test_stale_handle_delete_succeeds_but_keeps_message_received_again(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send(url, "received twice")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 0)
    [second] = receive_within(speaker, url, 5.0)
    assert second.message_id == first.message_id

    speaker.delete(url, first.receipt_handle)  # succeeds, as in SQS, and deletes nothing
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesNotVisible"]) == {
        "ApproximateNumberOfMessagesNotVisible": "1"
    }

    speaker.delete(url, second.receipt_handle)
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesNotVisible"]) == {
        "ApproximateNumberOfMessagesNotVisible": "0"
    }


def test_stale_handle_changes_visibility_of_message_received_again(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    speaker.send(url, "received twice")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 0)
    [second] = receive_within(speaker, url, 5.0, visibility_timeout=30)
    assert second.message_id == first.message_id

    speaker.change_visibility(url, first.receipt_handle, 0)  # applies, as in SQS
    [third] = receive_within(speaker, url, 5.0)
    assert third.message_id == first.message_id


def test_deleting_twice_with_current_handle_succeeds(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "delete me twice")
    [message] = speaker.receive(url, wait_seconds=2)
    speaker.delete(url, message.receipt_handle)
    speaker.delete(url, message.receipt_handle)
    assert speaker.receive(url, wait_seconds=1) == []


# --- what a body may hold -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    ["nul \u0000 char", "noncharacter \ufffe", "escape \u001b char", "noncharacter \uffff"],
    ids=["nul", "fffe", "esc", "ffff"],
)
def test_body_with_disallowed_character_is_invalid_message_contents(
    speaker: Speaker, make_queue: Any, body: str
) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        speaker.send(url, body)
    assert caught.value.code == "InvalidMessageContents"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


def test_body_with_allowed_special_characters_round_trips(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue()
    body = (
        'tab\tnewline\ncr\r <xml attr="&amp;"/> {"json": [1, 2]} '
        "\ud7ff \ue000 \U0001f600 \U0010ffff"
    )
    speaker.send(url, body)
    [message] = speaker.receive(url, wait_seconds=2)
    assert message.body == body
    assert message.md5_of_body == md5_hex(body)


def test_body_at_queue_maximum_size_is_accepted(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(MaximumMessageSize=1024)
    speaker.send(url, "a" * 1024)
    [message] = speaker.receive(url, wait_seconds=2)
    assert len(message.body) == 1024


def test_body_over_queue_maximum_size_is_refused(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(MaximumMessageSize=1024)
    with pytest.raises(SqsError) as caught:
        speaker.send(url, "a" * 1025)
    assert caught.value.code == "InvalidParameterValue"
    assert caught.value.status == 400
    assert speaker.receive(url) == []


def test_multibyte_body_size_is_counted_in_bytes(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(MaximumMessageSize=1024)
    with pytest.raises(SqsError) as caught:
        speaker.send(url, "é" * 600)  # 600 characters, 1200 bytes
    assert caught.value.code == "InvalidParameterValue"


def test_empty_body_is_refused(speaker: Speaker, make_queue: Any) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.send(make_queue(), "")
    assert caught.value.code in ("InvalidParameterValue", "MissingParameter")
    assert caught.value.status == 400


# --- what a receive may ask for -----------------------------------------------------------


@pytest.mark.parametrize("count", [0, 11, -1])
def test_max_number_of_messages_outside_1_to_10_is_refused(
    speaker: Speaker, make_queue: Any, count: int
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.receive(make_queue(), max_messages=count)
    assert caught.value.code == "InvalidParameterValue"
    assert caught.value.status == 400


@pytest.mark.parametrize("seconds", [21, -1])
def test_wait_time_outside_0_to_20_is_refused(
    speaker: Speaker, make_queue: Any, seconds: int
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.receive(make_queue(), wait_seconds=seconds)
    assert caught.value.code == "InvalidParameterValue"
    assert caught.value.status == 400


def test_receive_visibility_timeout_over_12_hours_is_refused(
    speaker: Speaker, make_queue: Any
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.receive(make_queue(), visibility_timeout=43201)
    assert caught.value.code == "InvalidParameterValue"


def test_message_delay_over_15_minutes_is_refused(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        speaker.send(url, "too late", delay_seconds=901)
    assert caught.value.code == "InvalidParameterValue"
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesDelayed"]) == {
        "ApproximateNumberOfMessagesDelayed": "0"
    }


def test_send_to_unknown_queue_is_non_existent_queue(speaker: Speaker, cqs_endpoint: str) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.send(f"{cqs_endpoint}/000000000000/t-does-not-exist-0", "lost")
    assert caught.value.code == "AWS.SimpleQueueService.NonExistentQueue"
    assert caught.value.status == 400
