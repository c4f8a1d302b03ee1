"""Timer messages (#19): a send asks for a delivery time within the queue's retention period
with the message attribute `cqs.DeliverAt` (epoch seconds or ISO-8601) or
`cqs.DelaySeconds`, through unmodified boto3 over both protocols.

Hours pass on the server's test clock (`advance`), not in the test. A far-future message
waits only in the durable store (the cache's delayed count stays 0 and
`cqs.ApproximateNumberOfScheduledMessages` counts it) until shortly before it is due; it is
never received before its time, and is received within seconds after it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.fixtures.cqs_server import advance_clock
from tests.wire.conftest import unique_name, wait_for

SCHEDULED = "cqs.ApproximateNumberOfScheduledMessages"
EARLIEST = "cqs.EarliestScheduledDeliveryTimestamp"
HOUR = 3600


def server_now(endpoint: str) -> float:
    """The server's clock (its test clock runs ahead of ours by the offset)."""
    return time.time() + advance_clock(endpoint, 0)


def delay(seconds: int) -> dict[str, dict[str, str]]:
    return {"cqs.DelaySeconds": {"DataType": "Number", "StringValue": str(seconds)}}


def attributes(sqs: Any, url: str, *names: str) -> dict[str, str]:
    return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))["Attributes"])


def receive(sqs: Any, url: str) -> list[dict[str, Any]]:
    reply = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )
    return list(reply.get("Messages", []))


def take(sqs: Any, url: str, seconds: float) -> list[dict[str, Any]]:
    """Receive (and delete) what arrives within `seconds`: an empty list if nothing does."""
    taken: list[dict[str, Any]] = []
    wait_for(lambda: bool(taken.extend(receive(sqs, url)) or taken), seconds)
    for message in taken:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return taken


def error_of(call: Any) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return (
        response["Error"]["Code"],
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Message"],
    )


@pytest.mark.timeout(60)
def test_a_message_scheduled_hours_ahead_arrives_on_time_and_not_before(
    sqs: Any, make_queue: Any, advance: Any
) -> None:
    """Wall clock: 'not yet promoted' needs promotion rounds, run once a real second."""
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="in three hours", MessageAttributes=delay(3 * HOUR))

    # Waiting in the durable store only: not in the cache, counted apart.
    assert receive(sqs, url) == []
    assert attributes(sqs, url, "ApproximateNumberOfMessagesDelayed", SCHEDULED) == {
        "ApproximateNumberOfMessagesDelayed": "0", SCHEDULED: "1",
    }

    advance(3 * HOUR - 120)  # two minutes early: still waiting
    time.sleep(2.5)
    assert receive(sqs, url) == []
    assert attributes(sqs, url, SCHEDULED)[SCHEDULED] == "1"

    advance(100)  # twenty seconds early: promoted into the cache's delayed set
    assert wait_for(
        lambda: attributes(sqs, url, "ApproximateNumberOfMessagesDelayed", SCHEDULED)
        == {"ApproximateNumberOfMessagesDelayed": "1", SCHEDULED: "0"},
        10,
    ), attributes(sqs, url, "ApproximateNumberOfMessagesDelayed", SCHEDULED)
    assert receive(sqs, url) == []

    advance(21)  # due now
    received = take(sqs, url, 5)
    assert [m["Body"] for m in received] == ["in three hours"]
    # The attribute stays on the message: the consumer sees what the sender asked.
    assert received[0]["MessageAttributes"]["cqs.DelaySeconds"]["StringValue"] == str(3 * HOUR)


@pytest.mark.timeout(60)
def test_deliver_at_takes_epoch_seconds_or_an_iso_time(
    sqs: Any, make_queue: Any, advance: Any, cqs_endpoint: str
) -> None:
    url = make_queue()
    now = server_now(cqs_endpoint)
    epoch_due = int(now) + 2 * HOUR
    iso_due = datetime.fromtimestamp(int(now) + 2 * HOUR + 600, UTC).isoformat()
    sqs.send_message(QueueUrl=url, MessageBody="epoch", MessageAttributes={
        "cqs.DeliverAt": {"DataType": "Number", "StringValue": str(epoch_due)},
    })
    sqs.send_message(QueueUrl=url, MessageBody="iso", MessageAttributes={
        "cqs.DeliverAt": {"DataType": "String", "StringValue": iso_due},
    })
    summary = attributes(sqs, url, SCHEDULED, EARLIEST)
    assert summary == {SCHEDULED: "2", EARLIEST: str(epoch_due)}

    advance(2 * HOUR + 5)
    received = take(sqs, url, 10)
    assert [m["Body"] for m in received] == ["epoch"]
    assert attributes(sqs, url, SCHEDULED, EARLIEST) == {
        SCHEDULED: "1", EARLIEST: str(int(now) + 2 * HOUR + 600),
    }

    advance(600)
    more = take(sqs, url, 10)
    assert [m["Body"] for m in more] == ["iso"]
    assert more[0]["MessageAttributes"]["cqs.DeliverAt"]["StringValue"] == iso_due


