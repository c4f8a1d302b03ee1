"""Hostile input on the wire: requests built to break the server get a clear 4xx SQS error.

Owns the scenarios of issue 13's "hostile input" list, over both protocols (AWS JSON 1.0 and
query/XML): text that is not valid Unicode (a lone UTF-16 surrogate in JSON, an invalid UTF-8
sequence in a form) or holds characters SQS does not allow, JSON nested a thousand levels
deep, a gzip Content-Encoding on a body that is not gzip, Host headers and queue URLs that do
not name this server, malformed and repeated query parameters, oversized integers, and
clients that send their request too slowly. None of them may ever be answered with a 5xx,
and no error message may carry Python's own text. Must not import cqs.
"""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import pytest
import urllib3

from .conftest import (
    ACCOUNT_ID,
    JSON_CONTENT_TYPE,
    JsonClient,
    JsonReply,
    QueryClient,
    QueryReply,
    queue_path,
    unique_name,
)

LONE_SURROGATE = "\ud800"
DEEP = 1_100  # nesting levels: past Python's default recursion limit of 1000
INVALID_CHARACTERS = "Invalid characters found"
PYTHON_TEXT = ("codec", "Expecting", "set_int_max_str_digits", "Exceeds the limit", "char ")

_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=40.0))


def post(
    endpoint: str, body: bytes, headers: Mapping[str, str], path: str = "/"
) -> urllib3.BaseHTTPResponse:
    return _http.request("POST", endpoint + path, body=body, headers=dict(headers))


def post_json(
    endpoint: str, action: str, body: bytes, headers: Mapping[str, str] | None = None
) -> JsonReply:
    response = post(
        endpoint, body,
        {"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": f"AmazonSQS.{action}",
         **(headers or {})},
    )
    return JsonReply(response.status, dict(response.headers), response.data)


def _query_reply(response: urllib3.BaseHTTPResponse) -> QueryReply:
    try:
        root: ET.Element | None = ET.fromstring(response.data)
    except ET.ParseError:
        root = None
    return QueryReply(response.status, dict(response.headers), response.data, root)


