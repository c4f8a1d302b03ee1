"""Which SQS protocol a request speaks, and its action and parameters, from raw HTTP parts.

Owns protocol sniffing (an `X-Amz-Target` header or an `application/x-amz-json-*` body means
AWS JSON 1.0; anything else is the query protocol with an `Action` parameter), the decoding
of JSON bodies and of form / query-string parameters, the protocol-neutral result type the
handlers return, the request size cap, and the wire-only errors raised while decoding.

Pure functions over strings and bytes: imports `cqs.errors` and the standard library only,
never aiohttp, the service or storage.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import parse_qsl

from cqs import errors

JSON_TARGET_PREFIX = "AmazonSQS."

# SQS accepts up to 1 MiB of message payload per request (one message, or a whole batch).
# Percent-encoding a query request can triple non-ASCII text and base64 adds a third to
# binary attributes, so 4 MiB admits every valid request and still bounds memory.
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024

# A protocol-neutral result: the output shape's members by their JSON (model) names, as
# str / int / bool / bytes (binary attribute values) / lists / nested members. None marks
# an absent optional member: both codecs leave it out.
WireValue: TypeAlias = (
    str | int | bool | bytes | Sequence["WireValue"] | Mapping[str, "WireValue"] | None
)
WireResult: TypeAlias = Mapping[str, WireValue]


class Protocol(enum.Enum):
    JSON = "json"  # AWS JSON 1.0, what current SDKs send
    QUERY = "query"  # form-encoded Action=..., answered in XML


# --- wire-only errors: raised while decoding, never by the service ------------------------

class MissingAction(errors.MissingParameter):
    """The request names no action (no `Action` parameter, no `X-Amz-Target`)."""


class UnknownOperation(errors.UnknownAction):
    """A JSON request's `X-Amz-Target` names no SQS operation."""


class MalformedJson(errors.MalformedRequest):
    """A JSON 1.0 body is not a JSON object."""


class RequestTooLarge(errors.CqsError):
    """The request body is larger than this endpoint accepts."""


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """An action and its parameters; only the field of the request's protocol is filled."""

    protocol: Protocol
    action: str
    query_params: Mapping[str, str] = field(default_factory=dict)
    json_body: Mapping[str, object] = field(default_factory=dict)

    def with_queue_url(self, queue_url: str) -> DecodedRequest:
        """This request, with `QueueUrl` filled in unless it already names one.

        The query protocol lets a client post to the queue's own URL instead of naming it.
        """
        if self.protocol is Protocol.QUERY:
            if "QueueUrl" in self.query_params:
                return self
            return DecodedRequest(
                self.protocol, self.action, {**self.query_params, "QueueUrl": queue_url}
            )
        if "QueueUrl" in self.json_body:
            return self
        return DecodedRequest(
            self.protocol, self.action, json_body={**self.json_body, "QueueUrl": queue_url}
        )


def detect_protocol(target: str | None, content_type: str | None) -> Protocol:
    if target is not None:
        return Protocol.JSON
    if content_type and content_type.lower().startswith("application/x-amz-json"):
        return Protocol.JSON
    return Protocol.QUERY


def decode_json_request(target: str | None, body: bytes) -> DecodedRequest:
    """`X-Amz-Target: AmazonSQS.<Action>` and a JSON object body (empty means `{}`)."""
    if not target:
        raise MissingAction("The request must name an operation in the X-Amz-Target header.")
    if not target.startswith(JSON_TARGET_PREFIX) or len(target) == len(JSON_TARGET_PREFIX):
        raise UnknownOperation(f"The operation {target} is not valid for this endpoint.")
    action = target[len(JSON_TARGET_PREFIX):]
    if not body.strip():
        return DecodedRequest(Protocol.JSON, action)
    try:
        decoded = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedJson(f"The request body is not valid JSON: {exc}") from exc
    if not isinstance(decoded, dict):
        raise MalformedJson("The request body must be a JSON object.")
    return DecodedRequest(Protocol.JSON, action, json_body=decoded)


def decode_query_request(query_string: str, body: bytes) -> DecodedRequest:
    """Parameters from the query string and the form body (the body wins on a clash)."""
    params = dict(_parse_form(query_string))
    if body.strip():
        try:
            form_text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise errors.MalformedRequest("The form body is not valid UTF-8.") from exc
        params.update(_parse_form(form_text))
    action = params.get("Action", "")
    if not action:
        raise MissingAction("The request must contain the parameter Action.")
    return DecodedRequest(Protocol.QUERY, action, query_params=params)


def _parse_form(text: str) -> list[tuple[str, str]]:
    try:
        return parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except (UnicodeDecodeError, ValueError) as exc:
        raise errors.MalformedRequest(f"The query string is malformed: {exc}") from exc
