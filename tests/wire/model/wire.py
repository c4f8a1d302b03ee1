"""How the model-driven tests talk to cqs: a request given as the SQS model's members,
serialized by botocore itself for either protocol, sent raw, and the answer as a user sees it.

Owns the two service models (the installed botocore's JSON one, the vendored query one), the
serializing of members for each protocol (botocore's own serializers, without its client-side
validation, so a request may leave out a required member or carry a value outside an enum),
`Answer` (status, error code, and for JSON the exception class botocore raises), and `Scene`:
the queues and messages the requests refer to, made once per session.

Must not import cqs: the server is seen only through HTTP.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import boto3
import botocore.parsers
import botocore.serialize
import botocore.session
from botocore.awsrequest import HTTPHeaders
from botocore.model import OperationModel, ServiceModel

from tests.wire.conftest import QUERY_MODEL_PATH, REGION, send_json, send_query

PROTOCOLS = ("json", "query")
Members = dict[str, Any]


@cache
def service_model(protocol: str) -> ServiceModel:
    """botocore's SQS model as installed (json), or the vendored query-protocol one."""
    session = botocore.session.get_session()
    if protocol == "query":
        session.set_config_variable("data_path", str(QUERY_MODEL_PATH))
    model = session.get_service_model("sqs")
    assert model.protocol == protocol
    return model


def operation(protocol: str, action: str) -> OperationModel:
    return service_model(protocol).operation_model(action)


def _query_error_trait(shape_name: str) -> dict[str, Any]:
    """The query model's `error` trait of a modelled error; {} for an error it lacks (the
    vendored model predates InvalidAddress, InvalidSecurity, the KMS errors...)."""
    model = service_model("query")
    if shape_name not in model.shape_names:
        return {}
    return dict(model.shape_for(shape_name).metadata.get("error", {}))


def query_error_code(shape_name: str) -> str:
    """The code SQS answers for a modelled error (the query model's `error.code`, e.g.
    QueueDoesNotExist -> AWS.SimpleQueueService.NonExistentQueue), else the shape's name."""
    return str(_query_error_trait(shape_name).get("code", shape_name))


def modelled_status(shape_name: str) -> int | None:
    """The HTTP status the query model gives a modelled error, if it gives one."""
    error = _query_error_trait(shape_name)
    return int(error["httpStatusCode"]) if "httpStatusCode" in error else None


@cache
def _json_client() -> Any:
    """A JSON client only for its exception classes (nothing is sent through it)."""
    return boto3.session.Session().client(
        "sqs", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )


@dataclass(frozen=True)
class Answer:
    protocol: str
    status: int
    code: str | None  # the error code a user sees; None for a success
    body: bytes
    exception_class: str | None = None  # JSON: the botocore exception class raised

    def __str__(self) -> str:
        return f"{self.protocol} {self.status} {self.code}: {self.body[:300]!r}"


def _json_answer(action: str, status: int, headers: Mapping[str, str], body: bytes) -> Answer:
    if status == 200:
        return Answer("json", status, None, body)
    lowered = HTTPHeaders()
    for name, value in headers.items():
        lowered[name.lower()] = value
    parsed = botocore.parsers.create_parser("json").parse(
        {"status_code": status, "headers": lowered, "body": body},
        operation("json", action).output_shape,
    )
    error = parsed.get("Error", {})
    # What botocore's client does: the query code is shown, the __type picks the class.
    cls = _json_client().exceptions.from_code(error.get("QueryErrorCode") or error.get("Code"))
    return Answer("json", status, error.get("Code"), body, cls.__name__)


def send(endpoint: str, protocol: str, action: str, members: Members) -> Answer:
    """`members` (model names, as boto3 takes them) serialized as botocore would, sent raw."""
    serializer = botocore.serialize.create_serializer(protocol, include_validation=False)
    request = serializer.serialize_to_request(members, operation(protocol, action))
    if protocol == "json":
        reply = send_json(endpoint, action, request["body"])
        return _json_answer(action, reply.status, reply.headers, reply.body)
    query_reply = send_query(endpoint, action, request["body"])
    code = None if query_reply.status == 200 else query_reply.error_code
    return Answer("query", query_reply.status, code, query_reply.body)


def send_json_as_is(endpoint: str, action: str, members: Members) -> Answer:
    """`members` as a JSON body without botocore's serializer, which would coerce a value of
    the wrong type (a string where a list belongs becomes a list of its characters)."""
    reply = send_json(endpoint, action, members)
    return _json_answer(action, reply.status, reply.headers, reply.body)


def call_ok(endpoint: str, action: str, members: Members) -> Any:
    """A setup call over JSON that must succeed; its decoded answer."""
    answer = send(endpoint, "json", action, members)
    assert answer.status == 200, str(answer)
    return json.loads(answer.body or b"{}")


def unique(prefix: str = "m-") -> str:
    return prefix + uuid.uuid4().hex[:12]


class Scene:
    """Queues and messages the generated requests refer to, made over JSON."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.queue_url = self.fresh_queue()
        self.queue_arn = self.arn_of(self.queue_url)

    def fresh_queue(self, **attributes: str) -> str:
        return self.fresh_queue_named(unique(), **attributes)

    def fresh_queue_named(self, name: str, **attributes: str) -> str:
        members: Members = {"QueueName": name}
        if attributes:
            members["Attributes"] = attributes
        return str(call_ok(self.endpoint, "CreateQueue", members)["QueueUrl"])

    def arn_of(self, queue_url: str) -> str:
        found = call_ok(
            self.endpoint, "GetQueueAttributes",
            {"QueueUrl": queue_url, "AttributeNames": ["QueueArn"]},
        )
        return str(found["Attributes"]["QueueArn"])

    def missing_queue_url(self) -> str:
        return self.queue_url.rsplit("/", 1)[0] + "/" + unique("gone-")

    def receipt_handle(self, queue_url: str | None = None, visibility: int = 60) -> str:
        """The handle of a message just sent to and received from the queue."""
        url = queue_url or self.fresh_queue()
        call_ok(self.endpoint, "SendMessage", {"QueueUrl": url, "MessageBody": "hello"})
        received = call_ok(
            self.endpoint, "ReceiveMessage",
            {"QueueUrl": url, "VisibilityTimeout": visibility, "WaitTimeSeconds": 1},
        )
        return str(received["Messages"][0]["ReceiptHandle"])
