"""Queue management as a boto3 user sees it: create, look up, list, delete, attributes, tags.

Owns the queue-level scenarios of the wire suite. Must not import cqs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from .conftest import ACCOUNT_ID, REGION, Speaker, SqsError, error_code, http_status, unique_name

COUNT_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)


def counts(sqs: Any, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(COUNT_ATTRIBUTES))[
        "Attributes"
    ]
    visible, hidden, delayed = (int(attributes[name]) for name in COUNT_ATTRIBUTES)
    return visible, hidden, delayed


# --- CreateQueue ------------------------------------------------------------------------


def test_create_queue_returns_url_under_account_and_name(sqs: Any, cqs_endpoint: str) -> None:
    name = unique_name()
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    assert url == f"{cqs_endpoint}/{ACCOUNT_ID}/{name}"


def test_create_queue_twice_with_equal_attributes_returns_same_url(sqs: Any) -> None:
    name = unique_name()
    first = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    second = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    assert first == second


def test_create_queue_again_with_different_attributes_is_refused(sqs: Any) -> None:
    name = unique_name()
    sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "45"})
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "46"})
    assert error_code(caught.value) == "QueueAlreadyExists"
    assert http_status(caught.value) == 400


def test_create_queue_applies_given_attributes(sqs: Any) -> None:
    url = sqs.create_queue(
        QueueName=unique_name(),
        Attributes={"VisibilityTimeout": "7", "DelaySeconds": "3", "MaximumMessageSize": "2048"},
    )["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "7"
    assert attributes["DelaySeconds"] == "3"
    assert attributes["MaximumMessageSize"] == "2048"


def test_tags_given_at_creation_are_listed(sqs: Any) -> None:
    url = sqs.create_queue(QueueName=unique_name(), tags={"team": "blue", "env": "test"})[
        "QueueUrl"
    ]
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "blue", "env": "test"}


def test_queue_name_of_80_allowed_characters_is_accepted(sqs: Any) -> None:
    name = ("t-" + unique_name("") + "_Az09-" + "x" * 80)[:80]
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    assert url.endswith("/" + name)


@pytest.mark.parametrize(
    "bad_name",
    ["q" * 81, "has space", "has!bang", "dot.ted", "slash/ed"],
    ids=["81-chars", "space", "bang", "dot", "slash"],
)
def test_invalid_queue_name_is_refused(sqs: Any, bad_name: str) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName=bad_name)
    assert error_code(caught.value) == "InvalidParameterValue"
    assert http_status(caught.value) == 400


def test_create_queue_with_unknown_attribute_is_refused(sqs: Any) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName=unique_name(), Attributes={"Colour": "blue"})
    assert error_code(caught.value) == "InvalidAttributeName"


def test_create_queue_with_out_of_range_attribute_is_refused(sqs: Any) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.create_queue(QueueName=unique_name(), Attributes={"VisibilityTimeout": "43201"})
    assert error_code(caught.value) == "InvalidAttributeValue"


# --- GetQueueUrl, ListQueues, DeleteQueue -------------------------------------------------


def test_get_queue_url_finds_created_queue(sqs: Any, queue_name: str, queue_url: str) -> None:
    assert sqs.get_queue_url(QueueName=queue_name)["QueueUrl"] == queue_url


def test_get_queue_url_of_unknown_queue_is_non_existent_queue(sqs: Any) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.get_queue_url(QueueName=unique_name("never-"))
    assert error_code(caught.value) == "AWS.SimpleQueueService.NonExistentQueue"
    assert http_status(caught.value) == 400


def test_list_queues_with_prefix_lists_only_matching_queues(sqs: Any) -> None:
    prefix = unique_name("lq-")
    wanted = {sqs.create_queue(QueueName=f"{prefix}-{n}")["QueueUrl"] for n in range(3)}
    other = sqs.create_queue(QueueName=unique_name("other-"))["QueueUrl"]
    listed = set(sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", []))
    assert listed == wanted
    assert other not in listed


def test_list_queues_with_unmatched_prefix_lists_nothing(sqs: Any) -> None:
    assert sqs.list_queues(QueueNamePrefix=unique_name("none-")).get("QueueUrls", []) == []


def test_list_queues_pages_with_max_results_and_next_token(sqs: Any) -> None:
    prefix = unique_name("page-")
    created = {sqs.create_queue(QueueName=f"{prefix}-{n}")["QueueUrl"] for n in range(7)}

    pages: list[list[str]] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"QueueNamePrefix": prefix, "MaxResults": 3}
        if token:
            params["NextToken"] = token
        page = sqs.list_queues(**params)
        pages.append(page.get("QueueUrls", []))
        token = page.get("NextToken")
        if not token:
            break
        assert len(pages) < 10, "paging does not end"

    assert [len(p) for p in pages] == [3, 3, 1]
    listed = [url for page in pages for url in page]
    assert len(listed) == len(set(listed)) == 7
    assert set(listed) == created


def test_deleted_queue_is_gone(sqs: Any, queue_name: str, queue_url: str) -> None:
    sqs.delete_queue(QueueUrl=queue_url)
    with pytest.raises(ClientError) as by_name:
        sqs.get_queue_url(QueueName=queue_name)
    assert error_code(by_name.value) == "AWS.SimpleQueueService.NonExistentQueue"
    with pytest.raises(ClientError) as by_send:
        sqs.send_message(QueueUrl=queue_url, MessageBody="late")
    assert error_code(by_send.value) == "AWS.SimpleQueueService.NonExistentQueue"


def test_deleted_queue_disappears_from_list(sqs: Any, queue_name: str, queue_url: str) -> None:
    sqs.delete_queue(QueueUrl=queue_url)
    assert queue_url not in sqs.list_queues(QueueNamePrefix=queue_name).get("QueueUrls", [])


def test_queue_recreated_after_delete_starts_empty(
    sqs: Any, queue_name: str, queue_url: str
) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="from the old queue")
    sqs.delete_queue(QueueUrl=queue_url)
    url = sqs.create_queue(QueueName=queue_name)["QueueUrl"]
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []


# --- GetQueueAttributes -------------------------------------------------------------------


def test_all_attributes_of_new_queue_have_sqs_defaults(sqs: Any, queue_url: str) -> None:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert attributes["VisibilityTimeout"] == "30"
    assert attributes["DelaySeconds"] == "0"
    assert attributes["MessageRetentionPeriod"] == "345600"
    assert attributes["ReceiveMessageWaitTimeSeconds"] == "0"
    assert int(attributes["MaximumMessageSize"]) in (262144, 1048576)
    for name in COUNT_ATTRIBUTES:
        assert attributes[name] == "0"


def test_queue_arn_names_region_account_and_queue(
    sqs: Any, queue_name: str, queue_url: str
) -> None:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]
    assert attributes == {"QueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{queue_name}"}


def test_single_attribute_name_returns_only_that_attribute(sqs: Any, queue_url: str) -> None:
    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])[
        "Attributes"
    ]
    assert attributes == {"VisibilityTimeout": "30"}


def test_timestamps_are_epoch_seconds_of_creation(sqs: Any) -> None:
    before = int(time.time())
    url = sqs.create_queue(QueueName=unique_name())["QueueUrl"]
    after = int(time.time())
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["CreatedTimestamp", "LastModifiedTimestamp"]
    )["Attributes"]
    created = int(attributes["CreatedTimestamp"])
    modified = int(attributes["LastModifiedTimestamp"])
    assert before - 2 <= created <= after + 2
    assert created <= modified <= after + 2


def test_message_counts_follow_sends_receives_and_delays(sqs: Any, queue_url: str) -> None:
    for n in range(3):
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"m{n}")
    assert counts(sqs, queue_url) == (3, 0, 0)

    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1)["Messages"]
    assert len(received) == 1
    assert counts(sqs, queue_url) == (2, 1, 0)

    sqs.send_message(QueueUrl=queue_url, MessageBody="later", DelaySeconds=60)
    assert counts(sqs, queue_url) == (2, 1, 1)

    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=received[0]["ReceiptHandle"])
    assert counts(sqs, queue_url) == (2, 0, 1)


def test_get_attributes_of_unknown_name_is_invalid_attribute_name(sqs: Any, queue_url: str) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["Colour"])
    assert error_code(caught.value) == "InvalidAttributeName"


# --- SetQueueAttributes -------------------------------------------------------------------


def test_set_attributes_are_visible_afterwards(speaker: Speaker, make_queue: Any) -> None:
    url = make_queue()
    speaker.set_queue_attributes(
        url,
        {
            "VisibilityTimeout": "120",
            "DelaySeconds": "5",
            "ReceiveMessageWaitTimeSeconds": "2",
            "MaximumMessageSize": "4096",
            "MessageRetentionPeriod": "600",
        },
    )
    attributes = speaker.queue_attributes(url)
    assert attributes["VisibilityTimeout"] == "120"
    assert attributes["DelaySeconds"] == "5"
    assert attributes["ReceiveMessageWaitTimeSeconds"] == "2"
    assert attributes["MaximumMessageSize"] == "4096"
    assert attributes["MessageRetentionPeriod"] == "600"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VisibilityTimeout", "43201"),
        ("VisibilityTimeout", "-1"),
        ("VisibilityTimeout", "soon"),
        ("DelaySeconds", "901"),
        ("ReceiveMessageWaitTimeSeconds", "21"),
        ("MaximumMessageSize", "1023"),
        ("MaximumMessageSize", "1048577"),
        ("MessageRetentionPeriod", "59"),
        ("MessageRetentionPeriod", "1209601"),
    ],
)
def test_set_attribute_out_of_range_is_invalid_attribute_value(
    speaker: Speaker, make_queue: Any, name: str, value: str
) -> None:
    url = make_queue()
    with pytest.raises(SqsError) as caught:
        speaker.set_queue_attributes(url, {name: value})
    assert caught.value.code == "InvalidAttributeValue"
    assert caught.value.status == 400
    assert speaker.queue_attributes(url, [name])[name] != value


def test_set_unknown_attribute_is_invalid_attribute_name(speaker: Speaker, make_queue: Any) -> None:
    with pytest.raises(SqsError) as caught:
        speaker.set_queue_attributes(make_queue(), {"Colour": "blue"})
    assert caught.value.code == "InvalidAttributeName"
    assert caught.value.status == 400


@pytest.mark.parametrize("seconds", ["60", "1209600"])
def test_retention_period_accepts_its_bounds(sqs: Any, queue_url: str, seconds: str) -> None:
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"MessageRetentionPeriod": seconds})
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    assert attributes == {"MessageRetentionPeriod": seconds}


# --- PurgeQueue ---------------------------------------------------------------------------


def test_purge_removes_visible_and_in_flight_messages(
    sqs: Any, queue_url: str, advance: Callable[[float], None]
) -> None:
    for n in range(4):
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"m{n}")
    sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1, VisibilityTimeout=30)
    sqs.purge_queue(QueueUrl=queue_url)
    assert counts(sqs, queue_url)[:2] == (0, 0)
    advance(31)  # past the in-flight message's visibility timeout
    assert sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", []) == []


def test_queue_accepts_messages_after_purge(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="before")
    sqs.purge_queue(QueueUrl=queue_url)
    sqs.send_message(QueueUrl=queue_url, MessageBody="after")
    messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=2).get("Messages", [])
    assert [m["Body"] for m in messages] == ["after"]


def test_purge_of_unknown_queue_is_non_existent_queue(sqs: Any, cqs_endpoint: str) -> None:
    with pytest.raises(ClientError) as caught:
        sqs.purge_queue(QueueUrl=f"{cqs_endpoint}/{ACCOUNT_ID}/{unique_name('never-')}")
    assert error_code(caught.value) == "AWS.SimpleQueueService.NonExistentQueue"


# --- tags ---------------------------------------------------------------------------------


def test_tag_queue_adds_and_overwrites_tags(sqs: Any, queue_url: str) -> None:
    sqs.tag_queue(QueueUrl=queue_url, Tags={"a": "1", "b": "2"})
    sqs.tag_queue(QueueUrl=queue_url, Tags={"b": "two", "c": "3"})
    assert sqs.list_queue_tags(QueueUrl=queue_url)["Tags"] == {"a": "1", "b": "two", "c": "3"}


def test_untag_queue_removes_only_named_tags(sqs: Any, queue_url: str) -> None:
    sqs.tag_queue(QueueUrl=queue_url, Tags={"a": "1", "b": "2", "c": "3"})
    sqs.untag_queue(QueueUrl=queue_url, TagKeys=["a", "c", "not-there"])
    assert sqs.list_queue_tags(QueueUrl=queue_url)["Tags"] == {"b": "2"}


def test_untagged_queue_lists_no_tags(sqs: Any, queue_url: str) -> None:
    assert sqs.list_queue_tags(QueueUrl=queue_url).get("Tags", {}) == {}
