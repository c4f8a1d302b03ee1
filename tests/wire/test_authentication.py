"""`--auth verify`: every SQS request must carry a valid SigV4 signature of a known key, whose
account it then acts in; through boto3 (JSON 1.0), boto3 over the query model, the AWS CLI
and raw HTTP, against a real server.

The server under test has a credentials file with keys of two accounts. The scenario that
works with good credentials (create, send, receive, delete) runs against it and against the
shared auth-off server alike; the refusals run against the verify server only. SIGHUP and
the refusals to start are in test_credentials_reload.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import botocore.auth
import pytest
from botocore.exceptions import ClientError

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.wire.auth_keys import (
    BILLING,
    ORDERS,
    STRANGER,
    Key,
    client,
    start_verify_server,
    works,
)
from tests.wire.conftest import (
    REGION,
    QueryReply,
    send_json,
    send_query,
    unique_name,
)

AWS_CLI = Path(sys.executable).with_name("aws")


@pytest.fixture(scope="module")
def verify_server(
    redis_server: Any, start_cqs_server: StartServer, tmp_path_factory: pytest.TempPathFactory
) -> CqsProcess:
    server, _ = start_verify_server(
        start_cqs_server, redis_server.url, tmp_path_factory.mktemp("auth"), ORDERS, BILLING
    )
    return server


def refusal(call: Callable[[], object]) -> tuple[int, str, str]:
    """(HTTP status, code, message) of the error `call` raised."""
    with pytest.raises(ClientError) as caught:
        call()
    response = caught.value.response
    return (
        int(response["ResponseMetadata"]["HTTPStatusCode"]),
        str(response["Error"]["Code"]),
        str(response["Error"].get("Message", "")),
    )


def aws_cli(endpoint: str, key: Key, *args: str, secret: str | None = None) -> Any:
    """`aws sqs <args>` with `key`'s credentials; its parsed JSON output, or CliError."""
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("AWS_")
    } | {
        "AWS_ACCESS_KEY_ID": key.key_id,
        "AWS_SECRET_ACCESS_KEY": secret or key.secret,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_MAX_ATTEMPTS": "1",
    }
    done = subprocess.run(
        [str(AWS_CLI), "sqs", *args, "--endpoint-url", endpoint, "--output", "json"],
        env=environment, capture_output=True, text=True, timeout=60,
    )
    if done.returncode != 0:
        raise CliError(done.returncode, done.stderr)
    return json.loads(done.stdout) if done.stdout.strip() else None


class CliError(Exception):
    def __init__(self, status: int, stderr: str) -> None:
        super().__init__(f"aws exited {status}: {stderr}")
        self.status = status
        self.stderr = stderr


# --- good credentials: the same scenario with auth off and with auth verify ----------------

@dataclass(frozen=True)
class Served:
    url: str
    account_id: str  # the account ORDERS' requests act in there


@pytest.fixture(params=["auth-off", "auth-verify"])
def served(request: pytest.FixtureRequest, cqs_server: CqsProcess) -> Served:
    """The shared auth-off server (every caller is its account), or the verify server."""
    if request.param == "auth-off":
        return Served(cqs_server.url, "000000000000")
    return Served(request.getfixturevalue("verify_server").url, ORDERS.account_id)