def post_form(
    endpoint: str, form: str, headers: Mapping[str, str] | None = None, path: str = "/"
) -> QueryReply:
    """A query-protocol POST of `form` exactly as given (already percent-encoded)."""
    return _query_reply(post(
        endpoint, form.encode("ascii"),
        {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8", **(headers or {})},
        path,
    ))


def get_query(endpoint: str, query_string: str) -> QueryReply:
    """A query-protocol GET with `query_string` exactly as given (already percent-encoded):
    through http.client, since urllib3 would re-encode a broken `%ZZ` as `%25ZZ`."""
    connection = http.client.HTTPConnection(urlsplit(endpoint).netloc, timeout=40)
    try:
        connection.request("GET", f"/?{query_string}")
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    try:
        root: ET.Element | None = ET.fromstring(data)
    except ET.ParseError:
        root = None
    return QueryReply(response.status, dict(response.getheaders()), data, root)


def json_text(document: Any) -> bytes:
    """JSON with every non-ASCII character escaped: a lone surrogate becomes `\\ud800`."""
    return json.dumps(document, ensure_ascii=True).encode("ascii")


def nested_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def message_of(reply: JsonReply | QueryReply) -> str:
    if isinstance(reply, JsonReply):
        return str(reply.document.get("message", ""))
    return reply.text("Error/Message") or ""


def assert_no_python_text(reply: JsonReply | QueryReply) -> None:
    message = message_of(reply)
    assert not [text for text in PYTHON_TEXT if text in message], message


def name_of(queue_url: str) -> str:
    return queue_url.rsplit("/", 1)[1]


# --- 1. text that is not valid Unicode, or not SQS text -----------------------------------------


def _surrogate_requests(queue_url: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """case -> (action, JSON body) with a lone surrogate in one string field outside the
    message itself: each of these used to be answered 500 (UnicodeEncodeError)."""
    s = LONE_SURROGATE
    return {
        "get queue url name": ("GetQueueUrl", {"QueueName": f"q{s}"}),
        "create queue name": ("CreateQueue", {"QueueName": f"q{s}"}),
        "queue url": ("SendMessage", {"QueueUrl": f"{queue_url}{s}", "MessageBody": "x"}),
        "queue url host": (
            "GetQueueAttributes", {"QueueUrl": queue_url.replace("127.0.0.1", f"h{s}")}
        ),
        "tag key": ("TagQueue", {"QueueUrl": queue_url, "Tags": {f"k{s}": "v"}}),
        "tag value": ("TagQueue", {"QueueUrl": queue_url, "Tags": {"k": f"v{s}"}}),
        "create queue tag": ("CreateQueue", {"QueueName": unique_name(), "tags": {"k": s}}),
        "untag key": ("UntagQueue", {"QueueUrl": queue_url, "TagKeys": [f"k{s}"]}),
        "policy attribute": (
            "SetQueueAttributes",
            {"QueueUrl": queue_url, "Attributes": {"Policy": f'{{"Version": "{s}"}}'}},
        ),
        "attribute name": (
            "GetQueueAttributes", {"QueueUrl": queue_url, "AttributeNames": [f"All{s}"]}
        ),
        "queue name prefix": ("ListQueues", {"QueueNamePrefix": f"t{s}"}),
        "batch entry id": (
            "SendMessageBatch",
            {"QueueUrl": queue_url, "Entries": [{"Id": f"a{s}", "MessageBody": "x"}]},
        ),
        "receipt handle": ("DeleteMessage", {"QueueUrl": queue_url, "ReceiptHandle": f"r{s}"}),
        "permission label": (
            "AddPermission",
            {"QueueUrl": queue_url, "Label": f"l{s}", "AWSAccountIds": [ACCOUNT_ID],
             "Actions": ["SendMessage"]},
        ),
        "move task source": ("StartMessageMoveTask", {"SourceArn": f"arn:aws:sqs:{s}"}),
    }


@pytest.mark.parametrize("case", list(_surrogate_requests("http://127.0.0.1/0/q")))
def test_a_lone_surrogate_in_a_json_string_is_invalid_parameter_value(
    cqs_endpoint: str, queue_url: str, case: str
) -> None:
    action, body = _surrogate_requests(queue_url)[case]

    reply = post_json(cqs_endpoint, action, json_text(body))

    assert reply.status == 400, reply.body
    assert reply.code_boto3_shows == "InvalidParameterValue"
    assert INVALID_CHARACTERS in message_of(reply)


@pytest.mark.parametrize(
    ("case", "message", "code"),
    [
        ("body", {"MessageBody": f"x{LONE_SURROGATE}"}, "InvalidMessageContents"),
        ("attribute name",
         {"MessageBody": "x",
          "MessageAttributes": {f"a{LONE_SURROGATE}": {"DataType": "String",
                                                       "StringValue": "v"}}},
         "InvalidParameterValue"),
        ("attribute value",
         {"MessageBody": "x",
          "MessageAttributes": {"a": {"DataType": "String",
                                      "StringValue": f"v{LONE_SURROGATE}"}}},
         "InvalidParameterValue"),
        ("attribute type",
         {"MessageBody": "x",
          "MessageAttributes": {"a": {"DataType": f"String.{LONE_SURROGATE}",
                                      "StringValue": "v"}}},
         "InvalidParameterValue"),
    ],
)
def test_a_lone_surrogate_in_a_message_fails_that_message_alone(
    cqs_endpoint: str, queue_url: str, case: str, message: dict[str, Any], code: str
) -> None:
    """SendMessage is refused; in a batch only the entry fails, as for any character SQS
    refuses in a message (the batch entry's body and attribute name used to be a 500)."""
    single = post_json(
        cqs_endpoint, "SendMessage", json_text({"QueueUrl": queue_url, **message})
    )
    batch = post_json(
        cqs_endpoint, "SendMessageBatch",
        json_text({"QueueUrl": queue_url, "Entries": [
            {"Id": "bad", **message}, {"Id": "good", "MessageBody": "fine"}
        ]}),
    )

    assert single.status == 400, single.body
    assert single.code_boto3_shows == code
    assert batch.status == 200, batch.body
    assert [entry["Id"] for entry in batch.document["Successful"]] == ["good"]
    [failed] = batch.document["Failed"]
    assert (failed["Id"], failed["Code"], failed["SenderFault"]) == ("bad", code, True)


@pytest.mark.parametrize(
    "form",
    [
        "Action=CreateQueue&QueueName=q%ED%A0%80",  # the UTF-8 bytes of a lone surrogate
        "Action=CreateQueue&QueueName=q&Tag.1.Key=k&Tag.1.Value=%FF",
        "Action=ListQueues&%C3%28=x",  # in a parameter name
        "Action=SendMessage&QueueUrl=q&MessageBody=%80",
        "Action=SetQueueAttributes&QueueUrl=q&Attribute.1.Name=Policy&Attribute.1.Value=%E2%82",
    ],
)
def test_a_form_with_invalid_utf8_is_malformed_query_string(cqs_endpoint: str, form: str) -> None:
    """The query protocol's lone surrogate: percent-encoded bytes that are not UTF-8.
    MalformedQueryString, "The query string contains a syntax error", is a 404 in AWS's
    common-errors table."""
    reply = post_form(cqs_endpoint, form)

    assert reply.status == 404, reply.body
    assert reply.error_code == "MalformedQueryString"
    assert "UTF-8" in message_of(reply)
    assert_no_python_text(reply)


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("QueueName", "q%01"),
        ("QueueUrl", "http://127.0.0.1/000000000000/q%00"),
        ("QueueNamePrefix", "t%1B"),
        ("NextToken", "%EF%BF%BE"),  # U+FFFE: valid UTF-8, not an SQS character
    ],
)
def test_a_form_with_characters_sqs_does_not_allow_is_invalid_parameter_value(
    cqs_endpoint: str, parameter: str, value: str
) -> None:
    action = {"QueueName": "GetQueueUrl", "QueueUrl": "GetQueueAttributes"}.get(
        parameter, "ListQueues"
    )

    reply = post_form(cqs_endpoint, f"Action={action}&{parameter}={value}")

    assert reply.status == 400, reply.body
    assert reply.error_code == "InvalidParameterValue"
    assert INVALID_CHARACTERS in message_of(reply)


