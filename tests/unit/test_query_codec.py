"""The query protocol's XML answers, read back by botocore's own `query` parser.

botocore now ships SQS as a JSON-protocol model, which no longer carries the XML names of
the query era. `query_service_model()` rebuilds the query model from it by restoring those
names (the `locationName`s and `resultWrapper`s of the query-era SQS model, which the SQS
Smithy model keeps as `xmlName`s), so that botocore's query serializer and parser speak
exactly what query-protocol SDKs send and expect.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any
from urllib.parse import urlencode

import botocore.parsers
import botocore.serialize
import botocore.session
import pytest
from botocore.model import OperationModel, ServiceModel

from cqs.domain.errors import BatchEntryIdsNotDistinct, ReceiptHandleIsInvalid
from cqs.domain.model import BatchFailure, BatchResult, Caller
from cqs.sqs_api.handlers import HANDLERS, ApiCall
from cqs.sqs_api.protocol import DecodedRequest, decode_query_request
from cqs.sqs_api.query_codec import render_query_result, xml_text
from tests.unit.test_json_codec import (
    BASE_URL,
    PERMIT_ALL,
    CannedQueueService,
    expected_arguments,
    expected_output,
    request_params,
)

# (shape, member) -> XML name, for structure members
_MEMBER_XML_NAMES = {
    ("CreateQueueRequest", "Attributes"): "Attribute",
    ("CreateQueueRequest", "tags"): "Tag",
    ("SetQueueAttributesRequest", "Attributes"): "Attribute",
    ("GetQueueAttributesResult", "Attributes"): "Attribute",
    ("TagQueueRequest", "Tags"): "Tag",
    ("ListQueueTagsResult", "Tags"): "Tag",
    ("Message", "Attributes"): "Attribute",
    ("Message", "MessageAttributes"): "MessageAttribute",
    ("SendMessageRequest", "MessageAttributes"): "MessageAttribute",
    ("SendMessageRequest", "MessageSystemAttributes"): "MessageSystemAttribute",
    ("SendMessageBatchRequestEntry", "MessageAttributes"): "MessageAttribute",
    ("SendMessageBatchRequestEntry", "MessageSystemAttributes"): "MessageSystemAttribute",
    ("MessageAttributeValue", "StringListValues"): "StringListValue",
    ("MessageAttributeValue", "BinaryListValues"): "BinaryListValue",
    ("MessageSystemAttributeValue", "StringListValues"): "StringListValue",
    ("MessageSystemAttributeValue", "BinaryListValues"): "BinaryListValue",
    ("ListDeadLetterSourceQueuesResult", "queueUrls"): "QueueUrl",
    ("ListMessageMoveTasksResult", "Results"): "ListMessageMoveTasksResultEntry",
    ("AddPermissionRequest", "AWSAccountIds"): "AWSAccountId",
    ("AddPermissionRequest", "Actions"): "ActionName",
}

# list shape -> XML name of each item
_LIST_ITEM_XML_NAMES = {
    "AttributeNameList": "AttributeName",
    "MessageSystemAttributeList": "AttributeName",  # the Smithy model's xmlName
    "MessageAttributeNameList": "MessageAttributeName",
    "TagKeyList": "TagKey",
    "QueueUrlList": "QueueUrl",
    "MessageList": "Message",
    "StringList": "StringListValue",
    "BinaryList": "BinaryListValue",
    "SendMessageBatchRequestEntryList": "SendMessageBatchRequestEntry",
    "DeleteMessageBatchRequestEntryList": "DeleteMessageBatchRequestEntry",
    "ChangeMessageVisibilityBatchRequestEntryList": "ChangeMessageVisibilityBatchRequestEntry",
    "SendMessageBatchResultEntryList": "SendMessageBatchResultEntry",
    "DeleteMessageBatchResultEntryList": "DeleteMessageBatchResultEntry",
    "ChangeMessageVisibilityBatchResultEntryList": "ChangeMessageVisibilityBatchResultEntry",
    "BatchResultErrorEntryList": "BatchResultErrorEntry",
    "AWSAccountIdList": "AWSAccountId",
    "ActionNameList": "ActionName",
    "ListMessageMoveTasksResultEntryList": "ListMessageMoveTasksResultEntry",
}

# map shape -> XML names of key and value
_MAP_XML_NAMES = {
    "QueueAttributeMap": ("Name", "Value"),
    "MessageSystemAttributeMap": ("Name", "Value"),
    "MessageBodyAttributeMap": ("Name", "Value"),
    "MessageBodySystemAttributeMap": ("Name", "Value"),
    "TagMap": ("Key", "Value"),
}


@cache
def json_service_model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("sqs")


@cache
def query_service_model() -> ServiceModel:
    loader = botocore.session.get_session().get_component("data_loader")
    model: dict[str, Any] = copy.deepcopy(loader.load_service_model("sqs", "service-2"))
    model["metadata"].update(
        protocol="query",
        protocols=["query"],
        xmlNamespace="http://queue.amazonaws.com/doc/2012-11-05/",
    )
    for name, operation in model["operations"].items():
        if "output" in operation:
            operation["output"]["resultWrapper"] = f"{name}Result"
    shapes = model["shapes"]
    for (shape, member), xml_name in _MEMBER_XML_NAMES.items():
        shapes[shape]["members"][member]["locationName"] = xml_name
    for shape, xml_name in _LIST_ITEM_XML_NAMES.items():
        shapes[shape]["member"]["locationName"] = xml_name
    for shape, (key_name, value_name) in _MAP_XML_NAMES.items():
        shapes[shape]["key"]["locationName"] = key_name
        shapes[shape]["value"]["locationName"] = value_name
    return ServiceModel(model, service_name="sqs")


def query_operation(action: str) -> OperationModel:
    return query_service_model().operation_model(action)


def botocore_query_request(action: str, params: dict[str, Any]) -> DecodedRequest:
    """What a query-protocol SDK would post for `action`, decoded by our protocol layer."""
    serialized = botocore.serialize.create_serializer("query").serialize_to_request(
        params, query_operation(action)
    )
    return decode_query_request("", urlencode(serialized["body"]).encode("ascii"))


def parse_query_response(action: str, body: bytes, status: int = 200) -> dict[str, Any]:
    parser = botocore.parsers.create_parser("query")
    parsed: dict[str, Any] = parser.parse(
        {"body": body, "headers": {}, "status_code": status},
        query_operation(action).output_shape,
    )
    return parsed


# --- every action, end to end through botocore's query serializer and parser ----------------

@pytest.mark.parametrize("action", sorted(HANDLERS))
async def test_every_action_answers_xml_that_botocore_reads_as_the_expected_output(
    action: str,
) -> None:
    service = CannedQueueService()
    call = ApiCall(botocore_query_request(action, request_params(action)), BASE_URL,
                   Caller("000000000000", "us-east-1"), PERMIT_ALL)

    result = await HANDLERS[action](service, call)
    parsed = parse_query_response(action, render_query_result(action, result, "req-1"))

    assert parsed.pop("ResponseMetadata")["RequestId"] == "req-1"
    assert parsed == expected_output(action)
    assert service.calls == [action]
    assert service.arguments[action] == expected_arguments(action)


async def test_an_empty_receive_answers_an_empty_result_element() -> None:
    service = CannedQueueService(received=[])
    call = ApiCall(
        botocore_query_request("ReceiveMessage", {"QueueUrl": f"{BASE_URL}/000000000000/q"}),
        BASE_URL,
        Caller("000000000000", "us-east-1"),
        PERMIT_ALL,
    )

    body = render_query_result("ReceiveMessage", await HANDLERS["ReceiveMessage"](service, call),
                               "req-2")

    assert b"<ReceiveMessageResult></ReceiveMessageResult>" in body
    parsed = parse_query_response("ReceiveMessage", body)
    parsed.pop("ResponseMetadata")
    assert parsed == {}


def test_an_action_without_output_answers_only_response_metadata() -> None:
    body = render_query_result("DeleteQueue", None, "req-3").decode()

    assert body == (
        '<?xml version="1.0"?>'
        '<DeleteQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">'
        "<ResponseMetadata><RequestId>req-3</RequestId></ResponseMetadata>"
        "</DeleteQueueResponse>"
    )


async def test_batch_failures_carry_the_sqs_code_and_sender_fault_in_xml() -> None:
    service = CannedQueueService(
        delete_batch=BatchResult(
            successful=[("ok", None)],
            failed=[
                BatchFailure("stale", ReceiptHandleIsInvalid("The receipt handle is stale.")),
                BatchFailure("dup", BatchEntryIdsNotDistinct("")),
            ],
        )
    )
    call = ApiCall(
        botocore_query_request("DeleteMessageBatch", request_params("DeleteMessageBatch")),
        BASE_URL,
        Caller("000000000000", "us-east-1"),
        PERMIT_ALL,
    )

    body = render_query_result(
        "DeleteMessageBatch", await HANDLERS["DeleteMessageBatch"](service, call), "req-4"
    )
    parsed = parse_query_response("DeleteMessageBatch", body)

    assert parsed["Successful"] == [{"Id": "ok"}]
    assert parsed["Failed"] == [
        {"Id": "stale", "SenderFault": True, "Code": "ReceiptHandleIsInvalid",
         "Message": "The receipt handle is stale."},
        {"Id": "dup", "SenderFault": True,
         "Code": "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
         "Message": "Two or more batch entries in the request have the same Id."},
    ]


def test_a_body_with_markup_and_carriage_returns_survives_the_xml_round_trip() -> None:
    body_text = "<b>fish & chips</b>\r\nline two\r"
    result = {"Messages": [{"MessageId": "m", "ReceiptHandle": "r", "MD5OfBody": "x",
                            "Body": body_text}]}

    parsed = parse_query_response(
        "ReceiveMessage", render_query_result("ReceiveMessage", result, "req-5")
    )

    assert parsed["Messages"][0]["Body"] == body_text


def test_characters_xml_cannot_carry_are_replaced_rather_than_breaking_the_document() -> None:
    assert xml_text("a\x00b\ud800c") == "a\ufffdb\ufffdc"
    assert xml_text("tab\tand\nnewline") == "tab\tand\nnewline"
