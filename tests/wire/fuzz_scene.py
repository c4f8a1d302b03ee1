"""The stage of a fuzz run and the checks after it: queues, tracked messages, handles.

Owns what the CI fuzz test and `benchmarks/fuzz.py` share around the generator: creating
the playground queues (anything goes) and the tracked queues (a standard and a FIFO queue
filled with known messages, see `fuzz_model.TRACKED_QUEUE_ACTIONS`), collecting real
receipt handles for the fuzzer to send or forge, sending requests and tallying the answers
(`Tally`), the clean send/receive/delete afterwards, and draining the tracked queues to
find any message lost. All through boto3 clients the caller makes for the server.

Imports boto3/botocore, the fuzz modules and the standard library; never cqs.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.session
from botocore.config import Config

from tests.wire.fuzz_http import Answer, HostileRequest, answer_problem, error_code
from tests.wire.fuzz_model import QUERY_MODEL_PATH, FuzzTargets

TRACKED_MESSAGES = 300
TRACKED_FIFO_MESSAGES = 60
LONGEST_VISIBILITY_SECONDS = 12 * 3600  # what a fuzzer's receive may hide a message for
LOG_ALARMS = (" ERROR ", "Traceback", "unexpected error", "Unhandled exception")


def client(endpoint: str, protocol: str = "json") -> Any:
    """A boto3 SQS client of `endpoint` speaking `protocol` ("json" or "query"), no retries."""
    core = botocore.session.get_session()
    if protocol == "query":
        core.set_config_variable("data_path", str(QUERY_MODEL_PATH))
    return boto3.session.Session(botocore_session=core).client(
        "sqs", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40))


@dataclass
class FuzzScene:
    targets: FuzzTargets
    tracked: dict[str, set[str]]  # tracked queue URL -> ids of the messages it must keep


def _send_known(sqs: Any, url: str, count: int, fifo: bool) -> set[str]:
    sent: set[str] = set()
    for start in range(0, count, 10):
        entries: list[dict[str, str]] = [
            {"Id": f"m{n}", "MessageBody": f"tracked-{n}"}
            for n in range(start, min(count, start + 10))]
        if fifo:
            for entry in entries:
                entry |= {"MessageGroupId": f"g{int(entry['Id'][1:]) % 3}",
                          "MessageDeduplicationId": entry["Id"]}
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not answer.get("Failed"), answer
        sent |= {entry["MessageId"] for entry in answer["Successful"]}
    return sent


def _handles(sqs: Any, url: str, count: int) -> list[str]:
    """Real handles of `url`'s messages, which become visible again at once."""
    received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=count, VisibilityTimeout=0)
    return [message["ReceiptHandle"] for message in received.get("Messages", [])]


def build_scene(sqs: Any, endpoint: str, account_id: str, region: str = "us-east-1") -> FuzzScene:
    run = uuid.uuid4().hex[:8]
    fifo = {"FifoQueue": "true"}
    playground = [sqs.create_queue(QueueName=f"fz-play-{run}")["QueueUrl"],
                  sqs.create_queue(QueueName=f"fz-play-{run}.fifo", Attributes=fifo)["QueueUrl"]]
    tracked_url = sqs.create_queue(QueueName=f"fz-tracked-{run}")["QueueUrl"]
    tracked_fifo = sqs.create_queue(QueueName=f"fz-tracked-{run}.fifo", Attributes=fifo)[
        "QueueUrl"]
    tracked = {tracked_url: _send_known(sqs, tracked_url, TRACKED_MESSAGES, False),
               tracked_fifo: _send_known(sqs, tracked_fifo, TRACKED_FIFO_MESSAGES, True)}
    for url in playground:
        _send_known(sqs, url, 20, url.endswith(".fifo"))
    pool = [f"fz-pool-{run}-{n}" for n in range(4)] + [f"fz-pool-{run}-{n}.fifo" for n in (4, 5)]
    targets = FuzzTargets(
        host=urlsplit(endpoint).netloc, account_id=account_id, region=region,
        queue_urls=tuple(playground), tracked_urls=(tracked_url, tracked_fifo),
        pool_names=tuple(pool),
        handles=tuple(handle for url in playground for handle in _handles(sqs, url, 10)),
        tracked_handles=tuple(_handles(sqs, tracked_url, 10) + _handles(sqs, tracked_fifo, 3)),
    )
    return FuzzScene(targets, tracked)


@dataclass
class Tally:
    """Answers by status class and error code, and every answer that was not good."""

    outcomes: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return sum(self.outcomes.values())

    @property
    def server_errors(self) -> int:
        return sum(count for outcome, count in self.outcomes.items() if outcome.startswith("5"))

    def record(self, request: HostileRequest, answer: Answer) -> str | None:
        """Count `answer`; what is wrong with it (also kept in `problems`), or None."""
        status = "closed" if answer.status is None else f"{answer.status // 100}xx"
        self.outcomes[f"{status} {error_code(request, answer)}".strip()] += 1
        problem = answer_problem(request, answer)
        if problem is not None:
            self.problems.append(f"{problem}: {request!r} -> {answer.describe()}")
        return problem


def clean_round_trip(sqs: Any) -> None:
    """Create, send, receive, delete: a well-behaved client is served as ever."""
    url = sqs.create_queue(QueueName=f"fz-after-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sent = sqs.send_message(QueueUrl=url, MessageBody="still fine")["MessageId"]
    [message] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
    assert (message["MessageId"], message["Body"]) == (sent, "still fine")
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    sqs.delete_queue(QueueUrl=url)


def drain(sqs: Any, url: str, expected: set[str], seconds: float = 90.0) -> set[str]:
    """Receive and delete from `url` until every id of `expected` came; the ids that did not."""
    missing = set(expected)
    deadline = time.monotonic() + seconds
    while missing and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                       VisibilityTimeout=600, WaitTimeSeconds=1).get("Messages", [])
        for message in messages:
            missing.discard(message["MessageId"])
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return missing


def log_alarms(text: str) -> list[str]:
    """Each logged error of `LOG_ALARMS`, with the last line of its traceback (the exception)."""
    alarms: list[str] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not any(alarm in line for alarm in LOG_ALARMS) or line.startswith("Traceback"):
            continue
        following = lines[number + 1:number + 200]
        ends = [item for item in following if item and not item[0].isspace()
                and not item.startswith("Traceback") and not item.startswith("During handling")
                and not item.startswith("The above exception")]
        alarms.append(f"{line[line.find(' ERROR ') + 1:]} | {ends[0] if ends else ''}")
    return alarms
