"""AddPermission / RemovePermission and the Policy attribute over the wire, through boto3
(JSON 1.0) and the query protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.wire.conftest import (
    ACCOUNT_ID,
    REGION,
    QueryClient,
    error_code,
    http_status,
    queue_path,
)


def arn_of(url: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{url.rsplit('/', 1)[-1]}"


def policy_of(sqs: Any, url: str) -> dict[str, Any] | None:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])
    text = attributes.get("Attributes", {}).get("Policy")
    return None if text is None else dict(json.loads(text))


def test_add_permission_writes_a_policy_statement_as_aws_does(sqs: Any, queue_url: str) -> None:
    sqs.add_permission(
        QueueUrl=queue_url, Label="SendIt", AWSAccountIds=["111122223333"],
        Actions=["SendMessage"],
    )
    sqs.add_permission(
        QueueUrl=queue_url, Label="Both", AWSAccountIds=["111122223333", "444455556666"],
        Actions=["ReceiveMessage", "DeleteMessage"],
    )

    policy = policy_of(sqs, queue_url)

    # LocalStack's snapshot recorded against SQS, test_sqs_permission_lifecycle:
    # Version 2008-10-17.
    assert policy == {
        "Version": "2008-10-17",
        "Id": f"{arn_of(queue_url)}/SQSDefaultPolicy",
        "Statement": [
            {"Sid": "SendIt", "Effect": "Allow",
             "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
             "Action": "SQS:SendMessage", "Resource": arn_of(queue_url)},
            {"Sid": "Both", "Effect": "Allow",
             "Principal": {"AWS": ["arn:aws:iam::111122223333:root",
                                   "arn:aws:iam::444455556666:root"]},
             "Action": ["SQS:ReceiveMessage", "SQS:DeleteMessage"],
             "Resource": arn_of(queue_url)},
        ],
    }


def test_remove_permission_drops_the_statement_and_the_last_one_the_policy(
    sqs: Any, queue_url: str
) -> None:
    for label in ("one", "two"):
        sqs.add_permission(
            QueueUrl=queue_url, Label=label, AWSAccountIds=["111122223333"], Actions=["*"]
        )

    sqs.remove_permission(QueueUrl=queue_url, Label="one")
    after_one = policy_of(sqs, queue_url)
    sqs.remove_permission(QueueUrl=queue_url, Label="two")

    assert after_one is not None
    assert [s["Sid"] for s in after_one["Statement"]] == ["two"]
    assert policy_of(sqs, queue_url) is None


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (lambda sqs, url: sqs.remove_permission(QueueUrl=url, Label="ghost"),
         "InvalidParameterValue",
         # AWS's words: LocalStack's snapshot recorded against SQS,
         # test_sqs_permission_lifecycle (delete-non-existent-label).
         "Value ghost for parameter Label is invalid. Reason: can't find label."),
        (lambda sqs, url: sqs.add_permission(QueueUrl=url, Label="x", AWSAccountIds=["1"],
                                             Actions=["CreateQueue"]),
         "InvalidParameterValue",
         "Value SQS:CreateQueue for parameter ActionName is invalid. Reason: Only the queue"
         " owner is allowed to invoke this action."),
        (lambda sqs, url: sqs.add_permission(QueueUrl=url, Label="x", AWSAccountIds=["1"],
                                             Actions=["SendMessage"] * 8),
         "OverLimit", "8 Actions were found, maximum allowed is 7."),
    ],
)
def test_permission_errors_carry_the_aws_codes_and_messages(
    sqs: Any, queue_url: str, call: Any, code: str, message: str
) -> None:
    with pytest.raises(ClientError) as refused:
        call(sqs, queue_url)

    assert error_code(refused.value) == code
    assert refused.value.response["Error"]["Message"] == message
    assert http_status(refused.value) == (403 if code == "OverLimit" else 400)


def test_a_label_can_be_added_only_once(sqs: Any, queue_url: str) -> None:
    sqs.add_permission(QueueUrl=queue_url, Label="dup", AWSAccountIds=["1"], Actions=["*"])

    with pytest.raises(ClientError) as again:
        sqs.add_permission(QueueUrl=queue_url, Label="dup", AWSAccountIds=["1"], Actions=["*"])

    assert error_code(again.value) == "InvalidParameterValue"
    assert "Already exists" in again.value.response["Error"]["Message"]


def test_permissions_over_the_query_protocol(
    sqs: Any, query: QueryClient, queue_url: str
) -> None:
    path = queue_path(queue_url)

    added = query("AddPermission", {
        "Label": "q1", "AWSAccountId.1": "111122223333", "AWSAccountId.2": "444455556666",
        "ActionName.1": "SendMessage", "ActionName.2": "GetQueueUrl",
    }, path=path)
    duplicate = query("AddPermission", {
        "Label": "q1", "AWSAccountId.1": "1", "ActionName.1": "SendMessage"}, path=path)
    policy = policy_of(sqs, queue_url)
    removed = query("RemovePermission", {"Label": "q1"}, path=path)
    missing = query("RemovePermission", {"Label": "q1"}, path=path)

    assert added.status == 200, added.body
    assert added.root_name == "AddPermissionResponse"
    assert policy is not None and policy["Statement"][0]["Action"] == [
        "SQS:SendMessage", "SQS:GetQueueUrl"]
    assert duplicate.status == 400 and duplicate.error_code == "InvalidParameterValue"
    assert removed.status == 200 and policy_of(sqs, queue_url) is None
    assert missing.status == 400 and missing.error_code == "InvalidParameterValue"


def test_the_policy_attribute_is_settable_and_readable(sqs: Any, queue_url: str) -> None:
    document = {"Version": "2012-10-17", "Statement": [{
        "Sid": "own", "Effect": "Deny", "Principal": {"AWS": "111122223333"}, "Action": "SQS:*",
        "Resource": arn_of(queue_url)}]}

    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(document)})
    read = policy_of(sqs, queue_url)
    sqs.add_permission(QueueUrl=queue_url, Label="more", AWSAccountIds=["1"], Actions=["*"])
    extended = policy_of(sqs, queue_url)
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": ""})

    assert read == document
    assert extended is not None and [s["Sid"] for s in extended["Statement"]] == ["own", "more"]
    assert policy_of(sqs, queue_url) is None
