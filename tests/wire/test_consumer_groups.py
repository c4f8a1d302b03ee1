"""Consumer groups over the wire: managed with the `CqsExtensions.*` JSON actions, consumed
through unmodified boto3 (JSON 1.0) and the query protocol on the group's own queue URL.

Each test that consumes runs once per protocol (the `speaker` / `sqs` fixtures); the
management calls are JSON only by design (the query protocol does not reach extensions),
signed here with botocore's SigV4 as any SDK user would sign them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.wire.conftest import (
    ACCOUNT_ID,
    JSON_CONTENT_TYPE,
    REGION,
    Speaker,
    SqsError,
    receive_within,
    unique_name,
)

_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=40.0))


class ExtensionError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


def call_extension(endpoint: str, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One `CqsExtensions.<action>` call, signed with SigV4 as an SDK signs SQS calls."""
    request = AWSRequest(
        method="POST", url=endpoint + "/", data=json.dumps(body).encode(),
        headers={"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": f"CqsExtensions.{action}"},
    )
    SigV4Auth(Credentials("x", "x"), "sqs", REGION).add_auth(request)
    response = _http.request(
        "POST", request.url, body=request.body, headers=dict(request.headers.items())
    )
    document = json.loads(response.data or b"{}")
    if response.status != 200:
        code = document.get("__type", "").rsplit("#", 1)[-1]
        raise ExtensionError(response.status, code, document.get("message", ""))
    return dict(document)


@pytest.fixture
def groups(cqs_endpoint: str) -> Callable[..., dict[str, Any]]:
    def call(action: str, **body: Any) -> dict[str, Any]:
        return call_extension(cqs_endpoint, action, body)

    return call


@pytest.fixture
def queue(speaker: Speaker, sqs: Any) -> Iterator[str]:
    url = speaker.create_queue(unique_name("cg-"))
    yield url
    sqs.delete_queue(QueueUrl=url)


def create_group(
    groups: Callable[..., dict[str, Any]], queue_url: str, name: str, **attributes: str
) -> str:
    reply = groups("CreateConsumerGroup", QueueUrl=queue_url, GroupName=name,
                   Attributes=attributes)
    assert reply["QueueUrl"] == f"{queue_url}/{name}"
    return str(reply["QueueUrl"])


