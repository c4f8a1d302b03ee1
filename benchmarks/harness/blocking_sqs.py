"""A blocking SQS client with as little client cost as Python allows, and the unloaded
latency phases built on it (benchmarks/unloaded_latency.py's measurements).

Owns `BlockingSqs` (one keep-alive `http.client` connection with TCP_NODELAY, AWS JSON 1.0
POSTs with `X-Amz-Target: AmazonSQS.<Action>`, no signature: none of the measured servers
checks one by default) and three phases, each on a queue of its own and each recording into
a `DeliveryLedger` that the phase's drain completes:

- `time_sends`: sequential SendMessage calls, the first `warmup` untimed;
- `time_end_to_end`: one producer and one long-polling consumer thread, one message in
  flight: the next send leaves only once the previous message was received, deleted and the
  consumer's next long poll is waiting (`settle_seconds` after it was sent);
- `drain`: receives and deletes until every acknowledged id was delivered.

Why not botocore for the figures: building, signing and parsing a boto3 call costs about a
millisecond of client CPU, as much as the servers' own work; `time_sends` also runs with any
client object that has `send_message(QueueUrl=, MessageBody=)`, so the script can show what
boto3 adds. Imports the standard library and the ledger; never cqs.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from benchmarks.harness.delivery_ledger import Acknowledged, DeleteOutcome, Delivery, DeliveryLedger

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
VISIBILITY_SECONDS = 30
LONG_POLL_SECONDS = 20
CALL_SLACK_SECONDS = 30.0
STOP_BODY = "stop"  # the message that ends the consumer thread


class CallError(Exception):
    """The server refused a call (an SQS error code), or the connection failed."""


class BlockingSqs:
    """SQS actions over one keep-alive HTTP connection, reopened after a failure."""

    def __init__(self, endpoint: str) -> None:
        parts = urlsplit(endpoint)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._connection: http.client.HTTPConnection | None = None

    def _connected(self, timeout: float) -> http.client.HTTPConnection:
        if self._connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
            connection.connect()
            assert connection.sock is not None
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connection = connection
        assert self._connection.sock is not None
        self._connection.sock.settimeout(timeout)
        return self._connection

    def call(self, action: str, payload: dict[str, Any], wait_seconds: float = 0) -> Any:
        try:
            connection = self._connected(wait_seconds + CALL_SLACK_SECONDS)
            connection.request("POST", "/", json.dumps(payload).encode(), {
                "X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_CONTENT_TYPE,
            })
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise CallError(type(exc).__name__) from exc
        if response.status != 200:
            code = response.getheader("x-amzn-query-error") or f"HTTP{response.status}"
            raise CallError(code.split(";")[0])
        return json.loads(body) if body else {}

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # boto3's spelling, so that `time_sends` takes either client.
    def send_message(self, QueueUrl: str, MessageBody: str) -> Any:
        return self.call("SendMessage", {"QueueUrl": QueueUrl, "MessageBody": MessageBody})

    def create_queue(self, name: str) -> str:
        return str(self.call("CreateQueue", {"QueueName": name})["QueueUrl"])

    def receive(self, queue_url: str, max_messages: int, wait_seconds: int) -> list[Any]:
        reply = self.call("ReceiveMessage", {
            "QueueUrl": queue_url, "MaxNumberOfMessages": max_messages,
            "WaitTimeSeconds": wait_seconds, "VisibilityTimeout": VISIBILITY_SECONDS,
            "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
        }, wait_seconds)
        return list(reply.get("Messages") or [])

    def delete(self, queue_url: str, handle: str) -> None:
        self.call("DeleteMessage", {"QueueUrl": queue_url, "ReceiptHandle": handle})


@dataclass
class Timings:
    """One phase's timed calls (seconds each), the client's CPU over them, and its ledger."""

    seconds: list[float] = field(default_factory=list)
    client_cpu_seconds: float = 0.0  # the timing thread's user + system time
    ledger: DeliveryLedger = field(default_factory=DeliveryLedger)
    missed: int = 0  # end to end: messages not received within the long poll's slack


def record_delivery(ledger: DeliveryLedger, queue_url: str, message: Any, requested: float,
                    answered: float) -> None:
    ledger.record_delivery(
        Delivery.of_message(message, queue_url, requested, answered, VISIBILITY_SECONDS)
    )


def delete_recorded(client: BlockingSqs, ledger: DeliveryLedger, queue_url: str,
                    message: Any) -> None:
    requested = time.time()
    try:
        client.delete(queue_url, message["ReceiptHandle"])
        error = None
    except CallError as exc:
        error = str(exc)
        ledger.record_error("DeleteMessage", error)
    ledger.record_delete(DeleteOutcome(message["MessageId"], requested, time.time(), error))


def send_recorded(client: Any, ledger: DeliveryLedger, queue_url: str, body: str,
                  error_types: tuple[type[BaseException], ...]) -> bool:
    """One SendMessage into the ledger; False (and an error recorded) if it failed."""
    requested = time.time()
    try:
        reply = client.send_message(QueueUrl=queue_url, MessageBody=body)
    except error_types as exc:
        ledger.record_error("SendMessage", str(exc) or type(exc).__name__)
        return False
    ledger.record_acknowledged(
        Acknowledged(str(reply["MessageId"]), body, queue_url, requested, time.time())
    )
    return True


def time_sends(client: Any, queue_url: str, prefix: str, warmup: int, count: int,
               error_types: tuple[type[BaseException], ...] = (CallError,)) -> Timings:
    """`warmup` untimed then `count` timed sequential SendMessage calls, each body unique."""
    timings = Timings()
    for n in range(warmup):
        send_recorded(client, timings.ledger, queue_url, f"{prefix}-w{n}", error_types)
    cpu_before = time.thread_time()
    for n in range(count):
        started = time.perf_counter()
        if send_recorded(client, timings.ledger, queue_url, f"{prefix}-{n}", error_types):
            timings.seconds.append(time.perf_counter() - started)
    timings.client_cpu_seconds = time.thread_time() - cpu_before
    return timings


def time_end_to_end(endpoint: str, queue_url: str, prefix: str, warmup: int, count: int,
                    settle_seconds: float) -> Timings:
    """Send, wait for the consumer's long poll to return it, repeat: send start to receive
    answer per message, one message in flight."""
    timings = Timings()
    consumer_ledger = DeliveryLedger()
    received: queue.Queue[tuple[str, float]] = queue.Queue()
    polling = threading.Event()  # set just before the consumer sends its next long poll

    def consume() -> None:
        client = BlockingSqs(endpoint)
        try:
            while True:
                requested = time.time()
                polling.set()
                try:
                    messages = client.receive(queue_url, 1, LONG_POLL_SECONDS)
                except CallError as exc:
                    consumer_ledger.record_error("ReceiveMessage", str(exc))
                    time.sleep(0.5)
                    continue
                answered, answered_perf = time.time(), time.perf_counter()
                for message in messages:
                    record_delivery(consumer_ledger, queue_url, message, requested, answered)
                    polling.clear()
                    delete_recorded(client, consumer_ledger, queue_url, message)
                    received.put((message["Body"], answered_perf))
                    if message["Body"] == STOP_BODY:
                        return
        finally:
            client.close()

    consumer = threading.Thread(target=consume, name="consumer", daemon=True)
    consumer.start()
    producer = BlockingSqs(endpoint)
    slack = LONG_POLL_SECONDS + CALL_SLACK_SECONDS
    try:
        for n in range(-warmup, count):
            polling.wait(slack)
            time.sleep(settle_seconds)
            body = f"{prefix}-{n}"
            started = time.perf_counter()
            if not send_recorded(producer, timings.ledger, queue_url, body, (CallError,)):
                continue
            arrived = wait_for(received, body, slack)
            if arrived is None:
                timings.missed += 1
            elif n >= 0:
                timings.seconds.append(arrived - started)
        polling.wait(slack)
        send_recorded(producer, timings.ledger, queue_url, STOP_BODY, (CallError,))
        consumer.join(slack)
    finally:
        producer.close()
    timings.ledger.absorb(consumer_ledger)
    return timings


def wait_for(received: queue.Queue[tuple[str, float]], body: str, seconds: float) -> float | None:
    """When the consumer's answer carrying `body` arrived (perf_counter), or None."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            got, arrived = received.get(timeout=left)
        except queue.Empty:
            return None
        if got == body:
            return arrived
    return None


def drain(endpoint: str, queue_url: str, ledger: DeliveryLedger, seconds: float = 60) -> None:
    """Receive and delete until every id the ledger acknowledged was delivered (not timed)."""
    client = BlockingSqs(endpoint)
    deadline = time.monotonic() + seconds
    try:
        while ledger.undelivered_count() and time.monotonic() < deadline:
            requested = time.time()
            try:
                messages = client.receive(queue_url, 10, 1)
            except CallError as exc:
                ledger.record_error("ReceiveMessage", str(exc))
                continue
            answered = time.time()
            for message in messages:
                record_delivery(ledger, queue_url, message, requested, answered)
                delete_recorded(client, ledger, queue_url, message)
    finally:
        client.close()