def test_a_queue_path_with_characters_sqs_does_not_allow_is_invalid_parameter_value(
    cqs_endpoint: str,
) -> None:
    reply = post_form(cqs_endpoint, "Action=PurgeQueue", path=f"/{ACCOUNT_ID}/q%01")

    assert reply.status == 400, reply.body
    assert reply.error_code == "InvalidParameterValue"


# --- 1. JSON nested past the recursion limit ----------------------------------------------------


@pytest.mark.parametrize("attribute", ["Policy", "RedrivePolicy", "RedriveAllowPolicy"])
def test_a_json_attribute_nested_a_thousand_levels_deep_is_invalid_attribute_value(
    json_request: JsonClient, query: QueryClient, queue_url: str, attribute: str
) -> None:
    over_json = json_request(
        "SetQueueAttributes",
        {"QueueUrl": queue_url, "Attributes": {attribute: nested_json(DEEP)}},
    )
    over_query = query(
        "SetQueueAttributes",
        {"Attribute.1.Name": attribute, "Attribute.1.Value": nested_json(DEEP)},
        path=queue_path(queue_url),
    )

    assert over_json.status == 400, over_json.body
    assert over_json.code_boto3_shows == "InvalidAttributeValue"
    assert over_query.status == 400, over_query.body
    assert over_query.error_code == "InvalidAttributeValue"


def test_a_json_body_nested_a_thousand_levels_deep_is_a_serialization_exception(
    cqs_endpoint: str,
) -> None:
    body = '{"QueueNamePrefix": "t", "x": ' + nested_json(DEEP) + "}"

    reply = post_json(cqs_endpoint, "ListQueues", body.encode())

    assert reply.status == 400, reply.body
    assert reply.error_type == "SerializationException"
    assert message_of(reply) == "The request body is nested more than 64 levels deep."


# --- 1. Content-Encoding: gzip on a body that is not gzip ----------------------------------------


def header(reply: JsonReply | QueryReply, name: str) -> str | None:
    return {k.lower(): v for k, v in reply.headers.items()}.get(name.lower())


def unhandled_in_log(server: Any) -> int:
    return str(server.log_path.read_text(errors="replace")).count("Unhandled exception")