def drain(speaker: Speaker, url: str, expected: int, *, consumers: int = 1,
          seconds: float = 60.0) -> Counter[str]:
    """Receive and delete with `consumers` threads until `expected` deliveries came (or
    `seconds` passed, or nothing more comes for 3 s after that many); counts per body."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def consume() -> None:
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            batch = speaker.receive(url, max_messages=10, wait_seconds=1)
            if not batch:
                with lock:
                    done = sum(seen.values()) >= expected
                quiet_since = quiet_since or time.monotonic()
                if done and time.monotonic() - quiet_since > 3:
                    return
                continue
            quiet_since = None
            for message in batch:
                speaker.delete(url, message.receipt_handle)
            with lock:
                seen.update(message.body for message in batch)

    threads = [threading.Thread(target=consume) for _ in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seen


def send_all(speaker: Speaker, url: str, bodies: list[str],
             attributes: Callable[[int], dict[str, dict[str, Any]]] | None = None) -> None:
    for start in range(0, len(bodies), 10):
        entries = [
            {"Id": str(n), "MessageBody": bodies[n],
             **({"MessageAttributes": attributes(n)} if attributes else {})}
            for n in range(start, min(start + 10, len(bodies)))
        ]
        outcome = speaker.send_batch(url, entries)
        assert not outcome.failed and len(outcome.successful) == len(entries)


def test_every_group_receives_every_message_once_among_several_consumers(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    urls = [create_group(groups, queue, f"g{n}", VisibilityTimeout="120") for n in range(3)]
    bodies = [f"m{n}" for n in range(300)]
    send_all(speaker, queue, bodies)
    for url in urls:
        seen = drain(speaker, url, len(bodies), consumers=4)
        assert set(seen) == set(bodies), f"{url}: lost {len(set(bodies) - set(seen))}"
        assert max(seen.values()) == 1, f"{url}: duplicates {seen.most_common(3)}"
    # The queue itself keeps its own copy of each message (it is a consumer group too).
    counts = speaker.queue_attributes(queue, ["ApproximateNumberOfMessages"])
    assert counts["ApproximateNumberOfMessages"] == "300"


def _attributes(n: int) -> dict[str, dict[str, Any]]:
    chosen: dict[str, dict[str, Any]] = {
        "region": {"DataType": "String", "StringValue": ["eu-west-1", "us-east-1", "eu-north-1",
                                                          "ap-south-1"][n % 4]},
        "amount": {"DataType": "Number", "StringValue": str(n * 7 % 250)},
    }
    if n % 5 == 0:
        chosen["trace"] = {"DataType": "String", "StringValue": f"t{n}"}
    if n % 3 == 0:
        chosen["kind"] = {"DataType": "String", "StringValue": "test"}
    elif n % 3 == 1:
        chosen["kind"] = {"DataType": "String", "StringValue": "order"}
    return chosen


def test_filters_drop_exactly_the_non_matching_messages(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    policies: dict[str, tuple[dict[str, Any], Callable[[int], bool]]] = {
        "europe": ({"region": [{"prefix": "eu-"}]}, lambda n: n % 4 in (0, 2)),
        "big": ({"amount": [{"numeric": [">=", 100, "<", 200]}]},
                lambda n: 100 <= n * 7 % 250 < 200),
        "real": ({"kind": [{"anything-but": "test"}]}, lambda n: n % 3 == 1),
        "traced": ({"trace": [{"exists": True}]}, lambda n: n % 5 == 0),
        "untraced-orders": ({"trace": [{"exists": False}], "kind": ["order"]},
                            lambda n: n % 5 != 0 and n % 3 == 1),
        "exact": ({"region": ["ap-south-1", "us-east-1"], "amount": [0, 7, 14]},
                  lambda n: n % 4 in (1, 3) and n * 7 % 250 in (0, 7, 14)),
    }
    urls = {name: create_group(groups, queue, name, FilterPolicy=json.dumps(policy))
            for name, (policy, _) in policies.items()}
    bodies = [f"m{n}" for n in range(200)]
    send_all(speaker, queue, bodies, _attributes)
    for name, (_, wanted) in policies.items():
        expected = {f"m{n}" for n in range(200) if wanted(n)}
        assert expected, name
        seen = drain(speaker, urls[name], len(expected), consumers=2, seconds=30)
        assert set(seen) == expected, (
            f"{name}: missing {sorted(expected - set(seen))[:5]},"
            f" unexpected {sorted(set(seen) - expected)[:5]}"
        )
        assert max(seen.values()) == 1, f"{name}: duplicates {seen.most_common(3)}"


def test_a_groups_filter_changes_in_place_and_applies_to_later_sends(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    url = create_group(groups, queue, "watch",
                       FilterPolicy=json.dumps({"region": [{"prefix": "eu-"}]}))
    send_all(speaker, queue, [f"a{n}" for n in range(100)], _attributes)

    changed = groups("SetConsumerGroupAttributes", QueueUrl=queue, GroupName="watch",
                     Attributes={"FilterPolicy": json.dumps({"kind": ["order"]})})
    assert json.loads(changed["Attributes"]["FilterPolicy"]) == {"kind": ["order"]}
    listed = groups("ListConsumerGroups", QueueUrl=queue)["ConsumerGroups"]
    assert [json.loads(g["Attributes"]["FilterPolicy"]) for g in listed] == [{"kind": ["order"]}]
    send_all(speaker, queue, [f"b{n}" for n in range(100)], _attributes)

    cleared = groups("SetConsumerGroupAttributes", QueueUrl=queue, GroupName="watch",
                     Attributes={"FilterPolicy": ""})
    assert "FilterPolicy" not in cleared["Attributes"]
    send_all(speaker, queue, [f"c{n}" for n in range(100)], _attributes)

    # What was in the group stays; each send met the filter of its time.
    expected = ({f"a{n}" for n in range(100) if n % 4 in (0, 2)}
                | {f"b{n}" for n in range(100) if n % 3 == 1}
                | {f"c{n}" for n in range(100)})
    seen = drain(speaker, url, len(expected), consumers=2, seconds=30)
    assert set(seen) == expected, (
        f"missing {sorted(expected - set(seen))[:5]}, unexpected {sorted(set(seen) - expected)[:5]}"
    )
    assert max(seen.values()) == 1, f"duplicates {seen.most_common(3)}"


@pytest.mark.json_only
@pytest.mark.parametrize(
    ("group", "attributes", "code", "words"),
    [
        ("watch", {"FilterPolicy": "{"}, "InvalidParameterValueException", "not valid JSON"),
        ("watch", {"VisibilityTimeout": "5"}, "InvalidAttributeName", "SetQueueAttributes"),
        ("watch", {"StartAt": "now"}, "InvalidAttributeName", "only when the group is created"),
        ("watch", {"Colour": "red"}, "InvalidAttributeName", "Unknown Attribute Colour"),
        ("missing", {"FilterPolicy": ""}, "QueueDoesNotExist", ""),
    ],
)
def test_bad_filter_changes_get_clear_errors_and_change_nothing(
    groups: Callable[..., dict[str, Any]], queue: str, group: str,
    attributes: dict[str, str], code: str, words: str,
) -> None:
    """JSON only: management is JSON only by design."""
    policy = json.dumps({"kind": ["order"]})
    create_group(groups, queue, "watch", FilterPolicy=policy)
    with pytest.raises(ExtensionError) as refused:
        groups("SetConsumerGroupAttributes", QueueUrl=queue, GroupName=group,
               Attributes=attributes)
    assert (refused.value.status, refused.value.code) == (400, code)
    assert words in refused.value.message
    listed = groups("ListConsumerGroups", QueueUrl=queue)["ConsumerGroups"]
    assert [g["Attributes"]["FilterPolicy"] for g in listed] == [policy]


def test_a_group_has_its_own_dead_letter_queue(
    speaker: Speaker, sqs: Any, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    dead_letters = speaker.create_queue(unique_name("cg-dlq-"))
    try:
        arn = speaker.queue_attributes(dead_letters, ["QueueArn"])["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 2})
        strict = create_group(groups, queue, "strict", RedrivePolicy=policy)
        patient = create_group(groups, queue, "patient")
        sent = speaker.send(queue, "poison").message_id
        for _ in range(2):
            received = receive_within(speaker, strict, 10, visibility_timeout=0)
            assert [m.message_id for m in received] == [sent]
        assert receive_within(speaker, strict, 2, visibility_timeout=0) == []
        moved = receive_within(speaker, dead_letters, 10)
        assert [m.body for m in moved] == ["poison"]
        # The other group and the queue itself still hold their own copies, untouched.
        for url in (patient, queue):
            got = speaker.receive(url, attribute_names=["ApproximateReceiveCount"])
            assert [(m.message_id, m.attributes["ApproximateReceiveCount"]) for m in got] == [
                (sent, "1")
            ]
        sources = sqs.list_dead_letter_source_queues(QueueUrl=dead_letters)["queueUrls"]
        assert sources == [strict]
    finally:
        sqs.delete_queue(QueueUrl=dead_letters)


def test_a_group_created_later_starts_at_now(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    send_all(speaker, queue, [f"before{n}" for n in range(20)])
    late = create_group(groups, queue, "late")
    send_all(speaker, queue, [f"after{n}" for n in range(20)])
    seen = drain(speaker, late, 20, seconds=20)
    assert seen == Counter({f"after{n}": 1 for n in range(20)})


def test_a_group_can_start_at_a_time_within_retention(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    send_all(speaker, queue, [f"before{n}" for n in range(20)])
    since = create_group(groups, queue, "since", StartAt=str(int(time.time()) - 120))
    send_all(speaker, queue, [f"after{n}" for n in range(5)])
    seen = drain(speaker, since, 25, seconds=20)
    assert seen == Counter({f"{p}{n}": 1 for p, k in (("before", 20), ("after", 5))
                            for n in range(k)})


def test_visibility_and_receive_on_a_group_are_its_own(
    speaker: Speaker, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    quick = create_group(groups, queue, "quick", VisibilityTimeout="1")
    speaker.send(queue, "hello")
    first = receive_within(speaker, quick, 10)
    assert [m.body for m in first] == ["hello"]
    again = receive_within(speaker, quick, 15)  # its 1 s timeout, not the queue's 30 s
    assert [m.body for m in again] == ["hello"]
    speaker.change_visibility(quick, again[0].receipt_handle, 600)
    assert speaker.receive(quick, wait_seconds=2) == []
    from_queue = speaker.receive(queue)
    assert [m.body for m in from_queue] == ["hello"]
    assert speaker.receive(queue, wait_seconds=2) == []  # the queue's 30 s holds there
    # A send to the group's URL goes to that group alone.
    speaker.send(quick, "direct")
    assert [m.body for m in receive_within(speaker, quick, 10)] == ["direct"]
    assert speaker.receive(queue) == []
    attributes = speaker.queue_attributes(quick, ["QueueArn", "VisibilityTimeout"])
    queue_name = queue.rsplit("/", 1)[-1]
    assert attributes == {
        "QueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{queue_name}/quick",
        "VisibilityTimeout": "1",
    }


@pytest.mark.json_only
def test_list_and_delete_consumer_groups(
    sqs: Any, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    """JSON only: management is JSON-only by design; boto3 over JSON checks the URLs."""
    policy = json.dumps({"kind": ["order"]})
    first = create_group(groups, queue, "a", FilterPolicy=policy)
    second = create_group(groups, queue, "b", VisibilityTimeout="5")
    listed = groups("ListConsumerGroups", QueueUrl=queue)["ConsumerGroups"]
    assert [(g["GroupName"], g["QueueUrl"]) for g in listed] == [("a", first), ("b", second)]
    inherited = {"VisibilityTimeout": "30", "ReceiveMessageWaitTimeSeconds": "0"}
    assert listed[0]["Attributes"] == {**inherited, "FilterPolicy": policy}
    assert listed[1]["Attributes"] == {**inherited, "VisibilityTimeout": "5"}
    # Creating the same group again is a no-op; with other attributes it is refused.
    assert create_group(groups, queue, "a", FilterPolicy=policy) == first
    with pytest.raises(ExtensionError) as refused:
        create_group(groups, queue, "a", FilterPolicy=json.dumps({"kind": ["x"]}))
    assert (refused.value.status, refused.value.code) == (400, "QueueNameExists")
    # Groups are not queues of their own in ListQueues; GetQueueUrl finds one by its name.
    queue_name = queue.rsplit("/", 1)[-1]
    assert sqs.list_queues(QueueNamePrefix=queue_name).get("QueueUrls") == [queue]
    assert sqs.get_queue_url(QueueName=f"{queue_name}/b")["QueueUrl"] == second
    groups("DeleteConsumerGroup", QueueUrl=queue, GroupName="a")
    assert [g["GroupName"] for g in groups("ListConsumerGroups", QueueUrl=queue)
            ["ConsumerGroups"]] == ["b"]
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.receive_message(QueueUrl=first)
    sqs.send_message(QueueUrl=queue, MessageBody="after delete")
    assert [m["Body"] for m in sqs.receive_message(QueueUrl=second, WaitTimeSeconds=5)
            ["Messages"]] == ["after delete"]
    # DeleteQueue on a group's URL deletes the group; the queue carries on without it.
    sqs.delete_queue(QueueUrl=second)
    assert groups("ListConsumerGroups", QueueUrl=queue)["ConsumerGroups"] == []
    sqs.send_message(QueueUrl=queue, MessageBody="alone")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.receive_message(QueueUrl=second)


@pytest.mark.json_only
def test_deleting_a_queue_deletes_its_groups_and_a_new_queue_has_none(
    sqs: Any, groups: Callable[..., dict[str, Any]]
) -> None:
    """JSON only: the scenario is about the queue's lifecycle, not the protocol."""
    name = unique_name("cg-")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    group = create_group(groups, url, "g")
    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_attributes(QueueUrl=group)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    try:
        assert groups("ListConsumerGroups", QueueUrl=url)["ConsumerGroups"] == []
    finally:
        sqs.delete_queue(QueueUrl=url)