@pytest.mark.timeout(60)
def test_a_batch_mixes_plain_near_and_far_timer_entries_and_fails_only_the_bad_one(
    sqs: Any, make_queue: Any, advance: Any
) -> None:
    url = make_queue(MessageRetentionPeriod=2 * HOUR)
    reply = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "plain", "MessageBody": "plain"},
        {"Id": "near", "MessageBody": "near", "MessageAttributes": delay(30)},
        {"Id": "far", "MessageBody": "far", "MessageAttributes": delay(HOUR)},
        {"Id": "too-far", "MessageBody": "too far", "MessageAttributes": delay(2 * HOUR)},
    ])
    assert sorted(entry["Id"] for entry in reply["Successful"]) == ["far", "near", "plain"]
    [failure] = reply["Failed"]
    assert (failure["Id"], failure["Code"], failure["SenderFault"]) == (
        "too-far", "InvalidParameterValue", True,
    )
    assert "MessageRetentionPeriod" in failure["Message"]
    # The near one waits in the cache's delayed set, the far one in the store.
    assert attributes(sqs, url, "ApproximateNumberOfMessagesDelayed", SCHEDULED) == {
        "ApproximateNumberOfMessagesDelayed": "1", SCHEDULED: "1",
    }
    assert [m["Body"] for m in take(sqs, url, 0)] == ["plain"]

    advance(31)
    got = take(sqs, url, 5)
    assert [m["Body"] for m in got] == ["near"]

    advance(HOUR)
    late = take(sqs, url, 10)
    assert [m["Body"] for m in late] == ["far"]


@pytest.mark.timeout(60)
def test_purge_removes_waiting_timer_messages_too(sqs: Any, make_queue: Any, advance: Any) -> None:
    """Wall clock: 'never promoted' needs promotion rounds, run once a real second."""
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="purged", MessageAttributes=delay(HOUR))
    assert attributes(sqs, url, SCHEDULED)[SCHEDULED] == "1"

    sqs.purge_queue(QueueUrl=url)

    assert attributes(sqs, url, SCHEDULED) == {SCHEDULED: "0"}
    advance(HOUR + 5)
    time.sleep(2.5)  # two promotion rounds
    assert receive(sqs, url) == []


@pytest.mark.parametrize(
    ("message_attributes", "reason"),
    [
        (delay(4 * 24 * HOUR), "MessageRetentionPeriod"),
        ({"cqs.DeliverAt": {"DataType": "String", "StringValue": "tomorrow"}}, "ISO-8601"),
        ({"cqs.DeliverAt": {"DataType": "String", "StringValue": "2030-01-01T00:00:00"}},
         "UTC offset"),
        ({"cqs.DeliverAt": {"DataType": "Number", "StringValue": "99999999999999"}},
         "MessageRetentionPeriod"),
        ({"cqs.DelaySeconds": {"DataType": "Number", "StringValue": "1.5"}}, "whole number"),
        ({"cqs.DelaySeconds": {"DataType": "String", "StringValue": "60"}}, "Number"),
        ({**delay(60), "cqs.DeliverAt": {"DataType": "Number", "StringValue": "1"}}, "not both"),
    ],
    ids=["beyond-retention", "unreadable", "no-offset", "milliseconds", "fraction",
         "string-delay", "both"],
)
def test_a_bad_timer_is_refused_with_invalid_parameter_value(
    sqs: Any, queue_url: str, message_attributes: dict[str, Any], reason: str
) -> None:
    code, status, message = error_of(lambda: sqs.send_message(
        QueueUrl=queue_url, MessageBody="x", MessageAttributes=message_attributes
    ))
    assert (code, status) == ("InvalidParameterValue", 400)
    assert reason in message


def test_plain_delay_seconds_keeps_the_aws_limit(sqs: Any, queue_url: str) -> None:
    code, status, message = error_of(lambda: sqs.send_message(
        QueueUrl=queue_url, MessageBody="x", DelaySeconds=901
    ))
    assert (code, status) == ("InvalidParameterValue", 400)
    assert "900" in message


def test_a_timer_beside_delay_seconds_or_on_a_fifo_queue_is_refused(
    sqs: Any, queue_url: str
) -> None:
    code, status, _ = error_of(lambda: sqs.send_message(
        QueueUrl=queue_url, MessageBody="x", DelaySeconds=5, MessageAttributes=delay(HOUR)
    ))
    assert (code, status) == ("InvalidParameterValue", 400)
    fifo = sqs.create_queue(QueueName=unique_name() + ".fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "true",
    })["QueueUrl"]
    code, status, message = error_of(lambda: sqs.send_message(
        QueueUrl=fifo, MessageBody="x", MessageGroupId="g", MessageAttributes=delay(HOUR)
    ))
    assert (code, status) == ("InvalidParameterValue", 400)
    assert "FIFO" in message


def test_a_time_already_past_is_delivered_at_once(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="overdue", MessageAttributes={
        "cqs.DeliverAt": {"DataType": "String", "StringValue": "2001-01-01T00:00:00Z"},
    })
    assert [m["Body"] for m in receive(sqs, queue_url)] == ["overdue"]