def test_a_json_body_marked_gzip_that_is_not_gzip_is_a_serialization_exception(
    cqs_endpoint: str, cqs_server: Any
) -> None:
    """Wall clock: a traceback would be logged after the answer; nothing signals its absence."""
    logged = unhandled_in_log(cqs_server)

    reply = post_json(cqs_endpoint, "ListQueues", b"{}", {"Content-Encoding": "gzip"})

    assert reply.status == 400, reply.body
    assert reply.error_type == "SerializationException"
    assert message_of(reply) == "The request body is not valid gzip data (Content-Encoding: gzip)."
    assert header(reply, "Connection") == "close"  # the rest of the stream cannot be trusted
    time.sleep(0.3)
    assert unhandled_in_log(cqs_server) == logged


def test_a_form_marked_gzip_that_is_not_gzip_is_malformed_query_string(
    cqs_endpoint: str, cqs_server: Any
) -> None:
    """Wall clock: a traceback would be logged after the answer; nothing signals its absence."""
    logged = unhandled_in_log(cqs_server)

    reply = post_form(cqs_endpoint, "Action=ListQueues", {"Content-Encoding": "gzip"})

    assert reply.status == 404, reply.body
    assert reply.error_code == "MalformedQueryString"
    assert message_of(reply) == "The request body is not valid gzip data (Content-Encoding: gzip)."
    assert header(reply, "Connection") == "close"
    time.sleep(0.3)
    assert unhandled_in_log(cqs_server) == logged


def test_a_body_that_is_gzip_is_served_over_both_protocols(
    cqs_endpoint: str, queue_url: str
) -> None:
    json_reply = post_json(
        cqs_endpoint, "GetQueueUrl", gzip.compress(json_text({"QueueName": name_of(queue_url)})),
        {"Content-Encoding": "gzip"},
    )
    query_reply = _query_reply(post(
        cqs_endpoint, gzip.compress(f"Action=GetQueueUrl&QueueName={name_of(queue_url)}".encode()),
        {"Content-Type": "application/x-www-form-urlencoded", "Content-Encoding": "gzip"},
    ))

    assert json_reply.status == 200, json_reply.body
    assert json_reply.document["QueueUrl"] == queue_url
    assert query_reply.status == 200, query_reply.body
    assert query_reply.text("GetQueueUrlResult/QueueUrl") == queue_url


# --- 3. the Host header ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ['evil"<x>:1', "a b", "h:99999", "[::1", "x/y"])
def test_a_host_header_that_is_not_host_and_port_is_refused_over_json(
    cqs_endpoint: str, host: str
) -> None:
    reply = post_json(
        cqs_endpoint, "CreateQueue", json_text({"QueueName": unique_name()}), {"Host": host}
    )

    assert reply.status == 400, reply.body
    assert reply.code_boto3_shows == "InvalidParameterValue"
    assert message_of(reply).startswith("The Host header is invalid.")
    assert b"evil" not in reply.body and b"<x>" not in reply.body


def test_a_host_header_that_is_not_host_and_port_is_refused_over_query(
    cqs_endpoint: str,
) -> None:
    reply = post_form(
        cqs_endpoint, f"Action=CreateQueue&QueueName={unique_name()}", {"Host": 'evil"<x>:1'}
    )

    assert reply.status == 400, reply.body
    assert reply.error_code == "InvalidParameterValue"
    assert b"evil" not in reply.body


def test_a_valid_host_header_names_the_queue_url_over_both_protocols(
    cqs_endpoint: str, queue_url: str
) -> None:
    name = name_of(queue_url)
    headers = {"Host": "sqs.internal.example:4566"}

    over_json = post_json(cqs_endpoint, "GetQueueUrl", json_text({"QueueName": name}), headers)
    over_query = post_form(cqs_endpoint, f"Action=GetQueueUrl&QueueName={name}", headers)

    expected = f"http://sqs.internal.example:4566/{ACCOUNT_ID}/{name}"
    assert over_json.document["QueueUrl"] == expected
    assert over_query.text("GetQueueUrlResult/QueueUrl") == expected


# --- 4. queue URLs of another account --------------------------------------------------------------


