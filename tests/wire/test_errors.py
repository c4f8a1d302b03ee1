"""Errors on the wire: what a malformed or unknown request gets back, in both protocols.

Owns the error-shape scenarios of the wire suite: status codes, JSON `__type` with the
`x-amzn-query-error` header, and the query protocol's ErrorResponse XML. No request here may
ever be answered with a 5xx. Must not import cqs.

The boto3 tests run over both protocols (see conftest). The `test_json_*` and `test_query_*`
tests send one protocol's hand-made requests (a raw client) and check that protocol's own
error shape, so each runs once; most have a counterpart of the same name in the other
protocol, the rest (a JSON body that is not an object, a query request without Action)
have no equivalent there.
"""

from __future__ import annotations

from typing import Any

import pytest
import urllib3
from botocore.exceptions import ClientError

from .conftest import (
    JSON_CONTENT_TYPE,
    SQS_NAMESPACE,
    JsonClient,
    QueryClient,
    error_code,
    http_status,
    local_name,
    namespace_of,
    queue_path,
    unique_name,
)


def header(headers: Any, name: str) -> str | None:
    return {k.lower(): v for k, v in dict(headers).items()}.get(name.lower())


# --- JSON protocol ------------------------------------------------------------------------


def test_json_error_carries_type_message_and_query_error_header(
    json_request: JsonClient,
) -> None:
    reply = json_request("GetQueueUrl", {"QueueName": unique_name("never-")})
    assert reply.status == 400
    assert reply.error_type == "QueueDoesNotExist"
    assert reply.document.get("message") or reply.document.get("Message")
    assert reply.query_error == "AWS.SimpleQueueService.NonExistentQueue;Sender"
    assert (header(reply.headers, "Content-Type") or "").startswith(JSON_CONTENT_TYPE)


def test_boto3_reports_the_query_error_code_and_status(sqs: Any) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.get_queue_url(QueueName=unique_name("never-"))
    assert error_code(caught.value) == "AWS.SimpleQueueService.NonExistentQueue"
    assert caught.value.response["Error"].get("Type") == "Sender"
    assert http_status(caught.value) == 400


@pytest.mark.json_only
def test_boto3_json_client_also_reports_the_json_error_type(sqs: Any) -> None:
    """JSON only: `QueryErrorCode` is what boto3's JSON client adds beside the query code it
    takes from the x-amzn-query-error header (the `__type`); the query protocol has no such
    second code."""
    with pytest.raises(ClientError) as caught:
        sqs.get_queue_url(QueueName=unique_name("never-"))
    assert error_code(caught.value) == "AWS.SimpleQueueService.NonExistentQueue"
    assert caught.value.response["Error"].get("QueryErrorCode") == "QueueDoesNotExist"


# (call, Code boto3 shows, QueryErrorCode boto3's JSON client shows, status): AWS's answers
# as LocalStack's snapshot tests recorded them against SQS (test_sqs.snapshot.json:
# test_send_receive_max_number_of_messages, test_posting_to_fifo_requires_deduplicationid_
# group_id, test_create_queue_with_different_attributes_raises_exception,
# test_too_many_entries_in_batch_request, test_non_existent_queue).
AWS_ERROR_SHAPES = {
    "invalid-parameter-value": (
        lambda sqs, url, fifo: sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=11),
        "InvalidParameterValue", "InvalidParameterValueException", 400,
    ),
    "missing-parameter": (
        lambda sqs, url, fifo: sqs.send_message(
            QueueUrl=fifo, MessageBody="b", MessageDeduplicationId="d"),
        "MissingParameter", "MissingRequiredParameterException", 400,
    ),
    "queue-name-exists": (
        lambda sqs, url, fifo: sqs.create_queue(
            QueueName=url.rsplit("/", 1)[-1], Attributes={"DelaySeconds": "7"}),
        "QueueAlreadyExists", "QueueNameExists", 400,
    ),
    "too-many-entries": (
        lambda sqs, url, fifo: sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(i), "ReceiptHandle": "x"} for i in range(11)]),
        "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "TooManyEntriesInBatchRequest",
        400,
    ),
    "queue-does-not-exist": (
        lambda sqs, url, fifo: sqs.get_queue_url(QueueName=unique_name("never-")),
        "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", 400,
    ),
}


