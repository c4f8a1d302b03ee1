"""Cross-account access with `--auth verify`: a queue's Policy (set directly or written by
AddPermission) lets another account do exactly what it grants, a Deny wins, and the owner's
own actions stay the owner's; through boto3 (JSON 1.0), boto3 over the query model and the
AWS CLI, against a real server.

Three accounts sign with their own keys: ORDERS owns the queues, BILLING is granted (or
not), AUDIT is granted nothing. Must not import cqs: the server is seen only through HTTP.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config

from tests.fixtures.certificates import TestAuthority
from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.wire.auth_keys import (
    AUDIT,
    BILLING,
    ORDERS,
    client,
    credentials_toml,
    start_verify_server,
)
from tests.wire.conftest import REGION, unique_name
from tests.wire.test_authentication import CliError, aws_cli, refusal

OWNER_ONLY_CALLS = {
    "SetQueueAttributes": lambda sqs, url: sqs.set_queue_attributes(
        QueueUrl=url, Attributes={"DelaySeconds": "1"}),
    "DeleteQueue": lambda sqs, url: sqs.delete_queue(QueueUrl=url),
    "TagQueue": lambda sqs, url: sqs.tag_queue(QueueUrl=url, Tags={"k": "v"}),
    "ListQueueTags": lambda sqs, url: sqs.list_queue_tags(QueueUrl=url),
    "AddPermission": lambda sqs, url: sqs.add_permission(
        QueueUrl=url, Label="self-granted", AWSAccountIds=["222222222222"], Actions=["*"]),
}


@pytest.fixture(scope="module")
def server(
    redis_server: Any, start_cqs_server: StartServer, tmp_path_factory: pytest.TempPathFactory
) -> CqsProcess:
    process, _ = start_verify_server(
        start_cqs_server, redis_server.url, tmp_path_factory.mktemp("cross"),
        ORDERS, BILLING, AUDIT,
    )
    return process


@pytest.fixture(params=["json", "query"])
def clients(
    request: pytest.FixtureRequest, server: CqsProcess,
    boto3_sessions: dict[str, boto3.session.Session],
) -> tuple[Any, Any, Any]:
    """(owner, grantee, outsider) clients over one protocol."""
    return tuple(  # type: ignore[return-value]
        client(boto3_sessions, request.param, server.url, key) for key in (ORDERS, BILLING, AUDIT)
    )


def arn_of(url: str) -> str:
    account, name = url.rstrip("/").split("/")[-2:]
    return f"arn:aws:sqs:{REGION}:{account}:{name}"


def set_policy(sqs: Any, url: str, *statements: dict[str, Any]) -> None:
    document = {"Version": "2012-10-17", "Statement": list(statements)}
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(document)})


def bodies(sqs: Any, url: str) -> list[str]:
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return sorted(m["Body"] for m in received.get("Messages", []))


def test_without_a_policy_another_account_can_do_nothing_to_a_queue(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, other, _ = clients
    name = unique_name("private-")
    url = owner.create_queue(QueueName=name)["QueueUrl"]
    owner.send_message(QueueUrl=url, MessageBody="secret")

    send = refusal(lambda: other.send_message(QueueUrl=url, MessageBody="x"))
    receive = refusal(lambda: other.receive_message(QueueUrl=url))
    attributes = refusal(lambda: other.get_queue_attributes(QueueUrl=url))
    lookup = refusal(lambda: other.get_queue_url(
        QueueName=name, QueueOwnerAWSAccountId=ORDERS.account_id))
    absent = refusal(lambda: other.send_message(
        QueueUrl=url.replace(name, "never-created-" + name), MessageBody="x"))

    assert send[:2] == receive[:2] == attributes[:2] == (403, "AccessDenied")
    assert absent[:2] == (403, "AccessDenied")  # no hint whether the queue exists
    assert lookup[:2] == (400, "AWS.SimpleQueueService.NonExistentQueue")
    assert bodies(owner, url) == ["secret"]  # untouched


def test_add_permission_lets_the_granted_account_do_exactly_the_granted_actions(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, grantee, outsider = clients
    name = unique_name("granted-")
    url = owner.create_queue(QueueName=name)["QueueUrl"]
    owner.add_permission(QueueUrl=url, Label="billing-sends", AWSAccountIds=[BILLING.account_id],
                         Actions=["SendMessage", "GetQueueUrl"])

    looked_up = grantee.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=ORDERS.account_id)
    grantee.send_message(QueueUrl=url, MessageBody="from billing")
    batch = grantee.send_message_batch(QueueUrl=url, Entries=[
        {"Id": "a", "MessageBody": "batch a"}, {"Id": "b", "MessageBody": "batch b"}])
    receive = refusal(lambda: grantee.receive_message(QueueUrl=url))
    purge = refusal(lambda: grantee.purge_queue(QueueUrl=url))
    outsider_send = refusal(lambda: outsider.send_message(QueueUrl=url, MessageBody="x"))
    outsider_lookup = refusal(lambda: outsider.get_queue_url(
        QueueName=name, QueueOwnerAWSAccountId=ORDERS.account_id))

    assert looked_up["QueueUrl"] == url
    assert [entry["Id"] for entry in batch["Successful"]] == ["a", "b"]
    assert receive[:2] == purge[:2] == outsider_send[:2] == (403, "AccessDenied")
    assert outsider_lookup[:2] == (400, "AWS.SimpleQueueService.NonExistentQueue")
    assert bodies(owner, url) == ["batch a", "batch b", "from billing"]

    owner.remove_permission(QueueUrl=url, Label="billing-sends")
    revoked = refusal(lambda: grantee.send_message(QueueUrl=url, MessageBody="x"))
    assert revoked[:2] == (403, "AccessDenied")


def test_a_policy_grant_of_every_action_still_leaves_the_owner_only_actions_to_the_owner(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, grantee, _ = clients
    url = owner.create_queue(QueueName=unique_name("everything-"))["QueueUrl"]
    set_policy(owner, url, {"Effect": "Allow", "Principal": {"AWS": BILLING.account_id},
                            "Action": "sqs:*", "Resource": arn_of(url)})

    grantee.send_message(QueueUrl=url, MessageBody="m")
    received = grantee.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    grantee.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])
    refused = {action: refusal(lambda call=call: call(grantee, url))[:2]
               for action, call in OWNER_ONLY_CALLS.items()}

    assert [m["Body"] for m in received] == ["m"]
    assert refused == dict.fromkeys(OWNER_ONLY_CALLS, (403, "AccessDenied"))
    assert owner.get_queue_attributes(QueueUrl=url, AttributeNames=["DelaySeconds"])[
        "Attributes"]["DelaySeconds"] == "0"


def test_a_deny_statement_wins_over_an_allow_for_the_same_request(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, grantee, _ = clients
    url = owner.create_queue(QueueName=unique_name("denied-"))["QueueUrl"]
    set_policy(
        owner, url,
        {"Effect": "Allow", "Principal": "*", "Action": "sqs:*", "Resource": "*"},
        {"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{BILLING.account_id}:root"},
         "Action": "sqs:Receive*", "Resource": arn_of(url)},
    )

    grantee.send_message(QueueUrl=url, MessageBody="allowed")
    denied = refusal(lambda: grantee.receive_message(QueueUrl=url))

    assert denied[:2] == (403, "AccessDenied")
    assert bodies(owner, url) == ["allowed"]


def test_a_deny_of_the_owners_own_account_binds_the_owner_until_it_changes_the_policy(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, _, _ = clients
    url = owner.create_queue(QueueName=unique_name("self-denied-"))["QueueUrl"]
    set_policy(owner, url, {"Effect": "Deny", "Principal": {"AWS": ORDERS.account_id},
                            "Action": "sqs:SendMessage", "Resource": arn_of(url)})

    denied = refusal(lambda: owner.send_message(QueueUrl=url, MessageBody="x"))
    owner.set_queue_attributes(QueueUrl=url, Attributes={"Policy": ""})
    owner.send_message(QueueUrl=url, MessageBody="after")

    assert denied[:2] == (403, "AccessDenied")
    assert bodies(owner, url) == ["after"]


def test_a_grant_conditioned_on_secure_transport_does_not_apply_over_plain_http(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, grantee, _ = clients
    url = owner.create_queue(QueueName=unique_name("tls-only-"))["QueueUrl"]
    set_policy(owner, url, {"Effect": "Allow", "Principal": {"AWS": BILLING.account_id},
                            "Action": "sqs:SendMessage", "Resource": arn_of(url),
                            "Condition": {"Bool": {"aws:SecureTransport": "true"}}})

    refused = refusal(lambda: grantee.send_message(QueueUrl=url, MessageBody="x"))

    assert refused[:2] == (403, "AccessDenied")


def test_the_aws_cli_of_another_account_sends_only_once_a_policy_grants_it(
    server: CqsProcess,
) -> None:
    owner = aws_cli(server.url, ORDERS, "create-queue", "--queue-name", unique_name("cli-"))
    url = owner["QueueUrl"]
    with pytest.raises(CliError) as before:
        aws_cli(server.url, BILLING, "send-message", "--queue-url", url, "--message-body", "x")
    aws_cli(server.url, ORDERS, "add-permission", "--queue-url", url, "--label", "cli",
            "--aws-account-ids", BILLING.account_id, "--actions", "SendMessage")
    sent = aws_cli(server.url, BILLING, "send-message", "--queue-url", url,
                   "--message-body", "via cli")
    received = aws_cli(server.url, ORDERS, "receive-message", "--queue-url", url,
                       "--wait-time-seconds", "1")

    assert before.value.status != 0 and "AccessDenied" in before.value.stderr
    assert [m["MessageId"] for m in received["Messages"]] == [sent["MessageId"]]
    assert received["Messages"][0]["Body"] == "via cli"


def test_a_move_task_and_a_dead_letter_target_of_another_account_are_refused(
    clients: tuple[Any, Any, Any],
) -> None:
    owner, other, _ = clients
    dlq = owner.create_queue(QueueName=unique_name("dlq-"))["QueueUrl"]
    set_policy(owner, dlq, {"Effect": "Allow", "Principal": "*", "Action": "sqs:*",
                            "Resource": "*"})
    source = other.create_queue(QueueName=unique_name("source-"))["QueueUrl"]

    move = refusal(lambda: other.start_message_move_task(SourceArn=arn_of(dlq)))
    listing = refusal(lambda: other.list_message_move_tasks(SourceArn=arn_of(dlq)))
    redrive = refusal(lambda: other.set_queue_attributes(QueueUrl=source, Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn_of(dlq),
                                     "maxReceiveCount": "3"})}))

    assert move[:2] == listing[:2] == (403, "AccessDenied")
    assert redrive[:2] == (400, "InvalidParameterValue")
    assert "same account" in redrive[2]


def test_over_https_secure_transport_is_true_for_the_policy(
    redis_server: Any, start_cqs_server: StartServer, tmp_path_factory: pytest.TempPathFactory,
    boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    """The same grant that does not apply over plain HTTP (above) applies over TLS, and a
    Deny of insecure transport does not bind a request over TLS."""
    authority = TestAuthority(tmp_path_factory.mktemp("cross-tls"))
    files = authority.issue("cqs-api")
    credentials = tmp_path_factory.mktemp("cross-tls-keys") / "credentials.toml"
    credentials.write_text(credentials_toml(ORDERS, BILLING))
    server = start_cqs_server([redis_server.url], tls_ca=authority.ca_file, extra_args=[
        "--auth", "verify", "--credentials-file", str(credentials),
        "--tls-cert", str(files.cert), "--tls-key", str(files.key)])
    owner, grantee = (
        boto3_sessions["json"].client(
            "sqs", endpoint_url=server.url, region_name=REGION, verify=str(authority.ca_file),
            aws_access_key_id=key.key_id, aws_secret_access_key=key.secret,
            config=Config(retries={"total_max_attempts": 1}))
        for key in (ORDERS, BILLING)
    )
    url = owner.create_queue(QueueName=unique_name("tls-only-"))["QueueUrl"]
    set_policy(
        owner, url,
        {"Effect": "Allow", "Principal": {"AWS": BILLING.account_id},
         "Action": "sqs:SendMessage", "Resource": arn_of(url),
         "Condition": {"Bool": {"aws:SecureTransport": "true"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "sqs:*", "Resource": arn_of(url),
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
    )

    grantee.send_message(QueueUrl=url, MessageBody="over tls")

    assert url.startswith("https://")
    assert bodies(owner, url) == ["over tls"]
