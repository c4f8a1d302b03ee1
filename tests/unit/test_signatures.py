"""SigV4 verification (cqs/sqs_api/signatures.py) of requests botocore itself signed.

Every request here is signed by botocore's SigV4Auth (Authorization header) or SigV4QueryAuth
(presigned query string), as an SDK would, over both wire protocols (JSON 1.0 bodies and
query-protocol forms) and with POST and GET; then verified as the server receives it. Each
refusal reason gets its own test with the error class (and so the wire code) a client sees.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from cqs.domain.errors import (
    AuthenticationError,
    IncompleteSignature,
    InvalidClientTokenId,
    MissingAuthenticationToken,
    RequestExpired,
    SignatureDoesNotMatch,
)
from cqs.sqs_api.credentials import AccessKey
from cqs.sqs_api.signatures import ReceivedRequest, Verified, verify

ENDPOINT = "http://127.0.0.1:9324"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
ORDERS = AccessKey("AKIDORDERS", SECRET, "111111111111", "orders")
BILLING = AccessKey("AKIDBILLING", "billing-secret", "222222222222")
TEMPORARY = AccessKey("AKIDTEMP", "temp-secret", "333333333333", session_token="FQoGZXIvYXdzE")
KEYS = {key.access_key_id: key for key in (ORDERS, BILLING, TEMPORARY)}
JSON_TYPE = "application/x-amz-json-1.0"
FORM_TYPE = "application/x-www-form-urlencoded; charset=utf-8"


def received(request: AWSRequest, **changes: object) -> ReceivedRequest:
    """The request as the server reads it off the wire (urllib3 adds Host with the port)."""
    prepared = request.prepare()
    url = urlsplit(prepared.url)
    body = prepared.body or b""
    if isinstance(body, str):
        body = body.encode()
    headers = [*prepared.headers.items(), ("Host", url.netloc)]
    fields: dict[str, object] = {
        "method": prepared.method,
        "target": url.path + (f"?{url.query}" if url.query else ""),
        "headers": headers,
        "body": body,
    }
    fields.update(changes)
    return ReceivedRequest(**fields)  # type: ignore[arg-type]


def json_request(action: str = "ListQueues", body: bytes = b"{}", **headers: str) -> AWSRequest:
    return AWSRequest(
        "POST", ENDPOINT + "/", data=body,
        headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_TYPE, **headers},
    )


def form_request(params: Mapping[str, str], path: str = "/") -> AWSRequest:
    fields = {"Version": "2012-11-05", **params}
    return AWSRequest(
        "POST", ENDPOINT + path, data=urlencode(fields).encode(),
        headers={"Content-Type": FORM_TYPE},
    )


def sign(
    request: AWSRequest, key: AccessKey = ORDERS, *, secret: str | None = None,
    region: str = "us-east-1", service: str = "sqs", token: str | None = None,
) -> AWSRequest:
    credentials = Credentials(key.access_key_id, secret or key.secret, token)
    SigV4Auth(credentials, service, region).add_auth(request)
    return request


def presign(
    method: str, params: Mapping[str, str], key: AccessKey = ORDERS, *, path: str = "/",
    expires: int = 60, region: str = "us-east-1", token: str | None = None,
) -> AWSRequest:
    request = AWSRequest(method, ENDPOINT + path, params={"Version": "2012-11-05", **params})
    credentials = Credentials(key.access_key_id, key.secret, token)
    SigV4QueryAuth(credentials, "sqs", region, expires=expires).add_auth(request)
    return request


def check(request: ReceivedRequest, now: float | None = None) -> Verified:
    return verify(request, KEYS.get, now)


def refusal(request: ReceivedRequest, now: float | None = None) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as caught:
        check(request, now)
    return caught.value


def headers_of(request: ReceivedRequest) -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers}


def replace_header(request: ReceivedRequest, name: str, value: str) -> ReceivedRequest:
    headers = [(n, value if n.lower() == name else v) for n, v in request.headers]
    return received_with(request, headers=headers)


def received_with(request: ReceivedRequest, **changes: object) -> ReceivedRequest:
    fields = {
        "method": request.method, "target": request.target, "headers": request.headers,
        "body": request.body, "secure": request.secure, **changes,
    }
    return ReceivedRequest(**fields)  # type: ignore[arg-type]


# --- accepted -------------------------------------------------------------------------------

def test_a_json_request_signed_by_botocore_is_the_signing_keys_in_its_scopes_region() -> None:
    verified = check(received(sign(json_request("CreateQueue", b'{"QueueName":"q"}'),
                                   region="eu-west-1")))

    assert verified == Verified(ORDERS, "eu-west-1")


def test_a_query_form_post_signed_by_botocore_is_accepted() -> None:
    request = form_request(
        {"Action": "SendMessage", "MessageBody": "hello wörld +/=&?", "QueueUrl":
         f"{ENDPOINT}/111111111111/q"}, path="/111111111111/q",
    )

    assert check(received(sign(request))).key == ORDERS


def test_a_get_whose_query_botocore_signed_is_accepted_even_with_spaces_sent_as_plus() -> None:
    request = AWSRequest(
        "GET", ENDPOINT + "/", params={"Action": "ListQueues", "QueueNamePrefix": "a b~*"}
    )
    sign(request)  # AWSRequest sends its params form-encoded: the space goes out as '+'

    ready = received(request)
    assert "a+b" in ready.target
    assert check(ready).key == ORDERS


def test_headers_botocore_never_signs_are_verified_when_another_client_signed_them() -> None:
    request = json_request(**{"User-Agent": "other-sdk/1.0", "Expect": "100-continue"})
    sign(request)
    signed_by_botocore = received(request)
    # Another client's signature over User-Agent too: recompute it as that client would.
    listed = "content-type;host;user-agent;x-amz-date;x-amz-target"

    class SignsUserAgent(SigV4Auth):  # type: ignore[misc]
        def headers_to_sign(self, request: AWSRequest) -> object:
            chosen = super().headers_to_sign(request)
            chosen["user-agent"] = request.headers["User-Agent"]
            return chosen

    other = json_request(**{"User-Agent": "other-sdk/1.0"})
    SignsUserAgent(Credentials(ORDERS.access_key_id, SECRET), "sqs", "us-east-1").add_auth(other)

    assert check(signed_by_botocore).key == ORDERS
    assert f"SignedHeaders={listed}," in headers_of(received(other))["authorization"]
    assert check(received(other)).key == ORDERS
    with pytest.raises(SignatureDoesNotMatch):  # and User-Agent is then really covered
        check(replace_header(received(other), "user-agent", "tampered/2.0"))


def test_a_declared_payload_hash_that_matches_the_body_is_accepted() -> None:
    body = b'{"QueueName":"q"}'
    request = json_request("CreateQueue", body,
                           **{"X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest()})

    assert check(received(sign(request))).key == ORDERS


def test_an_unsigned_payload_declared_as_such_is_accepted() -> None:
    request = json_request(**{"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})

    assert check(received(sign(request))).key == ORDERS


def test_a_presigned_get_is_accepted_until_it_expires_then_refused_as_expired() -> None:
    request = presign("GET", {"Action": "ReceiveMessage", "QueueUrl": f"{ENDPOINT}/1/q"},
                      path="/111111111111/q", expires=60)
    ready = received(request)
    signed_at = time.time()

    assert check(ready, now=signed_at + 59).key == ORDERS
    assert isinstance(refusal(ready, now=signed_at + 62), RequestExpired)


def test_a_presigned_post_of_a_query_action_is_accepted() -> None:
    ready = received(presign("POST", {"Action": "SendMessage", "MessageBody": "hi there"},
                             path="/111111111111/q"))

    assert ready.body == b""
    assert check(ready).region == "us-east-1"


def test_a_request_dated_by_its_date_header_instead_of_x_amz_date_is_accepted() -> None:
    request = sign(json_request(Date="Mon, 01 Jan 2024 00:00:00 GMT"))  # botocore redates it
    ready = received(request)

    assert "x-amz-date" not in headers_of(ready)
    assert check(ready).key == ORDERS
    assert isinstance(refusal(replace_header(ready, "date", "Mon, 01 Jan 2024 00:00:00 GMT")),
                      SignatureDoesNotMatch)  # a date years ago: expired


def test_the_same_request_signed_by_two_keys_is_each_keys_own() -> None:
    assert check(received(sign(json_request(), ORDERS))).key.account_id == "111111111111"
    assert check(received(sign(json_request(), BILLING))).key.account_id == "222222222222"


# --- refused: who is asking -----------------------------------------------------------------

def test_a_request_without_any_signature_misses_the_authentication_token() -> None:
    assert isinstance(refusal(received(json_request())), MissingAuthenticationToken)
    assert isinstance(refusal(received(form_request({"Action": "ListQueues"}))),
                      MissingAuthenticationToken)


def test_an_unknown_access_key_is_an_invalid_client_token_id() -> None:
    stranger = AccessKey("AKIDSTRANGER", "whatever", "999999999999")

    assert isinstance(refusal(received(sign(json_request(), stranger))), InvalidClientTokenId)


def test_a_wrong_secret_is_a_signature_that_does_not_match() -> None:
    error = refusal(received(sign(json_request(), secret="not-the-secret")))

    assert isinstance(error, SignatureDoesNotMatch)
    assert SECRET not in str(error) and "not-the-secret" not in str(error)


def test_a_tampered_body_does_not_match_the_signature() -> None:
    ready = received(sign(json_request("CreateQueue", b'{"QueueName":"mine"}')))

    error = refusal(received_with(ready, body=b'{"QueueName":"yours"}'))

    assert isinstance(error, SignatureDoesNotMatch)


def test_a_tampered_signed_header_does_not_match_the_signature() -> None:
    ready = received(sign(json_request("ListQueues")))

    tampered = replace_header(ready, "x-amz-target", "AmazonSQS.DeleteQueue")

    assert isinstance(refusal(tampered), SignatureDoesNotMatch)


def test_a_body_that_is_not_what_its_declared_hash_says_is_refused() -> None:
    body = b'{"QueueName":"mine"}'
    ready = received(sign(json_request(
        "CreateQueue", body, **{"X-Amz-Content-SHA256": hashlib.sha256(body).hexdigest()}
    )))

    error = refusal(received_with(ready, body=b'{"QueueName":"evil"}'))

    assert isinstance(error, SignatureDoesNotMatch)
    assert "x-amz-content-sha256" in str(error)


def test_a_tampered_presigned_parameter_does_not_match_the_signature() -> None:
    ready = received(presign("GET", {"Action": "SendMessage", "MessageBody": "pay 10"}))

    tampered = received_with(ready, target=ready.target.replace("pay+10", "pay+99").replace(
        "pay%2010", "pay%2099"))

    assert tampered.target != ready.target
    assert isinstance(refusal(tampered), SignatureDoesNotMatch)


@pytest.mark.parametrize(("region", "service"), [("us-east-1", "sns"), ("US_EAST", "sqs")])
def test_a_credential_scoped_to_another_service_or_no_valid_region_is_refused(
    region: str, service: str
) -> None:
    error = refusal(received(sign(json_request(), region=region, service=service)))

    assert isinstance(error, SignatureDoesNotMatch)
    assert "Credential should be scoped" in str(error)


def test_a_scope_date_other_than_the_signed_dates_is_refused() -> None:
    ready = received(sign(json_request()))
    authorization = headers_of(ready)["authorization"]
    stamp = headers_of(ready)["x-amz-date"][:8]
    other_day = authorization.replace(f"/{stamp}/", "/20200101/")

    error = refusal(replace_header(ready, "authorization", other_day))

    assert isinstance(error, SignatureDoesNotMatch)
    assert "Date in Credential scope does not match" in str(error)


def test_a_signature_older_than_fifteen_minutes_has_expired_as_aws_words_it() -> None:
    ready = received(sign(json_request()))

    error = refusal(ready, now=time.time() + 20 * 60)

    assert isinstance(error, SignatureDoesNotMatch)
    assert str(error).startswith("Signature expired: ")
    assert "is now earlier than" in str(error) and str(error).endswith("- 15 min.)")


def test_a_signature_from_more_than_fifteen_minutes_ahead_is_not_yet_current() -> None:
    error = refusal(received(sign(json_request())), now=time.time() - 20 * 60)

    assert isinstance(error, SignatureDoesNotMatch)
    assert str(error).startswith("Signature not yet current: ")


def test_a_signature_within_the_fifteen_minutes_is_accepted() -> None:
    assert check(received(sign(json_request())), now=time.time() + 14 * 60).key == ORDERS


@pytest.mark.parametrize(
    "authorization",
    [
        "AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
        "AWS4-HMAC-SHA256 Credential=AKIDORDERS/20240101/us-east-1/sqs/aws4_request,"
        " Signature=" + "0" * 64,
        "AWS4-HMAC-SHA256 Credential=AKIDORDERS/20240101/us-east-1/sqs/aws4_request,"
        " SignedHeaders=host;x-amz-date",
        "AWS4-HMAC-SHA256 Credential=AKIDORDERS/us-east-1/sqs/aws4_request,"
        " SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
        "AWS AKIDORDERS:c2lnbmF0dXJl",
        "AWS4-HMAC-SHA256",
    ],
    ids=["no-credential", "no-signed-headers", "no-signature", "short-scope", "sigv2", "bare"],
)
def test_a_malformed_authorization_header_is_an_incomplete_signature(authorization: str) -> None:
    ready = received(json_request(), headers=[
        ("Content-Type", JSON_TYPE), ("X-Amz-Date", "20240101T000000Z"),
        ("Host", "127.0.0.1:9324"), ("Authorization", authorization),
    ])

    assert isinstance(refusal(ready), IncompleteSignature)


def test_a_header_signature_without_a_date_is_an_incomplete_signature() -> None:
    ready = received(sign(json_request()))
    undated = [(n, v) for n, v in ready.headers if n.lower() != "x-amz-date"]

    assert isinstance(refusal(received_with(ready, headers=undated)), IncompleteSignature)


def test_a_signature_that_leaves_out_the_host_is_an_incomplete_signature() -> None:
    class NoHost(SigV4Auth):  # type: ignore[misc]
        def headers_to_sign(self, request: AWSRequest) -> object:
            chosen = super().headers_to_sign(request)
            del chosen["host"]
            return chosen

    request = json_request()
    NoHost(Credentials(ORDERS.access_key_id, SECRET), "sqs", "us-east-1").add_auth(request)

    assert isinstance(refusal(received(request)), IncompleteSignature)


@pytest.mark.parametrize("expires", ["0", "604801", "soon"])
def test_a_presigned_url_with_an_impossible_lifetime_is_an_incomplete_signature(
    expires: str
) -> None:
    ready = received(presign("GET", {"Action": "ListQueues"}, expires=60))

    changed = ready.target.replace("X-Amz-Expires=60", f"X-Amz-Expires={expires}")

    assert isinstance(refusal(received_with(ready, target=changed)), IncompleteSignature)


def test_a_presigned_url_missing_its_signature_is_an_incomplete_signature() -> None:
    ready = received(presign("GET", {"Action": "ListQueues"}))
    unsigned = "&".join(p for p in ready.target.split("&") if "X-Amz-Signature" not in p)

    assert isinstance(refusal(received_with(ready, target=unsigned)), IncompleteSignature)


def test_both_a_header_and_a_presigned_signature_is_an_incomplete_signature() -> None:
    header_signed = received(sign(json_request()))
    presigned = received(presign("POST", {"Action": "ListQueues"}))

    both = received_with(header_signed, target=presigned.target)

    assert isinstance(refusal(both), IncompleteSignature)


# --- session tokens -------------------------------------------------------------------------

def test_a_key_with_a_session_token_accepts_requests_carrying_exactly_that_token() -> None:
    token = TEMPORARY.session_token
    header_signed = received(sign(json_request(), TEMPORARY, token=token))
    presigned = received(presign("GET", {"Action": "ListQueues"}, TEMPORARY, token=token))

    assert check(header_signed).key == TEMPORARY
    assert check(presigned).key == TEMPORARY
    assert "x-amz-security-token" in headers_of(header_signed)["authorization"]


@pytest.mark.parametrize("token", [None, "FQoGZXIvYXdzE-other"])
def test_a_key_with_a_session_token_refuses_requests_without_it(token: str | None) -> None:
    header_signed = received(sign(json_request(), TEMPORARY, token=token))
    presigned = received(presign("GET", {"Action": "ListQueues"}, TEMPORARY, token=token))

    assert isinstance(refusal(header_signed), InvalidClientTokenId)
    assert isinstance(refusal(presigned), InvalidClientTokenId)


def test_a_token_sent_with_a_key_that_has_none_is_an_invalid_client_token_id() -> None:
    ready = received(sign(json_request(), ORDERS, token="made-up-token"))

    assert isinstance(refusal(ready), InvalidClientTokenId)


def test_a_session_token_header_left_out_of_the_signature_is_refused() -> None:
    ready = received(sign(json_request(), TEMPORARY))
    carried = received_with(ready, headers=[
        *ready.headers, ("X-Amz-Security-Token", str(TEMPORARY.session_token))
    ])

    assert isinstance(refusal(carried), IncompleteSignature)


def test_refusals_never_show_a_secret_or_the_signature() -> None:
    ready = received(sign(json_request(), secret="wrong-secret"))
    signature = headers_of(ready)["authorization"].rsplit("Signature=", 1)[1]
    errors = [
        refusal(ready),
        refusal(ready, now=time.time() + 3600),
        refusal(received(sign(json_request(), TEMPORARY, token="guess"))),
    ]

    for error in errors:
        for secret in (SECRET, "wrong-secret", signature, str(TEMPORARY.session_token)):
            assert secret not in str(error)