@pytest.mark.parametrize("case", sorted(AWS_ERROR_SHAPES))
def test_errors_carry_aws_s_code_and_json_shape_name(
    sqs: Any, protocol: str, make_queue: Any, case: str
) -> None:
    """Over JSON boto3 shows the x-amzn-query-error code as Error.Code and the `__type`
    shape name as Error.QueryErrorCode; over the query protocol only the code."""
    call, code, shape, status = AWS_ERROR_SHAPES[case]
    url = make_queue()
    fifo = sqs.create_queue(QueueName=unique_name() + ".fifo",
                            Attributes={"FifoQueue": "true"})["QueueUrl"]
    try:
        with pytest.raises(ClientError) as caught:
            call(sqs, url, fifo)
    finally:
        sqs.delete_queue(QueueUrl=fifo)
    error = caught.value.response["Error"]
    assert (error["Code"], error.get("Type"), http_status(caught.value)) == (
        code, "Sender", status
    )
    assert error.get("QueryErrorCode") == (shape if protocol == "json" else None)


def test_json_invalid_parameter_value_names_the_aws_shape_and_the_query_code(
    json_request: JsonClient, queue_url: str
) -> None:
    reply = json_request("ReceiveMessage", {"QueueUrl": queue_url, "MaxNumberOfMessages": 11})
    assert reply.status == 400
    assert reply.error_type == "InvalidParameterValueException"
    assert reply.query_error == "InvalidParameterValue;Sender"


def test_boto3_sees_a_request_id_on_success(sqs: Any, queue_url: str) -> None:
    response = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    assert response["ResponseMetadata"]["RequestId"]


def test_unknown_json_action_is_a_client_error(json_request: JsonClient) -> None:
    reply = json_request("Nope", {})
    assert reply.status == 400
    assert reply.code_boto3_shows in ("InvalidAction", "UnknownOperationException")


def test_malformed_json_body_is_a_client_error(json_request: JsonClient) -> None:
    reply = json_request("ListQueues", b"{not json")
    assert reply.status == 400
    assert reply.error_type, reply.body


def test_json_body_that_is_not_an_object_is_a_client_error(json_request: JsonClient) -> None:
    reply = json_request("ListQueues", b"[1, 2, 3]")
    assert reply.status == 400
    assert reply.error_type, reply.body


def test_json_request_without_queue_url_is_missing_parameter(json_request: JsonClient) -> None:
    reply = json_request("SendMessage", {"MessageBody": "nowhere to go"})
    assert reply.status == 400
    assert reply.code_boto3_shows == "MissingParameter"


def test_json_request_without_message_body_is_missing_parameter(
    json_request: JsonClient, queue_url: str
) -> None:
    reply = json_request("SendMessage", {"QueueUrl": queue_url})
    assert reply.status == 400
    assert reply.code_boto3_shows == "MissingParameter"


def test_json_parameter_of_wrong_type_is_a_client_error(
    json_request: JsonClient, queue_url: str
) -> None:
    reply = json_request("ReceiveMessage", {"QueueUrl": queue_url, "MaxNumberOfMessages": "ten"})
    assert reply.status == 400
    assert reply.error_type, reply.body


def test_json_queue_url_of_another_service_is_refused(json_request: JsonClient) -> None:
    reply = json_request("SendMessage", {"QueueUrl": "not a url", "MessageBody": "lost"})
    assert reply.status == 400
    assert reply.code_boto3_shows in (
        "AWS.SimpleQueueService.NonExistentQueue",
        "InvalidAddress",
        "InvalidParameterValue",
    )


# --- query protocol -----------------------------------------------------------------------


def test_query_error_is_error_response_xml(query: QueryClient) -> None:
    reply = query("GetQueueUrl", {"QueueName": unique_name("never-")})
    assert reply.status == 400
    assert reply.root_name == "ErrorResponse"
    assert reply.error_code == "AWS.SimpleQueueService.NonExistentQueue"
    assert reply.text("Error/Type") == "Sender"
    assert reply.text("Error/Message")
    assert reply.text("RequestId")
    assert "xml" in (header(reply.headers, "Content-Type") or "")


def test_unknown_query_action_is_invalid_action(query: QueryClient) -> None:
    reply = query("Nope")
    assert reply.status == 400
    assert reply.error_code == "InvalidAction"
    assert reply.text("RequestId")


