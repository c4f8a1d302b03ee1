"""Dead-letter queues over the wire: RedrivePolicy, RedriveAllowPolicy and
ListDeadLetterSourceQueues, through boto3 (JSON 1.0) and the query protocol."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.wire.conftest import (
    ACCOUNT_ID,
    REGION,
    QueryClient,
    Speaker,
    SpokenQueue,
    SqsError,
    queue_path,
    unique_name,
)


def arn_of(name: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}"


def name_of(url: str) -> str:
    return url.rsplit("/", 1)[-1]


def redrive_policy(dead_letter_url: str, max_receive_count: int) -> str:
    return json.dumps(
        {"deadLetterTargetArn": arn_of(name_of(dead_letter_url)),
         "maxReceiveCount": max_receive_count}
    )


@pytest.fixture
def made(spoken_queue: SpokenQueue) -> Callable[..., str]:
    """Create queues through the speaker under test; delete them afterwards."""
    return lambda attributes=None: spoken_queue("dlq-", attributes)


def test_a_message_received_more_than_max_receive_count_moves_to_the_dead_letter_queue(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    dead_letters = made()
    source = made({"RedrivePolicy": redrive_policy(dead_letters, 2)})
    attributes = {"colour": {"DataType": "String", "StringValue": "red"}}
    sent = speaker.send(source, "poison", message_attributes=attributes)

    first = speaker.receive(source, visibility_timeout=0, attribute_names=["All"])
    second = speaker.receive(source, visibility_timeout=0, attribute_names=["All"])
    third = speaker.receive(source, visibility_timeout=0)

    assert [m.message_id for m in first + second] == [sent.message_id] * 2
    assert second[0].attributes["ApproximateReceiveCount"] == "2"
    assert third == []
    moved = speaker.receive(
        dead_letters, attribute_names=["All"], message_attribute_names=["All"]
    )
    assert [m.message_id for m in moved] == [sent.message_id]
    assert moved[0].body == "poison"
    assert moved[0].message_attributes == attributes
    assert moved[0].attributes["SentTimestamp"] == first[0].attributes["SentTimestamp"]
    # As AWS (the answers recorded against SQS): the moved message names its
    # source queue and its receive count goes on from the two receives in the source.
    assert set(moved[0].attributes) == {
        "SenderId", "SentTimestamp", "ApproximateReceiveCount",
        "ApproximateFirstReceiveTimestamp", "DeadLetterQueueSourceArn",
    }
    assert moved[0].attributes["DeadLetterQueueSourceArn"] == arn_of(name_of(source))
    assert moved[0].attributes["ApproximateReceiveCount"] == "3"
    assert speaker.queue_attributes(source, ["ApproximateNumberOfMessages"]) == {
        "ApproximateNumberOfMessages": "0"
    }


def test_messages_under_the_limit_are_delivered_and_not_moved(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    dead_letters = made()
    source = made({"RedrivePolicy": redrive_policy(dead_letters, 5)})
    speaker.send(source, "fine")

    for _ in range(3):
        assert len(speaker.receive(source, visibility_timeout=0)) == 1

    assert speaker.receive(dead_letters) == []


def test_a_redrive_policy_can_be_set_later_and_removed_again(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    dead_letters = made()
    source = made()
    speaker.set_queue_attributes(source, {"RedrivePolicy": redrive_policy(dead_letters, 1)})
    assert json.loads(speaker.queue_attributes(source, ["RedrivePolicy"])["RedrivePolicy"]) == {
        "deadLetterTargetArn": arn_of(name_of(dead_letters)), "maxReceiveCount": 1,
    }

    speaker.set_queue_attributes(source, {"RedrivePolicy": ""})

    assert "RedrivePolicy" not in speaker.queue_attributes(source)
    speaker.send(source, "kept")
    speaker.receive(source, visibility_timeout=0)
    assert len(speaker.receive(source, visibility_timeout=0)) == 1


def test_a_redrive_policy_naming_a_missing_queue_is_refused(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    policy = json.dumps(
        {"deadLetterTargetArn": arn_of(unique_name("missing-")), "maxReceiveCount": 3}
    )
    with pytest.raises(SqsError) as refused:
        made({"RedrivePolicy": policy})

    assert refused.value.code == "InvalidParameterValue"
    assert "Dead letter target does not exist" in str(refused.value)


def test_a_deny_all_redrive_allow_policy_refuses_every_source(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    dead_letters = made({"RedriveAllowPolicy": json.dumps({"redrivePermission": "denyAll"})})
    source = made()

    with pytest.raises(SqsError) as refused:
        speaker.set_queue_attributes(
            source, {"RedrivePolicy": redrive_policy(dead_letters, 3)}
        )

    assert refused.value.code == "InvalidParameterValue"
    assert "does not allow this source queue" in str(refused.value)


def test_a_by_queue_redrive_allow_policy_admits_only_the_listed_sources(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    allowed, refused_source = made(), made()
    dead_letters = made({"RedriveAllowPolicy": json.dumps({
        "redrivePermission": "byQueue", "sourceQueueArns": [arn_of(name_of(allowed))],
    })})

    speaker.set_queue_attributes(allowed, {"RedrivePolicy": redrive_policy(dead_letters, 3)})
    with pytest.raises(SqsError) as refused:
        speaker.set_queue_attributes(
            refused_source, {"RedrivePolicy": redrive_policy(dead_letters, 3)}
        )

    assert refused.value.code == "InvalidParameterValue"


def test_more_than_ten_source_queue_arns_are_refused(
    speaker: Speaker, made: Callable[..., str]
) -> None:
    policy = json.dumps({
        "redrivePermission": "byQueue",
        "sourceQueueArns": [arn_of(f"q{n}") for n in range(11)],
    })
    with pytest.raises(SqsError) as refused:
        made({"RedriveAllowPolicy": policy})

    assert refused.value.code == "InvalidAttributeValue"


def test_list_dead_letter_source_queues_names_every_source_in_pages(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    dead_letters = make_queue()
    sources = sorted(
        make_queue(RedrivePolicy=redrive_policy(dead_letters, 4)) for _ in range(3)
    )
    make_queue()  # not a source

    everything = sqs.list_dead_letter_source_queues(QueueUrl=dead_letters)
    first = sqs.list_dead_letter_source_queues(QueueUrl=dead_letters, MaxResults=2)
    rest = sqs.list_dead_letter_source_queues(
        QueueUrl=dead_letters, MaxResults=2, NextToken=first["NextToken"]
    )

    assert sorted(everything["queueUrls"]) == sources
    assert "NextToken" not in everything
    assert len(first["queueUrls"]) == 2
    assert sorted(first["queueUrls"] + rest["queueUrls"]) == sources
    assert "NextToken" not in rest


def test_list_dead_letter_source_queues_over_the_query_protocol(
    query: QueryClient, make_queue: Callable[..., str]
) -> None:
    dead_letters = make_queue()
    source = make_queue(RedrivePolicy=redrive_policy(dead_letters, 4))
    lonely = make_queue()

    listed = query("ListDeadLetterSourceQueues", {}, path=queue_path(dead_letters))
    empty = query("ListDeadLetterSourceQueues", {}, path=queue_path(lonely))

    assert listed.status == 200
    assert listed.texts("ListDeadLetterSourceQueuesResult/QueueUrl") == [source]
    assert empty.status == 200 and empty.texts("ListDeadLetterSourceQueuesResult/QueueUrl") == []


def test_list_dead_letter_source_queues_of_a_missing_queue_is_non_existent_queue(
    sqs: Any, cqs_endpoint: str
) -> None:
    with pytest.raises(Exception) as missing:
        sqs.list_dead_letter_source_queues(
            QueueUrl=f"{cqs_endpoint}/{ACCOUNT_ID}/{unique_name('never-')}"
        )

    assert missing.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


@pytest.mark.timeout(30)
def test_a_dead_lettered_message_expires_by_its_original_send_time(
    speaker: Speaker, sqs: Any, advance: Callable[[float], None]
) -> None:
    """AWS: for standard queues "the expiration of a message is always based on its original
    enqueue timestamp". Moved 30 s after its send into a DLQ keeping messages 60 s, the
    message is gone about 60 s after its send, not 60 s after the move. The server's clock
    is advanced instead of sleeping."""
    dead_letters = speaker.create_queue(
        unique_name("expiry-dlq-"), {"MessageRetentionPeriod": "60"}
    )
    source = speaker.create_queue(
        unique_name("expiry-src-"), {"RedrivePolicy": redrive_policy(dead_letters, 1)}
    )
    try:
        speaker.send(source, "ages from its send")
        assert len(speaker.receive(source, visibility_timeout=0)) == 1

        advance(30)
        assert speaker.receive(source, visibility_timeout=0) == []  # moved, not delivered
        moved = speaker.receive(dead_letters, visibility_timeout=0)
        assert [m.body for m in moved] == ["ages from its send"]

        advance(33)  # 63 s after the send, 33 s after the move
        assert speaker.receive(dead_letters) == []
    finally:
        sqs.delete_queue(QueueUrl=source)
        sqs.delete_queue(QueueUrl=dead_letters)
