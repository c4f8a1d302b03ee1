"""The query protocol as older SDKs and curl users speak it: every action, every way to send it.

Owns the query-protocol specifics of the wire suite: form POST to `/` with QueueUrl, form
POST to the queue's own path without it, GET with a query string; the response namespace,
`ResponseMetadata/RequestId` and the XML shape of each result. Must not import cqs.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
import urllib3

from .conftest import (
    ACCOUNT_ID,
    SQS_NAMESPACE,
    QueryClient,
    QueryReply,
    md5_hex,
    md5_of_message_attributes,
    namespace_of,
    parse_message_attributes,
    queue_path,
    unique_name,
)


@dataclass
class Scene:
    """A queue made with boto3 for one query-protocol action to act on."""

    sqs: Any
    name: str
    url: str

    def received_handle(self) -> str:
        self.sqs.send_message(QueueUrl=self.url, MessageBody=f"handle {uuid.uuid4()}")
        messages = self.sqs.receive_message(QueueUrl=self.url, WaitTimeSeconds=2)["Messages"]
        return str(messages[0]["ReceiptHandle"])

    def attributes(self) -> dict[str, str]:
        return dict(
            self.sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["All"])["Attributes"]
        )


ParamsOf = Callable[[Scene], dict[str, str]]
Check = Callable[[QueryReply, Scene], None]


def _no_check(reply: QueryReply, scene: Scene) -> None:
    pass


def _check_attributes(reply: QueryReply, scene: Scene) -> None:
    names = reply.texts("GetQueueAttributesResult/Attribute/Name")
    values = reply.texts("GetQueueAttributesResult/Attribute/Value")
    attributes = dict(zip(names, values, strict=True))
    assert attributes["QueueArn"] == f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{scene.name}"
    assert attributes["VisibilityTimeout"] == "30"


def _check_set_attributes(reply: QueryReply, scene: Scene) -> None:
    assert scene.attributes()["VisibilityTimeout"] == "45"


def _check_tagged(reply: QueryReply, scene: Scene) -> None:
    assert scene.sqs.list_queue_tags(QueueUrl=scene.url)["Tags"] == {"team": "blue"}


def _tag_first(scene: Scene) -> dict[str, str]:
    scene.sqs.tag_queue(QueueUrl=scene.url, Tags={"team": "blue", "env": "ci"})
    return {"TagKey.1": "env"}


def _list_tags_params(scene: Scene) -> dict[str, str]:
    scene.sqs.tag_queue(QueueUrl=scene.url, Tags={"team": "blue"})
    return {}


def _check_listed_tags(reply: QueryReply, scene: Scene) -> None:
    keys = reply.texts("ListQueueTagsResult/Tag/Key")
    values = reply.texts("ListQueueTagsResult/Tag/Value")
    assert dict(zip(keys, values, strict=True)) == {"team": "blue"}


def _check_sent(reply: QueryReply, scene: Scene) -> None:
    assert reply.text("SendMessageResult/MessageId")
    assert reply.text("SendMessageResult/MD5OfMessageBody") == md5_hex("via query")
    assert scene.attributes()["ApproximateNumberOfMessages"] == "1"


def _check_batch_sent(reply: QueryReply, scene: Scene) -> None:
    entries = reply.findall("SendMessageBatchResult/SendMessageBatchResultEntry")
    assert sorted(e.findtext("{*}Id", "") for e in entries) == ["a", "b"]
    assert all(e.findtext("{*}MessageId") for e in entries)
    assert scene.attributes()["ApproximateNumberOfMessages"] == "2"


def _send_first(scene: Scene) -> dict[str, str]:
    scene.sqs.send_message(QueueUrl=scene.url, MessageBody="to receive")
    return {"WaitTimeSeconds": "2"}


def _check_received(reply: QueryReply, scene: Scene) -> None:
    assert reply.texts("ReceiveMessageResult/Message/Body") == ["to receive"]


def _check_no_messages_left(reply: QueryReply, scene: Scene) -> None:
    attributes = scene.attributes()
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"


def _check_still_hidden(reply: QueryReply, scene: Scene) -> None:
    assert scene.attributes()["ApproximateNumberOfMessagesNotVisible"] == "1"


def _check_batch_entries(result: str, entry: str, ids: list[str]) -> Check:
    def check(reply: QueryReply, scene: Scene) -> None:
        found = [e.findtext("{*}Id", "") for e in reply.findall(f"{result}/{entry}")]
        assert sorted(found) == ids
        assert reply.findall(f"{result}/BatchResultErrorEntry") == []

    return check


def _purge_params(scene: Scene) -> dict[str, str]:
    scene.sqs.send_message(QueueUrl=scene.url, MessageBody="purge me")
    return {}


def _check_deleted(reply: QueryReply, scene: Scene) -> None:
    listed = scene.sqs.list_queues(QueueNamePrefix=scene.name).get("QueueUrls", [])
    assert scene.url not in listed


QUEUE_ACTIONS: dict[str, tuple[ParamsOf, Check]] = {
    "GetQueueAttributes": (lambda s: {"AttributeName.1": "All"}, _check_attributes),
    "SetQueueAttributes": (
        lambda s: {"Attribute.1.Name": "VisibilityTimeout", "Attribute.1.Value": "45"},
        _check_set_attributes,
    ),
    "TagQueue": (lambda s: {"Tag.1.Key": "team", "Tag.1.Value": "blue"}, _check_tagged),
    "UntagQueue": (_tag_first, _check_tagged),
    "ListQueueTags": (_list_tags_params, _check_listed_tags),
    "SendMessage": (lambda s: {"MessageBody": "via query"}, _check_sent),
    "SendMessageBatch": (
        lambda s: {
            "SendMessageBatchRequestEntry.1.Id": "a",
            "SendMessageBatchRequestEntry.1.MessageBody": "first",
            "SendMessageBatchRequestEntry.2.Id": "b",
            "SendMessageBatchRequestEntry.2.MessageBody": "second",
        },
        _check_batch_sent,
    ),
    "ReceiveMessage": (_send_first, _check_received),
    "DeleteMessage": (lambda s: {"ReceiptHandle": s.received_handle()}, _check_no_messages_left),
    "DeleteMessageBatch": (
        lambda s: {
            "DeleteMessageBatchRequestEntry.1.Id": "d1",
            "DeleteMessageBatchRequestEntry.1.ReceiptHandle": s.received_handle(),
        },
        _check_batch_entries("DeleteMessageBatchResult", "DeleteMessageBatchResultEntry", ["d1"]),
    ),
    "ChangeMessageVisibility": (
        lambda s: {"ReceiptHandle": s.received_handle(), "VisibilityTimeout": "120"},
        _check_still_hidden,
    ),
    "ChangeMessageVisibilityBatch": (
        lambda s: {
            "ChangeMessageVisibilityBatchRequestEntry.1.Id": "c1",
            "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle": s.received_handle(),
            "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout": "120",
        },
        _check_batch_entries(
            "ChangeMessageVisibilityBatchResult", "ChangeMessageVisibilityBatchResultEntry", ["c1"]
        ),
    ),
    "PurgeQueue": (_purge_params, _check_no_messages_left),
    "DeleteQueue": (lambda s: {}, _check_deleted),
}

# How a queue action reaches the server: (method, to the queue's own path?)
TRANSPORTS = {
    "post-root-with-queue-url": ("POST", False),
    "post-queue-path": ("POST", True),
    "get-root-with-queue-url": ("GET", False),
    "get-queue-path": ("GET", True),
}


@pytest.fixture
def scene(sqs: Any, queue_name: str, queue_url: str) -> Scene:
    return Scene(sqs, queue_name, queue_url)


def assert_success_envelope(reply: QueryReply, action: str) -> None:
    assert reply.status == 200, reply.body
    assert reply.root is not None, reply.body
    assert reply.root_name == f"{action}Response"
    assert namespace_of(reply.root) == SQS_NAMESPACE
    assert reply.text("ResponseMetadata/RequestId")


@pytest.mark.parametrize("transport", list(TRANSPORTS))
@pytest.mark.parametrize("action", list(QUEUE_ACTIONS))
def test_queue_action_works_over_the_query_protocol(
    query: QueryClient, scene: Scene, action: str, transport: str
) -> None:
    params_of, check = QUEUE_ACTIONS[action]
    params = params_of(scene)
    method, on_queue_path = TRANSPORTS[transport]
    if on_queue_path:
        path = queue_path(scene.url)
    else:
        path = "/"
        params["QueueUrl"] = scene.url
    reply = query(action, params, path=path, method=method)
    assert_success_envelope(reply, action)
    check(reply, scene)


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_create_queue_works_over_the_query_protocol(
    query: QueryClient, sqs: Any, cqs_endpoint: str, method: str
) -> None:
    name = unique_name()
    reply = query(
        "CreateQueue",
        {
            "QueueName": name,
            "Attribute.1.Name": "DelaySeconds",
            "Attribute.1.Value": "3",
            "Tag.1.Key": "team",
            "Tag.1.Value": "blue",
        },
        method=method,
    )
    assert_success_envelope(reply, "CreateQueue")
    url = reply.text("CreateQueueResult/QueueUrl")
    assert url == f"{cqs_endpoint}/{ACCOUNT_ID}/{name}"
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["DelaySeconds"])
    assert attributes["Attributes"] == {"DelaySeconds": "3"}
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "blue"}


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_get_queue_url_works_over_the_query_protocol(
    query: QueryClient, scene: Scene, method: str
) -> None:
    reply = query("GetQueueUrl", {"QueueName": scene.name}, method=method)
    assert_success_envelope(reply, "GetQueueUrl")
    assert reply.text("GetQueueUrlResult/QueueUrl") == scene.url


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_list_queues_works_over_the_query_protocol(
    query: QueryClient, sqs: Any, method: str
) -> None:
    prefix = unique_name("lq-")
    urls = {sqs.create_queue(QueueName=f"{prefix}-{n}")["QueueUrl"] for n in range(3)}
    reply = query("ListQueues", {"QueueNamePrefix": prefix}, method=method)
    assert_success_envelope(reply, "ListQueues")
    assert set(reply.texts("ListQueuesResult/QueueUrl")) == urls

    first = query("ListQueues", {"QueueNamePrefix": prefix, "MaxResults": "2"}, method=method)
    assert len(first.texts("ListQueuesResult/QueueUrl")) == 2
    token = first.text("ListQueuesResult/NextToken")
    assert token
    rest = query(
        "ListQueues",
        {"QueueNamePrefix": prefix, "MaxResults": "2", "NextToken": token},
        method=method,
    )
    assert (
        set(first.texts("ListQueuesResult/QueueUrl")) | set(rest.texts("ListQueuesResult/QueueUrl"))
        == urls
    )
    assert not rest.text("ListQueuesResult/NextToken")


# --- result shapes ------------------------------------------------------------------------

ATTRIBUTES: dict[str, dict[str, Any]] = {
    "greeting": {"DataType": "String", "StringValue": "hej"},
    "amount": {"DataType": "Number", "StringValue": "42"},
    "bytes": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"},
}


def _attribute_params() -> dict[str, str]:
    return {
        "MessageAttribute.1.Name": "greeting",
        "MessageAttribute.1.Value.DataType": "String",
        "MessageAttribute.1.Value.StringValue": "hej",
        "MessageAttribute.2.Name": "amount",
        "MessageAttribute.2.Value.DataType": "Number",
        "MessageAttribute.2.Value.StringValue": "42",
        "MessageAttribute.3.Name": "bytes",
        "MessageAttribute.3.Value.DataType": "Binary",
        "MessageAttribute.3.Value.BinaryValue": base64.b64encode(b"\x00\x01\xfe\xff").decode(),
    }


def test_send_message_result_carries_id_and_both_digests(
    query: QueryClient, queue_url: str
) -> None:
    reply = query(
        "SendMessage",
        {"MessageBody": "shaped", **_attribute_params()},
        path=queue_path(queue_url),
    )
    assert_success_envelope(reply, "SendMessage")
    assert reply.text("SendMessageResult/MessageId")
    assert reply.text("SendMessageResult/MD5OfMessageBody") == md5_hex("shaped")
    assert reply.text("SendMessageResult/MD5OfMessageAttributes") == md5_of_message_attributes(
        ATTRIBUTES
    )


def test_receive_message_result_has_the_documented_xml_shape(
    query: QueryClient, queue_url: str
) -> None:
    path = queue_path(queue_url)
    sent = query(
        "SendMessage", {"MessageBody": "<shaped & escaped>", **_attribute_params()}, path=path
    )
    reply = query(
        "ReceiveMessage",
        {"AttributeName.1": "All", "MessageAttributeName.1": "All", "WaitTimeSeconds": "2"},
        path=path,
    )
    assert_success_envelope(reply, "ReceiveMessage")
    [message] = reply.findall("ReceiveMessageResult/Message")

    def child(name: str) -> str | None:
        return message.findtext("{*}" + name)

    assert child("MessageId") == sent.text("SendMessageResult/MessageId")
    assert child("ReceiptHandle")
    assert child("MD5OfBody") == md5_hex("<shaped & escaped>")
    assert child("Body") == "<shaped & escaped>"
    assert child("MD5OfMessageAttributes") == md5_of_message_attributes(ATTRIBUTES)

    system = {
        a.findtext("{*}Name", ""): a.findtext("{*}Value", "")
        for a in message.findall("{*}Attribute")
    }
    assert {
        "SentTimestamp",
        "ApproximateReceiveCount",
        "ApproximateFirstReceiveTimestamp",
        "SenderId",
    } <= set(system)
    assert system["ApproximateReceiveCount"] == "1"

    # each MessageAttribute is Name plus Value/{DataType, StringValue | BinaryValue}
    for attribute in message.findall("{*}MessageAttribute"):
        value = attribute.find("{*}Value")
        assert attribute.findtext("{*}Name")
        assert value is not None and value.findtext("{*}DataType")
    assert parse_message_attributes(message) == ATTRIBUTES


def test_get_queue_attributes_accepts_several_numbered_names(
    query: QueryClient, queue_url: str
) -> None:
    reply = query(
        "GetQueueAttributes",
        {"AttributeName.1": "VisibilityTimeout", "AttributeName.2": "DelaySeconds"},
        path=queue_path(queue_url),
    )
    assert_success_envelope(reply, "GetQueueAttributes")
    names = reply.texts("GetQueueAttributesResult/Attribute/Name")
    assert sorted(names) == ["DelaySeconds", "VisibilityTimeout"]


def test_query_responses_are_xml(query: QueryClient) -> None:
    reply = query("ListQueues", {"QueueNamePrefix": unique_name()})
    assert reply.status == 200
    content_type = {k.lower(): v for k, v in reply.headers.items()}.get("content-type", "")
    assert "xml" in content_type


# --- the two protocols see one queue ------------------------------------------------------


def test_message_sent_over_query_is_received_by_boto3(
    query: QueryClient, sqs: Any, queue_url: str
) -> None:
    query(
        "SendMessage", {"MessageBody": "cross", **_attribute_params()}, path=queue_path(queue_url)
    )
    [message] = sqs.receive_message(
        QueueUrl=queue_url, WaitTimeSeconds=2, MessageAttributeNames=["All"]
    )["Messages"]
    assert message["Body"] == "cross"
    assert message["MessageAttributes"] == ATTRIBUTES
    assert message["MD5OfMessageAttributes"] == md5_of_message_attributes(ATTRIBUTES)


def test_message_sent_by_boto3_is_received_and_deleted_over_query(
    query: QueryClient, sqs: Any, queue_url: str
) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="cross back", MessageAttributes=ATTRIBUTES)
    path = queue_path(queue_url)
    reply = query(
        "ReceiveMessage", {"MessageAttributeName.1": "All", "WaitTimeSeconds": "2"}, path=path
    )
    [message] = reply.findall("ReceiveMessageResult/Message")
    assert message.findtext("{*}Body") == "cross back"
    assert parse_message_attributes(message) == ATTRIBUTES
    handle = message.findtext("{*}ReceiptHandle", "")
    assert_success_envelope(
        query("DeleteMessage", {"ReceiptHandle": handle}, path=path), "DeleteMessage"
    )
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes == {"ApproximateNumberOfMessagesNotVisible": "0"}


# --- AWS's answers on queue URLs, over GET, and to a client accepting JSON ---------------------
# Source: LocalStack's TestSqsQueryApi, tests marked validated against AWS (test_sqs.py:
# test_get_without_query_returns_unknown_operation, test_get_create_queue_fails,
# test_get_list_queues_fails, test_get_list_queues_fails_json_format,
# test_get_queue_attributes_json_format, test_get_without_query_json_format_returns_xml).

_raw = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=30.0))


def _get(url: str, params: dict[str, str] | None = None, *, json_please: bool = False) -> Any:
    headers = {"Accept": "application/json"} if json_please else {}
    query = f"?{urlencode(params)}" if params else ""
    return _raw.request("GET", url + query, headers=headers)


@pytest.mark.parametrize("json_please", [False, True], ids=["xml", "accept-json"])
def test_a_get_naming_no_action_is_unknown_operation_in_xml(
    sqs: Any, make_queue: Callable[..., str], json_please: bool
) -> None:
    response = _get(make_queue(), json_please=json_please)
    assert response.status == 404
    assert b"<UnknownOperationException" in response.data


@pytest.mark.parametrize("action", ["CreateQueue", "ListQueues"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_service_actions_sent_to_a_queue_url_are_invalid_action(
    query: QueryClient, make_queue: Callable[..., str], action: str, method: str
) -> None:
    url = make_queue()
    reply = query(action, {"QueueName": unique_name()} if action == "CreateQueue" else {},
                  path=queue_path(url), method=method)
    assert reply.status == 400
    assert reply.error_code == "InvalidAction"
    assert reply.text("Error/Message") == f"The action {action} is not valid for this endpoint."


def test_a_query_client_accepting_json_gets_json_answers(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    url = make_queue()
    answer = _get(url, {"Action": "GetQueueAttributes", "AttributeName.1": "All"},
                  json_please=True)
    assert answer.status == 200
    document = json.loads(answer.data)
    attributes = document["GetQueueAttributesResponse"]["GetQueueAttributesResult"]["Attributes"]
    arn = {a["Name"]: a["Value"] for a in attributes}["QueueArn"]
    assert arn.startswith("arn:aws:sqs") and arn.endswith(url.rsplit("/", 1)[-1])
    assert document["GetQueueAttributesResponse"]["ResponseMetadata"]["RequestId"]

    refused = _get(url, {"Action": "ListQueues"}, json_please=True)
    assert refused.status == 400
    error = json.loads(refused.data)["Error"]
    assert (error["Code"], error["Message"]) == (
        "InvalidAction", "The action ListQueues is not valid for this endpoint."
    )
