"""SQS's message rules as a user meets them, over both protocols (boto3 over JSON 1.0 and over
the query protocol): which attributes ReceiveMessage returns for the names it is given, the
FIFO rules of single and batch sends, and which batch problems fail one entry rather than
the whole call (the whole-call ones are in test_batches.py).

Must not import cqs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from .conftest import (
    error_code,
    http_status,
    md5_of_message_attributes,
    unique_name,
)

ATTRIBUTES: dict[str, dict[str, Any]] = {
    "Custom.a": {"DataType": "String", "StringValue": "1"},
    "Customer": {"DataType": "String", "StringValue": "2"},
    "custom.low": {"DataType": "Number", "StringValue": "3"},
    "Other": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
}


def refusal(call: Callable[[], Any]) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return (
        error_code(caught.value), http_status(caught.value),
        str(caught.value.response["Error"]["Message"]),
    )


@pytest.fixture
def fifo_queue(sqs: Any) -> Iterator[Callable[..., str]]:
    urls: list[str] = []

    def make(**attributes: str) -> str:
        name = unique_name("fifo-") + ".fifo"
        url = str(sqs.create_queue(
            QueueName=name, Attributes={"FifoQueue": "true", **attributes}
        )["QueueUrl"])
        urls.append(url)
        return url

    yield make
    for url in urls:
        try:
            sqs.delete_queue(QueueUrl=url)
        except ClientError:
            pass


def receive_one(sqs: Any, url: str, **params: Any) -> dict[str, Any]:
    messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2, **params)["Messages"]
    assert len(messages) == 1
    # Receive it again later: with no visibility, the next call sees it too.
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    return dict(messages[0])


# --- which attributes ReceiveMessage returns ----------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (["Custom.*"], {"Custom.a", "Customer"}),
        (["*"], set(ATTRIBUTES)),
        ([".*"], set(ATTRIBUTES)),
        (["All"], set(ATTRIBUTES)),
        (["custom.a", "OTHER"], set()),
        (["custom.*", "Other"], {"custom.low", "Other"}),
        (["Nothing", "Nothing.*"], set()),
    ],
    ids=["prefix", "star", "dot-star", "All", "case-sensitive", "prefix-and-exact", "no-match"],
)
def test_message_attribute_names_select_and_the_digest_covers_only_what_is_returned(
    sqs: Any, make_queue: Any, requested: list[str], expected: set[str]
) -> None:
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="b", MessageAttributes=ATTRIBUTES)
    message = receive_one(sqs, url, MessageAttributeNames=requested)
    returned = message.get("MessageAttributes", {})
    assert set(returned) == expected
    if expected:
        assert message["MD5OfMessageAttributes"] == md5_of_message_attributes(
            {k: ATTRIBUTES[k] for k in expected}
        )
    else:
        assert "MD5OfMessageAttributes" not in message


@pytest.mark.parametrize("parameter", ["AttributeNames", "MessageSystemAttributeNames"])
@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (["SentTimestamp", "ApproximateReceiveCount"], {"SentTimestamp", "ApproximateReceiveCount"}),
        (["All"], {"SenderId", "SentTimestamp", "ApproximateReceiveCount",
                   "ApproximateFirstReceiveTimestamp"}),
        (["Approximate.*"], {"ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp"}),
        (["sentTimestamp"], set()),
        (["SequenceNumber", "MessageGroupId"], set()),  # only FIFO messages carry them
    ],
    ids=["exact", "All", "prefix", "case-sensitive", "fifo-only"],
)
def test_system_attribute_names_select_by_either_parameter(
    sqs: Any, make_queue: Any, parameter: str, requested: list[str], expected: set[str]
) -> None:
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="b")
    message = receive_one(sqs, url, **{parameter: requested})
    assert set(message.get("Attributes", {})) == expected


def test_both_system_attribute_parameters_are_honoured_together(
    sqs: Any, make_queue: Any
) -> None:
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="b")
    message = receive_one(
        sqs, url, AttributeNames=["SenderId"], MessageSystemAttributeNames=["SentTimestamp"]
    )
    assert set(message["Attributes"]) == {"SenderId", "SentTimestamp"}


def test_an_empty_attribute_value_is_refused_in_aws_s_words(sqs: Any, make_queue: Any) -> None:
    # AWS's words: LocalStack's snapshot recorded against SQS,
    # test_send_message_with_empty_string_attribute.
    url = make_queue()
    assert refusal(lambda: sqs.send_message(QueueUrl=url, MessageBody="b", MessageAttributes={
        "ErrorDetails": {"DataType": "String", "StringValue": ""}})) == (
        "InvalidParameterValue", 400,
        "Message (user) attribute 'ErrorDetails' must contain a non-empty value of type"
        " 'String'.",
    )


# --- FIFO sends ---------------------------------------------------------------------------

NO_DEDUPLICATION = (
    "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId"
    " provided explicitly"
)


def test_fifo_send_without_group_id_is_missing_parameter(
    sqs: Any, fifo_queue: Callable[..., str]
) -> None:
    # LocalStack's snapshot recorded against SQS: test_posting_to_fifo_requires_...
    # (MissingParameter over both protocols).
    url = fifo_queue(ContentBasedDeduplication="true")
    assert refusal(lambda: sqs.send_message(QueueUrl=url, MessageBody="b")) == (
        "MissingParameter", 400, "The request must contain the parameter MessageGroupId."
    )


def test_fifo_send_without_deduplication_id_is_refused_unless_content_based(
    sqs: Any, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue()
    assert refusal(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="b", MessageGroupId="g")
    ) == ("InvalidParameterValue", 400, NO_DEDUPLICATION)


@pytest.mark.parametrize(
    ("bad_entry", "code", "message"),
    [
        # AWS answers a batch entry without its group id InvalidParameterValue (SendMessage
        # alone: MissingParameter); LocalStack's snapshot recorded against SQS,
        # test_send_batch_missing_message_group_id_for_fifo_queue.
        ({"MessageDeduplicationId": "d"}, "InvalidParameterValue",
         "The request must contain the parameter MessageGroupId."),
        ({"MessageGroupId": "g"}, "InvalidParameterValue", NO_DEDUPLICATION),
    ],
    ids=["no-group-id", "no-deduplication-id"],
)
def test_fifo_batch_with_an_entry_lacking_fifo_ids_fails_whole_and_sends_nothing(
    sqs: Any, fifo_queue: Callable[..., str], bad_entry: dict[str, str], code: str, message: str
) -> None:
    url = fifo_queue()
    entries = [
        {"Id": "good", "MessageBody": "good", "MessageGroupId": "g", "MessageDeduplicationId": "1"},
        {"Id": "bad", "MessageBody": "bad", **bad_entry},
    ]
    assert refusal(lambda: sqs.send_message_batch(QueueUrl=url, Entries=entries)) == (
        code, 400, message
    )
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)


def test_fifo_batch_entry_with_a_delay_fails_alone(
    sqs: Any, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue(ContentBasedDeduplication="true")
    result = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "now", "MessageBody": "now", "MessageGroupId": "g"},
        {"Id": "later", "MessageBody": "later", "MessageGroupId": "g", "DelaySeconds": 5},
    ])
    assert [e["Id"] for e in result["Successful"]] == ["now"]
    [failed] = result["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == (
        "later", "InvalidParameterValue", True
    )
    assert failed["Message"] == (
        "Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter"
        " that is not valid for this queue type."
    )


def test_standard_queue_takes_a_message_group_id_as_a_fair_queue_does(
    sqs: Any, make_queue: Any
) -> None:
    # AWS gives the tenant back as the MessageGroupId system attribute (SQS developer
    # guide, fair queues; the recorded answers).
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="tenant a", MessageGroupId="tenant-a")
    sqs.send_message(QueueUrl=url, MessageBody="no tenant")
    got: dict[str, Any] = {}
    for _ in range(10):
        for message in sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", []):
            got[message["Body"]] = message["Attributes"]
        if len(got) == 2:
            break
    assert got["tenant a"]["MessageGroupId"] == "tenant-a"
    assert "MessageGroupId" not in got["no tenant"]
    code, status, _ = refusal(
        lambda: sqs.send_message(QueueUrl=url, MessageBody="b", MessageGroupId="has space")
    )
    assert (code, status) == ("InvalidParameterValue", 400)


def test_standard_queue_refuses_a_deduplication_id_per_entry(sqs: Any, make_queue: Any) -> None:
    url = make_queue()
    expected = (
        "Value d for parameter MessageDeduplicationId is invalid. Reason: The request include"
        " parameter that is not valid for this queue type."
    )
    assert refusal(lambda: sqs.send_message(
        QueueUrl=url, MessageBody="b", MessageDeduplicationId="d"
    )) == ("InvalidParameterValue", 400, expected)
    result = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "plain", "MessageBody": "plain"},
        {"Id": "dedup", "MessageBody": "x", "MessageDeduplicationId": "d"},
    ])
    assert [e["Id"] for e in result["Successful"]] == ["plain"]
    assert [(e["Id"], e["Code"], e["Message"]) for e in result["Failed"]] == [
        ("dedup", "InvalidParameterValue", expected)
    ]


# --- per-entry failures in batches ----------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_entry", "code"),
    [
        ({"DelaySeconds": 901}, "InvalidParameterValue"),
        ({"DelaySeconds": -1}, "InvalidParameterValue"),
        ({"MessageBody": ""}, "MissingParameter"),
        ({"MessageBody": "\u0000"}, "InvalidMessageContents"),
        ({"MessageAttributes": {"AWS.x": {"DataType": "String", "StringValue": "v"}}},
         "InvalidParameterValue"),
        ({"MessageAttributes": {"n": {"DataType": "Number", "StringValue": "x"}}},
         "InvalidParameterValue"),
        ({"MessageSystemAttributes": {"Other": {"DataType": "String", "StringValue": "v"}}},
         "InvalidParameterValue"),
    ],
    ids=["delay-901", "delay-negative", "empty-body", "bad-character", "reserved-name",
         "not-a-number", "unknown-system-attribute"],
)
def test_send_batch_entry_breaking_a_message_rule_fails_alone(
    sqs: Any, make_queue: Any, bad_entry: dict[str, Any], code: str
) -> None:
    url = make_queue()
    result = sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "first", "MessageBody": "first"},
        {"Id": "bad", "MessageBody": "bad", **bad_entry},
        {"Id": "last", "MessageBody": "last"},
    ])
    assert sorted(e["Id"] for e in result["Successful"]) == ["first", "last"]
    [failed] = result["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == ("bad", code, True)
    if "DelaySeconds" in bad_entry:
        assert failed["Message"] == (
            f"Value {bad_entry['DelaySeconds']} for parameter DelaySeconds is invalid. Reason:"
            " DelaySeconds must be >= 0 and <= 900."
        )


def test_change_visibility_batch_entry_over_12_hours_fails_alone(
    sqs: Any, make_queue: Any
) -> None:
    url = make_queue()
    sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}
    ])
    handles: list[str] = []
    for _ in range(10):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        handles += [m["ReceiptHandle"] for m in got.get("Messages", [])]
        if len(handles) == 2:
            break
    result = sqs.change_message_visibility_batch(QueueUrl=url, Entries=[
        {"Id": "fine", "ReceiptHandle": handles[0], "VisibilityTimeout": 43_200},
        {"Id": "long", "ReceiptHandle": handles[1], "VisibilityTimeout": 43_201},
    ])
    assert [e["Id"] for e in result["Successful"]] == ["fine"]
    [failed] = result["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == (
        "long", "InvalidParameterValue", True
    )


# --- the X-Ray trace header -----------------------------------------------------------------

TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def test_the_x_amzn_trace_id_header_becomes_each_message_s_aws_trace_header(
    sqs: Any, make_queue: Any
) -> None:
    # AWS X-Ray developer guide, "Amazon SQS and AWS X-Ray": the X-Amzn-Trace-Id header
    # applies to every message of SendMessage / SendMessageBatch; an AWSTraceHeader system
    # attribute overrides it.
    def add_trace_header(request: Any, **_: Any) -> None:
        request.headers["X-Amzn-Trace-Id"] = TRACE

    sqs.meta.events.register("before-sign.sqs.SendMessage", add_trace_header)
    sqs.meta.events.register("before-sign.sqs.SendMessageBatch", add_trace_header)
    url = make_queue()
    own = "Root=1-00000000-000000000000000000000000;Sampled=0"
    sqs.send_message(QueueUrl=url, MessageBody="single")
    sqs.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "a", "MessageBody": "batched"},
        {"Id": "b", "MessageBody": "own", "MessageSystemAttributes": {
            "AWSTraceHeader": {"DataType": "String", "StringValue": own}}},
    ])

    traces: dict[str, str | None] = {}
    for _ in range(10):
        for message in sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
            MessageSystemAttributeNames=["AWSTraceHeader"],
        ).get("Messages", []):
            traces[message["Body"]] = message.get("Attributes", {}).get("AWSTraceHeader")
        if len(traces) == 3:
            break
    assert traces == {"single": TRACE, "batched": TRACE, "own": own}
