"""Differential tests: the same scripted scenarios against moto (its in-process `mock_aws`)
and against cqs, through unmodified boto3, comparing normalized answers and error codes.

Every step whose answers differ on purpose is listed in `INTENTIONAL_DIFFERENCES`, with
what each side answers; docs/compatibility.md explains them. A difference not listed fails
the test, and so does a listed one that disappeared (the list must stay true).

JSON only: the comparison is between two servers, not two protocols, so both sides are
driven by the same boto3 JSON 1.0 client (`cqs_sqs`, `moto_sqs`) and run once; the other
wire tests cover the query protocol.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from moto import mock_aws

from tests.wire.conftest import REGION, unique_name

Transcript = dict[str, Any]
Scenario = Callable[[Any, str], Transcript]

_ARN = re.compile(r"arn:aws:sqs:[^:]+:\d+:([\w.-]+)")
_URL = re.compile(r"https?://[^\s\"]+/\d+/([\w.-]+)")
_ACCOUNT_ROOT = re.compile(r"arn:aws:iam::\d+:root")


def normalize(value: Any, prefix: str) -> Any:
    """Queue URLs and ARNs become `<queue:name>` (the unique prefix removed), so that
    answers from two endpoints and accounts compare equal."""
    if isinstance(value, str):
        value = _ARN.sub(lambda m: f"<arn:{m.group(1).removeprefix(prefix)}>", value)
        value = _URL.sub(lambda m: f"<url:{m.group(1).removeprefix(prefix)}>", value)
        return value
    if isinstance(value, dict):
        return {k: normalize(v, prefix) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, list):
        return [normalize(v, prefix) for v in value]
    return value


def outcome(call: Callable[[], Any]) -> Any:
    """The answer of one call, or `error:<code>`."""
    try:
        return call()
    except ClientError as error:
        return f"error:{error.response['Error']['Code']}"


def attributes(sqs: Any, url: str, *names: str) -> dict[str, str]:
    return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))
                .get("Attributes", {}))


# --- scenarios -------------------------------------------------------------------------------


def queue_lifecycle(sqs: Any, prefix: str) -> Transcript:
    url = sqs.create_queue(
        QueueName=f"{prefix}life", Attributes={"VisibilityTimeout": "40", "DelaySeconds": "2"}
    )["QueueUrl"]
    steps: Transcript = {
        "get_url": sqs.get_queue_url(QueueName=f"{prefix}life")["QueueUrl"],
        "attributes": attributes(sqs, url, "VisibilityTimeout", "DelaySeconds", "QueueArn"),
        "same_again": sqs.create_queue(
            QueueName=f"{prefix}life", Attributes={"VisibilityTimeout": "40"}
        )["QueueUrl"],
        "different_again": outcome(lambda: sqs.create_queue(
            QueueName=f"{prefix}life", Attributes={"VisibilityTimeout": "41"})),
        "listed": sqs.list_queues(QueueNamePrefix=f"{prefix}life")["QueueUrls"],
    }
    sqs.delete_queue(QueueUrl=url)
    steps["after_delete"] = outcome(lambda: sqs.get_queue_url(QueueName=f"{prefix}life"))
    steps["bad_attribute"] = outcome(lambda: sqs.create_queue(
        QueueName=f"{prefix}bad", Attributes={"VisibilityTimeout": "99999"}))
    return steps


def dead_letter_queue(sqs: Any, prefix: str) -> Transcript:
    dlq = sqs.create_queue(QueueName=f"{prefix}dlq")["QueueUrl"]
    dlq_arn = attributes(sqs, dlq, "QueueArn")["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})
    source = sqs.create_queue(
        QueueName=f"{prefix}src", Attributes={"RedrivePolicy": policy}
    )["QueueUrl"]
    sent = sqs.send_message(QueueUrl=source, MessageBody="poison",
                            MessageAttributes={"k": {"DataType": "String", "StringValue": "v"}})
    receives = [
        len(sqs.receive_message(QueueUrl=source, VisibilityTimeout=0).get("Messages", []))
        for _ in range(3)
    ]
    moved = sqs.receive_message(QueueUrl=dlq, MessageAttributeNames=["All"])["Messages"][0]
    return {
        "receives": receives,
        "moved_same_id": moved["MessageId"] == sent["MessageId"],
        "moved_body": moved["Body"],
        "moved_attributes": moved["MessageAttributes"],
        "policy": json.loads(attributes(sqs, source, "RedrivePolicy")["RedrivePolicy"]),
        "sources": sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"],
        "missing_target": outcome(lambda: sqs.create_queue(
            QueueName=f"{prefix}orphan",
            Attributes={"RedrivePolicy": json.dumps({
                "deadLetterTargetArn": dlq_arn + "-missing", "maxReceiveCount": 2})})),
    }


def permissions(sqs: Any, prefix: str) -> Transcript:
    url = sqs.create_queue(QueueName=f"{prefix}perm")["QueueUrl"]
    sqs.add_permission(QueueUrl=url, Label="a", AWSAccountIds=["111122223333"],
                       Actions=["SendMessage"])
    sqs.add_permission(QueueUrl=url, Label="b", AWSAccountIds=["111122223333", "444455556666"],
                       Actions=["ReceiveMessage", "DeleteMessage"])
    policy = json.loads(attributes(sqs, url, "Policy")["Policy"])
    steps: Transcript = {
        "statements": policy["Statement"],
        "policy_id": policy["Id"],
        "duplicate": outcome(lambda: sqs.add_permission(
            QueueUrl=url, Label="a", AWSAccountIds=["1"], Actions=["SendMessage"])),
        "bad_action": outcome(lambda: sqs.add_permission(
            QueueUrl=url, Label="c", AWSAccountIds=["1"], Actions=["CreateQueue"])),
        "too_many": outcome(lambda: sqs.add_permission(
            QueueUrl=url, Label="d", AWSAccountIds=["1"], Actions=["SendMessage"] * 8)),
        "unknown_label": outcome(lambda: sqs.remove_permission(QueueUrl=url, Label="zzz")),
    }
    sqs.remove_permission(QueueUrl=url, Label="a")
    sqs.remove_permission(QueueUrl=url, Label="b")
    steps["after_removing_all"] = attributes(sqs, url, "Policy")
    return steps


def purge_and_tags(sqs: Any, prefix: str) -> Transcript:
    url = sqs.create_queue(QueueName=f"{prefix}purge", tags={"team": "a"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="x")
    sqs.purge_queue(QueueUrl=url)
    steps: Transcript = {
        "after_purge": attributes(sqs, url, "ApproximateNumberOfMessages"),
        "second_purge": outcome(lambda: sqs.purge_queue(QueueUrl=url)),
    }
    sqs.tag_queue(QueueUrl=url, Tags={"env": "test"})
    sqs.untag_queue(QueueUrl=url, TagKeys=["team"])
    steps["tags"] = sqs.list_queue_tags(QueueUrl=url)["Tags"]
    return steps


def messages_and_batches(sqs: Any, prefix: str) -> Transcript:
    url = sqs.create_queue(QueueName=f"{prefix}msg")["QueueUrl"]
    batch = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "a", "MessageBody": "one"}, {"Id": "b", "MessageBody": "two"}])
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    handles = [m["ReceiptHandle"] for m in received["Messages"]]
    deleted = sqs.delete_message_batch(QueueUrl=url, Entries=[
        {"Id": f"e{n}", "ReceiptHandle": h} for n, h in enumerate(handles)])
    return {
        "sent": sorted(e["Id"] for e in batch["Successful"]),
        "bodies": sorted(m["Body"] for m in received["Messages"]),
        "deleted": sorted(e["Id"] for e in deleted["Successful"]),
        "empty_batch": outcome(lambda: sqs.send_message_batch(QueueUrl=url, Entries=[])),
        "duplicate_ids": outcome(lambda: sqs.send_message_batch(QueueUrl=url, Entries=[
            {"Id": "x", "MessageBody": "1"}, {"Id": "x", "MessageBody": "2"}])),
        "bad_receive": outcome(lambda: sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=11)),
    }


def fifo_queues(sqs: Any, prefix: str) -> Transcript:
    url = sqs.create_queue(
        QueueName=f"{prefix}order.fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    sent = [
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group,
                         MessageDeduplicationId=f"d-{body}")
        for body, group in (("a1", "A"), ("a2", "A"), ("b1", "B"))
    ]
    duplicate = sqs.send_message(QueueUrl=url, MessageBody="a1 again", MessageGroupId="A",
                                 MessageDeduplicationId="d-a1")
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1,
                                MessageSystemAttributeNames=["All"])["Messages"]
    locked = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    # Twelve sends, so that random numbers (moto's) come out in order only once in 479 million.
    numbered_url = sqs.create_queue(
        QueueName=f"{prefix}numbered.fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    numbers = [
        int(sqs.send_message(QueueUrl=numbered_url, MessageBody=f"n{n}", MessageGroupId="N",
                             MessageDeduplicationId=f"n{n}")["SequenceNumber"])
        for n in range(12)
    ]
    return {
        "attributes": attributes(sqs, url, "FifoQueue", "ContentBasedDeduplication"),
        "sequence_numbers_grow": numbers == sorted(set(numbers)),
        "duplicate_is_the_original": duplicate["MessageId"] == sent[0]["MessageId"],
        "first": [m["Body"] for m in first],
        "first_group": first[0]["Attributes"]["MessageGroupId"],
        "first_deduplication_id": first[0]["Attributes"]["MessageDeduplicationId"],
        "other_groups_while_locked": [m["Body"] for m in locked],
        "missing_group": outcome(lambda: sqs.send_message(
            QueueUrl=url, MessageBody="x", MessageDeduplicationId="x")),
        "missing_deduplication_id": outcome(lambda: sqs.send_message(
            QueueUrl=url, MessageBody="x", MessageGroupId="A")),
        "message_delay": outcome(lambda: sqs.send_message(
            QueueUrl=url, MessageBody="x", MessageGroupId="A", MessageDeduplicationId="y",
            DelaySeconds=3)),
        "name_without_suffix": outcome(lambda: sqs.create_queue(
            QueueName=f"{prefix}plain", Attributes={"FifoQueue": "true"})),
    }


SCENARIOS: dict[str, Scenario] = {
    "fifo_queues": fifo_queues,
    "queue_lifecycle": queue_lifecycle,
    "dead_letter_queue": dead_letter_queue,
    "permissions": permissions,
    "purge_and_tags": purge_and_tags,
    "messages_and_batches": messages_and_batches,
}

# (scenario, step) -> (what cqs answers, what moto answers). See docs/compatibility.md.
INTENTIONAL_DIFFERENCES: dict[tuple[str, str], tuple[Any, Any]] = {
    # AWS answers a duplicate FIFO send (same deduplication id within five minutes) with the
    # original message's MessageId; moto gives the duplicate a new id (and drops it).
    ("fifo_queues", "duplicate_is_the_original"): (True, False),
    # AWS's SequenceNumber grows with every send to the queue; moto's are random digits.
    ("fifo_queues", "sequence_numbers_grow"): (True, False),
    # AWS refuses a RedrivePolicy whose target does not exist with InvalidParameterValue;
    # moto answers NonExistentQueue.
    ("dead_letter_queue", "missing_target"): (
        "error:InvalidParameterValue", "error:AWS.SimpleQueueService.NonExistentQueue"
    ),
    # AWS checks attribute ranges (VisibilityTimeout at most 43200); moto creates the queue.
    ("queue_lifecycle", "bad_attribute"): (
        "error:InvalidAttributeValue", {"QueueUrl": "<url:bad>"}
    ),
}


@pytest.fixture(scope="module")
def moto_sqs() -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION, aws_access_key_id="x",
                           aws_secret_access_key="x")


@pytest.fixture
def cqs_sqs(cqs_endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=cqs_endpoint, region_name=REGION, aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(retries={"total_max_attempts": 1}),
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_cqs_and_moto_answer_the_same_scenario_alike(
    scenario: str, cqs_sqs: Any, moto_sqs: Any
) -> None:
    prefix = unique_name("d") + "-"
    ours = normalize(SCENARIOS[scenario](cqs_sqs, prefix), prefix)
    theirs = normalize(SCENARIOS[scenario](moto_sqs, prefix), prefix)

    for step in sorted(set(ours) | set(theirs)):
        expected = INTENTIONAL_DIFFERENCES.get((scenario, step))
        if expected is None:
            assert ours.get(step) == theirs.get(step), f"{scenario}/{step} differs"
        else:
            assert (ours.get(step), theirs.get(step)) == expected, f"{scenario}/{step}"


def test_every_documented_difference_names_a_real_scenario_step() -> None:
    for scenario, _step in INTENTIONAL_DIFFERENCES:
        assert scenario in SCENARIOS
