"""Request readers and protocol decoding: what each protocol's parameters become.

The common case of every action in both protocols is covered end to end in
`test_json_codec.py` and `test_query_codec.py` (botocore serializes, we read). Here: the
hand-written spellings older clients send, the merging rules, queue URLs, and every way a
request can be missing a parameter or carry the wrong type.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from cqs.domain.errors import (
    InvalidParameterValue,
    MalformedRequest,
    MissingParameter,
    QueueDoesNotExist,
)
from cqs.domain.model import MessageAttributeValue, ReceiveRequest, SendRequest
from cqs.sqs_api.protocol import (
    DecodedRequest,
    MalformedJson,
    MissingAction,
    Protocol,
    UnknownOperation,
    decode_json_request,
    decode_query_request,
    detect_protocol,
)
from cqs.sqs_api.requests import (
    ChangeMessageVisibilityBatchRequest,
    ChangeMessageVisibilityRequest,
    CreateQueueRequest,
    DeleteMessageBatchRequest,
    DeleteMessageRequest,
    GetQueueAttributesRequest,
    ListQueuesRequest,
    ReceiveMessageRequest,
    SendMessageBatchRequest,
    SendMessageRequest,
    SetQueueAttributesRequest,
    TagQueueRequest,
    UntagQueueRequest,
)
from cqs.sqs_api.urls import base_url_for, queue_name_from_url, queue_url
from tests.unit.test_query_codec import botocore_query_request

URL = "http://localhost:9324/000000000000/orders"


def query(**params: str) -> DecodedRequest:
    return decode_query_request("", urlencode(params).encode())


# --- protocol sniffing and decoding ----------------------------------------------------------

def test_an_x_amz_target_header_or_a_json_content_type_means_the_json_protocol() -> None:
    assert detect_protocol("AmazonSQS.SendMessage", None) is Protocol.JSON
    assert detect_protocol(None, "application/x-amz-json-1.0") is Protocol.JSON
    assert detect_protocol(None, "application/x-www-form-urlencoded") is Protocol.QUERY
    assert detect_protocol(None, None) is Protocol.QUERY


def test_a_json_request_names_its_action_in_the_target_header() -> None:
    decoded = decode_json_request("AmazonSQS.ListQueues", b'{"QueueNamePrefix": "a"}')

    assert decoded == DecodedRequest(
        Protocol.JSON, "ListQueues", json_body={"QueueNamePrefix": "a"}
    )


def test_an_empty_json_body_reads_as_an_empty_object() -> None:
    assert decode_json_request("AmazonSQS.ListQueues", b"").json_body == {}


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe{}"])
def test_a_json_body_that_is_not_a_json_object_is_malformed(body: bytes) -> None:
    with pytest.raises(MalformedJson):
        decode_json_request("AmazonSQS.SendMessage", body)


def test_a_json_request_without_a_target_is_missing_its_action() -> None:
    with pytest.raises(MissingAction):
        decode_json_request(None, b"{}")


@pytest.mark.parametrize("target", ["DynamoDB_20120810.GetItem", "AmazonSQS.", "SendMessage"])
def test_a_target_outside_amazon_sqs_is_an_unknown_operation(target: str) -> None:
    with pytest.raises(UnknownOperation):
        decode_json_request(target, b"{}")


def test_query_parameters_come_from_both_the_query_string_and_the_form_body() -> None:
    decoded = decode_query_request(
        "Action=SendMessage&QueueUrl=from-query", b"QueueUrl=from-body&MessageBody=a%20b%2Bc"
    )

    assert decoded.action == "SendMessage"
    assert decoded.query_params["QueueUrl"] == "from-body"
    assert decoded.query_params["MessageBody"] == "a b+c"


def test_a_plus_in_a_form_body_is_a_space() -> None:
    decoded = decode_query_request("", b"Action=SendMessage&MessageBody=a+b")
    assert decoded.query_params["MessageBody"] == "a b"


def test_a_query_request_without_an_action_is_missing_its_action() -> None:
    with pytest.raises(MissingAction):
        decode_query_request("", b"QueueName=orders")
    with pytest.raises(MissingAction):
        decode_query_request("Action=", b"")


def test_a_form_body_that_is_not_utf8_is_malformed() -> None:
    with pytest.raises(MalformedRequest):
        decode_query_request("", b"Action=SendMessage&MessageBody=\xff\xfe")
    with pytest.raises(MalformedRequest):
        decode_query_request("", b"Action=SendMessage&MessageBody=%FF%FE")


def test_posting_to_a_queue_url_names_the_queue_unless_the_request_does() -> None:
    path_url = "http://host/000000000000/from-path"
    without = query(Action="PurgeQueue").with_queue_url(path_url)
    with_own = query(Action="PurgeQueue", QueueUrl=URL).with_queue_url(path_url)
    json_without = decode_json_request("AmazonSQS.PurgeQueue", b"{}").with_queue_url(path_url)

    assert without.query_params["QueueUrl"] == path_url
    assert with_own.query_params["QueueUrl"] == URL
    assert json_without.json_body["QueueUrl"] == path_url


# --- queue URLs -------------------------------------------------------------------------------

ACCOUNT = "000000000000"


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost:9324/000000000000/orders",
        "https://sqs.us-east-1.amazonaws.com/000000000000/orders",
        "http://elsewhere/000000000000/orders/",
        "http://elsewhere/orders",
        "orders",
    ],
)
def test_a_queue_url_names_its_last_path_segment_whatever_the_host(url: str) -> None:
    assert queue_name_from_url(url, ACCOUNT) == "orders"


@pytest.mark.parametrize(
    "url",
    [
        "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
        "http://localhost:9324/000000000001/orders",
        "http://elsewhere/queue/orders/",
    ],
)
def test_a_queue_url_of_another_account_names_no_queue_here(url: str) -> None:
    with pytest.raises(QueueDoesNotExist) as raised:
        queue_name_from_url(url, ACCOUNT)
    assert raised.value.message == "The specified queue does not exist."


@pytest.mark.parametrize("url", ["", "http://localhost:9324/", "http://[bad"])
def test_a_queue_url_without_a_queue_name_names_no_queue(url: str) -> None:
    with pytest.raises(QueueDoesNotExist):
        queue_name_from_url(url, ACCOUNT)


def test_queue_urls_use_the_fixed_base_url_when_configured_else_the_request_host() -> None:
    assert base_url_for("http://sqs.example:80/", "https", "ignored") == "http://sqs.example:80"
    assert base_url_for(None, "http", "127.0.0.1:9324") == "http://127.0.0.1:9324"
    assert queue_url("http://h:1", "000000000000", "q") == "http://h:1/000000000000/q"


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:9324", "sqs.example.com.", "10.0.0.7:80", "[::1]:9324",
     "[fe80::1]", "my_host-1"],
)
def test_a_host_header_that_is_a_host_and_port_makes_the_base_url(host: str) -> None:
    assert base_url_for(None, "http", host) == f"http://{host}"


@pytest.mark.parametrize(
    "host",
    ['evil"<x>:1', "a b", "h:99999", "h:", "[::1", "[not:ipv6]", "h/path", "user@h", "h:1:2",
     "é.example", ""],
)
def test_a_host_header_that_is_not_a_host_and_port_is_refused(host: str) -> None:
    with pytest.raises(InvalidParameterValue) as raised:
        base_url_for(None, "http", host)
    assert raised.value.message == (  # never the header itself
        "The Host header is invalid. Reason: it must be a host name, an IPv4 address or a"
        " bracketed IPv6 address, optionally followed by :port."
    )


def test_a_configured_base_url_is_used_whatever_the_host_header_says() -> None:
    assert base_url_for("http://sqs.example", "http", 'evil"<x>') == "http://sqs.example"


# --- hand-written query spellings ---------------------------------------------------------------

def test_create_queue_reads_indexed_attributes_and_tags_from_the_query() -> None:
    params = query(**{
        "Action": "CreateQueue", "QueueName": "orders",
        "Attribute.2.Name": "DelaySeconds", "Attribute.2.Value": "5",
        "Attribute.1.Name": "VisibilityTimeout", "Attribute.1.Value": "60",
        "Tag.1.Key": "team", "Tag.1.Value": "",
    }).query_params

    request = CreateQueueRequest.from_query(params)

    assert request == CreateQueueRequest(
        "orders", {"VisibilityTimeout": "60", "DelaySeconds": "5"}, {"team": ""}
    )


def test_set_queue_attributes_accepts_the_legacy_unindexed_attribute_pair() -> None:
    params = query(Action="SetQueueAttributes", QueueUrl=URL,
                   **{"Attribute.Name": "VisibilityTimeout", "Attribute.Value": "10"}).query_params

    assert SetQueueAttributesRequest.from_query(params).attributes == {"VisibilityTimeout": "10"}


def test_an_attribute_name_without_its_value_is_a_missing_parameter() -> None:
    params = query(Action="CreateQueue", QueueName="q", **{"Attribute.1.Name": "DelaySeconds"})

    with pytest.raises(MissingParameter):
        CreateQueueRequest.from_query(params.query_params)


def test_list_parameters_are_read_in_index_order_not_parameter_order() -> None:
    params = query(Action="GetQueueAttributes", QueueUrl=URL,
                   **{"AttributeName.10": "C", "AttributeName.2": "B", "AttributeName.1": "A"})

    assert GetQueueAttributesRequest.from_query(params.query_params).attribute_names == (
        "A", "B", "C"
    )


def test_untag_and_tag_read_tag_keys_and_tag_pairs_from_the_query() -> None:
    untag = query(Action="UntagQueue", QueueUrl=URL, **{"TagKey.1": "a", "TagKey.2": "b"})
    tag = query(Action="TagQueue", QueueUrl=URL, **{"Tag.1.Key": "a", "Tag.1.Value": "1"})

    assert UntagQueueRequest.from_query(untag.query_params).tag_keys == ("a", "b")
    assert TagQueueRequest.from_query(tag.query_params).tags == {"a": "1"}


def test_send_message_reads_string_number_and_base64_binary_attributes_from_the_query() -> None:
    params = query(**{
        "Action": "SendMessage", "QueueUrl": URL, "MessageBody": "hi", "DelaySeconds": "4",
        "MessageAttribute.1.Name": "color",
        "MessageAttribute.1.Value.DataType": "String",
        "MessageAttribute.1.Value.StringValue": "red",
        "MessageAttribute.2.Name": "blob",
        "MessageAttribute.2.Value.DataType": "Binary.gzip",
        "MessageAttribute.2.Value.BinaryValue": "AAH/",
        "MessageSystemAttribute.1.Name": "AWSTraceHeader",
        "MessageSystemAttribute.1.Value.DataType": "String",
        "MessageSystemAttribute.1.Value.StringValue": "Root=1",
        "MessageGroupId": "g", "MessageDeduplicationId": "d",
    }).query_params

    request = SendMessageRequest.from_query(params)

    assert request == SendMessageRequest(
        URL,
        SendRequest(
            body="hi",
            delay_seconds=4,
            message_attributes={
                "color": MessageAttributeValue("String", string_value="red"),
                "blob": MessageAttributeValue("Binary.gzip", binary_value=b"\x00\x01\xff"),
            },
            system_attributes={
                "AWSTraceHeader": MessageAttributeValue("String", string_value="Root=1")
            },
            message_group_id="g",
            message_deduplication_id="d",
        ),
    )


def test_an_empty_message_body_is_present_and_left_for_the_service_to_judge() -> None:
    params = query(Action="SendMessage", QueueUrl=URL, MessageBody="").query_params

    assert SendMessageRequest.from_query(params).message.body == ""


def test_receive_merges_legacy_and_current_system_attribute_names_in_the_query() -> None:
    params = query(**{
        "Action": "ReceiveMessage", "QueueUrl": URL,
        "AttributeName.1": "SentTimestamp", "AttributeName.2": "SenderId",
        "MessageSystemAttributeName.1": "SenderId",
        "MessageSystemAttributeName.2": "ApproximateReceiveCount",
        "MessageAttributeName.1": "color",
    }).query_params

    receive = ReceiveMessageRequest.from_query(params).receive

    assert receive == ReceiveRequest(
        max_number_of_messages=1,
        system_attribute_names=("SentTimestamp", "SenderId", "ApproximateReceiveCount"),
        message_attribute_names=("color",),
    )


def test_receive_merges_legacy_and_current_system_attribute_names_in_json() -> None:
    body = {
        "QueueUrl": URL,
        "AttributeNames": ["SentTimestamp", "SenderId"],
        "MessageSystemAttributeNames": ["SenderId", "All"],
    }

    receive = ReceiveMessageRequest.from_json(body).receive

    assert receive.system_attribute_names == ("SentTimestamp", "SenderId", "All")
    assert receive.max_number_of_messages == 1


def test_botocore_query_clients_send_message_system_attribute_names_as_attribute_name() -> None:
    decoded = botocore_query_request(
        "ReceiveMessage", {"QueueUrl": URL, "MessageSystemAttributeNames": ["SenderId"]}
    )

    receive = ReceiveMessageRequest.from_query(decoded.query_params).receive

    assert receive.system_attribute_names == ("SenderId",)


def test_batch_entries_are_read_in_index_order_with_their_own_attributes() -> None:
    params = query(**{
        "Action": "SendMessageBatch", "QueueUrl": URL,
        "SendMessageBatchRequestEntry.2.Id": "second",
        "SendMessageBatchRequestEntry.2.MessageBody": "two",
        "SendMessageBatchRequestEntry.1.Id": "first",
        "SendMessageBatchRequestEntry.1.MessageBody": "one",
        "SendMessageBatchRequestEntry.1.DelaySeconds": "3",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Name": "n",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType": "Number",
        "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue": "1",
    }).query_params

    request = SendMessageBatchRequest.from_query(params)

    assert request.entries == (
        ("first", SendRequest(
            body="one", delay_seconds=3,
            message_attributes={"n": MessageAttributeValue("Number", string_value="1")},
        )),
        ("second", SendRequest(body="two")),
    )


def test_a_batch_without_entries_is_read_as_empty_for_the_service_to_reject() -> None:
    params = query(Action="DeleteMessageBatch", QueueUrl=URL).query_params

    assert DeleteMessageBatchRequest.from_query(params).entries == ()
    assert DeleteMessageBatchRequest.from_json({"QueueUrl": URL, "Entries": []}).entries == ()


def test_a_json_batch_without_the_entries_member_is_missing_parameter() -> None:
    with pytest.raises(MissingParameter):
        DeleteMessageBatchRequest.from_json({"QueueUrl": URL})


def test_list_queues_needs_no_parameters() -> None:
    assert ListQueuesRequest.from_query({"Action": "ListQueues"}) == ListQueuesRequest()
    assert ListQueuesRequest.from_json({}) == ListQueuesRequest()


# --- missing parameters and wrong types ------------------------------------------------------

@pytest.mark.parametrize(
    ("request_type", "params"),
    [
        (SendMessageRequest, {"MessageBody": "x"}),
        (SendMessageRequest, {"QueueUrl": URL}),
        (CreateQueueRequest, {}),
        (DeleteMessageRequest, {"QueueUrl": URL}),
        (ChangeMessageVisibilityRequest, {"QueueUrl": URL, "ReceiptHandle": "r"}),
    ],
)
def test_a_required_parameter_that_is_absent_is_a_missing_parameter_in_both_protocols(
    request_type: Any, params: dict[str, str]
) -> None:
    with pytest.raises(MissingParameter):
        request_type.from_query(params)
    with pytest.raises(MissingParameter):
        request_type.from_json(params)


def test_a_batch_entry_without_an_id_is_a_missing_parameter() -> None:
    with pytest.raises(MissingParameter):
        ChangeMessageVisibilityBatchRequest.from_query({
            "QueueUrl": URL,
            "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle": "r",
            "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout": "5",
        })
    with pytest.raises(MissingParameter):
        ChangeMessageVisibilityBatchRequest.from_json(
            {"QueueUrl": URL, "Entries": [{"ReceiptHandle": "r", "VisibilityTimeout": 5}]}
        )


def test_a_message_attribute_without_a_data_type_is_a_missing_parameter() -> None:
    with pytest.raises(MissingParameter):
        SendMessageRequest.from_query({
            "QueueUrl": URL, "MessageBody": "x",
            "MessageAttribute.1.Name": "a", "MessageAttribute.1.Value.StringValue": "v",
        })
    with pytest.raises(MissingParameter):
        SendMessageRequest.from_json(
            {"QueueUrl": URL, "MessageBody": "x", "MessageAttributes": {"a": {"StringValue": "v"}}}
        )


@pytest.mark.parametrize("value", ["soon", "1.5", "0x10", "1e3"])
def test_a_non_integer_in_an_integer_query_parameter_is_an_invalid_parameter_value(
    value: str,
) -> None:
    params = {"QueueUrl": URL, "ReceiptHandle": "r", "VisibilityTimeout": value}

    with pytest.raises(InvalidParameterValue):
        ChangeMessageVisibilityRequest.from_query(params)


def test_an_empty_integer_query_parameter_counts_as_absent() -> None:
    params = {"QueueUrl": URL, "ReceiptHandle": "r", "VisibilityTimeout": ""}

    with pytest.raises(MissingParameter):
        ChangeMessageVisibilityRequest.from_query(params)
    assert SendMessageRequest.from_query(
        {"QueueUrl": URL, "MessageBody": "x", "DelaySeconds": ""}
    ).message.delay_seconds is None


@pytest.mark.parametrize("value", [1.5, True, "soon", [3], {"n": 3}])
def test_a_non_integer_in_an_integer_json_member_is_an_invalid_parameter_value(
    value: object,
) -> None:
    with pytest.raises(InvalidParameterValue):
        SendMessageRequest.from_json({"QueueUrl": URL, "MessageBody": "x", "DelaySeconds": value})


def test_a_quoted_integer_in_json_is_accepted() -> None:
    request = SendMessageRequest.from_json(
        {"QueueUrl": URL, "MessageBody": "x", "DelaySeconds": "7"}
    )

    assert request.message.delay_seconds == 7


@pytest.mark.parametrize(
    "body",
    [
        {"QueueUrl": 7, "MessageBody": "x"},
        {"QueueUrl": URL, "MessageBody": ["x"]},
        {"QueueUrl": URL, "MessageBody": "x", "MessageAttributes": ["a"]},
        {"QueueUrl": URL, "MessageBody": "x", "MessageAttributes": {"a": "v"}},
        {"QueueUrl": URL, "MessageBody": "x",
         "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": "not base64!"}}},
    ],
)
def test_a_json_member_of_the_wrong_type_is_an_invalid_parameter_value(
    body: dict[str, object],
) -> None:
    with pytest.raises(InvalidParameterValue):
        SendMessageRequest.from_json(body)


@pytest.mark.parametrize(
    "body",
    [
        {"QueueUrl": URL, "AttributeNames": "All"},
        {"QueueUrl": URL, "AttributeNames": ["All", 3]},
    ],
)
def test_a_json_list_that_is_not_a_list_of_strings_is_an_invalid_parameter_value(
    body: dict[str, object],
) -> None:
    with pytest.raises(InvalidParameterValue):
        GetQueueAttributesRequest.from_json(body)


def test_json_entries_that_are_not_objects_are_an_invalid_parameter_value() -> None:
    with pytest.raises(InvalidParameterValue):
        SendMessageBatchRequest.from_json({"QueueUrl": URL, "Entries": ["a"]})
    with pytest.raises(InvalidParameterValue):
        SendMessageBatchRequest.from_json({"QueueUrl": URL, "Entries": {"Id": "a"}})


def test_a_binary_query_attribute_that_is_not_base64_is_an_invalid_parameter_value() -> None:
    with pytest.raises(InvalidParameterValue):
        SendMessageRequest.from_query({
            "QueueUrl": URL, "MessageBody": "x",
            "MessageAttribute.1.Name": "b", "MessageAttribute.1.Value.DataType": "Binary",
            "MessageAttribute.1.Value.BinaryValue": "***",
        })


def test_json_tag_maps_must_hold_strings() -> None:
    with pytest.raises(InvalidParameterValue):
        TagQueueRequest.from_json({"QueueUrl": URL, "Tags": {"a": 1}})
    with pytest.raises(InvalidParameterValue):
        CreateQueueRequest.from_json({"QueueName": "q", "tags": ["a"]})
