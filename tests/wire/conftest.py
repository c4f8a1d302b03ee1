"""Client-side fixtures of the wire suite: how a user talks to a running cqs server.

Owns the boto3 clients, raw query-protocol and raw JSON requests, unique queue names, the
server's test clock (`advance`), and one small adapter per protocol (`speaker`).

Every test that uses `sqs` (or `speaker`, `queue_url`, `make_queue`) runs twice, once per
protocol (the ElasticMQ MultiSdkTestSuite idea): `[json]` through boto3 as shipped (AWS JSON
1.0) and `[query]` through boto3 over botocore's query-protocol model of SQS (vendored in
`botocore_query/`, see its README), so the same calls and the same assertions cover both.
A test marked `@pytest.mark.json_only` runs over JSON only and must say why in its
docstring; a test using a raw client (`query`, `json_request`) checks that protocol's own
bytes and runs once. The server is the shared `cqs_server`, or, for a test that moves time
with `advance`, `clock_server` (both in tests/fixtures/cqs_server.py).

Must not import cqs: these tests see the server only through HTTP, as a user would.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import boto3
import botocore.session
import pytest
import urllib3
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fixtures.cqs_server import CqsProcess, advance_clock

API_VERSION = "2012-11-05"
SQS_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
ACCOUNT_ID = "000000000000"
REGION = "us-east-1"
JSON_CONTENT_TYPE = "application/x-amz-json-1.0"

# Long enough for the longest long poll (20 s) plus slack; no retries, so errors show as sent.
_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=40.0))


# --- raw query protocol -------------------------------------------------------------------


def _any_namespace(path: str) -> str:
    """'A/B' -> '{*}A/{*}B': find elements whatever namespace the server put them in."""
    return "/".join(
        step if step in ("", ".", "..", "*") or step.startswith("{") else "{*}" + step
        for step in path.split("/")
    )


@dataclass(frozen=True)
class QueryReply:
    """A query-protocol answer: status, headers, raw body and the parsed XML (None if not XML)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    root: ET.Element | None

    def find(self, path: str) -> ET.Element | None:
        assert self.root is not None, f"not XML: {self.body[:300]!r}"
        return self.root.find(_any_namespace(path))

    def findall(self, path: str) -> list[ET.Element]:
        assert self.root is not None, f"not XML: {self.body[:300]!r}"
        return self.root.findall(_any_namespace(path))

    def text(self, path: str) -> str | None:
        element = self.find(path)
        return None if element is None else (element.text or "")

    def texts(self, path: str) -> list[str]:
        return [element.text or "" for element in self.findall(path)]

    @property
    def root_name(self) -> str:
        assert self.root is not None, f"not XML: {self.body[:300]!r}"
        return local_name(self.root)

    @property
    def error_code(self) -> str | None:
        return self.text("Error/Code")


