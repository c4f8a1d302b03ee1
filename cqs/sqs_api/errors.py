"""The one table from `cqs.domain.errors` classes to SQS wire errors, and their rendering.

Owns, for every error a client may see: the query-protocol code, the JSON `__type`, the HTTP
status and whether the sender is at fault; and the error bodies (XML `ErrorResponse` for the
query protocol, or its JSON form `{"Error": {...}, "RequestId"}` to a query client that
accepts JSON, or a bare `<UnknownOperationException/>` for a GET naming no action;
`{"__type", "message"}` plus the `x-amzn-query-error` header for JSON 1.0, which botocore
reads to give clients the classic query code). The few wire-only
errors the protocol layer raises (missing action, oversized body...) live in `protocol.py`.

Codes and statuses follow the SQS Smithy model's `awsQueryError` traits (e.g.
QueueDoesNotExist -> AWS.SimpleQueueService.NonExistentQueue, ReceiptHandleIsInvalid ->
404) and the SQS API reference "Common Errors" page for the unmodelled ones. The JSON
`__type` is the model's shape name (botocore shows it as `Error.QueryErrorCode`, and the
header's code as `Error.Code`); the two unmodelled ones AWS answers over JSON are named as
its recorded answers name them: InvalidParameterValue -> InvalidParameterValueException,
MissingParameter -> MissingRequiredParameterException.

Imports `cqs.domain.errors` and the two codecs' text helpers: never the service, aiohttp or storage.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from cqs.domain import errors
from cqs.sqs_api.json_codec import JSON_CONTENT_TYPE
from cqs.sqs_api.protocol import (
    MalformedJson,
    MissingAction,
    NoOperation,
    RepeatedParameter,
    RequestTooLarge,
    UnknownOperation,
)
from cqs.sqs_api.query_codec import XML_CONTENT_TYPE, XML_NAMESPACE, xml_text

QUERY_ERROR_HEADER = "x-amzn-query-error"

_SQS = "com.amazonaws.sqs#"
_CORAL = "com.amazon.coral.service#"


class InternalError(errors.CqsError):
    """Anything unexpected (rendered for any exception the table does not map)."""


@dataclass(frozen=True, slots=True)
class WireError:
    """How one error class looks on the wire."""

    query_code: str
    json_type: str
    status: int
    sender_fault: bool = True
    default_message: str = ""
    query_message: str = ""  # the query protocol's own wording, when AWS's differs there
    bare_query_body: bool = False  # query protocol: `<{query_code}/>`, not an ErrorResponse

    @property
    def fault(self) -> str:
        return "Sender" if self.sender_fault else "Receiver"


def _sqs(
    query_code: str, json_name: str, status: int = 400, default_message: str = ""
) -> WireError:
    return WireError(query_code, _SQS + json_name, status, True, default_message)


_AWS = "AWS.SimpleQueueService."


def _aws(name: str, status: int, default_message: str) -> WireError:
    """An SQS error whose query code is its model name under `AWS.SimpleQueueService.`."""
    return _sqs(_AWS + name, name, status, default_message)


def _same(name: str, status: int, default_message: str) -> WireError:
    """An SQS error whose query code and model name are one."""
    return _sqs(name, name, status, default_message)


def _coral(query_code: str, exception: str, status: int, default_message: str) -> WireError:
    """A front-end (Coral) error: authentication, signatures, unknown operations."""
    return WireError(query_code, _CORAL + exception, status, True, default_message)


def _unavailable(default_message: str) -> WireError:
    """The service cannot answer now (its storage is down or busy): the client may retry."""
    return WireError(
        "ServiceUnavailable", _SQS + "ServiceUnavailable", 503, False, default_message
    )


ERROR_TABLE: Mapping[type[errors.CqsError], WireError] = {
    # the request itself (MalformedQueryString is a 404 in AWS's common-errors table)
    errors.MalformedRequest: _same(
        "MalformedQueryString", 404, "The query string contains a syntax error.",
    ),
    RepeatedParameter: _same(
        "InvalidQueryParameter", 400,
        "The AWS query string is malformed or does not adhere to AWS standards.",
    ),
    MalformedJson: _coral(
        "SerializationException", "SerializationException", 400,
        "The request body is not a valid JSON object.",
    ),
    errors.UnknownAction: _same("InvalidAction", 400, "The action is not valid for this endpoint."),
    UnknownOperation: _coral(
        "InvalidAction", "UnknownOperationException", 400,
        "The operation is not valid for this endpoint.",
    ),
    NoOperation: WireError(
        "UnknownOperationException", _CORAL + "UnknownOperationException", 404, True,
        "The request names no operation.", bare_query_body=True,
    ),
    MissingAction: _same("MissingAction", 400, "The request names no action."),
    errors.MissingParameter: _sqs(
        "MissingParameter", "MissingRequiredParameterException", 400,
        "A required parameter is missing.",
    ),
    errors.InvalidParameterValue: _sqs(
        "InvalidParameterValue", "InvalidParameterValueException", 400,
        "An invalid or out-of-range value was supplied for the input parameter.",
    ),
    errors.InvalidAttributeName: _same("InvalidAttributeName", 400, "Unknown attribute."),
    errors.InvalidAttributeValue: _same("InvalidAttributeValue", 400, "Invalid attribute value."),
    errors.InvalidMessageContents: _same(
        "InvalidMessageContents", 400, "The message contains characters outside the allowed set.",
    ),
    # AWS reports an oversized message as a plain InvalidParameterValue.
    errors.MessageTooLong: _sqs(
        "InvalidParameterValue", "InvalidParameterValueException", 400,
        "One or more parameters are invalid. Reason: Message must be shorter than the "
        "queue's maximum message size.",
    ),
    errors.InvalidAddress: _same(
        "InvalidAddress", 404, "The specified queue address is not valid."
    ),
    RequestTooLarge: _same("RequestEntityTooLarge", 413, "The request body is too large."),
    # queues
    # AWS words it differently per protocol (and the query text names the WSDL).
    errors.QueueDoesNotExist: WireError(
        _AWS + "NonExistentQueue", _SQS + "QueueDoesNotExist", 400, True,
        "The specified queue does not exist.",
        "The specified queue does not exist for this wsdl version.",
    ),
    errors.QueueNameExists: _sqs(
        "QueueAlreadyExists", "QueueNameExists", 400,
        "A queue already exists with the same name and a different value for attribute(s).",
    ),
    # No SQS code of its own: AWS answers too many tags with InvalidParameterValue.
    errors.TooManyTags: _sqs(
        "InvalidParameterValue", "InvalidParameterValueException", 400,
        "Too many tags: a queue may have at most 50 tags.",
    ),
    errors.QueueDeletedRecently: _aws(
        "QueueDeletedRecently", 400,
        "You must wait 60 seconds after deleting a queue before you can create another with"
        " the same name.",
    ),
    errors.PurgeQueueInProgress: _aws(
        "PurgeQueueInProgress", 403,
        "Only one PurgeQueue operation on a queue is allowed every 60 seconds.",
    ),
    errors.OverLimit: _same("OverLimit", 403, "The specified action violates a limit."),
    errors.ResourceNotFound: _same(
        "ResourceNotFoundException", 404, "One or more specified resources don't exist.",
    ),
    # messages and receipt handles
    errors.ReceiptHandleIsInvalid: _same(
        "ReceiptHandleIsInvalid", 404, "The input receipt handle is invalid.",
    ),
    errors.MessageNotInflight: _aws(
        "MessageNotInflight", 400, "The message referred to isn't in flight.",
    ),
    # batches
    errors.EmptyBatchRequest: _aws(
        "EmptyBatchRequest", 400, "The batch request doesn't contain any entries.",
    ),
    errors.TooManyEntriesInBatchRequest: _aws(
        "TooManyEntriesInBatchRequest", 400,
        "The batch request contains more entries than permissible.",
    ),
    errors.BatchEntryIdsNotDistinct: _aws(
        "BatchEntryIdsNotDistinct", 400,
        "Two or more batch entries in the request have the same Id.",
    ),
    errors.InvalidBatchEntryId: _aws(
        "InvalidBatchEntryId", 400,
        "The Id of a batch entry in a batch request doesn't abide by the specification.",
    ),
    errors.BatchRequestTooLong: _aws(
        "BatchRequestTooLong", 400,
        "The length of all the messages put together is more than the limit.",
    ),
    # who is asking: the front end's codes, as SQS answers them (403 unless malformed)
    errors.AuthenticationError: _coral(
        "IncompleteSignature", "IncompleteSignatureException", 400,
        "The request signature does not conform to AWS standards.",
    ),
    errors.MissingAuthenticationToken: _coral(
        "MissingAuthenticationToken", "MissingAuthenticationTokenException", 403,
        "Request is missing Authentication Token",
    ),
    errors.IncompleteSignature: _coral(
        "IncompleteSignature", "IncompleteSignatureException", 400,
        "The request signature does not conform to AWS standards.",
    ),
    errors.InvalidClientTokenId: _coral(
        "InvalidClientTokenId", "UnrecognizedClientException", 403,
        "The security token included in the request is invalid.",
    ),
    errors.SignatureDoesNotMatch: _coral(
        "SignatureDoesNotMatch", "InvalidSignatureException", 403,
        "The request signature we calculated does not match the signature you provided.",
    ),
    errors.RequestExpired: _coral("RequestExpired", "RequestExpired", 400, "Request has expired."),
    errors.AccessDenied: _coral(
        "AccessDenied", "AccessDeniedException", 403, "Access to the resource is denied.",
    ),
    # the service
    errors.StorageUnavailable: _unavailable("The service is unavailable. Please retry the request."),
    errors.CacheUnreachable: _unavailable("The service is unavailable. Please retry the request."),
    errors.StorageError: _unavailable("The service is unavailable. Please retry the request."),
    errors.StorageBusy: _unavailable("The service is busy. Please retry the request."),
    errors.UnsupportedOperation: _aws(
        "UnsupportedOperation", 400, "Error code 400. Unsupported operation.",
    ),
    InternalError: WireError(
        "InternalError", _SQS + "InternalError", 500, False,
        "We encountered an internal error. Please try again.",
    ),
}


def wire_error_for(error: errors.CqsError) -> WireError:
    """The table entry of the most specific mapped class; InternalError if none is mapped."""
    for cls in type(error).__mro__:
        if cls is errors.CqsError:
            break
        entry = ERROR_TABLE.get(cls)
        if entry is not None:
            return entry
    return ERROR_TABLE[InternalError]


def is_mapped(error_class: type[errors.CqsError]) -> bool:
    """Whether the table names this class or one of its bases (short of CqsError)."""
    return any(
        cls in ERROR_TABLE for cls in error_class.__mro__ if cls is not errors.CqsError
    )


def client_message(error: errors.CqsError, protocol_is_query: bool = False) -> str:
    wire = wire_error_for(error)
    if protocol_is_query and wire.query_message:
        return wire.query_message
    if isinstance(error, errors.StorageError):  # its text names servers and driver errors: logs only
        return wire.default_message
    return error.message or wire.default_message


@dataclass(frozen=True, slots=True)
class RenderedError:
    """An error response, ready for any HTTP framework."""

    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str]


def render_json_error(error: errors.CqsError, request_id: str) -> RenderedError:
    wire = wire_error_for(error)
    body = json.dumps({"__type": wire.json_type, "message": client_message(error)})
    return RenderedError(
        status=wire.status,
        content_type=JSON_CONTENT_TYPE,
        body=body.encode("utf-8"),
        headers={
            QUERY_ERROR_HEADER: f"{wire.query_code};{wire.fault}",
            "x-amzn-RequestId": request_id,
        },
    )


def render_query_error(
    error: errors.CqsError, request_id: str, accepts_json: bool = False
) -> RenderedError:
    """The query protocol's ErrorResponse; as JSON (`{"Error": {...}, "RequestId"}`) to a
    client whose Accept asks for JSON, as AWS answers one."""
    wire = wire_error_for(error)
    if wire.bare_query_body:
        return RenderedError(
            status=wire.status,
            content_type=XML_CONTENT_TYPE,
            body=f'<?xml version="1.0"?><{wire.query_code}/>'.encode(),
            headers={"x-amzn-RequestId": request_id},
        )
    if accepts_json:
        document = {
            "Error": {
                "Type": wire.fault,
                "Code": wire.query_code,
                "Message": client_message(error, protocol_is_query=True),
            },
            "RequestId": request_id,
        }
        return RenderedError(
            status=wire.status,
            content_type="application/json",
            body=json.dumps(document).encode("utf-8"),
            headers={"x-amzn-RequestId": request_id},
        )
    body = (
        f'<?xml version="1.0"?><ErrorResponse xmlns="{XML_NAMESPACE}">'
        f"<Error><Type>{wire.fault}</Type><Code>{xml_text(wire.query_code)}</Code>"
        f"<Message>{xml_text(client_message(error, protocol_is_query=True))}</Message>"
        "<Detail/></Error>"
        f"<RequestId>{xml_text(request_id)}</RequestId></ErrorResponse>"
    )
    return RenderedError(
        status=wire.status,
        content_type=XML_CONTENT_TYPE,
        body=body.encode("utf-8"),
        headers={"x-amzn-RequestId": request_id},
    )
