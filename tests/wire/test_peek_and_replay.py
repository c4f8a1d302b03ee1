"""Peek and replay (issue 19): CqsExtensions.PeekMessages, PeekConsumedMessages and
ReplayMessages, and the queue attribute cqs.ConsumedRetentionSeconds.

The extensions are JSON requests signed by botocore's SigV4 signer exactly as boto3 signs
SQS calls (`X-Amz-Target: CqsExtensions.<Action>`); the scene around them (sends, receives,
deletes, queue attributes) is set by unmodified boto3 over each protocol, so what a
consumer observes after a peek is checked over JSON and the query protocol alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.wire.conftest import REGION, QueryClient, error_code, md5_hex

_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=60.0))
Extension = Callable[[str, Mapping[str, Any]], tuple[int, dict[str, Any]]]
RETENTION = "cqs.ConsumedRetentionSeconds"


@pytest.fixture
def extension(cqs_endpoint: str) -> Extension:
    """POST a SigV4-signed `CqsExtensions.<action>`; (HTTP status, JSON answer)."""

    def call(action: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        request = AWSRequest(
            method="POST", url=cqs_endpoint + "/", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/x-amz-json-1.0",
                     "X-Amz-Target": "CqsExtensions." + action},
        )
        SigV4Auth(Credentials("x", "x"), "sqs", REGION).add_auth(request)
        reply = _http.request("POST", cqs_endpoint + "/", body=request.body,
                              headers=dict(request.headers.items()))
        return reply.status, json.loads(reply.data or b"{}")

    return call


def _ok(reply: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    status, document = reply
    assert status == 200, document
    return document


def _send_all(sqs: Any, url: str, bodies: list[str], **attributes: Any) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(bodies), 10):
        entries = [
            {"Id": str(n), "MessageBody": body, **attributes}
            for n, body in enumerate(bodies[start : start + 10])
        ]
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not answer.get("Failed"), answer
        ids.extend(entry["MessageId"] for entry in sorted(answer["Successful"], key=lambda e: int(e["Id"])))
    return ids


def _receive_all(sqs: Any, url: str, wanted: int, **extra: Any) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(got) < wanted and time.monotonic() < deadline:
        answer = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"], **extra,
        )
        got.extend(answer.get("Messages", []))
    return got


def _delete_all(sqs: Any, url: str, messages: list[dict[str, Any]]) -> None:
    for start in range(0, len(messages), 10):
        chunk = messages[start : start + 10]
        answer = sqs.delete_message_batch(QueueUrl=url, Entries=[
            {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(chunk)
        ])
        assert not answer.get("Failed"), answer


def _peek_all(extension: Extension, url: str, page: int) -> tuple[list[dict[str, Any]], int]:
    """Every message PeekMessages pages through, and how many pages it took."""
    seen: list[dict[str, Any]] = []
    token: str | None = None
    pages = 0
    while True:
        body: dict[str, Any] = {"QueueUrl": url, "MaxNumberOfMessages": page,
                                "MessageSystemAttributeNames": ["All"],
                                "MessageAttributeNames": ["All"]}
        if token:
            body["NextToken"] = token
        answer = _ok(extension("PeekMessages", body))
        pages += 1
        assert len(answer.get("Messages", [])) <= page
        seen.extend(answer.get("Messages", []))
        token = answer.get("NextToken")
        if not token:
            return seen, pages


def _counts(sqs: Any, url: str) -> tuple[int, int, int]:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return (int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]),
            int(attributes["ApproximateNumberOfMessagesDelayed"]))


# --- peek -------------------------------------------------------------------------------------

def test_peek_pages_through_visible_messages_and_changes_nothing(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    url = make_queue()
    bodies = [f"peek-{n:03d}" for n in range(300)]
    attribute = {"MessageAttributes": {"colour": {"DataType": "String", "StringValue": "blue"}}}
    sent = dict(zip(_send_all(sqs, url, bodies, **attribute), bodies, strict=True))
    held = _receive_all(sqs, url, 40, VisibilityTimeout=600)  # in flight: not peekable
    returned = _receive_all(sqs, url, 20, VisibilityTimeout=600)  # received once, then back
    for message in returned:
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    held_ids = {m["MessageId"] for m in held}
    returned_ids = {m["MessageId"] for m in returned}
    assert len(held_ids) == 40 and len(returned_ids) == 20
    before = _counts(sqs, url)
    assert before == (260, 40, 0)

    for _ in range(2):  # a second full peek sees the same: the first changed nothing
        peeked, pages = _peek_all(extension, url, 100)
        assert pages >= 3
        ids = [m["MessageId"] for m in peeked]
        assert len(ids) == len(set(ids)) == 260
        assert set(ids) == set(sent) - held_ids
        for message in peeked:
            assert message["Body"] == sent[message["MessageId"]]
            assert message["MD5OfBody"] == md5_hex(message["Body"])
            assert "ReceiptHandle" not in message
            assert message["MessageAttributes"]["colour"]["StringValue"] == "blue"
            expected_count = "1" if message["MessageId"] in returned_ids else "0"
            assert message["Attributes"]["ApproximateReceiveCount"] == expected_count
        assert _counts(sqs, url) == before

    # Consumers see every message as if nobody had peeked: receive counts went up by one.
    rest = _receive_all(sqs, url, 260)
    assert {m["MessageId"] for m in rest} == set(sent) - held_ids
    for message in rest:
        expected = "2" if message["MessageId"] in returned_ids else "1"
        assert message["Attributes"]["ApproximateReceiveCount"] == expected


def test_peek_selects_attributes_as_receive_does(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    url = make_queue()
    sqs.send_message(QueueUrl=url, MessageBody="hello", MessageAttributes={
        "a.one": {"DataType": "String", "StringValue": "1"},
        "b": {"DataType": "Number", "StringValue": "2"},
    })
    answer = _ok(extension("PeekMessages", {
        "QueueUrl": url, "MessageAttributeNames": ["a.*"], "AttributeNames": ["SentTimestamp"],
    }))
    [message] = answer["Messages"]
    assert set(message["MessageAttributes"]) == {"a.one"}
    assert set(message["Attributes"]) == {"SentTimestamp"}
    bare = _ok(extension("PeekMessages", {"QueueUrl": url}))["Messages"][0]
    assert "MessageAttributes" not in bare and "Attributes" not in bare
    assert "NextToken" not in answer


@pytest.mark.parametrize(("body", "code"), [
    ({"MaxNumberOfMessages": 0}, "InvalidParameterValueException"),
    ({"MaxNumberOfMessages": 101}, "InvalidParameterValueException"),
    ({"NextToken": "not-a-token"}, "InvalidParameterValueException"),
])
def test_peek_refuses_bad_parameters_with_sqs_errors(
    sqs: Any, make_queue: Callable[..., str], extension: Extension, body: dict[str, Any],
    code: str,
) -> None:
    url = make_queue()
    status, answer = extension("PeekMessages", {"QueueUrl": url, **body})
    assert status == 400 and answer["__type"].endswith(code), answer


def test_peek_of_a_missing_queue_is_queue_does_not_exist(
    cqs_endpoint: str, extension: Extension
) -> None:
    status, answer = extension("PeekMessages", {"QueueUrl": cqs_endpoint + "/000000000000/none-such"})
    assert status == 400 and "QueueDoesNotExist" in answer["__type"], answer


def test_query_protocol_does_not_reach_the_extensions(query: QueryClient) -> None:
    """The query protocol knows SQS's actions only: an extension's name is refused as any
    unknown action is (cqs's UnknownAction error, which AWS's wire code calls InvalidAction)."""
    for action in ("CqsExtensions.PeekMessages", "PeekMessages", "ReplayMessages"):
        reply = query(action, {"QueueUrl": "http://localhost/000000000000/q"})
        assert reply.status == 400
        assert reply.error_code == "InvalidAction"


# --- cqs.ConsumedRetentionSeconds ---------------------------------------------------------------

def test_consumed_retention_is_a_queue_attribute_sdks_can_set_and_read(
    sqs: Any, make_queue: Callable[..., str]
) -> None:
    plain = make_queue()
    everything = sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=["All"])["Attributes"]
    assert RETENTION not in everything  # a queue that never used it looks like SQS's
    asked = sqs.get_queue_attributes(QueueUrl=plain, AttributeNames=[RETENTION])["Attributes"]
    assert asked == {RETENTION: "0"}
    keeping = make_queue(**{RETENTION: "3600"})
    everything = sqs.get_queue_attributes(QueueUrl=keeping, AttributeNames=["All"])["Attributes"]
    assert everything[RETENTION] == "3600"
    sqs.set_queue_attributes(QueueUrl=keeping, Attributes={RETENTION: "60"})
    asked = sqs.get_queue_attributes(QueueUrl=keeping, AttributeNames=[RETENTION])["Attributes"]
    assert asked == {RETENTION: "60"}
    for bad in ("-1", "1209601", "soon"):
        with pytest.raises(ClientError) as refused:
            sqs.set_queue_attributes(QueueUrl=keeping, Attributes={RETENTION: bad})
        assert error_code(refused.value) == "InvalidAttributeValue"


# --- replay -------------------------------------------------------------------------------------

def _consume(sqs: Any, url: str, bodies: list[str]) -> tuple[int, int]:
    """Send, receive and delete `bodies`; the server time (ms) just before and after."""
    ids = _send_all(sqs, url, bodies, MessageAttributes={
        "kind": {"DataType": "String", "StringValue": bodies[0].split("-")[0]},
    })
    got = _receive_all(sqs, url, len(bodies))
    assert {m["MessageId"] for m in got} == set(ids)
    _delete_all(sqs, url, got)
    sent = [int(m["Attributes"]["SentTimestamp"]) for m in got]
    return min(sent), max(sent)


def test_replay_redelivers_exactly_the_messages_consumed_in_the_range(
    sqs: Any, make_queue: Callable[..., str], extension: Extension,
    advance: Callable[[float], None],
) -> None:
    url = make_queue(**{RETENTION: "86400"})
    before = [f"before-{n}" for n in range(100)]
    during = [f"during-{n}" for n in range(200)]
    after = [f"after-{n}" for n in range(100)]
    _consume(sqs, url, before)
    advance(600)
    during_first, during_last = _consume(sqs, url, during)
    advance(600)
    _consume(sqs, url, after)
    assert _counts(sqs, url) == (0, 0, 0)
    # Everything of the middle set was consumed after its first send and well before the
    # last set was sent (the clock moved 600 s between the sets).
    start, end = during_first / 1000 - 60, during_last / 1000 + 300

    kept: list[dict[str, Any]] = []
    token = None
    while True:
        body: dict[str, Any] = {"QueueUrl": url, "StartTime": start, "EndTime": end,
                                "MaxNumberOfMessages": 100, "MessageAttributeNames": ["All"]}
        if token:
            body["NextToken"] = token
        page = _ok(extension("PeekConsumedMessages", body))
        kept.extend(page.get("Messages", []))
        token = page.get("NextToken")
        if not token:
            break
    assert sorted(m["Body"] for m in kept) == sorted(during)
    assert all(start * 1000 <= int(m["ConsumedTimestamp"]) < end * 1000 for m in kept)

    answer = _ok(extension("ReplayMessages", {"QueueUrl": url, "StartTime": start, "EndTime": end}))
    assert answer["ReplayedCount"] == 200 and "NextToken" not in answer
    replayed = _receive_all(sqs, url, 200)
    assert sorted(m["Body"] for m in replayed) == sorted(during)
    assert not {m["MessageId"] for m in replayed} & {m["MessageId"] for m in kept}
    for message in replayed:
        assert message["MessageAttributes"]["kind"]["StringValue"] == "during"
        assert message["Attributes"]["ApproximateReceiveCount"] == "1"
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages") is None


def test_replay_of_a_queue_that_keeps_nothing_sends_nothing(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    url = make_queue()
    _consume(sqs, url, [f"gone-{n}" for n in range(20)])
    now = time.time()
    answer = _ok(extension("ReplayMessages", {"QueueUrl": url, "StartTime": now - 3600,
                                             "EndTime": now + 3600}))
    assert answer["ReplayedCount"] == 0
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages") is None


def test_consumed_copies_expire_after_the_retention_window(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    """Wall clock: Cassandra's TTL runs on its own clock, which the test clock cannot move."""
    url = make_queue(**{RETENTION: "2"})
    _consume(sqs, url, ["brief-1", "brief-2"])
    now = time.time()
    span = {"QueueUrl": url, "StartTime": now - 3600, "EndTime": now + 3600}
    assert len(_ok(extension("PeekConsumedMessages", span)).get("Messages", [])) == 2
    time.sleep(3.5)  # Cassandra's TTL runs on its own clock, not the test clock
    assert _ok(extension("PeekConsumedMessages", span)).get("Messages") is None