@pytest.mark.parametrize("speaker", ["json", "query"])
def test_good_credentials_create_send_receive_and_delete_through_boto3(
    served: Served, speaker: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    server_url = served.url
    sqs = client(boto3_sessions, speaker, server_url, ORDERS)
    name = unique_name("auth-")

    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sent = sqs.send_message(QueueUrl=url, MessageBody="signed hello")
    messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"])
    sqs.delete_queue(QueueUrl=url)

    assert [m["MessageId"] for m in messages] == [sent["MessageId"]]
    assert messages[0]["Body"] == "signed hello"
    assert url == f"{server_url}/{served.account_id}/{name}"


def test_good_credentials_create_send_receive_and_delete_through_the_aws_cli(
    served: Served,
) -> None:
    server_url = served.url
    name = unique_name("auth-cli-")

    url = aws_cli(server_url, ORDERS, "create-queue", "--queue-name", name)["QueueUrl"]
    sent = aws_cli(server_url, ORDERS, "send-message", "--queue-url", url,
                   "--message-body", "from the cli")
    received = aws_cli(server_url, ORDERS, "receive-message", "--queue-url", url,
                       "--wait-time-seconds", "2")["Messages"]
    aws_cli(server_url, ORDERS, "delete-message", "--queue-url", url,
            "--receipt-handle", received[0]["ReceiptHandle"])
    aws_cli(server_url, ORDERS, "delete-queue", "--queue-url", url)

    assert url == f"{server_url}/{served.account_id}/{name}"
    assert [m["MessageId"] for m in received] == [sent["MessageId"]]
    assert received[0]["Body"] == "from the cli"


def test_with_auth_verify_a_queue_url_names_the_signing_keys_account(
    verify_server: CqsProcess, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    name = unique_name("auth-")
    url = client(boto3_sessions, "json", verify_server.url, BILLING).create_queue(
        QueueName=name)["QueueUrl"]

    assert url == f"{verify_server.url}/{BILLING.account_id}/{name}"


# --- refused ------------------------------------------------------------------------------

@pytest.mark.parametrize("speaker", ["json", "query"])
def test_a_wrong_secret_is_refused_as_a_signature_that_does_not_match(
    verify_server: CqsProcess, speaker: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    sqs = client(boto3_sessions, speaker, verify_server.url, ORDERS, secret="wrong-secret")

    status, code, message = refusal(sqs.list_queues)

    assert (status, code) == (403, "SignatureDoesNotMatch")
    assert "wrong-secret" not in message and ORDERS.secret not in message


@pytest.mark.parametrize("speaker", ["json", "query"])
def test_an_unknown_key_is_refused_as_an_invalid_client_token_id(
    verify_server: CqsProcess, speaker: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    sqs = client(boto3_sessions, speaker, verify_server.url, STRANGER)

    assert refusal(lambda: sqs.create_queue(QueueName=unique_name()))[:2] == (
        403, "InvalidClientTokenId"
    )


def test_the_aws_cli_shows_each_refusal_and_fails(verify_server: CqsProcess) -> None:
    with pytest.raises(CliError) as wrong_secret:
        aws_cli(verify_server.url, ORDERS, "list-queues", secret="wrong-secret")
    with pytest.raises(CliError) as unknown_key:
        aws_cli(verify_server.url, STRANGER, "list-queues")

    assert wrong_secret.value.status != 0 and unknown_key.value.status != 0
    assert "(SignatureDoesNotMatch)" in wrong_secret.value.stderr
    assert "(InvalidClientTokenId)" in unknown_key.value.stderr
    assert "wrong-secret" not in wrong_secret.value.stderr


def test_an_unsigned_request_misses_the_authentication_token_in_both_protocols(
    verify_server: CqsProcess,
) -> None:
    json_reply = send_json(verify_server.url, "ListQueues", {})
    query_reply = send_query(verify_server.url, "ListQueues")
    get_reply = send_query(verify_server.url, "ListQueues", method="GET")

    assert json_reply.status == 403
    assert json_reply.code_boto3_shows == "MissingAuthenticationToken"
    assert json_reply.error_type == "MissingAuthenticationTokenException"
    for reply in (query_reply, get_reply):
        assert (reply.status, reply.error_code) == (403, "MissingAuthenticationToken")


def test_an_unknown_action_with_no_signature_is_refused_before_anything_else(
    verify_server: CqsProcess,
) -> None:
    assert send_query(verify_server.url, "NoSuchAction").error_code == (
        "MissingAuthenticationToken"
    )
    assert send_json(verify_server.url, "NoSuchAction", b"not json").code_boto3_shows == (
        "MissingAuthenticationToken"
    )


@pytest.mark.parametrize("speaker", ["json", "query"])
def test_a_request_signed_twenty_minutes_ago_has_an_expired_signature(
    verify_server: CqsProcess, speaker: str, boto3_sessions: dict[str, boto3.session.Session],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client's clock is 20 minutes behind: botocore signs with that time."""
    sqs = client(boto3_sessions, speaker, verify_server.url, ORDERS)
    real_now = botocore.auth.get_current_datetime
    monkeypatch.setattr(
        botocore.auth, "get_current_datetime", lambda: real_now() - timedelta(minutes=20)
    )

    status, code, message = refusal(sqs.list_queues)

    assert (status, code) == (403, "SignatureDoesNotMatch")
    assert message.startswith("Signature expired: ") and message.endswith("- 15 min.)")


# --- presigned URLs (query protocol) ----------------------------------------------------------

def fetch(url: str) -> QueryReply:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return QueryReply(status, {}, body, ET.fromstring(body))


def test_a_presigned_get_works_while_fresh_and_is_refused_once_expired(
    verify_server: CqsProcess, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    """Wall clock: presigned URLs are signed with, and expire by, real time (botocore signs
    with the time of day). The short-lived URL is only fetched once its second is surely
    over, and the fresh ones live for a minute, so a slow machine changes neither outcome."""
    sqs = client(boto3_sessions, "query", verify_server.url, ORDERS)
    url = sqs.create_queue(QueueName=unique_name("presigned-"))["QueueUrl"]
    send = sqs.generate_presigned_url(
        "send_message", Params={"QueueUrl": url, "MessageBody": "presigned hello"},
        ExpiresIn=60, HttpMethod="GET",
    )
    receive = sqs.generate_presigned_url(
        "receive_message", Params={"QueueUrl": url, "WaitTimeSeconds": 1},
        ExpiresIn=60, HttpMethod="GET",
    )
    signed_at = time.time()
    short_lived = sqs.generate_presigned_url(
        "receive_message", Params={"QueueUrl": url}, ExpiresIn=1, HttpMethod="GET",
    )

    sent = fetch(send)
    received = fetch(receive)
    time.sleep(max(0.0, signed_at + 2.5 - time.time()))  # X-Amz-Date has whole seconds
    expired = fetch(short_lived)

    assert "X-Amz-Signature=" in send and "Authorization" not in send
    assert sent.status == 200 and sent.text("SendMessageResult/MessageId")
    assert received.status == 200
    assert received.texts("ReceiveMessageResult/Message/Body") == ["presigned hello"]
    assert (expired.status, expired.error_code) == (400, "RequestExpired")


def test_a_presigned_url_with_a_changed_parameter_is_refused(
    verify_server: CqsProcess, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    sqs = client(boto3_sessions, "query", verify_server.url, ORDERS)
    url = sqs.generate_presigned_url(
        "list_queues", Params={"QueueNamePrefix": "mine"}, ExpiresIn=60, HttpMethod="GET"
    )

    reply = fetch(url.replace("QueueNamePrefix=mine", "QueueNamePrefix=theirs"))

    assert (reply.status, reply.error_code) == (403, "SignatureDoesNotMatch")


# --- two accounts ---------------------------------------------------------------------------

@pytest.mark.parametrize("speaker", ["json", "query"])
def test_two_accounts_each_see_and_touch_only_their_own_queues(
    verify_server: CqsProcess, speaker: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    orders = client(boto3_sessions, speaker, verify_server.url, ORDERS)
    billing = client(boto3_sessions, speaker, verify_server.url, BILLING)
    name = unique_name("shared-name-")

    orders_url = orders.create_queue(QueueName=name)["QueueUrl"]
    billing_url = billing.create_queue(QueueName=name)["QueueUrl"]
    orders.send_message(QueueUrl=orders_url, MessageBody="for orders")
    status, code, _ = refusal(
        lambda: orders.send_message(QueueUrl=billing_url, MessageBody="intruder")
    )
    deleting = refusal(lambda: orders.delete_queue(QueueUrl=billing_url))

    assert orders_url != billing_url
    assert orders_url.endswith(f"/{ORDERS.account_id}/{name}")
    assert billing_url.endswith(f"/{BILLING.account_id}/{name}")
    assert orders.list_queues(QueueNamePrefix=name)["QueueUrls"] == [orders_url]
    assert billing.list_queues(QueueNamePrefix=name)["QueueUrls"] == [billing_url]
    all_orders = orders.list_queues().get("QueueUrls", [])
    assert all(f"/{ORDERS.account_id}/" in u for u in all_orders)
    assert billing.receive_message(QueueUrl=billing_url).get("Messages", []) == []
    assert (status, code) == (403, "AccessDenied")  # no Policy grants another account
    assert deleting[:2] == (403, "AccessDenied")
    assert billing.get_queue_url(QueueName=name)["QueueUrl"] == billing_url


# --- SIGHUP and the start ---------------------------------------------------------------------

def test_no_secret_appears_in_the_verify_servers_log(
    verify_server: CqsProcess, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    assert works(client(boto3_sessions, "json", verify_server.url, ORDERS))
    assert not works(client(boto3_sessions, "query", verify_server.url, ORDERS, "wrong-secret"))

    log = verify_server.log_tail(1_000_000)

    assert "auth is verify: every SQS request must be signed (SigV4) by one of 2" in log
    for secret in (ORDERS.secret, BILLING.secret, "wrong-secret"):
        assert secret not in log
