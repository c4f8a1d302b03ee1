"""When a message can be seen: visibility timeouts, ChangeMessageVisibility and delays.

Owns the timing scenarios of the wire suite. Time passes by advancing the server's clock
(`advance`): a message is checked to stay hidden until just before its due moment and to
come back just after it (polled for a few seconds, since a background worker puts it back).
Must not import cqs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import Speaker, SqsError, receive_within

# A message due back is given this long (real time) past its due moment to reappear.
REAPPEAR_SLACK = 5.0
# A message not yet due is watched this long (real time; several sweeps) to stay hidden.
HIDDEN_WATCH = 0.5

Advance = Callable[[float], None]


def test_received_message_is_hidden_until_queue_visibility_timeout(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(VisibilityTimeout=30)
    speaker.send(url, "hide me")
    [first] = speaker.receive(url, wait_seconds=2, attribute_names=["ApproximateReceiveCount"])
    assert speaker.receive(url) == []

    advance(28)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    advance(3)
    [again] = receive_within(
        speaker, url, REAPPEAR_SLACK, attribute_names=["ApproximateReceiveCount"]
    )
    assert again.message_id == first.message_id
    assert again.attributes["ApproximateReceiveCount"] == "2"


def test_hidden_message_counts_as_not_visible(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "in flight")
    speaker.receive(url, wait_seconds=2)
    counts = speaker.queue_attributes(
        url, ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )
    assert counts == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "1",
    }


def test_receive_visibility_timeout_overrides_the_queue_one(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "short lease")
    [first] = speaker.receive(url, wait_seconds=2, visibility_timeout=20)
    advance(18)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    advance(3)
    [again] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert again.message_id == first.message_id


def test_long_receive_visibility_timeout_keeps_message_hidden(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(VisibilityTimeout=10)
    speaker.send(url, "long lease")
    speaker.receive(url, wait_seconds=2, visibility_timeout=60)
    advance(30)  # past the queue's timeout, not the receive's
    assert receive_within(speaker, url, HIDDEN_WATCH) == []


def test_change_visibility_to_zero_makes_message_visible_now(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "release me")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 0)
    [again] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert again.message_id == first.message_id


def test_change_visibility_extends_the_hidden_time(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(VisibilityTimeout=10)
    speaker.send(url, "extend me")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 60)
    advance(30)  # past the queue's timeout, not the new one
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesNotVisible"]) == {
        "ApproximateNumberOfMessagesNotVisible": "1"
    }


def test_change_visibility_shortens_the_hidden_time(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "shorten me")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 20)
    advance(21)
    [again] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert again.message_id == first.message_id


def test_message_can_be_deleted_with_handle_after_visibility_change(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue(VisibilityTimeout=1)
    speaker.send(url, "extend then delete")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 60)
    speaker.delete(url, first.receipt_handle)
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesNotVisible"]) == {
        "ApproximateNumberOfMessagesNotVisible": "0"
    }


def test_change_visibility_after_the_timeout_ran_out_hides_the_message_again(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    """AWS answers 200 to a visibility change that arrives after the receive's timeout ran
    out (issue 28, from AWS's recorded answers): a consumer's late heartbeat must not fail."""
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "late heartbeat")
    [first] = speaker.receive(url, wait_seconds=2, visibility_timeout=5)
    advance(6)
    speaker.change_visibility(url, first.receipt_handle, 30)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    advance(31)
    [again] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert again.message_id == first.message_id


def test_change_visibility_after_visibility_zero_hides_the_message_again(
    speaker: Speaker, make_queue: Any
) -> None:
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "released")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.change_visibility(url, first.receipt_handle, 0)
    speaker.change_visibility(url, first.receipt_handle, 30)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []


def test_change_visibility_with_a_handle_from_before_the_latest_receive_is_refused_once_visible(
    speaker: Speaker, make_queue: Any
) -> None:
    """Someone else received the message since, and it is visible again: the old handle has
    nothing in flight to change (cqs's answer; AWS's recorded answers do not show this case)."""
    url = make_queue(VisibilityTimeout=600)
    speaker.send(url, "handed on")
    [first] = speaker.receive(url, wait_seconds=2, visibility_timeout=0)
    [second] = speaker.receive(url, wait_seconds=2, visibility_timeout=0)
    assert second.message_id == first.message_id
    with pytest.raises(SqsError) as caught:
        speaker.change_visibility(url, first.receipt_handle, 30)
    assert caught.value.code == "AWS.SimpleQueueService.MessageNotInflight"
    assert caught.value.status == 400


def test_change_visibility_of_a_deleted_message_is_an_invalid_parameter_value(
    speaker: Speaker, make_queue: Any
) -> None:
    """AWS answers InvalidParameterValue here, not MessageNotInflight (issue 28)."""
    url = make_queue()
    speaker.send(url, "deleted")
    [first] = speaker.receive(url, wait_seconds=2)
    speaker.delete(url, first.receipt_handle)
    with pytest.raises(SqsError) as caught:
        speaker.change_visibility(url, first.receipt_handle, 30)
    assert caught.value.code == "InvalidParameterValue"
    assert caught.value.status == 400


def test_change_visibility_with_forged_handle_is_receipt_handle_is_invalid(
    speaker: Speaker, make_queue: Any
) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.change_visibility(make_queue(), "AQEBforgedZm9yZ2Vk", 10)
    assert caught.value.code == "ReceiptHandleIsInvalid"


def test_change_visibility_over_12_hours_is_refused(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "forever")
    [first] = speaker.receive(url, wait_seconds=2)
    with pytest.raises(SqsError) as caught:
        speaker.change_visibility(url, first.receipt_handle, 43201)
    assert caught.value.code == "InvalidParameterValue"


# --- delays -------------------------------------------------------------------------------


def test_queue_delay_holds_new_messages_back(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue(DelaySeconds=30)
    speaker.send(url, "delayed by the queue")
    assert speaker.receive(url) == []
    assert speaker.queue_attributes(
        url, ["ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages"]
    ) == {"ApproximateNumberOfMessagesDelayed": "1", "ApproximateNumberOfMessages": "0"}

    advance(28)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    advance(3)
    [message] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert message.body == "delayed by the queue"
    assert speaker.queue_attributes(url, ["ApproximateNumberOfMessagesDelayed"]) == {
        "ApproximateNumberOfMessagesDelayed": "0"
    }


def test_message_delay_holds_that_message_back(
    speaker: Speaker, make_queue: Any, advance: Advance
) -> None:
    url = make_queue()
    speaker.send(url, "late", delay_seconds=30)
    speaker.send(url, "on time")
    [first] = speaker.receive(url, wait_seconds=1, visibility_timeout=600)
    assert first.body == "on time"
    assert speaker.receive(url) == []

    advance(28)
    assert receive_within(speaker, url, HIDDEN_WATCH) == []
    advance(3)
    [late] = receive_within(speaker, url, REAPPEAR_SLACK)
    assert late.body == "late"


def test_message_delay_of_zero_overrides_queue_delay(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue(DelaySeconds=600)
    speaker.send(url, "now", delay_seconds=0)
    [message] = speaker.receive(url, wait_seconds=2)
    assert message.body == "now"


def test_delayed_message_counts_only_as_delayed(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.send(url, "wait", delay_seconds=60)
    assert speaker.queue_attributes(
        url,
        [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    ) == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
        "ApproximateNumberOfMessagesDelayed": "1",
    }
