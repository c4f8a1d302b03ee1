"""Every enum of the SQS model, value by value, over JSON and the query protocol: each value
is accepted where the model puts it, and a value outside the enum is refused with SQS's code.

The enums and where they are used come from the installed botocore's model:
QueueAttributeName (GetQueueAttributes' AttributeNames; the keys of CreateQueue's and
SetQueueAttributes' Attributes), MessageSystemAttributeName (ReceiveMessage's
MessageSystemAttributeNames) and MessageSystemAttributeNameForSends (the keys of a message's
MessageSystemAttributes). ReceiveMessage's deprecated AttributeNames is typed
QueueAttributeName in the model, a known error of the model (aws/aws-sdk issue 56): SQS takes
message system attribute names there, so it is checked with those.
Of the queue attributes only some can be set; the rest (All and the read-only counts,
timestamps and ARN) are refused as attribute names on create, as SQS does.
"""

from __future__ import annotations

import json

import pytest

from tests.wire.model.baselines import TRACE_HEADER
from tests.wire.model.wire import PROTOCOLS, Scene, send, service_model, unique

UNKNOWN = "NoSuchName"
QUEUE_ATTRIBUTE_NAMES = service_model("json").shape_for("QueueAttributeName").enum
MESSAGE_SYSTEM_ATTRIBUTE_NAMES = service_model("json").shape_for("MessageSystemAttributeName").enum
SEND_SYSTEM_ATTRIBUTE_NAMES = (
    service_model("json").shape_for("MessageSystemAttributeNameForSends").enum
)

# A valid value for each attribute that can be set on a FIFO queue at creation.
_POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"AWS": "111122223333"}, "Action": "sqs:SendMessage",
    "Resource": "*"}]})
SETTABLE = {
    "Policy": _POLICY,
    "VisibilityTimeout": "45",
    "MaximumMessageSize": "2048",
    "MessageRetentionPeriod": "3600",
    "DelaySeconds": "2",
    "ReceiveMessageWaitTimeSeconds": "1",
    "RedrivePolicy": "",  # filled with a dead-letter queue's ARN by the test
    "FifoQueue": "true",
    "ContentBasedDeduplication": "true",
    "KmsMasterKeyId": "alias/aws/sqs",
    "KmsDataKeyReusePeriodSeconds": "600",
    "DeduplicationScope": "messageGroup",
    "FifoThroughputLimit": "perQueue",  # perMessageGroupId needs DeduplicationScope too
    "RedriveAllowPolicy": json.dumps({"redrivePermission": "allowAll"}),
    "SqsManagedSseEnabled": "true",
}
READ_ONLY = [name for name in QUEUE_ATTRIBUTE_NAMES if name not in SETTABLE]


def test_every_queue_attribute_name_is_settable_or_read_only_here() -> None:
    assert set(SETTABLE) <= set(QUEUE_ATTRIBUTE_NAMES)
    assert set(READ_ONLY) == {
        "All", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
        "CreatedTimestamp", "LastModifiedTimestamp", "QueueArn",
        "ApproximateNumberOfMessagesDelayed",
    }


@pytest.mark.parametrize("wire", PROTOCOLS)
@pytest.mark.parametrize("name", [*QUEUE_ATTRIBUTE_NAMES, UNKNOWN])
def test_get_queue_attributes_takes_each_queue_attribute_name(
    scene: Scene, wire: str, name: str
) -> None:
    answer = send(scene.endpoint, wire, "GetQueueAttributes",
                  {"QueueUrl": scene.queue_url, "AttributeNames": [name]})

    if name == UNKNOWN:
        assert (answer.status, answer.code) == (400, "InvalidAttributeName"), str(answer)
    else:
        assert answer.status == 200, str(answer)


@pytest.mark.parametrize("wire", PROTOCOLS)
@pytest.mark.parametrize("name", [*QUEUE_ATTRIBUTE_NAMES, UNKNOWN])
def test_create_queue_takes_each_settable_attribute_and_refuses_the_rest(
    scene: Scene, wire: str, name: str
) -> None:
    attributes = {"FifoQueue": "true"}
    if name in SETTABLE:
        value = SETTABLE[name]
        if name == "RedrivePolicy":
            value = json.dumps({"deadLetterTargetArn": scene.arn_of(
                scene.fresh_queue_named(unique() + ".fifo", FifoQueue="true")),
                "maxReceiveCount": 3})
        attributes[name] = value
    else:
        attributes[name] = "1"
    answer = send(scene.endpoint, wire, "CreateQueue",
                  {"QueueName": unique() + ".fifo", "Attributes": attributes})

    if name in SETTABLE:
        assert answer.status == 200, str(answer)
    else:
        assert (answer.status, answer.code) == (400, "InvalidAttributeName"), str(answer)


@pytest.mark.parametrize("wire", PROTOCOLS)
@pytest.mark.parametrize("member", ["MessageSystemAttributeNames", "AttributeNames"])
@pytest.mark.parametrize("name", [*MESSAGE_SYSTEM_ATTRIBUTE_NAMES, UNKNOWN])
def test_receive_message_takes_each_message_system_attribute_name(
    scene: Scene, wire: str, member: str, name: str
) -> None:
    """A name outside the enum selects nothing and is not refused: LocalStack's test recorded
    against SQS, and moto, answer so (docs/compatibility.md, attribute selection)."""
    answer = send(scene.endpoint, wire, "ReceiveMessage",
                  {"QueueUrl": scene.queue_url, member: [name]})

    assert answer.status == 200, str(answer)


@pytest.mark.parametrize("wire", PROTOCOLS)
@pytest.mark.parametrize("name", [*SEND_SYSTEM_ATTRIBUTE_NAMES, UNKNOWN])
def test_send_message_takes_each_message_system_attribute_for_sends(
    scene: Scene, wire: str, name: str
) -> None:
    answer = send(scene.endpoint, wire, "SendMessage", {
        "QueueUrl": scene.queue_url, "MessageBody": "hello",
        "MessageSystemAttributes": {name: {"DataType": "String", "StringValue": TRACE_HEADER}},
    })

    if name == UNKNOWN:
        assert (answer.status, answer.code) == (400, "InvalidParameterValue"), str(answer)
    else:
        assert answer.status == 200, str(answer)