def test_a_replay_resumes_from_its_cursor_by_its_replay_id_and_sends_each_message_once(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    """Resume over the wire: a replay run in small calls (MaxNumberOfMessages), continued
    by ReplayId and by the NextToken it answers, ends with every consumed message back once;
    repeating a finished call sends nothing."""
    url = make_queue(**{RETENTION: "86400"})
    bodies = [f"resume-{n}" for n in range(25)]
    first, last = _consume(sqs, url, bodies)
    span = {"QueueUrl": url, "StartTime": first / 1000 - 60, "EndTime": last / 1000 + 300}
    replay = {**span, "ReplayId": "nightly-2026-11-27"}

    answer = _ok(extension("ReplayMessages", {**replay, "MaxNumberOfMessages": 10}))
    assert answer["ReplayId"] == "nightly-2026-11-27"
    assert (answer["ReplayedCount"], answer["TotalReplayedCount"]) == (10, 10)
    assert answer["NextToken"] == "nightly-2026-11-27"
    # Resumed by the id alone, then by the NextToken alone (what a paging client sends).
    answer = _ok(extension("ReplayMessages", {**replay, "MaxNumberOfMessages": 10}))
    assert (answer["ReplayedCount"], answer["TotalReplayedCount"]) == (10, 20)
    answer = _ok(extension("ReplayMessages", {**span, "NextToken": answer["NextToken"]}))
    assert (answer["ReplayedCount"], answer["TotalReplayedCount"]) == (5, 25)
    assert "NextToken" not in answer
    # A retried call (its answer lost, say) finds the replay done and sends nothing.
    again = _ok(extension("ReplayMessages", replay))
    assert (again["ReplayedCount"], again["TotalReplayedCount"]) == (0, 25)

    replayed = _receive_all(sqs, url, 25)
    assert sorted(m["Body"] for m in replayed) == sorted(bodies)
    assert len({m["MessageId"] for m in replayed}) == 25
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages") is None


def test_a_replay_without_an_id_gets_one_and_pages_by_it(
    sqs: Any, make_queue: Callable[..., str], extension: Extension
) -> None:
    url = make_queue(**{RETENTION: "86400"})
    first, last = _consume(sqs, url, [f"paged-{n}" for n in range(12)])
    span = {"QueueUrl": url, "StartTime": first / 1000 - 60, "EndTime": last / 1000 + 300}
    answer = _ok(extension("ReplayMessages", {**span, "MaxNumberOfMessages": 7}))
    assert answer["ReplayedCount"] == 7 and answer["NextToken"] == answer["ReplayId"]
    answer = _ok(extension("ReplayMessages", {**span, "NextToken": answer["NextToken"]}))
    assert answer["ReplayedCount"] == 5 and "NextToken" not in answer
    assert len(_receive_all(sqs, url, 12)) == 12


@pytest.mark.parametrize(("change", "message"), [
    ({"ReplayId": "has spaces"}, "ReplayId"),
    ({"ReplayId": "x" * 81}, "ReplayId"),
    ({"ReplayId": 7}, "ReplayId"),
    ({"NextToken": "never-given-out"}, "NextToken"),
    ({"NextToken": "17.3.0d1c0a6e-0000-1000-8000-000000000000"}, "NextToken"),
    ({"ReplayId": "mine", "NextToken": "other"}, "NextToken"),
    ({"ReplayId": "mine", "EndTime": 2e9}, "StartTime and EndTime"),
    ({"ReplayId": "mine", "MaxNumberOfMessages": 0}, "MaxNumberOfMessages"),
    ({"ReplayId": "mine", "MaxNumberOfMessages": 10_001}, "MaxNumberOfMessages"),
])
def test_replay_refuses_bad_resumes_with_sqs_errors(
    sqs: Any, make_queue: Callable[..., str], extension: Extension, change: dict[str, Any],
    message: str,
) -> None:
    url = make_queue(**{RETENTION: "86400"})
    now = time.time()
    span = {"QueueUrl": url, "StartTime": now - 3600, "EndTime": now + 3600}
    _ok(extension("ReplayMessages", {**span, "ReplayId": "mine"}))  # the replay "mine"
    status, answer = extension("ReplayMessages", {**span, **change})
    assert status == 400, answer
    assert answer["__type"].endswith("InvalidParameterValueException"), answer
    assert message in answer["message"], answer


@pytest.mark.parametrize(("body", "code"), [
    ({"StartTime": 100, "EndTime": 100}, "InvalidParameterValueException"),
    ({"StartTime": "soon", "EndTime": 100}, "InvalidParameterValueException"),
    ({"EndTime": 100}, "MissingRequiredParameterException"),
])
def test_replay_refuses_bad_ranges_with_sqs_errors(
    sqs: Any, make_queue: Callable[..., str], extension: Extension, body: dict[str, Any],
    code: str,
) -> None:
    url = make_queue(**{RETENTION: "60"})
    status, answer = extension("ReplayMessages", {"QueueUrl": url, **body})
    assert status == 400 and answer["__type"].endswith(code), answer