@pytest.mark.json_only
@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"GroupName": "g", "Attributes": {"FilterPolicy": "{"}}, 400,
         "InvalidParameterValueException", "FilterPolicy: it is not valid JSON"),
        ({"GroupName": "g", "Attributes": {"FilterPolicy": '{"a": [{"regex": "x"}]}'}}, 400,
         "InvalidParameterValueException", "unrecognized operator regex"),
        ({"GroupName": "bad name"}, 400, "InvalidParameterValueException", "GroupName"),
        ({"GroupName": "g", "Attributes": {"DelaySeconds": "5"}}, 400, "InvalidAttributeName",
         "DelaySeconds"),
        ({"GroupName": "g", "Attributes": {"VisibilityTimeout": "-1"}}, 400,
         "InvalidAttributeValue", "VisibilityTimeout"),
        ({"GroupName": "g", "Attributes": {"StartAt": "yesterday"}}, 400,
         "InvalidParameterValueException", "StartAt"),
        ({"GroupName": "g", "Attributes": {"StartAt": str(int(time.time()) + 3600)}}, 400,
         "InvalidParameterValueException", "StartAt"),
        ({}, 400, "MissingRequiredParameterException", "GroupName"),
        ({"GroupName": "g", "FilterPolicy": '{"a": ["b"]}'}, 400, "InvalidParameterValueException",
         "FilterPolicy is a group attribute: give it inside Attributes"),
    ],
)
def test_bad_create_requests_get_clear_errors(
    groups: Callable[..., dict[str, Any]], queue: str, body: dict[str, Any], status: int,
    code: str, words: str,
) -> None:
    """JSON only: management is JSON-only by design."""
    with pytest.raises(ExtensionError) as refused:
        groups("CreateConsumerGroup", QueueUrl=queue, **body)
    assert (refused.value.status, refused.value.code) == (status, code)
    assert words in refused.value.message


