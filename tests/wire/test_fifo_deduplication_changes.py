"""FIFO deduplication across a SetQueueAttributes change of DeduplicationScope or
ContentBasedDeduplication, over both protocols: messages sent before the change keep
deduplicating as they did, for the rest of their 5-minute interval.

Sources: issue 28's recorded AWS answer ("AWS keeps deduplicating as before for messages
already seen" after DeduplicationScope changed); the SendMessage API reference on
MessageDeduplicationId ("If you send one message with ContentBasedDeduplication enabled and
then another message with a MessageDeduplicationId that is the same as the one generated
for the first MessageDeduplicationId, the two messages are treated as duplicates"; "the
5-minute deduplication interval"). Time is moved with the test clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest

from tests.wire.conftest import Speaker, SpokenQueue

Advance = Callable[[float], None]


@pytest.fixture
def fifo_queue(spoken_queue: SpokenQueue) -> Callable[..., str]:
    return lambda **attributes: spoken_queue("fifo-dedup-", attributes, fifo=True)


def bodies(speaker: Speaker, url: str) -> list[str]:
    received = speaker.receive(url, max_messages=10, visibility_timeout=0)
    return sorted(m.body for m in received)


def test_a_message_sent_queue_wide_still_deduplicates_after_the_scope_becomes_per_group(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue()  # DeduplicationScope "queue"
    first = speaker.send(url, "first", group_id="g1", deduplication_id="d")
    speaker.set_queue_attributes(url, {"DeduplicationScope": "messageGroup"})
    assert speaker.queue_attributes(url)["DeduplicationScope"] == "messageGroup"
    # Deduplicated as before: queue-wide, so in its own group and in another one.
    assert speaker.send(url, "again", group_id="g1", deduplication_id="d").message_id == (
        first.message_id
    )
    assert speaker.send(url, "other", group_id="g2", deduplication_id="d").message_id == (
        first.message_id
    )
    # New messages follow the new scope: one id, two groups, two messages.
    speaker.send(url, "e1", group_id="g1", deduplication_id="e")
    speaker.send(url, "e2", group_id="g2", deduplication_id="e")
    assert bodies(speaker, url) == ["e1", "e2", "first"]
    advance(301)  # the interval is over: the id is free in every group
    speaker.send(url, "later", group_id="g2", deduplication_id="d")
    assert "later" in bodies(speaker, url)


def test_messages_sent_per_group_still_deduplicate_in_their_groups_after_the_scope_widens(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(DeduplicationScope="messageGroup")
    one = speaker.send(url, "one", group_id="g1", deduplication_id="d")
    two = speaker.send(url, "two", group_id="g2", deduplication_id="d")
    assert one.message_id != two.message_id
    speaker.set_queue_attributes(url, {"DeduplicationScope": "queue"})
    assert speaker.send(url, "x", group_id="g1", deduplication_id="d").message_id == (
        one.message_id
    )
    assert speaker.send(url, "y", group_id="g2", deduplication_id="d").message_id == (
        two.message_id
    )
    # New messages follow the new scope: one id is one message across groups.
    fresh = speaker.send(url, "f1", group_id="g1", deduplication_id="f")
    assert speaker.send(url, "f2", group_id="g2", deduplication_id="f").message_id == (
        fresh.message_id
    )
    assert bodies(speaker, url) == ["f1", "one", "two"]


def test_a_content_based_id_still_deduplicates_after_content_based_deduplication_is_off(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    first = speaker.send(url, "same body", group_id="g")
    speaker.set_queue_attributes(url, {"ContentBasedDeduplication": "false"})
    generated = hashlib.sha256(b"same body").hexdigest()  # the id SQS generated for it
    again = speaker.send(url, "same body", group_id="g", deduplication_id=generated)
    assert again.message_id == first.message_id
    speaker.send(url, "same body", group_id="g", deduplication_id="explicit")
    assert bodies(speaker, url) == ["same body", "same body"]


def test_an_explicit_id_still_deduplicates_after_content_based_deduplication_is_on(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    first = speaker.send(url, "body", group_id="g", deduplication_id="k")
    speaker.set_queue_attributes(url, {"ContentBasedDeduplication": "true"})
    assert speaker.send(url, "other body", group_id="g", deduplication_id="k").message_id == (
        first.message_id
    )
    # Without an id the body's hash is the id: not "k", so a new message.
    assert speaker.send(url, "body", group_id="g").message_id != first.message_id
    assert bodies(speaker, url) == ["body", "body"]