def local_name(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def namespace_of(element: ET.Element) -> str:
    return element.tag[1:].split("}", 1)[0] if element.tag.startswith("{") else ""


class QueryClient(Protocol):
    def __call__(
        self,
        action: str,
        params: Mapping[str, str] | None = None,
        *,
        path: str = "/",
        method: str = "POST",
    ) -> QueryReply: ...


def send_query(
    endpoint: str,
    action: str,
    params: Mapping[str, str] | None = None,
    *,
    path: str = "/",
    method: str = "POST",
) -> QueryReply:
    fields = {"Action": action, "Version": API_VERSION, **(params or {})}
    encoded = urlencode(fields)
    if method == "GET":
        response = _http.request("GET", f"{endpoint}{path}?{encoded}")
    else:
        response = _http.request(
            method,
            endpoint + path,
            body=encoded.encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
        )
    try:
        root: ET.Element | None = ET.fromstring(response.data)
    except ET.ParseError:
        root = None
    return QueryReply(response.status, dict(response.headers), response.data, root)


# --- raw JSON protocol --------------------------------------------------------------------


@dataclass(frozen=True)
class JsonReply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def document(self) -> Any:
        return json.loads(self.body)

    @property
    def error_type(self) -> str:
        """`__type` without its namespace, e.g. 'QueueDoesNotExist'."""
        return str(self.document.get("__type", "")).rsplit("#", 1)[-1]

    @property
    def query_error(self) -> str | None:
        return {k.lower(): v for k, v in self.headers.items()}.get("x-amzn-query-error")

    @property
    def code_boto3_shows(self) -> str:
        """The code boto3 reports: the query code from x-amzn-query-error when present."""
        header = self.query_error
        if header and ";" in header and header.split(";", 1)[0]:
            return header.split(";", 1)[0]
        return self.error_type


class JsonClient(Protocol):
    def __call__(self, action: str, body: Mapping[str, Any] | bytes) -> JsonReply: ...


def send_json(endpoint: str, action: str, body: Mapping[str, Any] | bytes) -> JsonReply:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = _http.request(
        "POST",
        endpoint + "/",
        body=payload,
        headers={"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": f"AmazonSQS.{action}"},
    )
    return JsonReply(response.status, dict(response.headers), response.data)


# --- helpers shared by the test modules ---------------------------------------------------


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def md5_of_message_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> str:
    """The SQS MD5OfMessageAttributes: names sorted; each of name, type and value is
    length-prefixed (4 bytes, big endian); a transport byte 1 (string) or 2 (binary)
    precedes the value."""
    digest = hashlib.md5()

    def put(data: bytes) -> None:
        digest.update(struct.pack(">I", len(data)) + data)

    for name in sorted(attributes):
        value = attributes[name]
        put(name.encode("utf-8"))
        put(str(value["DataType"]).encode("utf-8"))
        if "BinaryValue" in value:
            digest.update(b"\x02")
            put(bytes(value["BinaryValue"]))
        else:
            digest.update(b"\x01")
            put(str(value["StringValue"]).encode("utf-8"))
    return digest.hexdigest()


def unique_name(prefix: str = "t-") -> str:
    return prefix + uuid.uuid4().hex[:12]


def queue_path(queue_url: str) -> str:
    return urlsplit(queue_url).path


def error_code(error: ClientError) -> str:
    return str(error.response["Error"]["Code"])


def http_status(error: ClientError) -> int:
    return int(error.response["ResponseMetadata"]["HTTPStatusCode"])


# --- one adapter per protocol -------------------------------------------------------------


class SqsError(Exception):
    """An error answer, as either protocol reports it to the user."""

    def __init__(self, code: str, status: int, message: str = "") -> None:
        super().__init__(f"{status} {code}: {message}")
        self.code = code
        self.status = status


@dataclass(frozen=True)
class Sent:
    message_id: str
    md5_of_body: str
    md5_of_message_attributes: str | None
    sequence_number: str | None = None  # FIFO queues only


@dataclass(frozen=True)
class Received:
    message_id: str
    receipt_handle: str
    body: str
    md5_of_body: str
    attributes: dict[str, str] = field(default_factory=dict)
    message_attributes: dict[str, dict[str, Any]] = field(default_factory=dict)
    md5_of_message_attributes: str | None = None


@dataclass(frozen=True)
class BatchOutcome:
    successful: dict[str, dict[str, Any]]  # entry id -> result fields
    failed: dict[str, dict[str, Any]]  # entry id -> {"Code", "Message", "SenderFault"}


class Speaker(Protocol):
    """What a user can do with a queue, whichever protocol carries it."""

    protocol: str

    def create_queue(self, name: str, attributes: Mapping[str, str] | None = None) -> str: ...

    def send(
        self,
        queue_url: str,
        body: str,
        *,
        message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        delay_seconds: int | None = None,
        group_id: str | None = None,
        deduplication_id: str | None = None,
    ) -> Sent: ...

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int | None = None,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = None,
        attribute_names: Sequence[str] = (),
        system_attribute_names: Sequence[str] = (),
        message_attribute_names: Sequence[str] = (),
        attempt_id: str | None = None,
    ) -> list[Received]: ...

    def delete(self, queue_url: str, receipt_handle: str) -> None: ...

    def change_visibility(self, queue_url: str, receipt_handle: str, timeout: int) -> None: ...

    def queue_attributes(
        self, queue_url: str, names: Sequence[str] = ("All",)
    ) -> dict[str, str]: ...

    def set_queue_attributes(self, queue_url: str, attributes: Mapping[str, str]) -> None: ...

    def send_batch(self, queue_url: str, entries: Sequence[Mapping[str, Any]]) -> BatchOutcome: ...

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> BatchOutcome: ...

    def change_visibility_batch(
        self, queue_url: str, entries: Sequence[tuple[str, str, int]]
    ) -> BatchOutcome: ...


