"""The JSON 1.0 answers of every action, read back by botocore's own `json` parser.

Each request is what boto3 would send (botocore's JSON serializer with the SQS model),
decoded by our protocol layer, passed through the action's handler to a canned
`QueueService` (a stand-in for the service, so that no storage is involved), rendered by
`json_codec`, and parsed by botocore with the real SQS output shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

import botocore.parsers
import botocore.serialize
import botocore.session
import pytest
from botocore.model import OperationModel

from cqs.domain import checksums
from cqs.domain.dead_letter_policy import task_handle
from cqs.domain.errors import (
    InvalidMessageContents,
    MessageNotInflight,
    ReceiptHandleIsInvalid,
)
from cqs.domain.model import (
    BatchFailure,
    BatchResult,
    Caller,
    Delivery,
    Message,
    MessageAttributeValue,
    MessageMoveTask,
    MoveTaskStatus,
    QueueIdentity,
    QueueNamespace,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
    SendResult,
)
from cqs.service import QueueService
from cqs.sqs_api.handlers import HANDLERS, ApiCall
from cqs.sqs_api.json_codec import render_json_result
from cqs.sqs_api.protocol import DecodedRequest, decode_json_request

BASE_URL = "http://sqs.test:9324"


class PermitAll:
    """Access control that lets every call through: these tests are about the codecs and the
    handlers' shapes; access control is tested over real storage in
    tests/contract/test_queue_access.py and over the wire in tests/wire/test_cross_account.py."""

    async def authorize(self, caller: object, action: str, queue: object) -> None:
        return None


PERMIT_ALL = PermitAll()
ACCOUNT = "000000000000"
REGION = "us-east-1"
ORDERS = QueueIdentity(ACCOUNT, REGION, "orders")
QUEUE_URL = f"{BASE_URL}/{ACCOUNT}/orders"

_STRING = MessageAttributeValue("String", string_value="red")
_NUMBER = MessageAttributeValue("Number", string_value="7")
_BINARY = MessageAttributeValue("Binary", binary_value=b"\x00\x01\xff")
_TRACE = MessageAttributeValue("String", string_value="Root=1-abc")

_SEND_RESULT = SendResult(
    message_id="5fea7756-0ea4-451a-a703-a558b933e274",
    md5_of_body=checksums.md5_of_body("hello"),
    md5_of_message_attributes="3ae8f24a165a8cedc005670c81a27295",
    md5_of_system_attributes="5ae4d5d7636402d80f4eb6d213245a88",
)

_MESSAGE = Message(
    message_id="0e0bd2a6-7e0d-11ee-b962-0242ac120002",
    body="hello <world> & \"friends\"",
    md5_of_body=checksums.md5_of_body("hello <world> & \"friends\""),
    sent_timestamp_ms=1_700_000_000_000,
    visible_at_ms=1_700_000_000_000,
    sender_id="AIDAEXAMPLE",
    message_attributes={"color": _STRING, "blob": _BINARY, "count": _NUMBER},
)

_RECEIVED = ReceivedMessage(
    delivery=Delivery(_MESSAGE, receive_count=1, first_receive_timestamp_ms=1_700_000_000_500,
                      receipt_nonce="n1"),
    receipt_handle="handle-1",
    attributes={"SentTimestamp": "1700000000000", "ApproximateReceiveCount": "1"},
    message_attributes={"color": _STRING, "blob": _BINARY},
)


class CannedQueueService(QueueService):
    """Answers every action with canned values and records what it was asked."""

    def __init__(
        self,
        received: Sequence[ReceivedMessage] = (_RECEIVED,),
        delete_batch: BatchResult[None] | None = None,
    ) -> None:
        self.calls: list[str] = []
        self.arguments: dict[str, tuple[Any, ...]] = {}
        self._canned_received = list(received)
        self._canned_delete_batch = delete_batch or BatchResult(
            successful=[("a", None)],
            failed=[BatchFailure("b", ReceiptHandleIsInvalid("The receipt handle is stale."))],
        )

    def _record(self, action: str, *arguments: Any) -> None:
        self.calls.append(action)
        self.arguments[action] = arguments

    async def create_queue(self, name, attributes, tags):  # type: ignore[no-untyped-def]
        self._record("CreateQueue", name, attributes, tags)

    async def get_queue_url(self, name):  # type: ignore[no-untyped-def]
        self._record("GetQueueUrl", name)

    async def list_queues(self, namespace, listing):  # type: ignore[no-untyped-def]
        self._record(
            "ListQueues", namespace, listing.prefix, listing.max_results, listing.next_token
        )
        return ["alpha", "beta"], "token-2"

    async def delete_queue(self, name):  # type: ignore[no-untyped-def]
        self._record("DeleteQueue", name)

    async def get_queue_attributes(self, name, names):  # type: ignore[no-untyped-def]
        self._record("GetQueueAttributes", name, names)
        return {"VisibilityTimeout": "30", "DelaySeconds": "0"}

    async def set_queue_attributes(self, name, attributes):  # type: ignore[no-untyped-def]
        self._record("SetQueueAttributes", name, attributes)

    async def purge_queue(self, name):  # type: ignore[no-untyped-def]
        self._record("PurgeQueue", name)

    async def tag_queue(self, name, tags):  # type: ignore[no-untyped-def]
        self._record("TagQueue", name, tags)

    async def untag_queue(self, name, tag_keys):  # type: ignore[no-untyped-def]
        self._record("UntagQueue", name, tag_keys)

    async def list_queue_tags(self, name):  # type: ignore[no-untyped-def]
        self._record("ListQueueTags", name)
        return {"team": "ops"}

    async def send_message(self, name, request):  # type: ignore[no-untyped-def]
        self._record("SendMessage", name, request)
        return _SEND_RESULT

    async def send_message_batch(self, name, entries):  # type: ignore[no-untyped-def]
        self._record("SendMessageBatch", name, tuple(entries))
        return BatchResult(
            successful=[("a", _SEND_RESULT)],
            failed=[BatchFailure("b", InvalidMessageContents("Invalid characters in body."))],
        )

    async def receive_message(self, name, request):  # type: ignore[no-untyped-def]
        self._record("ReceiveMessage", name, request)
        return self._canned_received

    async def delete_message(self, name, receipt_handle):  # type: ignore[no-untyped-def]
        self._record("DeleteMessage", name, receipt_handle)

    async def delete_message_batch(self, name, entries):  # type: ignore[no-untyped-def]
        self._record("DeleteMessageBatch", name, tuple(entries))
        return self._canned_delete_batch

    async def change_message_visibility(  # type: ignore[no-untyped-def]
        self, name, receipt_handle, visibility_timeout
    ):
        self._record("ChangeMessageVisibility", name, receipt_handle, visibility_timeout)

    async def change_message_visibility_batch(self, name, entries):  # type: ignore[no-untyped-def]
        self._record("ChangeMessageVisibilityBatch", name, tuple(entries))
        return BatchResult(
            successful=[("a", None)],
            failed=[BatchFailure("b", MessageNotInflight(""))],
        )


    async def list_dead_letter_source_queues(  # type: ignore[no-untyped-def]
        self, name, max_results, next_token
    ):
        self._record("ListDeadLetterSourceQueues", name, max_results, next_token)
        return ["alpha"], "token-3"

    async def add_permission(  # type: ignore[no-untyped-def]
        self, name, label, account_ids, actions
    ):
        self._record("AddPermission", name, label, tuple(account_ids), tuple(actions))

    async def remove_permission(self, name, label):  # type: ignore[no-untyped-def]
        self._record("RemovePermission", name, label)

    async def start_message_move_task(  # type: ignore[no-untyped-def]
        self, source_arn, destination_arn, max_per_second
    ):
        self._record("StartMessageMoveTask", source_arn, destination_arn, max_per_second)
        return "handle-1"

    async def list_message_move_tasks(self, source_arn, max_results):  # type: ignore[no-untyped-def]
        self._record("ListMessageMoveTasks", source_arn, max_results)
        return [_RUNNING_TASK, _FAILED_TASK]

    async def cancel_message_move_task(self, handle):  # type: ignore[no-untyped-def]
        self._record("CancelMessageMoveTask", handle)
        return 4


_DLQ_ARN = "arn:aws:sqs:us-east-1:000000000000:orders-dlq"
_RUNNING_TASK = MessageMoveTask(
    task_id="t1", source_arn=_DLQ_ARN, destination_arn="arn:aws:sqs:us-east-1:000000000000:x",
    max_per_second=5, status=MoveTaskStatus.RUNNING, started_ms=1_700_000_000_000, moved=2,
    to_move=9,
)
_FAILED_TASK = MessageMoveTask(
    task_id="t0", source_arn=_DLQ_ARN, destination_arn=None, max_per_second=None,
    status=MoveTaskStatus.FAILED, started_ms=1_600_000_000_000, moved=1, to_move=3,
    failure_reason="CouldNotDetermineMessageSource",
)


def request_params(action: str) -> dict[str, Any]:
    """The boto3 parameters each action is exercised with."""
    send_attributes = {
        "color": {"DataType": "String", "StringValue": "red"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
        "count": {"DataType": "Number", "StringValue": "7"},
    }
    queue = {"QueueUrl": QUEUE_URL}
    params: dict[str, dict[str, Any]] = {
        "CreateQueue": {
            "QueueName": "orders",
            "Attributes": {"VisibilityTimeout": "60", "DelaySeconds": "5"},
            "tags": {"team": "ops"},
        },
        "GetQueueUrl": {"QueueName": "orders"},
        "ListQueues": {"QueueNamePrefix": "a", "MaxResults": 2, "NextToken": "token-1"},
        "DeleteQueue": queue,
        "PurgeQueue": queue,
        "ListQueueTags": queue,
        "GetQueueAttributes": {**queue, "AttributeNames": ["VisibilityTimeout", "DelaySeconds"]},
        "SetQueueAttributes": {**queue, "Attributes": {"VisibilityTimeout": "45"}},
        "TagQueue": {**queue, "Tags": {"team": "ops", "env": "test"}},
        "UntagQueue": {**queue, "TagKeys": ["env"]},
        "SendMessage": {
            **queue,
            "MessageBody": "hello",
            "DelaySeconds": 3,
            "MessageAttributes": send_attributes,
            "MessageSystemAttributes": {
                "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}
            },
        },
        "SendMessageBatch": {
            **queue,
            "Entries": [
                {"Id": "a", "MessageBody": "one", "MessageAttributes": send_attributes},
                {"Id": "b", "MessageBody": "two", "DelaySeconds": 2},
            ],
        },
        "ReceiveMessage": {
            **queue,
            "MaxNumberOfMessages": 5,
            "VisibilityTimeout": 40,
            "WaitTimeSeconds": 2,
            "AttributeNames": ["SentTimestamp"],
            "MessageAttributeNames": ["All"],
            "ReceiveRequestAttemptId": "try-1",
        },
        "DeleteMessage": {**queue, "ReceiptHandle": "rh-1"},
        "DeleteMessageBatch": {
            **queue,
            "Entries": [{"Id": "a", "ReceiptHandle": "rh-a"}, {"Id": "b", "ReceiptHandle": "rh-b"}],
        },
        "ChangeMessageVisibility": {**queue, "ReceiptHandle": "rh-1", "VisibilityTimeout": 60},
        "ChangeMessageVisibilityBatch": {
            **queue,
            "Entries": [
                {"Id": "a", "ReceiptHandle": "rh-a", "VisibilityTimeout": 10},
                {"Id": "b", "ReceiptHandle": "rh-b", "VisibilityTimeout": 20},
            ],
        },
        "ListDeadLetterSourceQueues": {**queue, "MaxResults": 1, "NextToken": "token-2"},
        "AddPermission": {
            **queue, "Label": "l1", "AWSAccountIds": ["111122223333", "444455556666"],
            "Actions": ["SendMessage", "ReceiveMessage"],
        },
        "RemovePermission": {**queue, "Label": "l1"},
        "StartMessageMoveTask": {
            "SourceArn": _DLQ_ARN, "DestinationArn": "arn:aws:sqs:us-east-1:000000000000:x",
            "MaxNumberOfMessagesPerSecond": 5,
        },
        "ListMessageMoveTasks": {"SourceArn": _DLQ_ARN, "MaxResults": 10},
        "CancelMessageMoveTask": {"TaskHandle": "handle-1"},
    }
    return params[action]


def expected_arguments(action: str) -> tuple[Any, ...]:
    """What the service must be called with for `request_params(action)`."""
    attributes = {"color": _STRING, "blob": _BINARY, "count": _NUMBER}
    return {
        "CreateQueue": (ORDERS, {"VisibilityTimeout": "60", "DelaySeconds": "5"},
                        {"team": "ops"}),
        "GetQueueUrl": (ORDERS,),
        "ListQueues": (QueueNamespace(ACCOUNT, REGION), "a", 2, "token-1"),
        "DeleteQueue": (ORDERS,),
        "PurgeQueue": (ORDERS,),
        "ListQueueTags": (ORDERS,),
        "GetQueueAttributes": (ORDERS, ("VisibilityTimeout", "DelaySeconds")),
        "SetQueueAttributes": (ORDERS, {"VisibilityTimeout": "45"}),
        "TagQueue": (ORDERS, {"team": "ops", "env": "test"}),
        "UntagQueue": (ORDERS, ("env",)),
        "SendMessage": (
            ORDERS,
            SendRequest(
                body="hello",
                delay_seconds=3,
                message_attributes=attributes,
                system_attributes={"AWSTraceHeader": _TRACE},
            ),
        ),
        "SendMessageBatch": (
            ORDERS,
            (
                ("a", SendRequest(body="one", message_attributes=attributes)),
                ("b", SendRequest(body="two", delay_seconds=2)),
            ),
        ),
        "ReceiveMessage": (
            ORDERS,
            ReceiveRequest(
                max_number_of_messages=5,
                visibility_timeout=40,
                wait_time_seconds=2,
                system_attribute_names=("SentTimestamp",),
                message_attribute_names=("All",),
                receive_request_attempt_id="try-1",
            ),
        ),
        "DeleteMessage": (ORDERS, "rh-1"),
        "DeleteMessageBatch": (ORDERS, (("a", "rh-a"), ("b", "rh-b"))),
        "ChangeMessageVisibility": (ORDERS, "rh-1", 60),
        "ChangeMessageVisibilityBatch": (ORDERS, (("a", "rh-a", 10), ("b", "rh-b", 20))),
        "ListDeadLetterSourceQueues": (ORDERS, 1, "token-2"),
        "AddPermission": (ORDERS, "l1", ("111122223333", "444455556666"),
                          ("SendMessage", "ReceiveMessage")),
        "RemovePermission": (ORDERS, "l1"),
        "StartMessageMoveTask": (_DLQ_ARN, "arn:aws:sqs:us-east-1:000000000000:x", 5),
        "ListMessageMoveTasks": (_DLQ_ARN, 10),
        "CancelMessageMoveTask": ("handle-1",),
    }[action]


def expected_output(action: str) -> dict[str, Any]:
    """What a client must read from the answer to `request_params(action)`."""
    send_result = {
        "MD5OfMessageBody": _SEND_RESULT.md5_of_body,
        "MD5OfMessageAttributes": _SEND_RESULT.md5_of_message_attributes,
        "MD5OfMessageSystemAttributes": _SEND_RESULT.md5_of_system_attributes,
        "MessageId": _SEND_RESULT.message_id,
    }
    outputs: dict[str, dict[str, Any]] = {
        "CreateQueue": {"QueueUrl": QUEUE_URL},
        "GetQueueUrl": {"QueueUrl": QUEUE_URL},
        "ListQueues": {
            "QueueUrls": [f"{BASE_URL}/{ACCOUNT}/alpha", f"{BASE_URL}/{ACCOUNT}/beta"],
            "NextToken": "token-2",
        },
        "DeleteQueue": {},
        "PurgeQueue": {},
        "ListQueueTags": {"Tags": {"team": "ops"}},
        "GetQueueAttributes": {"Attributes": {"VisibilityTimeout": "30", "DelaySeconds": "0"}},
        "SetQueueAttributes": {},
        "TagQueue": {},
        "UntagQueue": {},
        "SendMessage": send_result,
        "SendMessageBatch": {
            "Successful": [{"Id": "a", **send_result}],
            "Failed": [{"Id": "b", "SenderFault": True, "Code": "InvalidMessageContents",
                        "Message": "Invalid characters in body."}],
        },
        "ReceiveMessage": {
            "Messages": [
                {
                    "MessageId": _MESSAGE.message_id,
                    "ReceiptHandle": "handle-1",
                    "MD5OfBody": _MESSAGE.md5_of_body,
                    "Body": _MESSAGE.body,
                    "Attributes": {"SentTimestamp": "1700000000000",
                                   "ApproximateReceiveCount": "1"},
                    "MD5OfMessageAttributes": checksums.md5_of_message_attributes(
                        {"color": _STRING, "blob": _BINARY}
                    ),
                    "MessageAttributes": {
                        "color": {"DataType": "String", "StringValue": "red"},
                        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
                    },
                }
            ]
        },
        "DeleteMessage": {},
        "DeleteMessageBatch": {
            "Successful": [{"Id": "a"}],
            "Failed": [{"Id": "b", "SenderFault": True, "Code": "ReceiptHandleIsInvalid",
                        "Message": "The receipt handle is stale."}],
        },
        "ChangeMessageVisibility": {},
        "ListDeadLetterSourceQueues": {
            "queueUrls": [f"{BASE_URL}/{ACCOUNT}/alpha"], "NextToken": "token-3",
        },
        "AddPermission": {},
        "RemovePermission": {},
        "StartMessageMoveTask": {"TaskHandle": "handle-1"},
        "ListMessageMoveTasks": {
            "Results": [
                {
                    "TaskHandle": task_handle(_RUNNING_TASK),
                    "Status": "RUNNING",
                    "SourceArn": _DLQ_ARN,
                    "DestinationArn": "arn:aws:sqs:us-east-1:000000000000:x",
                    "MaxNumberOfMessagesPerSecond": 5,
                    "ApproximateNumberOfMessagesMoved": 2,
                    "ApproximateNumberOfMessagesToMove": 9,
                    "StartedTimestamp": 1_700_000_000_000,
                },
                {
                    "Status": "FAILED",
                    "SourceArn": _DLQ_ARN,
                    "ApproximateNumberOfMessagesMoved": 1,
                    "ApproximateNumberOfMessagesToMove": 3,
                    "FailureReason": "CouldNotDetermineMessageSource",
                    "StartedTimestamp": 1_600_000_000_000,
                },
            ]
        },
        "CancelMessageMoveTask": {"ApproximateNumberOfMessagesMoved": 4},
        "ChangeMessageVisibilityBatch": {
            "Successful": [{"Id": "a"}],
            "Failed": [{"Id": "b", "SenderFault": True,
                        "Code": "AWS.SimpleQueueService.MessageNotInflight",
                        "Message": "The message referred to isn't in flight."}],
        },
    }
    return outputs[action]


@cache
def _json_operation(action: str) -> OperationModel:
    return botocore.session.get_session().get_service_model("sqs").operation_model(action)


def botocore_json_request(action: str, params: dict[str, Any]) -> DecodedRequest:
    """What boto3 would post for `action`, decoded by our protocol layer."""
    serialized = botocore.serialize.create_serializer("json").serialize_to_request(
        params, _json_operation(action)
    )
    return decode_json_request(serialized["headers"]["X-Amz-Target"], serialized["body"])


def parse_json_response(
    action: str, body: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    parsed: dict[str, Any] = botocore.parsers.create_parser("json").parse(
        {"body": body, "headers": headers or {}, "status_code": status},
        _json_operation(action).output_shape,
    )
    parsed.pop("ResponseMetadata", None)
    return parsed


# --- every action, end to end through botocore's JSON serializer and parser ----------------

@pytest.mark.parametrize("action", sorted(HANDLERS))
async def test_every_action_answers_json_that_botocore_reads_as_the_expected_output(
    action: str,
) -> None:
    service = CannedQueueService()
    call = ApiCall(botocore_json_request(action, request_params(action)), BASE_URL,
                   Caller(ACCOUNT, REGION), PERMIT_ALL)

    body = render_json_result(await HANDLERS[action](service, call))

    assert parse_json_response(action, body) == expected_output(action)


@pytest.mark.parametrize("action", sorted(HANDLERS))
async def test_every_action_calls_the_service_once_with_what_boto3_sent(action: str) -> None:
    service = CannedQueueService()
    call = ApiCall(botocore_json_request(action, request_params(action)), BASE_URL,
                   Caller(ACCOUNT, REGION), PERMIT_ALL)

    await HANDLERS[action](service, call)

    assert service.calls == [action]
    assert service.arguments[action] == expected_arguments(action)


async def test_a_receive_with_no_messages_answers_an_empty_object_as_aws_does() -> None:
    service = CannedQueueService(received=[])
    call = ApiCall(botocore_json_request("ReceiveMessage", {"QueueUrl": QUEUE_URL}),
                   BASE_URL, Caller(ACCOUNT, REGION), PERMIT_ALL)

    body = render_json_result(await HANDLERS["ReceiveMessage"](service, call))

    assert body == b"{}"


def test_actions_without_output_and_empty_lists_answer_an_empty_object() -> None:
    assert render_json_result(None) == b"{}"
    assert render_json_result({"QueueUrls": None, "NextToken": None}) == b"{}"


def test_binary_values_are_base64_and_text_stays_unescaped_utf8() -> None:
    body = render_json_result({"Body": "héllo ✓", "BinaryValue": b"\xff\x00"})

    assert json.loads(body) == {"Body": "héllo ✓", "BinaryValue": "/wA="}
    assert "héllo ✓".encode() in body


def test_a_lone_surrogate_is_escaped_instead_of_failing_the_response() -> None:
    body = render_json_result({"Message": "bad \ud800 input"})

    assert json.loads(body) == {"Message": "bad \ud800 input"}


def test_batch_results_keep_their_required_empty_lists() -> None:
    body = render_json_result({"Successful": [{"Id": "a"}], "Failed": []})

    assert json.loads(body) == {"Successful": [{"Id": "a"}], "Failed": []}
