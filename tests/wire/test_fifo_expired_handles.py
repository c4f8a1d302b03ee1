"""DeleteMessage with a receipt handle whose visibility timeout has run out, over both
protocols: a FIFO queue refuses it and keeps the message; a standard queue deletes anyway.

Sources: AWS's "Troubleshoot Amazon SQS API errors" page (ReceiptHandle error): an expired
handle is `InvalidParameterValue` "Value <handle> for parameter ReceiptHandle is invalid.
Reason: The receipt handle has expired."; AWS's knowledge-center article on that error:
"previous receipt handles might succeed if you use standard SQS queues"; LocalStack's
`test_fifo_delete_message_with_expired_receipt_handle` (validated against AWS, PR 12442:
"the same test succeeded consistently on standard queues"); aws-sdk-js issue 1279 (a FIFO
receive with VisibilityTimeout 0 gives a handle no delete accepts). Time is moved with the
test clock, so nothing sleeps through a timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.wire.conftest import Speaker, SpokenQueue, SqsError, unique_name

Advance = Callable[[float], None]


@pytest.fixture
def fifo_queue(spoken_queue: SpokenQueue) -> Callable[..., str]:
    return lambda **attributes: spoken_queue(
        "fifo-expired-", {"ContentBasedDeduplication": "true", **attributes}, fifo=True
    )


def assert_expired(speaker: Speaker, url: str, handle: str) -> None:
    with pytest.raises(SqsError) as refused:
        speaker.delete(url, handle)
    assert (refused.value.code, refused.value.status) == ("InvalidParameterValue", 400)
    assert str(refused.value).endswith(
        f"Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle"
        " has expired."
    )


def test_a_fifo_delete_after_the_visibility_timeout_is_refused_and_keeps_the_message(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue(VisibilityTimeout="30")
    speaker.send(url, "late", group_id="g")
    [first] = speaker.receive(url)
    advance(31)  # the timeout ran out; nobody received the message since
    assert_expired(speaker, url, first.receipt_handle)
    [second] = speaker.receive(url)  # still there, delivered again
    assert second.message_id == first.message_id
    assert_expired(speaker, url, first.receipt_handle)  # received again since: still expired
    speaker.delete(url, second.receipt_handle)  # the current handle deletes
    advance(31)
    assert speaker.receive(url) == []


def test_a_fifo_handle_of_a_receive_with_no_visibility_timeout_cannot_delete(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    speaker.send(url, "never hidden", group_id="g")
    [received] = speaker.receive(url, visibility_timeout=0)
    assert_expired(speaker, url, received.receipt_handle)
    assert [m.body for m in speaker.receive(url)] == ["never hidden"]


def test_a_fifo_delete_batch_fails_the_expired_entry_alone(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue(VisibilityTimeout="30")
    speaker.send(url, "expired", group_id="a")
    [old] = speaker.receive(url)
    advance(31)
    speaker.send(url, "current", group_id="b")
    held = speaker.receive(url, max_messages=10)
    assert sorted(m.body for m in held) == ["current", "expired"]
    current = next(m for m in held if m.body == "current")
    outcome = speaker.delete_batch(
        url, [("old", old.receipt_handle), ("current", current.receipt_handle)]
    )
    assert set(outcome.successful) == {"current"}
    # The code and text AWS gave such an entry (sqsmover issue 54, a FIFO dead-letter queue).
    assert outcome.failed["old"]["Code"] == "ReceiptHandleIsInvalid"
    assert outcome.failed["old"]["Message"] == "The receipt handle has expired"
    assert str(outcome.failed["old"]["SenderFault"]).lower() == "true"


def test_a_fifo_delete_within_the_visibility_timeout_succeeds(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue(VisibilityTimeout="30")
    speaker.send(url, "on time", group_id="g")
    [received] = speaker.receive(url)
    advance(29)
    speaker.delete(url, received.receipt_handle)
    speaker.delete(url, received.receipt_handle)  # already deleted: succeeds, as in AWS
    advance(31)
    assert speaker.receive(url) == []


def test_a_standard_delete_after_the_visibility_timeout_still_deletes(
    speaker: Speaker, advance: Advance, sqs: Any
) -> None:
    url = speaker.create_queue(unique_name("std-expired-"), {"VisibilityTimeout": "30"})
    try:
        speaker.send(url, "late")
        [received] = speaker.receive(url)
        advance(31)
        speaker.delete(url, received.receipt_handle)  # no error on a standard queue
        assert speaker.receive(url) == []
        advance(31)
        assert speaker.receive(url) == []
    finally:
        sqs.delete_queue(QueueUrl=url)