class Boto3Speaker:
    """Speaks AWS JSON 1.0 through an unmodified boto3 client."""

    protocol = "json"

    def __init__(self, client: Any) -> None:
        self.client = client

    def _call(self, operation: str, **params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = getattr(self.client, operation)(**params)
        except ClientError as error:
            raise SqsError(
                error_code(error), http_status(error), str(error.response["Error"].get("Message"))
            ) from error
        return result

    def create_queue(self, name: str, attributes: Mapping[str, str] | None = None) -> str:
        params: dict[str, Any] = {"QueueName": name}
        if attributes:
            params["Attributes"] = dict(attributes)
        return str(self._call("create_queue", **params)["QueueUrl"])

    def send(
        self,
        queue_url: str,
        body: str,
        *,
        message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        delay_seconds: int | None = None,
        group_id: str | None = None,
        deduplication_id: str | None = None,
    ) -> Sent:
        params: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": body}
        if message_attributes is not None:
            params["MessageAttributes"] = {k: dict(v) for k, v in message_attributes.items()}
        if delay_seconds is not None:
            params["DelaySeconds"] = delay_seconds
        if group_id is not None:
            params["MessageGroupId"] = group_id
        if deduplication_id is not None:
            params["MessageDeduplicationId"] = deduplication_id
        result = self._call("send_message", **params)
        return Sent(
            result["MessageId"], result["MD5OfMessageBody"], result.get("MD5OfMessageAttributes"),
            result.get("SequenceNumber"),
        )

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int | None = None,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = None,
        attribute_names: Sequence[str] = (),
        system_attribute_names: Sequence[str] = (),
        message_attribute_names: Sequence[str] = (),
        attempt_id: str | None = None,
    ) -> list[Received]:
        params: dict[str, Any] = {"QueueUrl": queue_url}
        if attempt_id is not None:
            params["ReceiveRequestAttemptId"] = attempt_id
        if max_messages is not None:
            params["MaxNumberOfMessages"] = max_messages
        if visibility_timeout is not None:
            params["VisibilityTimeout"] = visibility_timeout
        if wait_seconds is not None:
            params["WaitTimeSeconds"] = wait_seconds
        if attribute_names:
            params["AttributeNames"] = list(attribute_names)
        if system_attribute_names:
            params["MessageSystemAttributeNames"] = list(system_attribute_names)
        if message_attribute_names:
            params["MessageAttributeNames"] = list(message_attribute_names)
        result = self._call("receive_message", **params)
        return [
            Received(
                message_id=m["MessageId"],
                receipt_handle=m["ReceiptHandle"],
                body=m["Body"],
                md5_of_body=m["MD5OfBody"],
                attributes=dict(m.get("Attributes", {})),
                message_attributes={k: dict(v) for k, v in m.get("MessageAttributes", {}).items()},
                md5_of_message_attributes=m.get("MD5OfMessageAttributes"),
            )
            for m in result.get("Messages", [])
        ]

    def delete(self, queue_url: str, receipt_handle: str) -> None:
        self._call("delete_message", QueueUrl=queue_url, ReceiptHandle=receipt_handle)

    def change_visibility(self, queue_url: str, receipt_handle: str, timeout: int) -> None:
        self._call(
            "change_message_visibility",
            QueueUrl=queue_url,
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=timeout,
        )

    def queue_attributes(self, queue_url: str, names: Sequence[str] = ("All",)) -> dict[str, str]:
        result = self._call("get_queue_attributes", QueueUrl=queue_url, AttributeNames=list(names))
        return dict(result.get("Attributes", {}))

    def set_queue_attributes(self, queue_url: str, attributes: Mapping[str, str]) -> None:
        self._call("set_queue_attributes", QueueUrl=queue_url, Attributes=dict(attributes))

    @staticmethod
    def _outcome(result: Mapping[str, Any]) -> BatchOutcome:
        return BatchOutcome(
            successful={e["Id"]: dict(e) for e in result.get("Successful", [])},
            failed={e["Id"]: dict(e) for e in result.get("Failed", [])},
        )

    def send_batch(self, queue_url: str, entries: Sequence[Mapping[str, Any]]) -> BatchOutcome:
        return self._outcome(
            self._call("send_message_batch", QueueUrl=queue_url, Entries=[dict(e) for e in entries])
        )

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> BatchOutcome:
        return self._outcome(
            self._call(
                "delete_message_batch",
                QueueUrl=queue_url,
                Entries=[{"Id": i, "ReceiptHandle": h} for i, h in entries],
            )
        )

    def change_visibility_batch(
        self, queue_url: str, entries: Sequence[tuple[str, str, int]]
    ) -> BatchOutcome:
        return self._outcome(
            self._call(
                "change_message_visibility_batch",
                QueueUrl=queue_url,
                Entries=[
                    {"Id": i, "ReceiptHandle": h, "VisibilityTimeout": t} for i, h, t in entries
                ],
            )
        )