def test_a_queue_url_of_another_account_is_refused_without_saying_whether_it_exists_over_json(
    json_request: JsonClient, queue_url: str
) -> None:
    foreign = queue_url.replace(f"/{ACCOUNT_ID}/", "/123456789012/")
    absent = foreign.replace(name_of(queue_url), "no-such-queue-anywhere")

    sends = [json_request("SendMessage", {"QueueUrl": url, "MessageBody": "x"})
             for url in (foreign, absent)]
    owner = json_request(
        "GetQueueUrl", {"QueueName": name_of(queue_url), "QueueOwnerAWSAccountId": "123456789012"}
    )

    for reply in sends:
        assert reply.status == 403, reply.body
        assert reply.code_boto3_shows == "AccessDenied"
    assert owner.status == 400, owner.body
    assert owner.code_boto3_shows == "AWS.SimpleQueueService.NonExistentQueue"


def test_a_queue_url_of_another_account_is_refused_over_query(
    query: QueryClient, queue_url: str
) -> None:
    foreign = queue_url.replace(f"/{ACCOUNT_ID}/", "/123456789012/")

    in_parameter = query("SendMessage", {"QueueUrl": foreign, "MessageBody": "x"})
    in_path = query("SendMessage", {"MessageBody": "x"}, path=queue_path(foreign))

    for reply in (in_parameter, in_path):
        assert reply.status == 403, reply.body
        assert reply.error_code == "AccessDenied"


def test_a_queue_url_of_this_account_under_another_host_name_is_served(
    json_request: JsonClient, queue_url: str
) -> None:
    elsewhere = queue_url.replace("127.0.0.1", "sqs.internal.example")

    reply = json_request("GetQueueAttributes", {"QueueUrl": elsewhere})

    assert reply.status == 200, reply.body


def test_an_unparseable_queue_url_names_no_queue(
    json_request: JsonClient,
) -> None:
    reply = json_request("SendMessage", {"QueueUrl": "http://[bad", "MessageBody": "x"})

    assert reply.status == 400, reply.body
    assert reply.code_boto3_shows == "AWS.SimpleQueueService.NonExistentQueue"


# --- 5. query syntax: broken escapes and repeated parameters ---------------------------------------


@pytest.mark.parametrize(
    "form", ["Action=ListQueues&QueueNamePrefix=%ZZ", "Action=ListQueues&QueueNamePrefix=50%"]
)
def test_a_percent_not_followed_by_two_hex_digits_is_malformed_query_string(
    cqs_endpoint: str, form: str
) -> None:
    """AWS's common-errors table: MalformedQueryString, "The query string contains a syntax
    error.", HTTP 404. urllib used to take `%ZZ` literally."""
    over_post = post_form(cqs_endpoint, form)
    over_get = get_query(cqs_endpoint, form)

    for reply in (over_post, over_get):
        assert reply.status == 404, reply.body
        assert reply.error_code == "MalformedQueryString"
        assert message_of(reply).startswith("The query string contains a syntax error")


@pytest.mark.parametrize(
    "form",
    [
        "Action=DeleteQueue&Action=ListQueues",
        "Action=ListQueues&QueueNamePrefix=a&QueueNamePrefix=b",
        "Action=ListQueues&QueueNamePrefix=a&QueueNamePrefix=a",
    ],
)
def test_a_parameter_given_twice_is_invalid_query_parameter(
    cqs_endpoint: str, form: str
) -> None:
    """A repeated parameter is ambiguous (the last one used to win, even for Action): refused
    with AWS's InvalidQueryParameter, "The AWS query string is malformed or does not adhere
    to AWS standards", HTTP 400, since its syntax is fine. Repeats of the same value too:
    no client needs them. (A parameter in both the query string and the form body is still
    allowed: the body's wins.)"""
    over_post = post_form(cqs_endpoint, form)
    over_get = get_query(cqs_endpoint, form)

    for reply in (over_post, over_get):
        assert reply.status == 400, reply.body
        assert reply.error_code == "InvalidQueryParameter"
        assert "more than once" in message_of(reply)


def test_a_percent_escape_in_a_get_query_string_is_decoded_once(
    cqs_endpoint: str, sqs: Any
) -> None:
    name = unique_name()

    reply = get_query(
        cqs_endpoint, f"Action=CreateQueue&QueueName={name}&Tag.1.Key=k&Tag.1.Value=%2525"
    )
    url = reply.text("CreateQueueResult/QueueUrl")
    try:
        assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"k": "%25"}
    finally:
        sqs.delete_queue(QueueUrl=url)


# --- 6. integers too long to convert -----------------------------------------------------------------


