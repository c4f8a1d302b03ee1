"""Receipt handles from before a message's latest receive, as SQS treats them.

ChangeMessageVisibility (single and batch) with an earlier handle applies to the message
while it is in flight. DeleteMessage (single and batch) with an earlier handle succeeds and
deletes nothing: the message stays with its current holder, whose delete removes it (the
SQS API reference: "If you use an old ReceiptHandle, the request will succeed, but the
message might not be deleted"). Time is moved with the test clock, so nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.wire.conftest import Received, Speaker, unique_name

MESSAGES = 300


def receive_all(speaker: Speaker, url: str, count: int, timeout: int) -> dict[str, Received]:
    """Every visible message, received once (message id -> delivery)."""
    got: dict[str, Received] = {}
    for _ in range(count):
        batch = speaker.receive(url, max_messages=10, visibility_timeout=timeout)
        if not batch:
            break
        for message in batch:
            assert message.message_id not in got, "received twice while hidden"
            got[message.message_id] = message
        if len(got) == count:
            break
    return got


def redelivered(
    speaker: Speaker, url: str, advance: Callable[[float], None]
) -> tuple[Received, Received]:
    speaker.send(url, "twice received")
    [first] = speaker.receive(url, visibility_timeout=10)
    advance(11)
    [second] = speaker.receive(url, visibility_timeout=30)
    assert second.message_id == first.message_id
    assert second.receipt_handle != first.receipt_handle
    return first, second


def test_change_visibility_with_an_earlier_handle_applies_to_the_message(
    speaker: Speaker, advance: Callable[[float], None]
) -> None:
    url = speaker.create_queue(unique_name("old-handle-cmv-"))
    first, _ = redelivered(speaker, url, advance)
    speaker.change_visibility(url, first.receipt_handle, 0)  # no error: applied
    [again] = speaker.receive(url, visibility_timeout=30)
    assert again.message_id == first.message_id

    outcome = speaker.change_visibility_batch(url, [("old", first.receipt_handle, 0)])
    assert set(outcome.successful) == {"old"} and not outcome.failed
    assert [m.message_id for m in speaker.receive(url)] == [first.message_id]


def test_delete_with_an_earlier_handle_succeeds_and_keeps_the_message(
    speaker: Speaker, advance: Callable[[float], None]
) -> None:
    url = speaker.create_queue(unique_name("old-handle-delete-"))
    first, second = redelivered(speaker, url, advance)
    speaker.delete(url, first.receipt_handle)  # succeeds...
    outcome = speaker.delete_batch(url, [("old", first.receipt_handle)])
    assert set(outcome.successful) == {"old"} and not outcome.failed
    advance(31)  # ...but the message was kept: back after its current receive's timeout
    [third] = speaker.receive(url, visibility_timeout=30)
    assert third.message_id == first.message_id
    speaker.delete(url, second.receipt_handle)  # now also an earlier handle: kept
    outcome = speaker.delete_batch(url, [("current", third.receipt_handle)])
    assert set(outcome.successful) == {"current"}
    advance(31)
    assert speaker.receive(url) == []


def test_a_message_not_in_flight_still_refuses_a_visibility_change(
    speaker: Speaker, advance: Callable[[float], None]
) -> None:
    from tests.wire.conftest import SqsError

    url = speaker.create_queue(unique_name("old-handle-visible-"))
    first, _ = redelivered(speaker, url, advance)
    advance(31)  # visible again: nothing in flight to change
    with pytest.raises(SqsError) as refused:
        speaker.change_visibility(url, first.receipt_handle, 60)
    assert (refused.value.code, refused.value.status) == (
        "AWS.SimpleQueueService.MessageNotInflight", 400
    )


@pytest.mark.timeout(240)
def test_concurrent_consumers_with_stale_handles_neither_lose_nor_duplicate_messages(
    speaker: Speaker, advance: Callable[[float], None]
) -> None:
    url = speaker.create_queue(unique_name("old-handle-load-"))
    sent = set()
    for start in range(0, MESSAGES, 10):
        outcome = speaker.send_batch(
            url, [{"Id": str(i), "MessageBody": f"m{start + i}"} for i in range(10)]
        )
        sent |= {entry["MessageId"] for entry in outcome.successful.values()}
    assert len(sent) == MESSAGES
    first = receive_all(speaker, url, MESSAGES, 10)
    assert set(first) == sent
    advance(11)
    second = receive_all(speaker, url, MESSAGES, 30)
    assert set(second) == sent

    with ThreadPoolExecutor(16) as pool:  # every stale holder deletes (single and batch)
        list(pool.map(lambda m: speaker.delete(url, m.receipt_handle), first.values()))
        stale = list(first.values())
        batches = [stale[i:i + 10] for i in range(0, len(stale), 10)]
        outcomes = list(pool.map(
            lambda b: speaker.delete_batch(url, [(str(n), m.receipt_handle)
                                                 for n, m in enumerate(b)]), batches
        ))
    assert all(not outcome.failed for outcome in outcomes)
    assert speaker.receive(url) == []  # nothing lost to the stale deletes: all still held
    advance(31)
    third = receive_all(speaker, url, MESSAGES, 30)
    assert set(third) == sent  # each message exactly once

    # The current holders and both generations of stale holders delete at once.
    calls = [(m.receipt_handle) for m in (*first.values(), *second.values(), *third.values())]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda handle: speaker.delete(url, handle), calls))
    advance(31)
    assert speaker.receive(url) == []
    attributes = speaker.queue_attributes(url, ["ApproximateNumberOfMessages",
                                                "ApproximateNumberOfMessagesNotVisible"])
    assert attributes == {"ApproximateNumberOfMessages": "0",
                          "ApproximateNumberOfMessagesNotVisible": "0"}
