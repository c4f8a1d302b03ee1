"""Tag and queue attribute rules as a user meets them, over both protocols (boto3 over JSON
1.0 and over the query protocol): tag lengths, the 50-tag limit and empty tag requests on
TagQueue, UntagQueue and CreateQueue; FifoQueue on standard and FIFO queues; RedrivePolicy
and RedriveAllowPolicy in the compact form SQS gives back.

Must not import cqs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from .conftest import ACCOUNT_ID, REGION, error_code, http_status, unique_name


def refusal(call: Callable[[], Any]) -> tuple[str, int, str]:
    with pytest.raises(ClientError) as caught:
        call()
    return (
        error_code(caught.value), http_status(caught.value),
        str(caught.value.response["Error"]["Message"]),
    )


# --- tags -------------------------------------------------------------------------------------


def test_tag_queue_without_tags_is_missing_parameter(sqs: Any, queue_url: str) -> None:
    """Over the query protocol an empty map is no parameter at all: the missing one is named
    as the query protocol spells it."""
    expected = ("The request must contain the parameter Tags."
                if sqs.meta.service_model.protocol == "json"
                else "The request must contain the parameter Tag.N.Key.")
    assert refusal(lambda: sqs.tag_queue(QueueUrl=queue_url, Tags={})) == (
        "MissingParameter", 400, expected
    )


def test_untag_queue_without_keys_is_refused(sqs: Any, queue_url: str) -> None:
    """JSON sends an empty list, refused by the key-length rule; the query protocol cannot
    send an empty list, so the parameter is missing."""
    expected = (
        ("InvalidParameterValue", 400, "Tag keys must be between 1 and 128 characters in length.")
        if sqs.meta.service_model.protocol == "json"
        else ("MissingParameter", 400, "The request must contain the parameter TagKey.N.")
    )
    assert refusal(lambda: sqs.untag_queue(QueueUrl=queue_url, TagKeys=[])) == expected


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ({"": "v"}, "Tag keys must be between 1 and 128 characters in length."),
        ({"k" * 129: "v"}, "Tag keys must be between 1 and 128 characters in length."),
        ({"k": "v" * 257}, "Tag values must be between 0 and 256 characters in length."),
    ],
    ids=["empty-key", "long-key", "long-value"],
)
def test_tags_outside_the_length_rules_are_refused_by_tag_queue_and_create_queue(
    sqs: Any, queue_url: str, tags: dict[str, str], message: str
) -> None:
    assert refusal(lambda: sqs.tag_queue(QueueUrl=queue_url, Tags=tags)) == (
        "InvalidParameterValue", 400, message
    )
    name = unique_name()
    assert refusal(lambda: sqs.create_queue(QueueName=name, tags=tags)) == (
        "InvalidParameterValue", 400, message
    )


def test_a_queue_holds_fifty_tags_and_refuses_the_fifty_first(
    sqs: Any, queue_url: str
) -> None:
    sqs.tag_queue(QueueUrl=queue_url, Tags={f"k{n}": "" for n in range(50)})
    sqs.tag_queue(QueueUrl=queue_url, Tags={"k0": "replaced"})  # replacing adds nothing
    name = queue_url.rsplit("/", 1)[-1]
    assert refusal(lambda: sqs.tag_queue(QueueUrl=queue_url, Tags={"k50": "v"})) == (
        "InvalidParameterValue", 400, f"Too many tags added for queue {name}."
    )
    tags = sqs.list_queue_tags(QueueUrl=queue_url)["Tags"]
    assert len(tags) == 50 and tags["k0"] == "replaced"
    too_many = {f"k{n}": "v" for n in range(51)}
    other = unique_name()
    assert refusal(lambda: sqs.create_queue(QueueName=other, tags=too_many))[:2] == (
        "InvalidParameterValue", 400
    )


def test_tag_keys_and_values_are_case_sensitive(sqs: Any, queue_url: str) -> None:
    sqs.tag_queue(QueueUrl=queue_url, Tags={"Team": "A", "team": "a"})
    sqs.untag_queue(QueueUrl=queue_url, TagKeys=["TEAM"])
    assert sqs.list_queue_tags(QueueUrl=queue_url)["Tags"] == {"Team": "A", "team": "a"}


# --- queue attributes in SQS's form -------------------------------------------------------------


def test_fifo_queue_false_on_a_standard_queue_is_refused_as_aws_does(sqs: Any) -> None:
    # AWS refuses it (moto accepts it): LocalStack's snapshot recorded against SQS,
    # test_set_unsupported_attribute_fifo ("invalid-attr-name-1").
    name = unique_name()
    assert refusal(lambda: sqs.create_queue(
        QueueName=name, Attributes={"FifoQueue": "false"}
    )) == ("InvalidAttributeName", 400, "Unknown Attribute FifoQueue.")
    assert refusal(lambda: sqs.get_queue_url(QueueName=name))[0] == (
        "AWS.SimpleQueueService.NonExistentQueue"
    )


def test_queue_type_cannot_be_changed_afterwards(sqs: Any, queue_url: str) -> None:
    assert refusal(lambda: sqs.set_queue_attributes(
        QueueUrl=queue_url, Attributes={"FifoQueue": "true"}
    )) == ("InvalidAttributeName", 400, "Unknown Attribute FifoQueue.")
    url = sqs.create_queue(
        QueueName=unique_name("fifo-") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    try:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "true"})  # no change
        assert refusal(lambda: sqs.set_queue_attributes(
            QueueUrl=url, Attributes={"FifoQueue": "false"}
        )) == (
            "InvalidAttributeValue", 400,
            "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not"
            " supported.",
        )
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["FifoQueue"])
        assert attributes["Attributes"] == {"FifoQueue": "true"}
    finally:
        sqs.delete_queue(QueueUrl=url)


def test_redrive_policies_come_back_in_sqs_compact_form(sqs: Any, make_queue: Any) -> None:
    dead_letters = make_queue()
    dlq_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{dead_letters.rsplit('/', 1)[-1]}"
    source = make_queue()
    sqs.set_queue_attributes(QueueUrl=source, Attributes={
        "RedrivePolicy": json.dumps({"maxReceiveCount": "5", "deadLetterTargetArn": dlq_arn}),
    })
    sqs.set_queue_attributes(QueueUrl=dead_letters, Attributes={
        "RedriveAllowPolicy": json.dumps(
            {"sourceQueueArns": [dlq_arn], "redrivePermission": "byQueue"}, indent=2
        ),
    })
    got = sqs.get_queue_attributes(QueueUrl=source, AttributeNames=["RedrivePolicy"])
    assert got["Attributes"]["RedrivePolicy"] == (
        f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":5}}'
    )
    got = sqs.get_queue_attributes(QueueUrl=dead_letters, AttributeNames=["RedriveAllowPolicy"])
    assert got["Attributes"]["RedriveAllowPolicy"] == (
        f'{{"redrivePermission":"byQueue","sourceQueueArns":["{dlq_arn}"]}}'
    )


# --- server-side encryption attributes, as AWS reports them ------------------------------------

SSE_NAMES = ["SqsManagedSseEnabled", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds"]


def test_a_new_queue_reports_sse_sqs_on_and_a_kms_key_turns_it_off(
    sqs: Any, make_queue: Any
) -> None:
    # AWS: LocalStack's snapshots recorded against SQS (2023): a new queue's All has
    # SqsManagedSseEnabled "true" (test_create_and_update_queue_attributes); a queue with a
    # KMS key reports it "false" beside the key (test_sse_queue_attributes).
    def sse(url: str) -> dict[str, str]:
        return dict(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=SSE_NAMES)
                    .get("Attributes", {}))

    plain = make_queue()
    everything = sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])
    assert everything["Attributes"]["SqsManagedSseEnabled"] == "true"
    kms = make_queue(KmsMasterKeyId="testKeyId", KmsDataKeyReusePeriodSeconds="6000")
    assert sse(kms) == {"KmsMasterKeyId": "testKeyId", "KmsDataKeyReusePeriodSeconds": "6000",
                        "SqsManagedSseEnabled": "false"}

    sqs.set_queue_attributes(QueueUrl=kms, Attributes={"SqsManagedSseEnabled": "true"})
    assert sse(kms) == {"SqsManagedSseEnabled": "true"}


def test_an_empty_kms_key_removes_the_key_and_its_reuse_period(
    sqs: Any, make_queue: Any
) -> None:
    url = make_queue(KmsMasterKeyId="testKeyId", KmsDataKeyReusePeriodSeconds="600")
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"KmsMasterKeyId": ""})
    left = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=SSE_NAMES)["Attributes"]
    assert "KmsMasterKeyId" not in left and "KmsDataKeyReusePeriodSeconds" not in left


def test_kms_and_sqs_encryption_cannot_be_asked_for_together(sqs: Any, queue_url: str) -> None:
    # AWS's answer: LocalStack's snapshot recorded against SQS,
    # test_sse_kms_and_sqs_are_mutually_exclusive.
    assert refusal(lambda: sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={
        "KmsMasterKeyId": "testKeyId", "SqsManagedSseEnabled": "true",
    })) == (
        "InvalidAttributeName", 400,
        "You can use one type of server-side encryption (SSE) at one time. You can either"
        " enable KMS SSE or SQS SSE.",
    )