def test_a_5000_digit_integer_is_refused_in_sqs_words_over_both_protocols(
    cqs_endpoint: str, json_request: JsonClient, query: QueryClient, queue_url: str
) -> None:
    digits = "9" * 5000

    as_number = post_json(
        cqs_endpoint, "ReceiveMessage",
        f'{{"QueueUrl": "{queue_url}", "MaxNumberOfMessages": {digits}}}'.encode(),
    )
    as_string = json_request(
        "ReceiveMessage", {"QueueUrl": queue_url, "MaxNumberOfMessages": digits}
    )
    over_query = query(
        "ReceiveMessage", {"MaxNumberOfMessages": digits}, path=queue_path(queue_url)
    )

    assert as_number.status == 400, as_number.body
    assert as_number.error_type == "SerializationException"
    assert message_of(as_number) == "The request body has an integer of more than 40 digits."
    for reply in (as_string, over_query):
        assert reply.status == 400, reply.body
        assert message_of(reply).endswith(
            "for parameter MaxNumberOfMessages is invalid. Reason: must be an integer of at"
            " most 18 digits."
        )
        assert len(message_of(reply)) < 200  # the number is not echoed whole
    assert json_request("ReceiveMessage", as_string.document).status == 400  # never a crash
    for reply in (as_number, as_string, over_query):
        assert_no_python_text(reply)


def test_malformed_json_is_described_without_the_parser_s_own_words(
    cqs_endpoint: str,
) -> None:
    reply = post_json(cqs_endpoint, "ListQueues", b'{"QueueNamePrefix": }')

    assert reply.status == 400, reply.body
    assert message_of(reply) == "The request body is not valid JSON (line 1, column 21)."


# --- 7. tags: one character rule over both protocols -------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"), [("team", "a\x01b"), ("te\x1bam", "blue"), ("team", "\ufffe")]
)
def test_a_tag_with_characters_sqs_does_not_allow_is_refused_over_json(
    json_request: JsonClient, queue_url: str, key: str, value: str
) -> None:
    reply = json_request("TagQueue", {"QueueUrl": queue_url, "Tags": {key: value}})
    created = json_request("CreateQueue", {"QueueName": unique_name(), "tags": {key: value}})

    for answer in (reply, created):
        assert answer.status == 400, answer.body
        assert answer.code_boto3_shows == "InvalidParameterValue"
        assert INVALID_CHARACTERS in message_of(answer)
    assert json_request("ListQueueTags", {"QueueUrl": queue_url}).document.get("Tags") is None


@pytest.mark.parametrize(
    "form", ["Tag.1.Key=team&Tag.1.Value=a%01b", "Tag.1.Key=t%00&Tag.1.Value=blue"]
)
def test_a_tag_with_characters_sqs_does_not_allow_is_refused_over_query(
    cqs_endpoint: str, queue_url: str, form: str
) -> None:
    reply = post_form(cqs_endpoint, f"Action=TagQueue&{form}", path=queue_path(queue_url))

    assert reply.status == 400, reply.body
    assert reply.error_code == "InvalidParameterValue"
    assert INVALID_CHARACTERS in message_of(reply)


def test_a_tag_of_allowed_whitespace_and_symbols_comes_back_unchanged_over_both_protocols(
    json_request: JsonClient, query: QueryClient, queue_url: str
) -> None:
    value = "tab\tline\ncr\r end \U0001f600 \ud7ff"
    tagged = json_request("TagQueue", {"QueueUrl": queue_url, "Tags": {"mixed": value}})

    over_json = json_request("ListQueueTags", {"QueueUrl": queue_url})
    over_query = query("ListQueueTags", path=queue_path(queue_url))

    assert tagged.status == 200, tagged.body
    assert over_json.document["Tags"] == {"mixed": value}
    assert over_query.texts("ListQueueTagsResult/Tag/Value") == [value]


# --- 2. read timeouts -----------------------------------------------------------------------------

HEADER_SECONDS = 1.0
BODY_SECONDS = 2.0


@pytest.fixture(scope="module")
def impatient_server(redis_server: Any, start_cqs_server: Any) -> Any:
    """A server of its own, with short read timeouts set by its flags."""
    return start_cqs_server(
        [redis_server.url],
        extra_args=[
            "--header-read-timeout-seconds", str(HEADER_SECONDS),
            "--body-read-timeout-seconds", str(BODY_SECONDS),
        ],
    )


