"""AWS Signature Version 4 verification of an SQS request, in either wire protocol.

Owns reading the credentials a request carries (an `Authorization: AWS4-HMAC-SHA256 ...`
header, or presigned `X-Amz-*` query parameters), the checks around the signature (credential
scope, clock skew, presigned expiry, session token, the `x-amz-content-sha256` payload hash)
and the comparison with the signature the key's secret gives. The canonical request, the
string to sign and the signature are botocore's own (`SigV4Auth`, `SigV4QueryAuth`), fed a
request rebuilt exactly as received: the raw path and query, and only the headers the client
listed in SignedHeaders; the query is decoded and botocore encodes it again, as AWS does, so a
client that wrote a space as `+` is understood. Refusals are `cqs.domain.errors` AuthenticationError subclasses whose
messages never hold a secret or a signature.

Pure: imports botocore, `cqs.sqs_api.credentials` and `cqs.domain.errors`; never aiohttp or the service.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_tz
from typing import Any
from urllib.parse import parse_qsl

from botocore.auth import SIGV4_TIMESTAMP, UNSIGNED_PAYLOAD, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import ReadOnlyCredentials

from cqs.domain.errors import (
    AuthenticationError,
    IncompleteSignature,
    InvalidClientTokenId,
    MissingAuthenticationToken,
    RequestExpired,
    SignatureDoesNotMatch,
)
from cqs.sqs_api.credentials import AccessKey

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "sqs"
MAX_SKEW_SECONDS = 15 * 60  # as AWS: a signed date further off than this is refused
MAX_PRESIGNED_SECONDS = 7 * 24 * 3600  # SigV4's longest X-Amz-Expires
_SECURITY_TOKEN = "x-amz-security-token"
_CONTENT_SHA256 = "x-amz-content-sha256"
_SIGNATURE = re.compile(r"[0-9a-f]{64}")
_DATE_STAMP = re.compile(r"\d{8}")
_TIMESTAMP = re.compile(r"\d{8}T\d{6}Z")
_REGION = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62})")
_HEADER_NAME = re.compile(r"[a-z0-9!#$%&'*+.^_`|~-]+")
_PRESIGNED_PARAMETERS = frozenset({"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"})


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """An HTTP request as it arrived: what a signature covers."""

    method: str
    target: str  # the request target as received: raw path, then `?` and the raw query
    headers: Sequence[tuple[str, str]]  # every header, in order (names in any case)
    body: bytes
    secure: bool = False

    def header_values(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name]

    def header(self, name: str) -> str | None:
        values = self.header_values(name)
        return values[0] if values else None


@dataclass(frozen=True, slots=True)
class Verified:
    """Whose signature it is, and the region its credential scope names."""

    key: AccessKey
    region: str


@dataclass(frozen=True, slots=True)
class _Credentials:
    """The signature's claims, before any is believed."""

    access_key_id: str
    date_stamp: str
    region: str
    service: str
    terminator: str
    signed_headers: tuple[str, ...]
    signature: str
    timestamp: str  # X-Amz-Date, in SigV4's basic ISO 8601 form
    token: str | None
    expires: int | None  # presigned only


KeyLookup = Callable[[str], AccessKey | None]


def verify(request: ReceivedRequest, lookup: KeyLookup, now: float | None = None) -> Verified:
    """The key that signed `request`; an AuthenticationError subclass when none did."""
    path, _, query = request.target.partition("?")
    params = parse_qsl(query, keep_blank_values=True)
    presigned = any(name in _PRESIGNED_PARAMETERS for name, _ in params)
    authorization = request.header_values("authorization")
    if authorization and presigned:
        raise IncompleteSignature(
            "Only one auth mechanism allowed: the Authorization header or the X-Amz-Algorithm"
            " query parameter."
        )
    if authorization:
        claims = _from_header(request, authorization)
        signed_params = params
    elif presigned:
        claims = _from_query(params)  # its signature covers every parameter but itself
        signed_params = [(name, value) for name, value in params if name != "X-Amz-Signature"]
    else:
        raise MissingAuthenticationToken("Request is missing Authentication Token")
    _check_scope(claims)
    _check_time(claims, time.time() if now is None else now)
    key = lookup(claims.access_key_id)
    if key is None:
        raise InvalidClientTokenId("The security token included in the request is invalid.")
    _check_token(key, claims)
    if "host" not in claims.signed_headers:
        raise IncompleteSignature("The host header must be signed (listed in SignedHeaders).")
    if not _SIGNATURE.fullmatch(claims.signature):
        raise SignatureDoesNotMatch("The signature must be 64 lowercase hexadecimal digits.")
    payload_hash = _declared_payload_hash(request)
    expected = _expected_signature(
        request, path, signed_params, claims, key, payload_hash, presigned
    )
    if not hmac.compare_digest(expected, claims.signature):
        raise SignatureDoesNotMatch(
            "The request signature we calculated does not match the signature you provided."
            " Check your AWS Secret Access Key and signing method."
        )
    return Verified(key, claims.region)


