"""The aiohttp face of the SQS API: routes, the error middleware and request ids.

Owns the HTTP plumbing: POST and GET on `/` and on a queue's own URL
(`/{account_id}/{queue_name}`), reading the body under a size cap (a body that cannot be
read, such as one that is not the gzip its Content-Encoding claims, is a malformed request),
sniffing the protocol, dispatching through `handlers.HANDLERS`, rendering the result or the
error in the request's protocol (a query client sending `Accept: application/json` gets the
JSON form, as from AWS; CreateQueue and ListQueues on a queue's URL are InvalidAction; a GET
naming no action is 404 UnknownOperationException), and an `x-amzn-RequestId` on every answer. Any exception
the error table does not map is logged with its traceback and answered as a 500
InternalError. With a key lookup (auth verify) every request's SigV4 signature is checked
(`signatures.py`) right after its body is read, before anything else, and the signing key's
account is the caller's; without one (auth off) every caller is the server's own account,
acting in the region its credential scope (read, not verified) or its Host names, else the
server's: regions are separate namespaces either way.

Imports aiohttp, the service (for its type), `cqs.domain.validation` and the other `sqs_api`
modules; never Redis, Cassandra or any adapter: `cqs/main.py` builds the service and hands
it in.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler

from cqs.domain import validation
from cqs.domain.errors import (
    AuthenticationError,
    CqsError,
    MalformedRequest,
    StorageUnavailable,
    UnknownAction,
)
from cqs.domain.model import Caller
from cqs.ports.telemetry import Telemetry
from cqs.service import QueueService
from cqs.sqs_api.errors import (
    InternalError,
    RenderedError,
    render_json_error,
    render_query_error,
    wire_error_for,
)
from cqs.sqs_api.extensions import EXTENSION_HANDLERS
from cqs.sqs_api.handlers import HANDLERS, ApiCall
from cqs.sqs_api.json_codec import JSON_CONTENT_TYPE, render_json_result
from cqs.sqs_api.protocol import (
    DEFAULT_MAX_REQUEST_BYTES,
    MalformedJson,
    MissingAction,
    NoOperation,
    Protocol,
    RequestTooLarge,
    UnknownOperation,
    decode_json_request,
    decode_query_request,
    detect_protocol,
)
from cqs.sqs_api.query_codec import (
    XML_CONTENT_TYPE,
    render_query_json_result,
    render_query_result,
)
from cqs.sqs_api.signatures import KeyLookup, ReceivedRequest, claimed_region, verify
from cqs.sqs_api.urls import base_url_for, queue_url, region_of_host

logger = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-amzn-RequestId"
_READ_CHUNK_BYTES = 64 * 1024
_REQUEST_ID = web.RequestKey("cqs_sqs_request_id", str)
_PROTOCOL = web.RequestKey("cqs_sqs_protocol", Protocol)
_ACTION = web.RequestKey("cqs_sqs_action", str)
_ERROR_CODE = web.RequestKey("cqs_sqs_error_code", str)
_CLOSE_AFTER_ANSWER = web.RequestKey("cqs_sqs_close_after_answer", bool)
# Hashing a larger body for its signature would hold up the event loop: done in a thread.
_VERIFY_IN_THREAD_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """What the SQS routes serve: the server's account and region, how queue URLs are
    written, the request size cap and, under auth verify, the signing keys."""

    account_id: str
    base_url: str | None  # fixed `http://host:port` for queue URLs; None: the request's Host
    region: str
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    access_keys: KeyLookup | None = None  # auth verify: the signing keys; None: auth off


# The service, or a function giving it: the composition root may build the service on
# startup (in a cleanup context), after the app and its routes exist.
ServiceSource = QueueService | Callable[[], QueueService]

SERVICE_PROVIDER_KEY: web.AppKey[Callable[[], QueueService]] = web.AppKey(
    "cqs_sqs_service_provider"
)
SETTINGS_KEY = web.AppKey("cqs_sqs_settings", ApiSettings)
TELEMETRY_KEY = web.AppKey("cqs_sqs_telemetry", Telemetry)


def create_api_app(
    service: ServiceSource, settings: ApiSettings, *, telemetry: Telemetry | None = None
) -> web.Application:
    """An application serving the SQS API (both protocols) over `service`.

    `service` is the QueueService, or a function returning it once storage is connected.
    With `telemetry`, every SQS request is reported (action, outcome, duration). With
    `settings.access_keys` (a key id -> AccessKey lookup), every request must be signed by one.
    """
    app = web.Application(client_max_size=settings.max_request_bytes)
    if telemetry is not None:  # outside the error middleware: it sees the rendered outcome
        app[TELEMETRY_KEY] = telemetry
        app.middlewares.append(sqs_request_telemetry_middleware)
    add_sqs_routes(app, service, settings)
    return app


def add_sqs_routes(app: web.Application, service: ServiceSource, settings: ApiSettings) -> None:
    """Add the SQS routes and their error middleware to `app` (before it starts).

    The middleware leaves every other route of `app` (an admin sub-app, health checks) alone.
    """
    app[SERVICE_PROVIDER_KEY] = _provider(service)
    app[SETTINGS_KEY] = settings
    app.middlewares.append(sqs_error_middleware)
    # A consumer group's URL needs a real (12-digit) account id, as queue_address_from_url
    # reads it; so /_cqs/... and other three-segment paths stay free for their own routes.
    group_path = "/{account_id:[0-9]{12}}/{queue_name}/{group_name}"
    for path in ("/", "/{account_id}/{queue_name}", group_path):
        app.router.add_route("POST", path, sqs_endpoint)
        app.router.add_route("GET", path, sqs_endpoint)


def _provider(service: ServiceSource) -> Callable[[], QueueService]:
    if isinstance(service, QueueService) or not callable(service):
        fixed = service
        return lambda: fixed
    return service


async def sqs_endpoint(request: web.Request) -> web.StreamResponse:
    settings = request.config_dict[SETTINGS_KEY]
    target = request.headers.get("X-Amz-Target")
    protocol = detect_protocol(target, request.headers.get("Content-Type"))
    request[_PROTOCOL] = protocol
    body = await _read_body(request, protocol, settings.max_request_bytes)
    caller = await _caller(request, settings, body)
    if protocol is Protocol.JSON:
        decoded = decode_json_request(target, body)
    else:  # raw: yarl's decoded `query_string` would unescape %25 once before we do
        try:
            decoded = decode_query_request(request.rel_url.raw_query_string, body)
        except MissingAction:
            if request.method == "GET":  # AWS: 404 UnknownOperationException
                raise NoOperation("The request names no operation.") from None
            raise

    handler = HANDLERS.get(decoded.action)
    if handler is None and protocol is Protocol.JSON:
        handler = EXTENSION_HANDLERS.get(decoded.action)
    request[_ACTION] = decoded.action if handler is not None else "unknown"
    if handler is None:
        if protocol is Protocol.JSON:
            raise UnknownOperation(
                f"The operation {decoded.action} is not valid for this endpoint."
            )
        raise UnknownAction(f"The action {decoded.action} is not valid for this endpoint.")

    base_url = base_url_for(settings.base_url, request.scheme, request.host)
    queue_name = request.match_info.get("queue_name")
    if queue_name and "group_name" in request.match_info:  # a consumer group's URL (#19)
        queue_name = f"{queue_name}/{request.match_info['group_name']}"
    if queue_name and protocol is Protocol.QUERY and decoded.action in _NOT_ON_QUEUE_URLS:
        raise UnknownAction(f"The action {decoded.action} is not valid for this endpoint.")
    if queue_name:  # posted to the queue's own URL: it names the queue
        account = request.match_info.get("account_id", settings.account_id)
        validation.validate_text(f"{account}/{queue_name}", "QueueUrl")  # as body text is
        decoded = decoded.with_queue_url(queue_url(base_url, account, queue_name))

    service = request.config_dict[SERVICE_PROVIDER_KEY]()
    result = await handler(service, ApiCall(
        decoded, base_url, caller, service.access, request.headers.get("X-Amzn-Trace-Id")
    ))
    request_id = _request_id(request)
    if protocol is Protocol.JSON:
        return web.Response(
            body=render_json_result(result),
            content_type=JSON_CONTENT_TYPE,
            headers={REQUEST_ID_HEADER: request_id},
        )
    if _accepts_json(request):
        return web.Response(
            body=render_query_json_result(decoded.action, result, request_id),
            content_type="application/json",
            headers={REQUEST_ID_HEADER: request_id},
        )
    return web.Response(
        body=render_query_result(decoded.action, result, request_id),
        content_type=XML_CONTENT_TYPE,
        headers={REQUEST_ID_HEADER: request_id},
    )


# Actions of the service endpoint that AWS refuses (InvalidAction) on a queue's own URL.
_NOT_ON_QUEUE_URLS = frozenset({"CreateQueue", "ListQueues"})


def _accepts_json(request: web.Request) -> bool:
    """A query-protocol client asking for JSON answers (`Accept: application/json`)."""
    return "application/json" in request.headers.get("Accept", "").lower()


async def _caller(request: web.Request, settings: ApiSettings, body: bytes) -> Caller:
    """Who sent the request: with auth off the server's own account, in the region the
    (unverified) credential scope names, else the one the Host names, else the server's;
    with auth verify the signing key's, in the region its credential scope names (or an
    AuthenticationError)."""
    received = ReceivedRequest(
        request.method, request.raw_path, tuple(request.headers.items()), body, request.secure
    )
    if settings.access_keys is None:
        region = (
            claimed_region(received) or region_of_host(request.host) or settings.region
        )
        return Caller(settings.account_id, region, secure_transport=request.secure)
    try:
        if len(body) > _VERIFY_IN_THREAD_BYTES:
            verified = await asyncio.to_thread(verify, received, settings.access_keys)
        else:
            verified = verify(received, settings.access_keys)
    except AuthenticationError as refusal:  # its message holds no secret nor signature
        logger.debug("refused an SQS request: %s: %s", type(refusal).__name__, refusal)
        raise
    key = verified.key
    return Caller(key.account_id, verified.region, key.access_key_id, key.name, request.secure)


@web.middleware
async def sqs_request_telemetry_middleware(
    request: web.Request, handler: Handler
) -> web.StreamResponse:
    """Report each SQS request: its action, "success" or the error code, its duration."""
    if request.match_info.handler is not sqs_endpoint:
        return await handler(request)
    started = time.perf_counter()
    outcome = "InternalError"
    try:
        response = await handler(request)
        outcome = request.get(_ERROR_CODE, "success")
        return response
    except web.HTTPException as exc:
        outcome = f"HTTP{exc.status}"
        raise
    finally:
        request.config_dict[TELEMETRY_KEY].request_finished(
            request.get(_ACTION, "unknown"), outcome, time.perf_counter() - started
        )


@web.middleware
async def sqs_error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.match_info.handler is not sqs_endpoint:
        return await handler(request)
    request[_REQUEST_ID] = str(uuid.uuid4())
    try:
        return await handler(request)
    except CqsError as error:
        if isinstance(error, StorageUnavailable):
            logger.warning("storage unavailable: %s", error)
        return _error_response(request, error)
    except web.HTTPException:
        raise
    except Exception:
        logger.exception(
            "unexpected error answering %s %s (request %s)",
            request.method, request.path, request[_REQUEST_ID],
        )
        return _error_response(request, InternalError())


async def _read_body(request: web.Request, protocol: Protocol, limit: int) -> bytes:
    """The whole body (decompressed, when its Content-Encoding says so), or RequestTooLarge as
    soon as it passes `limit` bytes, or a malformed-request error when it cannot be read.

    Read here rather than through `client_max_size`, so the cap holds when the routes are
    added to an application with another limit.
    """
    if request.content_length is not None and request.content_length > limit:
        raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.content.iter_chunked(_READ_CHUNK_BYTES):
            size += len(chunk)
            if size > limit:
                raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
            chunks.append(chunk)
    except web.RequestPayloadError as exc:  # not the Content-Encoding it claims, bad chunks...
        # The connection's framing is lost with the body: answer, then close. Ending the body
        # here keeps aiohttp from draining it after the answer (and logging its error).
        request.content.feed_eof()
        request[_CLOSE_AFTER_ANSWER] = True
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        reason = (
            f"is not valid {encoding} data (Content-Encoding: {encoding})."
            if encoding in _DECODED_ENCODINGS
            else "could not be read: its framing is invalid."
        )
        raise _unreadable_body(protocol, reason) from exc
    except ConnectionResetError as exc:  # the client left, or a read timeout closed it
        raise _unreadable_body(protocol, "ended before it was complete.") from exc
    return b"".join(chunks)


# The Content-Encodings aiohttp decodes (and so can find invalid); any other is left as sent.
_DECODED_ENCODINGS = frozenset({"gzip", "deflate", "br", "zstd"})


def _unreadable_body(protocol: Protocol, reason: str) -> MalformedRequest:
    message = f"The request body {reason}"
    return MalformedJson(message) if protocol is Protocol.JSON else MalformedRequest(message)


def _request_id(request: web.Request) -> str:
    return request.get(_REQUEST_ID) or str(uuid.uuid4())


def _error_response(request: web.Request, error: CqsError) -> web.Response:
    protocol = request.get(_PROTOCOL)
    if protocol is None:  # failed before sniffing: sniff now
        protocol = detect_protocol(
            request.headers.get("X-Amz-Target"), request.headers.get("Content-Type")
        )
    rendered: RenderedError = (
        render_json_error(error, _request_id(request)) if protocol is Protocol.JSON
        else render_query_error(error, _request_id(request), _accepts_json(request))
    )
    request[_ERROR_CODE] = wire_error_for(error).query_code
    response = web.Response(
        status=rendered.status,
        body=rendered.body,
        content_type=rendered.content_type,
        headers=dict(rendered.headers),
    )
    if request.get(_CLOSE_AFTER_ANSWER):
        response.force_close()  # says Connection: close, so clients do not reuse it
    return response
