"""Regions are separate namespaces on one server with auth off: the region a request acts in
comes from its SigV4 credential scope (read, not verified), else from a Host that names a
region, else the server's own (us-east-1 here).

boto3 clients for us-west-1 and us-west-2 share the suite's auth-off server, over both
protocols; raw unsigned requests show the Host and the default.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.wire.conftest import ACCOUNT_ID, API_VERSION, JSON_CONTENT_TYPE, unique_name

WEST_1, WEST_2, DEFAULT_REGION = "us-west-1", "us-west-2", "us-east-1"
_http = urllib3.PoolManager(retries=False, timeout=10.0)


def regional_client(session: boto3.session.Session, endpoint: str, region: str) -> Any:
    return session.client(
        "sqs", endpoint_url=endpoint, region_name=region,
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=30),
    )


@pytest.fixture
def west(
    cqs_endpoint: str, protocol: str, boto3_sessions: dict[str, boto3.session.Session]
) -> tuple[Any, Any]:
    session = boto3_sessions[protocol]
    return (
        regional_client(session, cqs_endpoint, WEST_1),
        regional_client(session, cqs_endpoint, WEST_2),
    )


def test_same_name_in_two_regions_is_two_queues(west: tuple[Any, Any]) -> None:
    one, two = west
    name = unique_name("regional-")
    url_one = one.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "40"})[
        "QueueUrl"
    ]
    # Other attributes under the same name: no QueueNameExists, it is another queue.
    url_two = two.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "50"})[
        "QueueUrl"
    ]
    try:
        assert url_one == url_two  # a queue URL carries no region: the caller's applies
        attributes_one = one.get_queue_attributes(QueueUrl=url_one, AttributeNames=["All"])[
            "Attributes"
        ]
        attributes_two = two.get_queue_attributes(QueueUrl=url_two, AttributeNames=["All"])[
            "Attributes"
        ]
        assert attributes_one["QueueArn"] == f"arn:aws:sqs:{WEST_1}:{ACCOUNT_ID}:{name}"
        assert attributes_two["QueueArn"] == f"arn:aws:sqs:{WEST_2}:{ACCOUNT_ID}:{name}"
        assert attributes_one["VisibilityTimeout"] == "40"
        assert attributes_two["VisibilityTimeout"] == "50"

        one.send_message(QueueUrl=url_one, MessageBody="for the west-1 queue")
        assert "Messages" not in two.receive_message(QueueUrl=url_two, WaitTimeSeconds=1)
        got = one.receive_message(QueueUrl=url_one, WaitTimeSeconds=1)["Messages"]
        assert [message["Body"] for message in got] == ["for the west-1 queue"]
    finally:
        one.delete_queue(QueueUrl=url_one)
    # Deleting west-1's queue left west-2's.
    assert two.get_queue_url(QueueName=name)["QueueUrl"] == url_two
    two.delete_queue(QueueUrl=url_two)


def test_a_queue_of_one_region_is_invisible_from_another(west: tuple[Any, Any]) -> None:
    one, two = west
    name = unique_name("only-west-1-")
    url = one.create_queue(QueueName=name)["QueueUrl"]
    try:
        listed_one = one.list_queues(QueueNamePrefix=name).get("QueueUrls", [])
        listed_two = two.list_queues(QueueNamePrefix=name).get("QueueUrls", [])
        assert listed_one == [url]
        assert listed_two == []
        with pytest.raises(ClientError) as missing:
            two.get_queue_url(QueueName=name)
        assert missing.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
        with pytest.raises(ClientError) as by_url:
            two.send_message(QueueUrl=url, MessageBody="lost?")
        assert by_url.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    finally:
        one.delete_queue(QueueUrl=url)


def _unsigned_query(endpoint: str, action: str, host: str | None, **params: str) -> Any:
    headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    if host is not None:
        headers["Host"] = host
    fields = {"Action": action, "Version": API_VERSION, **params}
    return _http.request("POST", endpoint + "/", body=urlencode(fields), headers=headers)


def _unsigned_json(endpoint: str, action: str, host: str, body: dict[str, Any]) -> Any:
    return _http.request(
        "POST", endpoint + "/", body=json.dumps(body).encode(),
        headers={"Host": host, "Content-Type": JSON_CONTENT_TYPE,
                 "X-Amz-Target": f"AmazonSQS.{action}"},
    )


def test_an_unsigned_request_to_a_regional_host_name_lands_in_that_region(
    cqs_endpoint: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    name = unique_name("by-host-")
    created = _unsigned_query(
        cqs_endpoint, "CreateQueue", "sqs.eu-west-1.amazonaws.com", QueueName=name
    )
    assert created.status == 200, created.data
    assert b"http://sqs.eu-west-1.amazonaws.com/" in created.data
    session = boto3_sessions["json"]
    ireland = regional_client(session, cqs_endpoint, "eu-west-1")
    home = regional_client(session, cqs_endpoint, DEFAULT_REGION)
    try:
        url = ireland.get_queue_url(QueueName=name)["QueueUrl"]
        arn = ireland.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        assert arn["Attributes"]["QueueArn"] == f"arn:aws:sqs:eu-west-1:{ACCOUNT_ID}:{name}"
        assert home.list_queues(QueueNamePrefix=name).get("QueueUrls", []) == []
        # The legacy <region>.queue.amazonaws.com name, over JSON, finds the same queue.
        listed = _unsigned_json(
            cqs_endpoint, "ListQueues", "eu-west-1.queue.amazonaws.com",
            {"QueueNamePrefix": name},
        )
        assert listed.status == 200, listed.data
        assert len(json.loads(listed.data)["QueueUrls"]) == 1
        # A host that names no region (or not in a region's shape) gets the server's.
        for host in ("localhost", "sqs.moon-base.amazonaws.com"):
            plain = _unsigned_query(cqs_endpoint, "GetQueueUrl", host, QueueName=name)
            assert plain.status == 400, (host, plain.data)
    finally:
        ireland.delete_queue(QueueUrl=ireland.get_queue_url(QueueName=name)["QueueUrl"])


def test_an_unsigned_request_without_a_regional_host_acts_in_the_servers_region(
    cqs_endpoint: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    name = unique_name("default-region-")
    assert _unsigned_query(cqs_endpoint, "CreateQueue", None, QueueName=name).status == 200
    home = regional_client(boto3_sessions["json"], cqs_endpoint, DEFAULT_REGION)
    url = home.get_queue_url(QueueName=name)["QueueUrl"]
    arn = home.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    assert arn["Attributes"]["QueueArn"] == f"arn:aws:sqs:{DEFAULT_REGION}:{ACCOUNT_ID}:{name}"
    home.delete_queue(QueueUrl=url)


def test_a_presigned_url_acts_in_its_credential_scopes_region(
    cqs_endpoint: str, boto3_sessions: dict[str, boto3.session.Session]
) -> None:
    """The presigned X-Amz-Credential names the region as the Authorization header does."""
    one = regional_client(boto3_sessions["json"], cqs_endpoint, WEST_1)
    name = unique_name("presigned-")
    url = one.create_queue(QueueName=name)["QueueUrl"]
    try:
        query_one = regional_client(boto3_sessions["query"], cqs_endpoint, WEST_1)
        presigned = query_one.generate_presigned_url(
            "get_queue_url", Params={"QueueName": name}, ExpiresIn=60
        )
        assert "us-west-1" in presigned
        assert _http.request("GET", presigned).status == 200
        query_two = regional_client(boto3_sessions["query"], cqs_endpoint, WEST_2)
        elsewhere = query_two.generate_presigned_url(
            "get_queue_url", Params={"QueueName": name}, ExpiresIn=60
        )
        assert _http.request("GET", elsewhere).status == 400
    finally:
        one.delete_queue(QueueUrl=url)
