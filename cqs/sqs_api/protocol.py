"""Which SQS protocol a request speaks, and its action and parameters, from raw HTTP parts.

Owns protocol sniffing (an `X-Amz-Target` header or an `application/x-amz-json-*` body means
AWS JSON 1.0; anything else is the query protocol with an `Action` parameter), the decoding
of JSON bodies and of form / query-string parameters, the protocol-neutral result type the
handlers return, the request size cap, and the wire-only errors raised while decoding.

Decoding is strict, because it is where hostile input first meets the server: a form's `%`
escapes must be well formed and decode to UTF-8, no parameter may be given twice, JSON is
read through `validation.load_json` (bounded depth and integers), and every decoded string
passes the one character rule (`validation.validate_text`) here, once, except message
content, which the service checks entry by entry with the same rule.

Pure functions over strings and bytes: imports `cqs.domain.errors`, `cqs.domain.validation` and the
standard library only, never aiohttp, the service or storage.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import unquote_to_bytes

from cqs.domain import errors, validation

JSON_TARGET_PREFIX = "AmazonSQS."
# cqs's own actions beyond SQS (consumer groups, peek, replay, scheduling): JSON protocol
# only, decoded with their prefix kept (`CqsExtensions.PeekMessages`) so that no SQS
# action name can ever reach an extension handler or the other way round.
EXTENSION_TARGET_PREFIX = "CqsExtensions."

# SQS accepts up to 1 MiB of message payload per request (one message, or a whole batch).
# The most a valid request can take on the wire is a query form whose payload is a binary
# attribute of 0xFF bytes: base64 makes it all `/` (4 bytes per 3), percent-encoding makes
# each `/` three bytes, 4 times the payload in all; 64 KiB more holds the other parameters
# of a full batch (ids, names, types, URL). Anything larger is refused before it is read.
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024 + 64 * 1024

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


class NoOperation(errors.UnknownAction):
    """A query-protocol GET that names no action at all (AWS: 404, a bare
    `<UnknownOperationException/>` body, even to a client that accepts JSON)."""


class MalformedJson(errors.MalformedRequest):
    """A JSON 1.0 body is not a JSON object (or cannot be read: bad UTF-8, gzip, nesting)."""


class RepeatedParameter(errors.MalformedRequest):
    """A query-protocol request gives one parameter more than once."""


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
    """`X-Amz-Target: AmazonSQS.<Action>` (or `CqsExtensions.<Action>`, kept whole) and a
    JSON object body (empty means `{}`)."""
    if not target:
        raise MissingAction("The request must name an operation in the X-Amz-Target header.")
    if target.startswith(EXTENSION_TARGET_PREFIX) and len(target) > len(EXTENSION_TARGET_PREFIX):
        action = target
    elif target.startswith(JSON_TARGET_PREFIX) and len(target) > len(JSON_TARGET_PREFIX):
        action = target[len(JSON_TARGET_PREFIX):]
    else:
        raise UnknownOperation(f"The operation {target} is not valid for this endpoint.")
    if not body.strip():
        return DecodedRequest(Protocol.JSON, action)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedJson("The request body is not valid UTF-8.") from None
    try:
        decoded = validation.load_json(text)
    except validation.UnreadableJson as refused:
        raise MalformedJson(f"The request body {refused.reason}") from None
    if not isinstance(decoded, dict):
        raise MalformedJson("The request body must be a JSON object.")
    _check_json_text(decoded)
    return DecodedRequest(Protocol.JSON, action, json_body=decoded)


def decode_query_request(query_string: str, body: bytes) -> DecodedRequest:
    """Parameters from the raw (still percent-encoded) query string and the form body.

    Each of the two may give a parameter once; when both give it, the body wins.
    """
    params = _parameters(query_string)
    if body.strip():
        try:
            form_text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise errors.MalformedRequest("The form body is not valid UTF-8.") from exc
        params.update(_parameters(form_text))
    action = params.get("Action", "")
    if not action:
        raise MissingAction("The request must contain the parameter Action.")
    return DecodedRequest(Protocol.QUERY, action, query_params=params)


# --- strict form decoding -------------------------------------------------------------------

# A `%` that does not start an escape of two hex digits: urllib would keep it literally.
_BROKEN_ESCAPE = re.compile("%(?![0-9A-Fa-f]{2})")


def _parameters(form: str) -> dict[str, str]:
    """The parameters of an `application/x-www-form-urlencoded` text, each named once."""
    if _BROKEN_ESCAPE.search(form):
        raise errors.MalformedRequest(
            "The query string contains a syntax error: a % must be followed by two"
            " hexadecimal digits."
        )
    pairs = [
        (_form_decode(name), _form_decode(value))
        for name, _, value in (item.partition("=") for item in form.split("&") if item)
    ]
    _check_query_text(pairs)
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            raise RepeatedParameter(f"The parameter {name} is given more than once.")
        params[name] = value
    return params


def _form_decode(text: str) -> str:
    try:
        return unquote_to_bytes(text.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError:
        raise errors.MalformedRequest(
            "The query string contains a syntax error: its percent-encoded bytes are not"
            " valid UTF-8."
        ) from None


# --- the one character rule, over every decoded string ----------------------------------------

# Message content: the service checks it with the same rule, entry by entry, so that one bad
# message fails alone in a batch (as SQS reports it) instead of failing the whole request.
_JSON_MESSAGE_CONTENT = frozenset({"MessageBody", "MessageAttributes", "MessageSystemAttributes"})
_QUERY_MESSAGE_CONTENT = frozenset({"MessageBody", "MessageAttribute", "MessageSystemAttribute"})


def _check_query_text(pairs: Iterable[tuple[str, str]]) -> None:
    for name, value in pairs:
        validation.validate_text(name, "the request", is_name=True)
        if _QUERY_MESSAGE_CONTENT.isdisjoint(name.split(".")):
            validation.validate_text(value, name)


def _check_json_text(body: Mapping[str, object]) -> None:
    """Every member name and string of a decoded body; lists are numbered from 1."""
    pending: list[tuple[str, object]] = [("", body)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            validation.validate_text(value, path)
        elif isinstance(value, dict):
            for name, item in value.items():
                validation.validate_text(name, path or "the request", is_name=True)
                if name not in _JSON_MESSAGE_CONTENT:
                    pending.append((f"{path}.{name}" if path else name, item))
        elif isinstance(value, list):
            pending.extend((f"{path}.{number}", item) for number, item in enumerate(value, 1))