def _attribute_params(prefix: str, attributes: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Message attributes as query parameters: <prefix>.N.Name / .Value.DataType / ..."""
    params: dict[str, str] = {}
    for n, (name, value) in enumerate(attributes.items(), start=1):
        params[f"{prefix}.{n}.Name"] = name
        params[f"{prefix}.{n}.Value.DataType"] = str(value["DataType"])
        if "BinaryValue" in value:
            params[f"{prefix}.{n}.Value.BinaryValue"] = base64.b64encode(
                bytes(value["BinaryValue"])
            ).decode()
        else:
            params[f"{prefix}.{n}.Value.StringValue"] = str(value["StringValue"])
    return params


def _numbered(prefix: str, values: Sequence[str]) -> dict[str, str]:
    return {f"{prefix}.{n}": v for n, v in enumerate(values, start=1)}


def parse_message_attributes(message: ET.Element) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for attribute in message.findall(_any_namespace("MessageAttribute")):
        name = attribute.findtext(_any_namespace("Name"), "")
        value = attribute.find(_any_namespace("Value"))
        assert value is not None, "MessageAttribute without Value"
        parsed: dict[str, Any] = {"DataType": value.findtext(_any_namespace("DataType"), "")}
        string_value = value.findtext(_any_namespace("StringValue"))
        binary_value = value.findtext(_any_namespace("BinaryValue"))
        if string_value is not None:
            parsed["StringValue"] = string_value
        if binary_value is not None:
            parsed["BinaryValue"] = base64.b64decode(binary_value)
        found[name] = parsed
    return found


class QuerySpeaker:
    """Speaks the query protocol: form POSTs to the queue URL path, XML answers."""

    protocol = "query"

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def _call(
        self, action: str, params: Mapping[str, str], queue_url: str | None = None
    ) -> QueryReply:
        path = queue_path(queue_url) if queue_url else "/"
        reply = send_query(self.endpoint, action, params, path=path)
        if reply.status != 200:
            code = reply.error_code if reply.root is not None else None
            message = (reply.text("Error/Message") if reply.root is not None else None) or ""
            raise SqsError(
                code or f"<no XML error code: {reply.body[:200]!r}>", reply.status, message
            )
        return reply

    def create_queue(self, name: str, attributes: Mapping[str, str] | None = None) -> str:
        params = {"QueueName": name}
        for n, (key, value) in enumerate((attributes or {}).items(), start=1):
            params[f"Attribute.{n}.Name"] = key
            params[f"Attribute.{n}.Value"] = value
        reply = self._call("CreateQueue", params)
        url = reply.text("CreateQueueResult/QueueUrl")
        assert url, reply.body
        return url

    def send(
        self,
        queue_url: str,
        body: str,
        *,
        message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
        delay_seconds: int | None = None,
        group_id: str | None = None,
        deduplication_id: str | None = None,
    ) -> Sent:
        params = {"MessageBody": body}
        params.update(_attribute_params("MessageAttribute", message_attributes or {}))
        if delay_seconds is not None:
            params["DelaySeconds"] = str(delay_seconds)
        if group_id is not None:
            params["MessageGroupId"] = group_id
        if deduplication_id is not None:
            params["MessageDeduplicationId"] = deduplication_id
        reply = self._call("SendMessage", params, queue_url)
        return Sent(
            reply.text("SendMessageResult/MessageId") or "",
            reply.text("SendMessageResult/MD5OfMessageBody") or "",
            reply.text("SendMessageResult/MD5OfMessageAttributes"),
            reply.text("SendMessageResult/SequenceNumber"),
        )

    def receive(
        self,
        queue_url: str,
        *,
        max_messages: int | None = None,
        visibility_timeout: int | None = None,
        wait_seconds: int | None = None,
        attribute_names: Sequence[str] = (),
        system_attribute_names: Sequence[str] = (),
        message_attribute_names: Sequence[str] = (),
        attempt_id: str | None = None,
    ) -> list[Received]:
        params: dict[str, str] = {}
        if attempt_id is not None:
            params["ReceiveRequestAttemptId"] = attempt_id
        if max_messages is not None:
            params["MaxNumberOfMessages"] = str(max_messages)
        if visibility_timeout is not None:
            params["VisibilityTimeout"] = str(visibility_timeout)
        if wait_seconds is not None:
            params["WaitTimeSeconds"] = str(wait_seconds)
        params.update(_numbered("AttributeName", attribute_names))
        params.update(_numbered("MessageSystemAttributeName", system_attribute_names))
        params.update(_numbered("MessageAttributeName", message_attribute_names))
        reply = self._call("ReceiveMessage", params, queue_url)
        received = []
        for message in reply.findall("ReceiveMessageResult/Message"):
            attributes = {
                a.findtext(_any_namespace("Name"), ""): a.findtext(_any_namespace("Value"), "")
                for a in message.findall(_any_namespace("Attribute"))
            }
            received.append(
                Received(
                    message_id=message.findtext(_any_namespace("MessageId"), ""),
                    receipt_handle=message.findtext(_any_namespace("ReceiptHandle"), ""),
                    body=message.findtext(_any_namespace("Body"), ""),
                    md5_of_body=message.findtext(_any_namespace("MD5OfBody"), ""),
                    attributes=attributes,
                    message_attributes=parse_message_attributes(message),
                    md5_of_message_attributes=message.findtext(
                        _any_namespace("MD5OfMessageAttributes")
                    ),
                )
            )
        return received

    def delete(self, queue_url: str, receipt_handle: str) -> None:
        self._call("DeleteMessage", {"ReceiptHandle": receipt_handle}, queue_url)

    def change_visibility(self, queue_url: str, receipt_handle: str, timeout: int) -> None:
        self._call(
            "ChangeMessageVisibility",
            {"ReceiptHandle": receipt_handle, "VisibilityTimeout": str(timeout)},
            queue_url,
        )

    def queue_attributes(self, queue_url: str, names: Sequence[str] = ("All",)) -> dict[str, str]:
        reply = self._call("GetQueueAttributes", _numbered("AttributeName", names), queue_url)
        return {
            a.findtext(_any_namespace("Name"), ""): a.findtext(_any_namespace("Value"), "")
            for a in reply.findall("GetQueueAttributesResult/Attribute")
        }

    def set_queue_attributes(self, queue_url: str, attributes: Mapping[str, str]) -> None:
        params: dict[str, str] = {}
        for n, (key, value) in enumerate(attributes.items(), start=1):
            params[f"Attribute.{n}.Name"] = key
            params[f"Attribute.{n}.Value"] = value
        self._call("SetQueueAttributes", params, queue_url)

    @staticmethod
    def _outcome(reply: QueryReply, result: str, entry: str) -> BatchOutcome:
        def fields(element: ET.Element) -> dict[str, Any]:
            values: dict[str, Any] = {local_name(child): child.text or "" for child in element}
            if "SenderFault" in values:
                values["SenderFault"] = values["SenderFault"] == "true"
            return values

        successful = [fields(e) for e in reply.findall(f"{result}/{entry}")]
        failed = [fields(e) for e in reply.findall(f"{result}/BatchResultErrorEntry")]
        return BatchOutcome(
            successful={e["Id"]: e for e in successful}, failed={e["Id"]: e for e in failed}
        )

    def send_batch(self, queue_url: str, entries: Sequence[Mapping[str, Any]]) -> BatchOutcome:
        params: dict[str, str] = {}
        for n, entry in enumerate(entries, start=1):
            prefix = f"SendMessageBatchRequestEntry.{n}"
            params[f"{prefix}.Id"] = str(entry["Id"])
            params[f"{prefix}.MessageBody"] = str(entry["MessageBody"])
            for optional in ("DelaySeconds", "MessageGroupId", "MessageDeduplicationId"):
                if optional in entry:
                    params[f"{prefix}.{optional}"] = str(entry[optional])
            params.update(
                _attribute_params(f"{prefix}.MessageAttribute", entry.get("MessageAttributes", {}))
            )
        reply = self._call("SendMessageBatch", params, queue_url)
        return self._outcome(reply, "SendMessageBatchResult", "SendMessageBatchResultEntry")

    def delete_batch(self, queue_url: str, entries: Sequence[tuple[str, str]]) -> BatchOutcome:
        params: dict[str, str] = {}
        for n, (entry_id, handle) in enumerate(entries, start=1):
            params[f"DeleteMessageBatchRequestEntry.{n}.Id"] = entry_id
            params[f"DeleteMessageBatchRequestEntry.{n}.ReceiptHandle"] = handle
        reply = self._call("DeleteMessageBatch", params, queue_url)
        return self._outcome(reply, "DeleteMessageBatchResult", "DeleteMessageBatchResultEntry")

    def change_visibility_batch(
        self, queue_url: str, entries: Sequence[tuple[str, str, int]]
    ) -> BatchOutcome:
        params: dict[str, str] = {}
        for n, (entry_id, handle, timeout) in enumerate(entries, start=1):
            prefix = f"ChangeMessageVisibilityBatchRequestEntry.{n}"
            params[f"{prefix}.Id"] = entry_id
            params[f"{prefix}.ReceiptHandle"] = handle
            params[f"{prefix}.VisibilityTimeout"] = str(timeout)
        reply = self._call("ChangeMessageVisibilityBatch", params, queue_url)
        return self._outcome(
            reply, "ChangeMessageVisibilityBatchResult", "ChangeMessageVisibilityBatchResultEntry"
        )


def receive_within(
    speaker: Speaker, queue_url: str, seconds: float, **options: Any
) -> list[Received]:
    """Receive repeatedly until something comes or `seconds` pass; the last answer is returned.

    Messages that become visible again (visibility timeout, delay) are put back by a
    background worker, so they appear some time after their due moment, not at it.
    """
    deadline = time.monotonic() + seconds
    while True:
        received = speaker.receive(queue_url, **options)
        if received or time.monotonic() >= deadline:
            return received
        time.sleep(0.1)


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(0.1)
    return True


# --- fixtures -----------------------------------------------------------------------------

PROTOCOLS = ("json", "query")
# Fixtures that send hand-made requests of one protocol (`query`: form + XML; `json_request`).
RAW_CLIENTS = {"query", "json_request"}
# botocore's SQS model from before SQS moved to JSON 1.0 (protocol "query"); see its README.
QUERY_MODEL_PATH = Path(__file__).parent / "botocore_query"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "json_only: run over the JSON protocol only (the docstring says why)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that talks through `protocol` once per protocol, unless json_only."""
    if "protocol" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("json_only") is not None:
        marked_alone = metafunc.definition.get_closest_marker("json_only") in getattr(
            metafunc.function, "pytestmark", []
        )
        why = metafunc.function.__doc__ if marked_alone else metafunc.module.__doc__
        assert why and "JSON only" in why, f"{metafunc.function.__name__}: say why JSON only"
        metafunc.parametrize("protocol", ["json"], indirect=True)
    elif RAW_CLIENTS & set(metafunc.fixturenames):
        # The test checks one protocol's own bytes through a raw client; its boto3 calls
        # only set the scene (over JSON, the `protocol` fixture's default), so once is enough.
        return
    else:
        metafunc.parametrize("protocol", PROTOCOLS, indirect=True)


@pytest.fixture
def protocol(request: pytest.FixtureRequest) -> str:
    """The protocol this run of the test speaks: 'json' or 'query' (unparametrized: 'json')."""
    return str(getattr(request, "param", "json"))


@pytest.fixture(scope="session")
def boto3_sessions() -> dict[str, boto3.session.Session]:
    """One boto3 session per protocol; the query one loads the vendored query model first."""
    query_core = botocore.session.get_session()
    query_core.set_config_variable("data_path", str(QUERY_MODEL_PATH))
    return {
        "json": boto3.session.Session(),
        "query": boto3.session.Session(botocore_session=query_core),
    }


def sqs_client(session: boto3.session.Session, endpoint: str) -> Any:
    return session.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        # One attempt: a retried request would hide what the server answered first.
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40),
    )