@pytest.mark.json_only
def test_groups_are_for_standard_queues_and_queues_only(
    sqs: Any, groups: Callable[..., dict[str, Any]], queue: str
) -> None:
    """JSON only: management is JSON-only by design."""
    fifo = sqs.create_queue(QueueName=unique_name("cg-") + ".fifo",
                            Attributes={"FifoQueue": "true"})["QueueUrl"]
    try:
        with pytest.raises(ExtensionError) as refused:
            groups("CreateConsumerGroup", QueueUrl=fifo, GroupName="g")
        assert refused.value.code == "InvalidParameterValueException"
    finally:
        sqs.delete_queue(QueueUrl=fifo)
    group = create_group(groups, queue, "g")
    with pytest.raises(ExtensionError) as refused:
        groups("CreateConsumerGroup", QueueUrl=group, GroupName="h")
    assert refused.value.code == "InvalidParameterValueException"
    with pytest.raises(ExtensionError) as missing:
        groups("ListConsumerGroups", QueueUrl=queue + "-none")
    assert (missing.value.status, missing.value.code) == (400, "QueueDoesNotExist")
    with pytest.raises(ExtensionError) as gone:
        groups("DeleteConsumerGroup", QueueUrl=queue, GroupName="never")
    assert gone.value.code == "QueueDoesNotExist"


def test_a_group_that_does_not_exist_answers_as_a_missing_queue(
    speaker: Speaker, queue: str
) -> None:
    with pytest.raises(SqsError) as missing:
        speaker.receive(f"{queue}/never")
    assert (missing.value.status, missing.value.code) == (
        400, "AWS.SimpleQueueService.NonExistentQueue"
    )

