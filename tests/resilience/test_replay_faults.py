"""An interrupted ReplayMessages resumes where it stopped (issue 26, item 8).

A queue that keeps consumed messages has a few thousand of them consumed; a replay of them
all is started under a ReplayId, and part-way through it a real fault hits: the Cassandra
JVM is paused (SIGSTOP), or the API process is killed (SIGKILL) and another one started.
The replay is then called again with the same ReplayId until it answers that it is done
(a Redis stall, which a replay rides through, is checked the same way).
The checker drains the queue and looks at every message: each consumed message came back
exactly once (none lost, none replayed twice), each under a new message id of its own.
The module has its own Cassandra node, which these tests hurt.
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.resilience.conftest import (
    FaultyCassandra,
    FaultyRedis,
    StartApi,
    sqs_client,
    wait_until,
)

MESSAGES = 3000
RETENTION = "cqs.ConsumedRetentionSeconds"
# The fault hits once this many copies are visible: well into the replay, far from its end.
FAULT_AFTER = 300
RESUME_SECONDS = 120.0

_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5.0, read=30.0))


def replay_call(endpoint: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A signed CqsExtensions.ReplayMessages; (0, {}) when no answer came at all."""
    request = AWSRequest(
        method="POST", url=endpoint + "/", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/x-amz-json-1.0",
                 "X-Amz-Target": "CqsExtensions.ReplayMessages"},
    )
    SigV4Auth(Credentials("x", "x"), "sqs", "us-east-1").add_auth(request)
    try:
        reply = _http.request("POST", endpoint + "/", body=request.body,
                              headers=dict(request.headers.items()))
    except urllib3.exceptions.HTTPError:
        return 0, {}
    return reply.status, json.loads(reply.data or b"{}")


def consumed_queue(endpoint: str) -> tuple[str, list[str], float, float]:
    """A queue that keeps consumed messages, with MESSAGES sent, received and deleted;
    (URL, the bodies, a StartTime and EndTime that hold every delete)."""
    sqs = sqs_client(endpoint)
    url = sqs.create_queue(
        QueueName=f"replay-fault-{uuid.uuid4().hex[:10]}", Attributes={RETENTION: "86400"}
    )["QueueUrl"]
    start = time.time() - 60
    bodies = [f"original-{n:05d}-{uuid.uuid4().hex[:8]}" for n in range(MESSAGES)]

    def send(part: list[str]) -> None:
        client = sqs_client(endpoint)
        for first in range(0, len(part), 10):
            answer = client.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(n), "MessageBody": body}
                for n, body in enumerate(part[first : first + 10])
            ])
            assert not answer.get("Failed"), answer

    run_in_threads([functools.partial(send, bodies[i::4]) for i in range(4)])
    consumed: Counter[str] = Counter()
    lock = threading.Lock()

    def consume() -> None:
        client = sqs_client(endpoint)
        idle = 0
        while idle < 3:
            got = client.receive_message(
                QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=300, WaitTimeSeconds=1
            ).get("Messages", [])
            idle = 0 if got else idle + 1
            if got:
                answer = client.delete_message_batch(QueueUrl=url, Entries=[
                    {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(got)
                ])
                assert not answer.get("Failed"), answer
                with lock:
                    consumed.update(m["Body"] for m in got)

    run_in_threads([consume] * 4)
    assert consumed == Counter(bodies), "the scene itself lost or duplicated messages"
    return url, bodies, start, time.time() + 60


def run_in_threads(work: list[Callable[[], None]]) -> None:
    failures: list[BaseException] = []

    def run(call: Callable[[], None]) -> None:
        try:
            call()
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(call,), daemon=True) for call in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures, failures


def visible(endpoint: str, url: str) -> int:
    try:
        attributes = sqs_client(endpoint).get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
    except Exception:  # a fault is on; ask again
        return -1
    return int(attributes["ApproximateNumberOfMessages"])


def replay_under_fault(
    endpoint: str, body: dict[str, Any], fault: Callable[[], None]
) -> tuple[int, dict[str, Any]]:
    """Start the replay; once FAULT_AFTER copies are visible, apply `fault`; the first
    call's answer."""
    answer: list[tuple[int, dict[str, Any]]] = []
    call = threading.Thread(target=lambda: answer.append(replay_call(endpoint, body)))
    call.start()
    assert wait_until(
        lambda: visible(endpoint, body["QueueUrl"]) >= FAULT_AFTER or not call.is_alive(),
        60, pause=0.02,
    )
    fault()
    call.join(60)
    assert answer, "the interrupted call never returned"
    return answer[0]