@pytest.fixture
def sqs(
    cqs_endpoint: str, protocol: str, boto3_sessions: dict[str, boto3.session.Session]
) -> Any:
    """A boto3 SQS client speaking this run's protocol (see the module docstring)."""
    client = sqs_client(boto3_sessions[protocol], cqs_endpoint)
    assert client.meta.service_model.protocol == protocol
    return client


@pytest.fixture
def cqs_endpoint(request: pytest.FixtureRequest, cqs_server: CqsProcess) -> str:
    """The server this test talks to: the shared one, or `clock_server` for a test that
    moves time (asks for `advance`)."""
    if "advance" in request.fixturenames:
        return str(request.getfixturevalue("clock_server").url)
    return cqs_server.url


@pytest.fixture
def advance(cqs_endpoint: str) -> Callable[[float], None]:
    """Move the test's server's clock forward by some seconds (retention, delays and timeouts
    pass at once). Tests use their own queues, so no other test sees a difference."""

    def move(seconds: float) -> None:
        advance_clock(cqs_endpoint, seconds)

    return move


@pytest.fixture
def query(cqs_endpoint: str) -> QueryClient:
    def call(
        action: str,
        params: Mapping[str, str] | None = None,
        *,
        path: str = "/",
        method: str = "POST",
    ) -> QueryReply:
        return send_query(cqs_endpoint, action, params, path=path, method=method)

    return call


