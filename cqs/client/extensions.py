"""ExtensionClient: calling cqs's actions beyond SQS from Python.

SDKs know only SQS's actions, so the extensions (`X-Amz-Target: CqsExtensions.<Action>` on
the JSON protocol, see docs/compatibility.md) are called through this small client: it
signs each request with botocore's SigV4 signer, exactly as boto3 signs SQS calls, posts
the JSON body and returns the JSON answer; an error answer raises `ExtensionError` with
the code and message the server gave. One method per action wraps `call`.

Imports botocore (which boto3 brings) and the standard library only; nothing of the
server, so a client machine needs no more than `pip install cqs` without its extras.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

TARGET_PREFIX = "CqsExtensions."
CONTENT_TYPE = "application/x-amz-json-1.0"
SIGNING_NAME = "sqs"  # the extensions are signed as SQS calls are


class ExtensionError(Exception):
    """The server refused an extension call: `code` (as `__type` names it, without its
    namespace), `message` and the HTTP `status`."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code}: {message} (HTTP {status})")
        self.code = code
        self.message = message
        self.status = status


class ExtensionClient:
    """Signed JSON calls of `CqsExtensions.<action>` to one cqs endpoint."""

    def __init__(
        self,
        endpoint_url: str,
        region: str,
        access_key_id: str,
        secret_access_key: str,
        *,
        session_token: str | None = None,
        timeout_seconds: float = 60.0,
        verify_tls: bool | str = True,
    ) -> None:
        """`verify_tls`: False to accept any certificate, or the path of a CA bundle."""
        self.endpoint_url = endpoint_url.rstrip("/") + "/"
        self.region = region
        self._credentials = Credentials(access_key_id, secret_access_key, session_token)
        tls: dict[str, Any] = {}
        if verify_tls is False:
            tls = {"cert_reqs": "CERT_NONE"}
        elif isinstance(verify_tls, str):
            tls = {"ca_certs": verify_tls}
        self._http = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(total=timeout_seconds), **tls
        )

    def call(self, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST `body` as `CqsExtensions.<action>`; the answer's JSON object."""
        request = AWSRequest(
            method="POST",
            url=self.endpoint_url,
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET_PREFIX + action},
        )
        SigV4Auth(self._credentials, SIGNING_NAME, self.region).add_auth(request)
        reply = self._http.request(
            "POST", self.endpoint_url, body=request.body, headers=dict(request.headers.items())
        )
        try:
            document = json.loads(reply.data.decode("utf-8")) if reply.data else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            document = {"message": reply.data[:200].decode("utf-8", "replace")}
        if not isinstance(document, dict):
            document = {"message": str(document)[:200]}
        if reply.status >= 300:
            code = str(document.get("__type") or "HTTP" + str(reply.status)).rsplit("#", 1)[-1]
            message = str(document.get("message") or document.get("Message") or "")
            raise ExtensionError(code, message, reply.status)
        return document

    # --- peek and replay ---------------------------------------------------------------------

    def peek_messages(
        self,
        queue_url: str,
        max_number_of_messages: int = 10,
        next_token: str | None = None,
        attribute_names: tuple[str, ...] = ("All",),
        message_attribute_names: tuple[str, ...] = ("All",),
        consumer_group: str | None = None,
    ) -> dict[str, Any]:
        """One page of visible messages, looked at without being received: `Messages` as
        boto3's receive_message gives them (binary attribute values as bytes), but without
        receipt handles, and `NextToken` while more may follow. `consumer_group`: look
        into that group of the queue (as its own URL does)."""
        body: dict[str, Any] = {
            "QueueUrl": queue_url,
            "MaxNumberOfMessages": max_number_of_messages,
            "MessageSystemAttributeNames": list(attribute_names),
            "MessageAttributeNames": list(message_attribute_names),
        }
        if next_token:
            body["NextToken"] = next_token
        return _with_binary_values(self.call("PeekMessages", _in_group(body, consumer_group)))

    def iter_peek(
        self, queue_url: str, page_size: int = 100, consumer_group: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every visible message of the queue, page after page (each message once, in the
        order the store holds them; messages sent meanwhile may or may not appear)."""
        token: str | None = None
        while True:
            page = self.peek_messages(
                queue_url, page_size, token, consumer_group=consumer_group
            )
            yield from page.get("Messages", [])
            token = page.get("NextToken")
            if not token:
                return

    def peek_consumed_messages(
        self,
        queue_url: str,
        start_time: float,
        end_time: float,
        max_number_of_messages: int = 100,
        next_token: str | None = None,
        consumer_group: str | None = None,
    ) -> dict[str, Any]:
        """One page of the messages consumed in [start_time, end_time) (epoch seconds);
        `consumer_group`: those that group's consumers consumed."""
        body: dict[str, Any] = {
            "QueueUrl": queue_url, "StartTime": start_time, "EndTime": end_time,
            "MaxNumberOfMessages": max_number_of_messages,
            "MessageSystemAttributeNames": ["All"], "MessageAttributeNames": ["All"],
        }
        if next_token:
            body["NextToken"] = next_token
        return _with_binary_values(
            self.call("PeekConsumedMessages", _in_group(body, consumer_group))
        )

    def replay_messages(
        self,
        queue_url: str,
        start_time: float,
        end_time: float,
        consumer_group: str | None = None,
        replay_id: str | None = None,
    ) -> int:
        """Send the messages consumed in [start_time, end_time) to the queue again, calling
        as often as the server asks (NextToken); returns how many were sent.
        `consumer_group`: what that group consumed, into that group only. `replay_id`: the
        replay's own id (letters, digits, - and _): after a failure, calling again with it
        resumes the replay where it stopped instead of sending everything again."""
        body = _in_group(
            {"QueueUrl": queue_url, "StartTime": start_time, "EndTime": end_time},
            consumer_group,
        )
        if replay_id is not None:
            body["ReplayId"] = replay_id
        replayed = 0
        while True:
            answer = self.call("ReplayMessages", body)
            replayed += int(answer.get("ReplayedCount", 0))
            if not answer.get("NextToken"):
                return replayed
            body["NextToken"] = answer["NextToken"]


def _in_group(body: dict[str, Any], consumer_group: str | None) -> dict[str, Any]:
    if consumer_group is not None:
        body["ConsumerGroup"] = consumer_group
    return body


def _with_binary_values(answer: dict[str, Any]) -> dict[str, Any]:
    """Binary message attribute values as bytes, as boto3 gives them (JSON carries base64)."""
    for message in answer.get("Messages", []):
        for value in (message.get("MessageAttributes") or {}).values():
            if isinstance(value.get("BinaryValue"), str):
                value["BinaryValue"] = base64.b64decode(value["BinaryValue"])
    return answer