def interrupted_replay(
    endpoint: str, body: dict[str, Any], fault: Callable[[], None]
) -> tuple[int, dict[str, Any]]:
    """`replay_under_fault`, whose first call the fault must have cut off."""
    status, document = replay_under_fault(endpoint, body, fault)
    assert status != 200, f"the replay finished before the fault: {document}"
    return status, document


def resume(endpoint: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Call again with the same ReplayId until the replay is done; the answers."""
    answers: list[dict[str, Any]] = []
    deadline = time.monotonic() + RESUME_SECONDS
    while time.monotonic() < deadline:
        status, document = replay_call(endpoint, body)
        if status == 200:
            answers.append(document)
            assert document["ReplayId"] == body["ReplayId"]
            if "NextToken" not in document:
                return answers
        else:
            time.sleep(0.5)  # the store or the server is still coming back
    raise AssertionError(f"the replay did not finish; answers so far: {answers}")


def drained(endpoint: str, url: str) -> list[dict[str, Any]]:
    """Every message the queue hands out until it has been empty for a while (nothing is
    deleted: a copy sent twice would be handed out twice)."""
    sqs = sqs_client(endpoint)
    got: list[dict[str, Any]] = []
    idle_since = time.monotonic()
    deadline = time.monotonic() + 120
    while time.monotonic() - idle_since < 8 and time.monotonic() < deadline:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=600, WaitTimeSeconds=1
        ).get("Messages", [])
        if messages:
            got.extend(messages)
            idle_since = time.monotonic()
    return got


def check_every_message(
    bodies: list[str], delivered: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> None:
    by_body = Counter(m["Body"] for m in delivered)
    lost = sorted(set(bodies) - set(by_body))
    twice = sorted(body for body, count in by_body.items() if count > 1)
    unexpected = sorted(set(by_body) - set(bodies))
    assert (lost, twice, unexpected) == ([], [], []), (
        f"lost {len(lost)} (e.g. {lost[:3]}), replayed twice {len(twice)} (e.g. {twice[:3]}),"
        f" never consumed {len(unexpected)}"
    )
    ids = [m["MessageId"] for m in delivered]
    assert len(set(ids)) == len(bodies), "a copy was handed out twice under one id"
    assert answers[-1]["TotalReplayedCount"] == len(bodies)


def test_replay_interrupted_by_a_paused_cassandra_resumes_without_loss_or_duplicates(
    start_api: StartApi, cassandra: FaultyCassandra
) -> None:
    server = start_api()
    url, bodies, start, end = consumed_queue(server.url)
    body = {"QueueUrl": url, "StartTime": start, "EndTime": end,
            "ReplayId": f"fault-{uuid.uuid4().hex[:8]}"}

    status, document = interrupted_replay(server.url, body, cassandra.pause)
    assert status == 503, document  # ServiceUnavailable: the store is away, call again
    time.sleep(3.0)
    cassandra.resume()

    answers = resume(server.url, body)
    check_every_message(bodies, drained(server.url, url), answers)
    # Once done, the same call again sends nothing more.
    status, again = replay_call(server.url, body)
    assert status == 200 and again["ReplayedCount"] == 0 and "NextToken" not in again


def test_replay_interrupted_by_a_killed_api_process_resumes_on_another(
    start_api: StartApi,
) -> None:
    first = start_api()
    url, bodies, start, end = consumed_queue(first.url)
    body = {"QueueUrl": url, "StartTime": start, "EndTime": end,
            "ReplayId": f"crash-{uuid.uuid4().hex[:8]}"}

    status, _ = interrupted_replay(first.url, body, first.kill)
    assert status == 0  # no answer: the process died mid-call
    second = start_api()

    answers = resume(second.url, body)
    check_every_message(bodies, drained(second.url, url), answers)


def test_replay_through_a_redis_stall_sends_every_message_once(
    start_api: StartApi, fault_redis: FaultyRedis
) -> None:
    """Redis SIGSTOPped for 4 s mid-replay: the copies are stored whatever the cache does
    (a cache that missed them is reloaded), so the call may even finish; resumed if not."""
    server = start_api()
    url, bodies, start, end = consumed_queue(server.url)
    body = {"QueueUrl": url, "StartTime": start, "EndTime": end,
            "ReplayId": f"stall-{uuid.uuid4().hex[:8]}"}

    def stall() -> None:
        fault_redis.pause()
        threading.Timer(4.0, fault_redis.resume).start()

    replay_under_fault(server.url, body, stall)
    time.sleep(4.5)  # Redis is back
    answers = resume(server.url, body)
    check_every_message(bodies, drained(server.url, url), answers)