def claimed_region(request: ReceivedRequest) -> str | None:
    """The region the request's SigV4 credential scope names, read but NOT verified (auth
    off: SDKs sign even with made-up keys); None when it carries no readable credentials.

    The same parsing as `verify` (Authorization header, else presigned X-Amz-Credential),
    so what a verified request would be scoped to is what an unverified one is given."""
    _, _, query = request.target.partition("?")
    params = parse_qsl(query, keep_blank_values=True)
    authorization = request.header_values("authorization")
    try:
        if authorization:
            claims = _from_header(request, authorization)
        elif any(name in _PRESIGNED_PARAMETERS for name, _ in params):
            claims = _from_query(params)
        else:
            return None
    except AuthenticationError:  # unreadable credentials: as if there were none
        return None
    return claims.region if is_region_name(claims.region) else None


def is_region_name(text: str) -> bool:
    """Whether `text` has the shape a credential scope's region must have."""
    return _REGION.fullmatch(text) is not None


# --- reading the claims --------------------------------------------------------------------

def _from_header(request: ReceivedRequest, values: list[str]) -> _Credentials:
    if len(values) != 1:
        raise IncompleteSignature("The request has more than one Authorization header.")
    algorithm, _, rest = values[0].strip().partition(" ")
    if algorithm != ALGORITHM:
        raise IncompleteSignature(
            f"Unsupported authorization type: only {ALGORITHM} (Signature Version 4) is"
            " accepted."
        )
    parts: dict[str, str] = {}
    for item in rest.split(","):
        name, equals, value = item.strip().partition("=")
        if equals and name in ("Credential", "SignedHeaders", "Signature"):
            if name in parts:
                raise IncompleteSignature(f"Authorization header repeats '{name}'.")
            parts[name] = value.strip()
    for required in ("Credential", "SignedHeaders", "Signature"):
        if not parts.get(required):
            raise IncompleteSignature(f"Authorization header requires '{required}' parameter.")
    timestamp = request.header("x-amz-date")
    if timestamp is None:
        timestamp = _from_http_date(request.header("date"))
    return _claims(
        parts["Credential"], parts["SignedHeaders"], parts["Signature"], timestamp.strip(),
        request.header(_SECURITY_TOKEN), None,
    )


def _from_http_date(date: str | None) -> str:
    """The `Date` header's time in SigV4's form (the spec's alternative to X-Amz-Date)."""
    if date is None:
        raise IncompleteSignature(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date'"
            " header."
        )
    parsed = parsedate_tz(date)
    if parsed is None:
        raise IncompleteSignature("The Date header is not a valid HTTP date.")
    seconds = calendar.timegm(parsed[:9]) - (parsed[9] or 0)
    return time.strftime(SIGV4_TIMESTAMP, time.gmtime(seconds))


def _from_query(params: list[tuple[str, str]]) -> _Credentials:
    values: dict[str, str] = {}
    for name, value in params:
        if name.startswith("X-Amz-"):
            if name in values:
                raise IncompleteSignature(f"The query parameter {name} is given twice.")
            values[name] = value
    if values.get("X-Amz-Algorithm") != ALGORITHM:
        raise IncompleteSignature(
            f"Unsupported X-Amz-Algorithm: only {ALGORITHM} (Signature Version 4) is accepted."
        )
    for required in ("X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
                     "X-Amz-SignedHeaders", "X-Amz-Signature"):
        if not values.get(required):
            raise IncompleteSignature(f"A presigned request requires the {required} parameter.")
    expires = values["X-Amz-Expires"]
    if not expires.isdigit() or not 0 < int(expires) <= MAX_PRESIGNED_SECONDS:
        raise IncompleteSignature(
            f"X-Amz-Expires must be a number of seconds from 1 to {MAX_PRESIGNED_SECONDS}."
        )
    return _claims(
        values["X-Amz-Credential"], values["X-Amz-SignedHeaders"], values["X-Amz-Signature"],
        values["X-Amz-Date"], values.get("X-Amz-Security-Token"), int(expires),
    )


def _claims(
    credential: str, signed_headers: str, signature: str, timestamp: str,
    token: str | None, expires: int | None,
) -> _Credentials:
    scope = credential.split("/")
    if len(scope) != 5 or not all(scope):
        raise IncompleteSignature(
            "The Credential must be <access key id>/<date>/<region>/sqs/aws4_request."
        )
    headers = tuple(signed_headers.split(";"))
    if not all(_HEADER_NAME.fullmatch(name) for name in headers):
        raise IncompleteSignature(
            "SignedHeaders must be lowercase header names separated by ';'."
        )
    if not _TIMESTAMP.fullmatch(timestamp):
        raise IncompleteSignature(
            "X-Amz-Date must be in ISO 8601 basic format (YYYYMMDD'T'HHMMSS'Z')."
        )
    return _Credentials(
        scope[0], scope[1], scope[2], scope[3], scope[4], headers, signature, timestamp,
        token, expires,
    )


# --- the checks around the signature -------------------------------------------------------