def test_query_request_without_action_is_a_client_error(cqs_endpoint: str) -> None:
    response = urllib3.PoolManager(retries=False).request(
        "POST",
        cqs_endpoint + "/",
        body=b"Version=2012-11-05",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert 400 <= response.status < 500


def test_query_request_without_queue_url_is_missing_parameter(query: QueryClient) -> None:
    reply = query("SendMessage", {"MessageBody": "nowhere to go"})
    assert reply.status == 400
    assert reply.error_code == "MissingParameter"


def test_query_request_without_message_body_is_missing_parameter(
    query: QueryClient, queue_url: str
) -> None:
    reply = query("SendMessage", {"QueueUrl": queue_url})
    assert reply.status == 400
    assert reply.error_code == "MissingParameter"


def test_query_receive_with_non_integer_count_is_a_client_error(
    query: QueryClient, queue_url: str
) -> None:
    reply = query("ReceiveMessage", {"QueueUrl": queue_url, "MaxNumberOfMessages": "ten"})
    assert reply.status == 400
    assert reply.error_code in ("InvalidParameterValue", "MalformedQueryString")


def test_query_on_path_of_unknown_queue_is_non_existent_queue(query: QueryClient) -> None:
    reply = query(
        "SendMessage", {"MessageBody": "lost"}, path=f"/000000000000/{unique_name('never-')}"
    )
    assert reply.status == 400
    assert reply.error_code == "AWS.SimpleQueueService.NonExistentQueue"


@pytest.mark.parametrize(
    ("action", "params"),
    [
        ("CreateQueue", {}),
        ("CreateQueue", {"QueueName": "t-garbled-attr", "Attribute.1.Name": "VisibilityTimeout"}),
        ("ListQueues", {"MaxResults": "lots"}),
        ("ListQueues", {"MaxResults": "0"}),
        ("SendMessage", {"MessageBody": "x", "DelaySeconds": "soon"}),
        ("DeleteMessage", {}),
        ("ChangeMessageVisibility", {"ReceiptHandle": "x", "VisibilityTimeout": "never"}),
        ("GetQueueAttributes", {"AttributeName.1": ""}),
    ],
)
def test_garbled_query_requests_are_client_errors_never_server_errors(
    query: QueryClient, queue_url: str, action: str, params: dict[str, str]
) -> None:
    path = "/" if action in ("CreateQueue", "ListQueues") else queue_path(queue_url)
    reply = query(action, params, path=path)
    assert 400 <= reply.status < 500, reply.body
    assert reply.root_name == "ErrorResponse"
    assert reply.error_code not in (None, "", "InternalError", "InternalFailure")


@pytest.mark.parametrize(
    ("action", "body"),
    [
        ("CreateQueue", {}),
        ("CreateQueue", {"QueueName": 12}),
        ("CreateQueue", {"QueueName": "t-garbled-json", "Attributes": ["not", "a", "map"]}),
        ("ListQueues", {"MaxResults": "lots"}),
        ("SendMessage", {"QueueUrl": None, "MessageBody": "x"}),
        ("SendMessageBatch", {"Entries": "not a list"}),
        ("DeleteMessageBatch", {"Entries": [{"Id": "a"}]}),
        ("ReceiveMessage", {"QueueUrl": 5}),
        ("TagQueue", {"Tags": {"k": 1}}),
    ],
)
def test_garbled_json_requests_are_client_errors_never_server_errors(
    json_request: JsonClient, action: str, body: dict[str, Any]
) -> None:
    reply = json_request(action, body)
    assert 400 <= reply.status < 500, reply.body
    assert reply.error_type not in ("", "InternalError", "InternalFailure"), reply.body


def test_json_error_root_is_an_object_with_type(json_request: JsonClient) -> None:
    reply = json_request("DeleteQueue", {"QueueUrl": f"http://x/000000000000/{unique_name()}"})
    assert reply.status == 400
    assert isinstance(reply.document, dict)
    assert "__type" in reply.document


def test_error_response_is_in_the_sqs_namespace(query: QueryClient) -> None:
    reply = query("GetQueueUrl", {"QueueName": unique_name("never-")})
    assert reply.root is not None
    assert local_name(reply.root) == "ErrorResponse"
    assert namespace_of(reply.root) == SQS_NAMESPACE