@pytest.fixture
def impatient_endpoint(impatient_server: Any) -> str:
    return str(impatient_server.url)


@pytest.fixture
def raw_socket(impatient_endpoint: str) -> Iterator[socket.socket]:
    host, port = impatient_endpoint.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=10)
    yield connection
    connection.close()


def closed_after(connection: socket.socket, trickle: bytes, every: float) -> float:
    """Send `trickle` a byte every `every` seconds until the server closes the connection;
    the seconds that took (the test fails if it stays open through the whole trickle)."""
    started = time.monotonic()
    for byte in trickle:
        try:
            connection.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - started
        connection.settimeout(every)
        try:
            if connection.recv(4096) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - started
    raise AssertionError(f"still open after {time.monotonic() - started:.1f} s")


def request_bytes(action: str, body: bytes, keep_alive: bool = True) -> bytes:
    return (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {JSON_CONTENT_TYPE}\r\n"
        f"X-Amz-Target: AmazonSQS.{action}\r\nContent-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    ).encode() + body


def read_response(connection: socket.socket) -> tuple[int, bytes]:
    connection.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(4096)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = connection.recv(4096)
        assert chunk, "closed mid-response"
        body += chunk
    return int(head.split(b" ")[1]), body


def test_headers_trickled_a_byte_a_second_are_cut_off_at_the_header_timeout(
    raw_socket: socket.socket,
) -> None:
    elapsed = closed_after(raw_socket, request_bytes("ListQueues", b"{}"), every=0.25)

    assert HEADER_SECONDS * 0.9 <= elapsed < HEADER_SECONDS + 2.0


def test_a_body_trickled_too_slowly_is_cut_off_at_the_body_timeout(
    raw_socket: socket.socket, impatient_server: Any
) -> None:
    """Wall clock: the body read timeout is measured; the log then gets time to show an error."""
    body = json.dumps({"QueueNamePrefix": "x" * 100}).encode()
    request = request_bytes("ListQueues", body)
    raw_socket.sendall(request[: -len(body)])  # all headers at once

    elapsed = closed_after(raw_socket, body, every=0.25)

    assert BODY_SECONDS * 0.9 <= elapsed < BODY_SECONDS + 2.0
    time.sleep(0.5)  # the handler that was reading the body gives up after the close
    assert "unexpected error" not in impatient_server.log_tail(20_000)


def test_keep_alive_requests_with_idle_pauses_are_served_on_one_connection(
    raw_socket: socket.socket,
) -> None:
    """Wall clock: idles longer than the header read timeout must not close the connection."""
    for _ in range(3):
        raw_socket.sendall(request_bytes("ListQueues", b"{}"))
        status, _ = read_response(raw_socket)
        assert status == 200
        time.sleep(HEADER_SECONDS + 0.5)  # idle between requests is not reading one


def test_a_long_poll_outlasts_both_read_timeouts(
    raw_socket: socket.socket, impatient_endpoint: str
) -> None:
    created = urllib3.PoolManager().request(
        "POST", impatient_endpoint + "/",
        body=json_text({"QueueName": unique_name()}),
        headers={"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": "AmazonSQS.CreateQueue"},
    )
    url = json.loads(created.data)["QueueUrl"]
    started = time.monotonic()

    raw_socket.sendall(
        request_bytes("ReceiveMessage", json_text({"QueueUrl": url, "WaitTimeSeconds": 4}))
    )
    status, body = read_response(raw_socket)

    assert status == 200, body
    assert time.monotonic() - started >= 3.5  # it waited, and was not cut off
    raw_socket.sendall(request_bytes("DeleteQueue", json_text({"QueueUrl": url})))
    assert read_response(raw_socket)[0] == 200


# --- 8. queue names no queue can have (found by the fuzz test) ------------------------------------

IMPOSSIBLE_NAME = "q" * 70_000  # past the 64 KiB Cassandra takes in a key


@pytest.mark.parametrize(
    ("action", "body"),
    [
        ("GetQueueUrl", {"QueueName": IMPOSSIBLE_NAME}),
        ("DeleteQueue", {"QueueUrl": IMPOSSIBLE_NAME}),
        ("GetQueueAttributes", {"QueueUrl": f"http://h/{ACCOUNT_ID}/{IMPOSSIBLE_NAME}"}),
        ("ListDeadLetterSourceQueues", {"QueueUrl": IMPOSSIBLE_NAME}),
        ("ListMessageMoveTasks",
         {"SourceArn": f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{IMPOSSIBLE_NAME}"}),
        ("StartMessageMoveTask",
         {"SourceArn": f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{IMPOSSIBLE_NAME}"}),
        ("GetQueueUrl", {"QueueName": "a" * 81}),
        ("GetQueueUrl", {"QueueName": "a.b"}),
    ],
)
def test_a_queue_name_no_queue_can_have_is_a_queue_that_does_not_exist(
    json_request: JsonClient, action: str, body: dict[str, Any]
) -> None:
    """A 70,000-character name used to reach Cassandra, which refused the key: a 503."""
    reply = json_request(action, body)

    assert (reply.status, reply.error_type) in (
        (400, "QueueDoesNotExist"), (404, "ResourceNotFoundException")), reply.body[:500]


def test_a_redrive_policy_naming_a_queue_no_queue_can_have_is_refused(
    json_request: JsonClient, queue_url: str
) -> None:
    arn = f"arn:aws:sqs:us-east-1:{ACCOUNT_ID}:{IMPOSSIBLE_NAME}"

    reply = json_request("SetQueueAttributes", {"QueueUrl": queue_url, "Attributes": {
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})}})

    assert 400 <= reply.status < 500, reply.body[:500]


# --- 9. malformed HTTP: answered by the HTTP parser, logged in one line (found by the fuzz test) ---


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0",
        b"POST / HTTP/1.1\r\nHost: h\r\nX Broken: x\r\nContent-Length: 0\r\n\r\n",
        b"GET /?" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: h\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}",
    ],
)
def test_malformed_http_is_a_400_and_one_log_line_without_a_traceback(
    cqs_server: Any, request_bytes: bytes
) -> None:
    """aiohttp's parser answers these itself (a plain 400, then it closes); it used to log
    each at ERROR with a traceback, so any client could fill the log.
    Wall clock: a traceback would be logged after the answer; nothing signals its absence."""
    before = cqs_server.log_path.stat().st_size
    host, port = urlsplit(cqs_server.url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request_bytes)
        answer = connection.recv(65536)
    time.sleep(0.3)
    with cqs_server.log_path.open("rb") as log:
        log.seek(before)
        logged = log.read().decode("utf-8", "replace")

    assert answer.split(b"\r\n")[0].split(b" ")[1] == b"400", answer[:200]
    assert "Traceback" not in logged and " ERROR " not in logged, logged[:2000]
    assert "Unhandled exception" not in logged, logged[:2000]



