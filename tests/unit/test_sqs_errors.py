"""The error table and its rendering, as botocore and boto3 read it; and the app's own errors.

Rendered errors are fed through botocore's own parsers (and, for the app, through a real
boto3 client against the aiohttp app on a local port), so a wrong code, header or status
fails here the way it would fail for a client. No storage is involved: the app is given no
service, or a small stand-in service that raises the error under test.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any

import boto3
import botocore.parsers
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from botocore.config import Config
from botocore.exceptions import ClientError

from cqs.domain import errors
from cqs.domain.model import QueueIdentity
from cqs.service import QueueService
from cqs.sqs_api import ApiSettings, add_sqs_routes, create_api_app
from cqs.sqs_api.app import ServiceSource
from cqs.sqs_api.errors import (
    ERROR_TABLE,
    InternalError,
    is_mapped,
    render_json_error,
    render_query_error,
    wire_error_for,
)
from cqs.sqs_api.protocol import (
    MalformedJson,
    MissingAction,
    RepeatedParameter,
    RequestTooLarge,
    UnknownOperation,
)
from tests.unit.test_json_codec import PERMIT_ALL, _json_operation
from tests.unit.test_query_codec import query_operation

ACCOUNT = "000000000000"


def _error_classes() -> list[type[errors.CqsError]]:
    return [
        cls for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.CqsError) and cls is not errors.CqsError
    ]


def parse_json_error(body: bytes, status: int, headers: dict[str, str]) -> dict[str, Any]:
    parsed: dict[str, Any] = botocore.parsers.create_parser("json").parse(
        {"body": body, "headers": headers, "status_code": status},
        _json_operation("GetQueueUrl").output_shape,
    )
    return parsed


def parse_query_error(body: bytes, status: int) -> dict[str, Any]:
    parsed: dict[str, Any] = botocore.parsers.create_parser("query").parse(
        {"body": body, "headers": {}, "status_code": status},
        query_operation("GetQueueUrl").output_shape,
    )
    return parsed


# --- the table --------------------------------------------------------------------------------

def test_every_error_class_in_cqs_errors_has_a_wire_mapping() -> None:
    unmapped = [cls.__name__ for cls in _error_classes() if cls not in ERROR_TABLE]

    assert unmapped == []
    assert errors.QueueDoesNotExist in _error_classes()  # the scan does find the classes


@pytest.mark.parametrize(
    ("error_class", "query_code", "json_type", "status", "sender_fault"),
    [
        (errors.QueueDoesNotExist, "AWS.SimpleQueueService.NonExistentQueue",
         "com.amazonaws.sqs#QueueDoesNotExist", 400, True),
        (errors.QueueNameExists, "QueueAlreadyExists", "com.amazonaws.sqs#QueueNameExists",
         400, True),
        (errors.ReceiptHandleIsInvalid, "ReceiptHandleIsInvalid",
         "com.amazonaws.sqs#ReceiptHandleIsInvalid", 404, True),
        (errors.MessageNotInflight, "AWS.SimpleQueueService.MessageNotInflight",
         "com.amazonaws.sqs#MessageNotInflight", 400, True),
        (errors.EmptyBatchRequest, "AWS.SimpleQueueService.EmptyBatchRequest",
         "com.amazonaws.sqs#EmptyBatchRequest", 400, True),
        (errors.TooManyEntriesInBatchRequest,
         "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
         "com.amazonaws.sqs#TooManyEntriesInBatchRequest", 400, True),
        (errors.BatchEntryIdsNotDistinct, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
         "com.amazonaws.sqs#BatchEntryIdsNotDistinct", 400, True),
        (errors.InvalidBatchEntryId, "AWS.SimpleQueueService.InvalidBatchEntryId",
         "com.amazonaws.sqs#InvalidBatchEntryId", 400, True),
        (errors.BatchRequestTooLong, "AWS.SimpleQueueService.BatchRequestTooLong",
         "com.amazonaws.sqs#BatchRequestTooLong", 400, True),
        (errors.InvalidAttributeName, "InvalidAttributeName",
         "com.amazonaws.sqs#InvalidAttributeName", 400, True),
        (errors.InvalidAttributeValue, "InvalidAttributeValue",
         "com.amazonaws.sqs#InvalidAttributeValue", 400, True),
        (errors.InvalidMessageContents, "InvalidMessageContents",
         "com.amazonaws.sqs#InvalidMessageContents", 400, True),
        # JSON names of the unmodelled two as AWS's recorded answers give them (LocalStack's
        # snapshot tests, QueryErrorCode of test_send_oversized_message and
        # test_posting_to_fifo_requires_deduplicationid_group_id).
        (errors.MessageTooLong, "InvalidParameterValue",
         "com.amazonaws.sqs#InvalidParameterValueException", 400, True),
        (errors.InvalidParameterValue, "InvalidParameterValue",
         "com.amazonaws.sqs#InvalidParameterValueException", 400, True),
        (errors.MissingParameter, "MissingParameter",
         "com.amazonaws.sqs#MissingRequiredParameterException", 400, True),
        (errors.UnsupportedOperation, "AWS.SimpleQueueService.UnsupportedOperation",
         "com.amazonaws.sqs#UnsupportedOperation", 400, True),
        (errors.InvalidAddress, "InvalidAddress", "com.amazonaws.sqs#InvalidAddress", 404, True),
        (errors.StorageUnavailable, "ServiceUnavailable",
         "com.amazonaws.sqs#ServiceUnavailable", 503, False),
        (errors.UnknownAction, "InvalidAction", "com.amazonaws.sqs#InvalidAction", 400, True),
        # AWS's common-errors table gives MalformedQueryString a 404.
        (errors.MalformedRequest, "MalformedQueryString",
         "com.amazonaws.sqs#MalformedQueryString", 404, True),
        (RepeatedParameter, "InvalidQueryParameter",
         "com.amazonaws.sqs#InvalidQueryParameter", 400, True),
        (UnknownOperation, "InvalidAction",
         "com.amazon.coral.service#UnknownOperationException", 400, True),
        (MalformedJson, "SerializationException",
         "com.amazon.coral.service#SerializationException", 400, True),
        (MissingAction, "MissingAction", "com.amazonaws.sqs#MissingAction", 400, True),
        (RequestTooLarge, "RequestEntityTooLarge", "com.amazonaws.sqs#RequestEntityTooLarge",
         413, True),
        (InternalError, "InternalError", "com.amazonaws.sqs#InternalError", 500, False),
    ],
)
def test_each_error_has_the_aws_code_type_status_and_fault(
    error_class: type[errors.CqsError],
    query_code: str,
    json_type: str,
    status: int,
    sender_fault: bool,
) -> None:
    wire = wire_error_for(error_class("x"))

    assert (wire.query_code, wire.json_type, wire.status, wire.sender_fault) == (
        query_code, json_type, status, sender_fault
    )


def test_an_error_class_nobody_mapped_becomes_an_internal_error() -> None:
    class SomethingNew(errors.CqsError):
        pass

    assert wire_error_for(SomethingNew("?")) == ERROR_TABLE[InternalError]
    assert not is_mapped(SomethingNew)


def test_a_subclass_of_a_mapped_error_inherits_its_mapping() -> None:
    class StaleHandle(errors.ReceiptHandleIsInvalid):
        pass

    assert wire_error_for(StaleHandle("")).query_code == "ReceiptHandleIsInvalid"


# --- rendering, read back by botocore ---------------------------------------------------------

def test_a_json_error_gives_boto3_the_classic_query_code_and_the_modelled_exception() -> None:
    rendered = render_json_error(errors.QueueDoesNotExist("No queue named q."), "req-1")

    parsed = parse_json_error(rendered.body, rendered.status, dict(rendered.headers))

    assert rendered.status == 400
    assert rendered.headers["x-amzn-query-error"] == (
        "AWS.SimpleQueueService.NonExistentQueue;Sender"
    )
    assert parsed["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert parsed["Error"]["QueryErrorCode"] == "QueueDoesNotExist"
    assert parsed["Error"]["Type"] == "Sender"
    assert parsed["Error"]["Message"] == "No queue named q."
    assert json.loads(rendered.body) == {
        "__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "No queue named q."
    }
    client = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="k",
                          aws_secret_access_key="s")
    assert client.exceptions.from_code(parsed["Error"]["QueryErrorCode"]) is (
        client.exceptions.QueueDoesNotExist
    )


def test_a_json_storage_outage_is_a_retryable_503_receiver_fault() -> None:
    rendered = render_json_error(errors.StorageUnavailable(""), "req-2")

    parsed = parse_json_error(rendered.body, rendered.status, dict(rendered.headers))

    assert rendered.status == 503
    assert parsed["Error"]["Code"] == "ServiceUnavailable"
    assert parsed["Error"]["Type"] == "Receiver"
    assert parsed["Error"]["Message"] == "The service is unavailable. Please retry the request."


def test_a_query_error_is_an_error_response_botocore_reads() -> None:
    rendered = render_query_error(errors.QueueNameExists("Queue q exists <differently>."),
                                  "req-3")

    parsed = parse_query_error(rendered.body, rendered.status)

    assert rendered.status == 400
    assert rendered.content_type == "text/xml"
    assert parsed["Error"] == {
        "Type": "Sender",
        "Code": "QueueAlreadyExists",
        "Message": "Queue q exists <differently>.",
        "Detail": None,
    }
    assert parsed["ResponseMetadata"]["RequestId"] == "req-3"


def test_a_query_error_body_has_the_aws_shape() -> None:
    rendered = render_query_error(errors.MessageNotInflight(""), "req-4")

    assert rendered.body.decode() == (
        '<?xml version="1.0"?>'
        '<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">'
        "<Error><Type>Sender</Type><Code>AWS.SimpleQueueService.MessageNotInflight</Code>"
        "<Message>The message referred to isn't in flight.</Message><Detail/></Error>"
        "<RequestId>req-4</RequestId></ErrorResponse>"
    )


# --- the app: errors raised before any service call --------------------------------------------

def _app(service: ServiceSource | None = None, **settings: Any) -> web.Application:
    return create_api_app(
        service,  # type: ignore[arg-type]
        ApiSettings(account_id=ACCOUNT, base_url=None, region="us-east-1", **settings),
    )


async def _post(
    app: web.Application, path: str = "/", **kwargs: Any
) -> tuple[int, dict[str, str], bytes]:
    async with TestClient(TestServer(app)) as client:
        response = await client.post(path, **kwargs)
        return response.status, dict(response.headers), await response.read()


async def test_an_unknown_query_action_is_invalid_action_without_reaching_the_service() -> None:
    status, headers, body = await _post(
        _app(), data={"Action": "LaunchRocket", "Version": "2012-11-05"}
    )

    parsed = parse_query_error(body, status)
    assert status == 400
    assert parsed["Error"]["Code"] == "InvalidAction"
    assert headers["x-amzn-RequestId"] == parsed["ResponseMetadata"]["RequestId"]


async def test_an_unknown_json_operation_is_an_unknown_operation_exception() -> None:
    status, headers, body = await _post(
        _app(), data=b"{}",
        headers={"X-Amz-Target": "AmazonSQS.LaunchRocket",
                 "Content-Type": "application/x-amz-json-1.0"},
    )

    assert status == 400
    assert json.loads(body)["__type"] == "com.amazon.coral.service#UnknownOperationException"
    assert headers["x-amzn-query-error"] == "InvalidAction;Sender"
    assert headers["Content-Type"] == "application/x-amz-json-1.0"


async def test_a_malformed_json_body_is_a_serialization_exception() -> None:
    status, headers, body = await _post(
        _app(), data=b'{"QueueName": ',
        headers={"X-Amz-Target": "AmazonSQS.CreateQueue",
                 "Content-Type": "application/x-amz-json-1.0"},
    )

    parsed = parse_json_error(body, status, headers)
    assert status == 400
    assert parsed["Error"]["Code"] == "SerializationException"


async def test_a_body_that_is_not_the_gzip_it_claims_is_refused_then_closed() -> None:
    json_status, json_headers, json_body = await _post(
        _app(), data=b"{}",
        headers={"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Encoding": "gzip",
                 "Content-Type": "application/x-amz-json-1.0"},
    )
    query_status, query_headers, query_body = await _post(
        _app(), data=b"Action=ListQueues",
        headers={"Content-Type": "application/x-www-form-urlencoded",
                 "Content-Encoding": "gzip"},
    )

    assert json_status == 400
    assert parse_json_error(json_body, json_status, json_headers)["Error"]["Code"] == (
        "SerializationException"
    )
    assert query_status == 404
    assert parse_query_error(query_body, query_status)["Error"]["Code"] == "MalformedQueryString"
    assert json_headers["Connection"] == query_headers["Connection"] == "close"


async def test_a_query_request_without_action_is_missing_action() -> None:
    status, _, body = await _post(_app(), data={"QueueName": "orders"})

    assert status == 400
    assert parse_query_error(body, status)["Error"]["Code"] == "MissingAction"


async def test_a_bare_get_of_the_root_is_unknown_operation_as_aws_answers() -> None:
    # AWS: 404 and a bare <UnknownOperationException/> (LocalStack's TestSqsQueryApi,
    # validated against AWS: test_get_without_query_returns_unknown_operation).
    async with TestClient(TestServer(_app())) as client:
        response = await client.get("/")
        body = await response.read()

    assert response.status == 404
    assert b"<UnknownOperationException/>" in body


async def test_a_body_over_the_size_cap_is_a_413_sqs_error_not_a_crash() -> None:
    status, _, body = await _post(
        _app(max_request_bytes=1024),
        data={"Action": "SendMessage", "QueueUrl": "q", "MessageBody": "x" * 4096},
    )

    assert status == 413
    assert parse_query_error(body, status)["Error"]["Code"] == "RequestEntityTooLarge"


async def test_a_chunked_body_over_the_size_cap_is_refused_too() -> None:
    async def chunks() -> Any:
        for _ in range(8):
            yield b"MessageBody=" + b"x" * 512 + b"&"

    status, _, body = await _post(
        _app(max_request_bytes=1024), data=chunks(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )

    assert status == 413
    assert parse_query_error(body, status)["Error"]["Code"] == "RequestEntityTooLarge"


async def test_an_unexpected_exception_is_logged_and_answered_as_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # With no service at all, reaching a handler fails with an AttributeError.
    with caplog.at_level(logging.ERROR, logger="cqs.sqs_api.app"):
        status, headers, body = await _post(
            _app(), data=b'{"QueueName": "orders"}',
            headers={"X-Amz-Target": "AmazonSQS.CreateQueue",
                     "Content-Type": "application/x-amz-json-1.0"},
        )

    parsed = parse_json_error(body, status, headers)
    assert status == 500
    assert parsed["Error"]["Code"] == "InternalError"
    assert parsed["Error"]["Type"] == "Receiver"
    assert any(record.exc_info for record in caplog.records)


async def test_the_error_middleware_leaves_other_routes_of_the_app_alone() -> None:
    async def health(request: web.Request) -> web.Response:
        raise web.HTTPNotFound(text="no health here")

    app = web.Application()
    app.router.add_get("/health/check/deep", health)
    add_sqs_routes(
        app, None,  # type: ignore[arg-type]
        ApiSettings(account_id=ACCOUNT, base_url=None, region="us-east-1"),
    )

    async with TestClient(TestServer(app)) as client:
        response = await client.get("/health/check/deep")
        text = await response.text()

    assert response.status == 404
    assert text == "no health here"


# --- the app, driven by real clients -------------------------------------------------------------

class MissingQueueService(QueueService):
    """Knows no queue but `orders`; records the queues it was asked to purge."""

    def __init__(self) -> None:
        self.purged: list[str] = []
        self.access = PERMIT_ALL  # type: ignore[assignment]

    async def get_queue_url(self, identity: QueueIdentity) -> None:
        if identity.name != "orders":
            raise errors.QueueDoesNotExist("The specified queue does not exist.")

    async def purge_queue(self, identity: QueueIdentity) -> None:
        if identity.name != "orders":
            raise errors.QueueDoesNotExist("")
        self.purged.append(identity.name)


async def test_boto3_sees_the_classic_code_and_the_modelled_exception_for_a_missing_queue(
) -> None:
    async with TestClient(TestServer(_app(MissingQueueService()))) as client:
        endpoint = str(client.make_url("/"))

        def call_boto3() -> tuple[ClientError, bool, str]:
            sqs = boto3.client(
                "sqs", endpoint_url=endpoint, region_name="us-east-1",
                aws_access_key_id="k", aws_secret_access_key="s",
                config=Config(retries={"total_max_attempts": 1}),
            )
            found = sqs.get_queue_url(QueueName="orders")["QueueUrl"]
            try:
                sqs.get_queue_url(QueueName="absent")
            except ClientError as error:
                return error, isinstance(error, sqs.exceptions.QueueDoesNotExist), found
            raise AssertionError("GetQueueUrl of an absent queue succeeded")

        error, is_modelled, found_url = await asyncio.to_thread(call_boto3)

    assert error.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert is_modelled
    assert found_url == f"{endpoint}{ACCOUNT}/orders"


async def test_a_query_request_posted_to_the_queue_url_acts_on_that_queue() -> None:
    service = MissingQueueService()
    app = _app(service)

    ok_status, ok_headers, ok_body = await _post(
        app, f"/{ACCOUNT}/orders", data={"Action": "PurgeQueue", "Version": "2012-11-05"}
    )
    missing_status, _, missing_body = await _post(
        _app(service), f"/{ACCOUNT}/gone", data={"Action": "PurgeQueue"}
    )

    assert ok_status == 200
    assert ok_headers["Content-Type"].startswith("text/xml")
    assert b"<PurgeQueueResponse" in ok_body
    assert service.purged == ["orders"]
    assert missing_status == 400
    assert parse_query_error(missing_body, missing_status)["Error"]["Code"] == (
        "AWS.SimpleQueueService.NonExistentQueue"
    )


async def test_a_query_get_with_parameters_in_the_query_string_is_served() -> None:
    async with TestClient(TestServer(_app(MissingQueueService()))) as client:
        response = await client.get(
            "/", params={"Action": "GetQueueUrl", "QueueName": "orders"},
            headers={"Host": "sqs.example:9324"},
        )
        body = await response.read()

    assert response.status == 200
    assert b"<QueueUrl>http://sqs.example:9324/000000000000/orders</QueueUrl>" in body


async def test_the_app_can_take_a_service_that_only_exists_once_storage_is_connected() -> None:
    holder: dict[str, QueueService] = {}
    app = _app(lambda: holder["service"])
    holder["service"] = MissingQueueService()  # as a cleanup context would, after creation

    status, _, body = await _post(app, data={"Action": "GetQueueUrl", "QueueName": "orders"})

    assert status == 200
    assert b"/000000000000/orders</QueueUrl>" in body


def test_a_storage_error_shows_clients_the_generic_text_never_the_servers_or_driver_errors() -> None:
    error = errors.StorageUnavailable("127.0.0.1:9042: InvalidRequest: key length 70000 > 65535")

    bodies = [render_json_error(error, "r").body, render_query_error(error, "r").body]

    for body in bodies:
        assert b"9042" not in body and b"InvalidRequest" not in body
        assert b"Please retry the request." in body
