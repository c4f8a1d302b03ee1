"""Peek and replay on consumer groups (issue 19): a group keeps the messages its own
consumers consume (`cqs.ConsumedRetentionSeconds` on the group, inherited from the queue
at creation), and ReplayMessages with `ConsumerGroup` (or on the group's URL) re-delivers
the group's consumed range into that group only; PeekMessages looks into a group.

The scene (sends, receives, deletes, queue attributes) is set by unmodified boto3 over
each protocol; the extensions go through the package's ExtensionClient, which signs them
as boto3 signs SQS calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cqs.client import ExtensionClient, ExtensionError
from tests.wire.conftest import REGION, error_code, unique_name

RETENTION = "cqs.ConsumedRetentionSeconds"
EU_ONLY = '{"region": [{"prefix": "eu-"}]}'


@pytest.fixture
def cqs(cqs_endpoint: str) -> ExtensionClient:
    return ExtensionClient(cqs_endpoint, REGION, "x", "x")


@pytest.fixture
def make_group(cqs: ExtensionClient) -> Iterator[Callable[..., str]]:
    def make(queue_url: str, name: str, **attributes: str) -> str:
        answer = cqs.call("CreateConsumerGroup", {
            "QueueUrl": queue_url, "GroupName": name, "Attributes": attributes,
        })
        return str(answer["QueueUrl"])

    yield make


def _region(n: int) -> str:
    return "eu-west-1" if n % 2 == 0 else "us-east-1"


def _send(sqs: Any, url: str, label: str, count: int) -> None:
    """`count` messages `<label>-<n>`, every other one from an eu- region."""
    for start in range(0, count, 10):
        answer = sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "MessageBody": f"{label}-{n}", "MessageAttributes": {
                "region": {"DataType": "String", "StringValue": _region(n)}}}
            for n in range(start, min(start + 10, count))
        ])
        assert not answer.get("Failed") and len(answer["Successful"]) == min(10, count - start)


def _receive(sqs: Any, url: str, wanted: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(got) < wanted and time.monotonic() < deadline:
        got.extend(sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=min(10, wanted - len(got)), VisibilityTimeout=300,
            MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
        ).get("Messages", []))
    return got


def _consume(sqs: Any, url: str, wanted: int) -> list[dict[str, Any]]:
    """Receive `wanted` messages (exactly: no more come) and delete them."""
    got = _receive(sqs, url, wanted)
    assert len(got) == wanted and len({m["MessageId"] for m in got}) == wanted
    assert _nothing_more(sqs, url)
    for start in range(0, len(got), 10):
        answer = sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
            for n, m in enumerate(got[start : start + 10])
        ])
        assert not answer.get("Failed"), answer
    return got


def _nothing_more(sqs: Any, url: str) -> bool:
    return sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages") is None


def _bodies(messages: list[dict[str, Any]]) -> list[str]:
    return sorted(m["Body"] for m in messages)


def _all_consumed(cqs: ExtensionClient, url: str, start: float, end: float,
                  group: str | None = None) -> list[dict[str, Any]]:
    kept: list[dict[str, Any]] = []
    token = None
    while True:
        page = cqs.peek_consumed_messages(url, start, end, 100, token, consumer_group=group)
        kept.extend(page.get("Messages", []))
        token = page.get("NextToken")
        if not token:
            return kept


def test_replay_into_a_group_redelivers_exactly_its_consumed_range_and_nowhere_else(
    sqs: Any, make_queue: Callable[..., str], make_group: Callable[..., str],
    cqs: ExtensionClient, advance: Callable[[float], None],
) -> None:
    queue = make_queue(**{RETENTION: "86400"})
    eu = make_group(queue, "eu", FilterPolicy=EU_ONLY)  # keeps: inherits the queue's 86400
    other = make_group(queue, "other")
    assert sqs.get_queue_attributes(QueueUrl=eu, AttributeNames=[RETENTION])["Attributes"] == {
        RETENTION: "86400"}

    during: list[dict[str, Any]] = []
    for label, count in (("before", 100), ("during", 400), ("after", 100)):
        _send(sqs, queue, label, count)
        consumed = _consume(sqs, eu, count // 2)  # the eu half only: the filter at work
        assert all(m["MessageAttributes"]["region"]["StringValue"] == "eu-west-1"
                   for m in consumed)
        _consume(sqs, queue, count)
        _consume(sqs, other, count)
        if label == "during":
            during = consumed
        advance(600)  # the three sets are consumed ten minutes apart
    sent = [int(m["Attributes"]["SentTimestamp"]) for m in during]
    start, end = min(sent) / 1000 - 60, max(sent) / 1000 + 300
    expected = _bodies(during)
    assert len(expected) == 200 and all(body.startswith("during-") for body in expected)

    # What each consumer kept of the range is its own: the group's 200, the queue's 400.
    kept = _all_consumed(cqs, queue, start, end, group="eu")
    assert _bodies(kept) == expected
    assert _bodies(_all_consumed(cqs, eu, start, end)) == expected
    assert len(_all_consumed(cqs, queue, start, end)) == 400

    assert cqs.replay_messages(queue, start, end, consumer_group="eu") == 200
    replayed = _consume(sqs, eu, 200)
    assert _bodies(replayed) == expected
    assert not {m["MessageId"] for m in replayed} & {m["MessageId"] for m in during}
    for message in replayed:
        assert message["Attributes"]["ApproximateReceiveCount"] == "1"
        assert message["MessageAttributes"]["region"]["StringValue"] == "eu-west-1"
    assert _nothing_more(sqs, queue) and _nothing_more(sqs, other)

    # The group's own URL replays the same range (the replayed copies were consumed again
    # just now, after the range, so they are not in it).
    assert cqs.replay_messages(eu, start, end) == 200
    assert _bodies(_consume(sqs, eu, 200)) == expected
    assert _nothing_more(sqs, queue) and _nothing_more(sqs, other)

    # The queue's own replay is untouched by all this: its 400, into the queue, not a group.
    assert cqs.replay_messages(queue, start, end) == 400
    assert len(_consume(sqs, queue, 400)) == 400
    assert _nothing_more(sqs, eu) and _nothing_more(sqs, other)


def test_a_group_keeps_what_it_consumes_by_its_own_attribute(
    sqs: Any, make_queue: Callable[..., str], make_group: Callable[..., str],
    cqs: ExtensionClient,
) -> None:
    queue = make_queue()  # keeps nothing itself
    keeping = make_group(queue, "keeping", **{RETENTION: "3600"})
    plain = make_group(queue, "plain")
    listed = {g["GroupName"]: g["Attributes"]
              for g in cqs.call("ListConsumerGroups", {"QueueUrl": queue})["ConsumerGroups"]}
    assert listed["keeping"][RETENTION] == "3600" and RETENTION not in listed["plain"]

    _send(sqs, queue, "first", 30)
    for url in (queue, keeping, plain):
        _consume(sqs, url, 30)
    now = time.time()
    assert _bodies(_all_consumed(cqs, queue, now - 600, now + 600, group="keeping")) == sorted(
        f"first-{n}" for n in range(30))
    assert _all_consumed(cqs, plain, now - 600, now + 600) == []
    assert _all_consumed(cqs, queue, now - 600, now + 600) == []

    sqs.set_queue_attributes(QueueUrl=plain, Attributes={RETENTION: "3600"})
    assert sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=[RETENTION])[
        "Attributes"] == {RETENTION: "3600"}
    _send(sqs, queue, "second", 20)
    for url in (queue, keeping, plain):
        _consume(sqs, url, 20)
    assert _bodies(_all_consumed(cqs, plain, now - 600, now + 600)) == sorted(
        f"second-{n}" for n in range(20))
    assert _all_consumed(cqs, queue, now - 600, now + 600) == []
    with pytest.raises(ClientError) as refused:
        sqs.set_queue_attributes(QueueUrl=plain, Attributes={RETENTION: "-1"})
    assert error_code(refused.value) == "InvalidAttributeValue"


def test_peek_looks_into_a_group_and_changes_nothing(
    sqs: Any, make_queue: Callable[..., str], make_group: Callable[..., str],
    cqs: ExtensionClient,
) -> None:
    queue = make_queue()
    eu = make_group(queue, "eu", FilterPolicy=EU_ONLY)
    make_group(queue, "other")
    _send(sqs, queue, "m", 150)
    wanted = sorted(f"m-{n}" for n in range(0, 150, 2))
    held = _receive(sqs, eu, 5)  # in flight in the group: not peekable there
    assert len(held) == 5

    by_url = [m for m in cqs.iter_peek(eu, 20)]
    by_name = []
    token = None
    while True:
        page = cqs.peek_messages(queue, 20, token, consumer_group="eu")
        by_name.extend(page.get("Messages", []))
        token = page.get("NextToken")
        if not token:
            break
    for peeked in (by_url, by_name):
        assert _bodies(peeked) == sorted(set(wanted) - {m["Body"] for m in held})
        assert all(m["Attributes"]["ApproximateReceiveCount"] == "0" for m in peeked)
    assert len(list(cqs.iter_peek(queue, 100))) == 150  # the queue's own, all still there

    rest = _receive(sqs, eu, 70)
    assert _bodies(rest + held) == wanted
    assert all(m["Attributes"]["ApproximateReceiveCount"] == "1" for m in rest)


@pytest.mark.parametrize(("group", "code"), [
    ("none-such", "QueueDoesNotExist"),
    ("bad/name", "InvalidParameterValueException"),
    (7, "InvalidParameterValueException"),
])
def test_a_consumer_group_that_is_not_one_is_refused_clearly(
    make_queue: Callable[..., str], make_group: Callable[..., str], cqs: ExtensionClient,
    group: object, code: str,
) -> None:
    queue = make_queue(**{RETENTION: "60"})
    grouped = make_group(queue, "real")
    now = time.time()
    for action, body in (
        ("PeekMessages", {"QueueUrl": queue}),
        ("PeekConsumedMessages", {"QueueUrl": queue, "StartTime": now - 60, "EndTime": now}),
        ("ReplayMessages", {"QueueUrl": queue, "StartTime": now - 60, "EndTime": now}),
    ):
        with pytest.raises(ExtensionError) as refused:
            cqs.call(action, {**body, "ConsumerGroup": group})
        assert (refused.value.status, refused.value.code) == (400, code), refused.value
        # A group has no groups of its own.
        with pytest.raises(ExtensionError) as refused:
            cqs.call(action, {**body, "QueueUrl": grouped, "ConsumerGroup": "real"})
        assert (refused.value.status, refused.value.code) == (400, "InvalidParameterValueException")


def test_a_fifo_queue_has_no_groups_to_peek_or_replay(sqs: Any, cqs: ExtensionClient) -> None:
    fifo = sqs.create_queue(QueueName=unique_name() + ".fifo", Attributes={
        "FifoQueue": "true", RETENTION: "60"})["QueueUrl"]
    try:
        now = time.time()
        with pytest.raises(ExtensionError) as refused:
            cqs.replay_messages(fifo, now - 60, now, consumer_group="g")
        assert (refused.value.status, refused.value.code) == (400, "InvalidParameterValueException")
        assert "standard queues only" in refused.value.message
    finally:
        sqs.delete_queue(QueueUrl=fifo)