@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_body_over_the_limit_that_is_not_its_content_encoding_logs_no_traceback(
    cqs_server: Any, encoding: str
) -> None:
    """Found by the long fuzz run: after the 413, aiohttp reads on in the body (so that a
    client can finish sending and read its answer), decoding it; a body that is not the
    gzip or deflate it claims failed there, logged at ERROR with a traceback. aiohttp then
    closes the connection, so this client may see its send cut off instead of the 413.
    Wall clock: a traceback would be logged after the answer; nothing signals its absence."""
    before = cqs_server.log_path.stat().st_size
    body = b'{"QueueNamePrefix": "' + b"x" * (5 * 1024 * 1024) + b'"}'
    host, port = urlsplit(cqs_server.url).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as connection:
        try:
            connection.sendall(
                b"POST / HTTP/1.1\r\nHost: h\r\nContent-Type: " + JSON_CONTENT_TYPE.encode()
                + b"\r\nX-Amz-Target: AmazonSQS.ListQueues\r\nContent-Encoding: "
                + encoding.encode() + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            answer = connection.recv(65536)
        except (BrokenPipeError, ConnectionResetError):
            answer = b"HTTP/1.1 413 (cut off)"
    time.sleep(0.5)
    with cqs_server.log_path.open("rb") as log:
        log.seek(before)
        logged = log.read().decode("utf-8", "replace")

    assert answer.split(b" ")[1] == b"413", answer[:300]
    assert "Traceback" not in logged and " ERROR " not in logged, logged[:2000]