@pytest.fixture
def json_request(cqs_endpoint: str) -> JsonClient:
    def call(action: str, body: Mapping[str, Any] | bytes) -> JsonReply:
        return send_json(cqs_endpoint, action, body)

    return call


@pytest.fixture
def queue_name() -> str:
    return unique_name()


@pytest.fixture
def queue_url(sqs: Any, queue_name: str) -> Iterator[str]:
    url = str(sqs.create_queue(QueueName=queue_name)["QueueUrl"])
    yield url
    try:
        sqs.delete_queue(QueueUrl=url)
    except ClientError:
        pass  # the test may have deleted it itself


@pytest.fixture
def speaker(protocol: str, sqs: Any, cqs_endpoint: str) -> Speaker:
    """The same scenario once through boto3 (JSON 1.0) and once through raw query requests."""
    if protocol == "json":
        return Boto3Speaker(sqs)
    return QuerySpeaker(cqs_endpoint)


@pytest.fixture
def make_queue(sqs: Any) -> Iterator[Callable[..., str]]:
    """Create a uniquely named queue with the given attributes (deleted after the test)."""
    created: list[str] = []

    def make(**attributes: str | int) -> str:
        params: dict[str, Any] = {"QueueName": unique_name()}
        if attributes:
            params["Attributes"] = {k: str(v) for k, v in attributes.items()}
        url = str(sqs.create_queue(**params)["QueueUrl"])
        created.append(url)
        return url

    yield make
    for url in created:
        try:
            sqs.delete_queue(QueueUrl=url)
        except ClientError:
            pass


SpokenQueue = Callable[..., str]


@pytest.fixture
def spoken_queue(speaker: Speaker, sqs: Any) -> Iterator[SpokenQueue]:
    """Create queues through the speaker under test; delete them after the test.

    `spoken_queue(prefix, attributes, fifo=False)` names the queue `unique_name(prefix)`,
    with ".fifo" and FifoQueue=true added for a FIFO queue."""
    urls: list[str] = []

    def make(prefix: str, attributes: Mapping[str, str] | None = None, *, fifo: bool = False) -> str:
        name = unique_name(prefix) + (".fifo" if fifo else "")
        values = {"FifoQueue": "true", **(attributes or {})} if fifo else attributes
        url = speaker.create_queue(name, values)
        urls.append(url)
        return url

    yield make
    for url in urls:
        try:
            sqs.delete_queue(QueueUrl=url)
        except ClientError:
            pass