def _check_scope(claims: _Credentials) -> None:
    if not _DATE_STAMP.fullmatch(claims.date_stamp) or claims.date_stamp != claims.timestamp[:8]:
        raise SignatureDoesNotMatch(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date"
            f" from HTTP: '{claims.date_stamp}' != '{claims.timestamp[:8]}', from"
            f" '{claims.timestamp}'."
        )
    if not _REGION.fullmatch(claims.region):
        raise SignatureDoesNotMatch("Credential should be scoped to a valid region.")
    if claims.service != SERVICE:
        raise SignatureDoesNotMatch(f"Credential should be scoped to correct service: '{SERVICE}'.")
    if claims.terminator != "aws4_request":
        raise SignatureDoesNotMatch(
            "Credential should be scoped with a valid terminator: 'aws4_request'."
        )


def _check_time(claims: _Credentials, now: float) -> None:
    signed = calendar.timegm(time.strptime(claims.timestamp, SIGV4_TIMESTAMP))
    if claims.expires is not None and now > signed + claims.expires:
        raise RequestExpired("Request has expired.")
    if claims.expires is None and signed < now - MAX_SKEW_SECONDS:
        raise SignatureDoesNotMatch(
            f"Signature expired: {claims.timestamp} is now earlier than"
            f" {_stamp(now - MAX_SKEW_SECONDS)} ({_stamp(now)} - 15 min.)"
        )
    if signed > now + MAX_SKEW_SECONDS:
        raise SignatureDoesNotMatch(
            f"Signature not yet current: {claims.timestamp} is still later than"
            f" {_stamp(now + MAX_SKEW_SECONDS)} ({_stamp(now)} + 15 min.)"
        )


def _stamp(seconds: float) -> str:
    return time.strftime(SIGV4_TIMESTAMP, time.gmtime(seconds))


def _check_token(key: AccessKey, claims: _Credentials) -> None:
    """A key with a session token needs exactly that token; a key without one, none."""
    if key.session_token is None and claims.token is None:
        return
    if key.session_token is None or claims.token is None or not hmac.compare_digest(
        key.session_token.encode(), claims.token.encode("utf-8", "surrogateescape")
    ):
        raise InvalidClientTokenId("The security token included in the request is invalid.")
    if claims.expires is None and _SECURITY_TOKEN not in claims.signed_headers:
        raise IncompleteSignature("The X-Amz-Security-Token header must be signed.")


def _declared_payload_hash(request: ReceivedRequest) -> str | None:
    """The x-amz-content-sha256 the client sent, once it is known to describe the body."""
    declared = request.header(_CONTENT_SHA256)
    if declared is None:
        return None
    declared = declared.strip()
    if declared != UNSIGNED_PAYLOAD and declared != hashlib.sha256(request.body).hexdigest():
        raise SignatureDoesNotMatch(
            "The provided 'x-amz-content-sha256' header does not match what was computed."
        )
    return declared


# --- botocore's canonicalisation -----------------------------------------------------------

class _AsReceived:
    """Sign exactly the headers the client listed: botocore itself leaves out some (such as
    User-Agent or Expect) and adds Host, but another client may have signed those."""

    _listed: frozenset[str]

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        chosen = HTTPHeaders()
        for name, value in request.headers.items():
            if name.lower() in self._listed:
                chosen[name.lower()] = value
        return chosen


class _HeaderSigner(_AsReceived, SigV4Auth):  # type: ignore[misc]  # botocore is untyped
    def __init__(self, credentials: Any, region: str, listed: frozenset[str]) -> None:
        super().__init__(credentials, SERVICE, region)
        self._listed = listed


class _QuerySigner(_AsReceived, SigV4QueryAuth):  # type: ignore[misc]
    def __init__(self, credentials: Any, region: str, listed: frozenset[str]) -> None:
        super().__init__(credentials, SERVICE, region)
        self._listed = listed


def _expected_signature(
    received: ReceivedRequest, path: str, params: list[tuple[str, str]], claims: _Credentials,
    key: AccessKey,
    payload_hash: str | None, presigned: bool,
) -> str:
    listed = frozenset(claims.signed_headers)
    headers = [(name, value) for name, value in received.headers if name.lower() in listed]
    if payload_hash is not None and _CONTENT_SHA256 not in listed:  # botocore then takes it
        # as the payload's hash, signed or not, as it does when it signs
        headers.append((_CONTENT_SHA256, payload_hash))
    scheme = "https" if received.secure else "http"
    # The raw path: botocore encodes it once more, as SigV4 wants for every service but S3.
    request = AWSRequest(
        method=received.method, url=f"{scheme}://cqs{path}", data=received.body, params=params
    )
    for name, value in headers:
        request.headers[name] = value
    request.context["timestamp"] = claims.timestamp
    credentials = ReadOnlyCredentials(key.access_key_id, key.secret, key.session_token)
    signer_class = _QuerySigner if presigned else _HeaderSigner
    signer = signer_class(credentials, claims.region, listed)
    try:
        canonical = signer.canonical_request(request)
        string_to_sign = signer.string_to_sign(request, canonical)
        return str(signer.signature(string_to_sign, request))
    except UnicodeError:  # bytes no client could have signed as text
        raise SignatureDoesNotMatch(
            "The request signature we calculated does not match the signature you provided."
        ) from None
