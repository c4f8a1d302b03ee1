"""A tiny asyncio SQS client speaking AWS JSON 1.0, and the load loops built on it.

Owns what the concurrency tools share: `SqsJsonClient` (one aiohttp session, POSTs with
`X-Amz-Target: AmazonSQS.<Action>` and `Content-Type: application/x-amz-json-1.0`, error
codes read from `x-amzn-query-error` as botocore does), `ConsumerPool` (N long-polling
tasks, each ReceiveMessage followed by a DeleteMessageBatch of what it got) and
`send_messages` (producer tasks alternating SendMessage and SendMessageBatch, FIFO-aware;
`send_chunk` is one such call), all recording into a `DeliveryLedger`
(benchmarks/harness/delivery_ledger.py), and a run's queues (`create_queues`,
`count_and_delete_queues`).

Why not boto3: a boto3 call blocks a thread for the whole long poll, so thousands of
concurrent 20-second polls would need thousands of threads, each with its own connection
pool and botocore's per-call overhead; on a 2-core machine the client would be measured
instead of the server. One event loop with aiohttp holds thousands of waiting requests in
a few MB. The server does not check signatures, so no Authorization header is sent.

Used by the benchmarks concurrency_soak, idle_long_polls, duplicate_rate and paper_load (and
their client modules) and by tests/wire, tests/cluster and tests/hosts; imported as
`benchmarks.harness.sqs_wire`. Imports aiohttp and the ledger; never cqs (it sees the server only
over HTTP).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from benchmarks.harness.delivery_ledger import Acknowledged, DeleteOutcome, DeliveryLedger

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
QUERY_ERROR_HEADER = "x-amzn-query-error"
# How long a call may take beyond its long-poll wait before the client gives up on it.
CALL_SLACK_SECONDS = 30.0
PAUSE_AFTER_ERROR_SECONDS = 0.5


class SqsCallError(Exception):
    """The server answered with an error: `code` is the classic SQS (query) error code."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.code = code
        self.status = status


def error_code(exc: BaseException) -> str:
    """The SQS error code of a refused call, or the exception's name for a transport error."""
    return exc.code if isinstance(exc, SqsCallError) else type(exc).__name__


CALL_ERRORS = (SqsCallError, aiohttp.ClientError, TimeoutError)


def client_session(trace_configs: Sequence[aiohttp.TraceConfig] = ()) -> aiohttp.ClientSession:
    """A session without a connection limit (each waiting long poll holds a connection)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=False),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
        trace_configs=list(trace_configs),
    )


class SqsJsonClient:
    """SQS actions over AWS JSON 1.0 on one aiohttp session; raises `CALL_ERRORS`."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: str) -> None:
        self._session = session
        self._url = endpoint.rstrip("/") + "/"

    async def call(
        self, action: str, payload: Mapping[str, Any], wait_seconds: float = 0
    ) -> dict[str, Any]:
        async with self._session.post(
            self._url,
            data=json.dumps(payload),
            headers={"X-Amz-Target": f"AmazonSQS.{action}", "Content-Type": JSON_CONTENT_TYPE},
            timeout=aiohttp.ClientTimeout(total=wait_seconds + CALL_SLACK_SECONDS),
        ) as response:
            body = await response.read()
            if response.status != 200:
                raise _call_error(response.status, response.headers, body)
        return json.loads(body) if body else {}

    async def create_queue(self, name: str, attributes: Mapping[str, str] | None = None) -> str:
        payload: dict[str, Any] = {"QueueName": name}
        if attributes:
            payload["Attributes"] = dict(attributes)
        return str((await self.call("CreateQueue", payload))["QueueUrl"])

    async def delete_queue(self, queue_url: str) -> None:
        await self.call("DeleteQueue", {"QueueUrl": queue_url})

    async def queue_attributes(self, queue_url: str, names: Sequence[str]) -> dict[str, str]:
        reply = await self.call(
            "GetQueueAttributes", {"QueueUrl": queue_url, "AttributeNames": list(names)}
        )
        return dict(reply.get("Attributes") or {})

    async def send_message(
        self, queue_url: str, body: str, group: str | None = None, delay_seconds: int = 0
    ) -> str:
        """SendMessage; on a FIFO queue to message group `group`, deduplicated by the body
        (a FIFO queue takes no per-message delay)."""
        reply = await self.call(
            "SendMessage", {"QueueUrl": queue_url, **_entry(body, group, delay_seconds)}
        )
        return str(reply["MessageId"])

    async def send_message_batch(
        self, queue_url: str, bodies: Sequence[str], group: str | None = None,
        delay_seconds: int = 0,
    ) -> tuple[dict[str, str], dict[str, str]]:
        """SendMessageBatch: (body -> message id for the stored, body -> error code)."""
        entries = [
            {"Id": str(n), **_entry(body, group, delay_seconds)} for n, body in enumerate(bodies)
        ]
        reply = await self.call("SendMessageBatch", {"QueueUrl": queue_url, "Entries": entries})
        stored = {bodies[int(e["Id"])]: str(e["MessageId"]) for e in reply.get("Successful") or []}
        refused = {bodies[int(e["Id"])]: str(e.get("Code")) for e in reply.get("Failed") or []}
        return stored, refused

    async def receive_message(
        self, queue_url: str, max_messages: int, wait_seconds: int, visibility_seconds: int
    ) -> list[dict[str, Any]]:
        reply = await self.call(
            "ReceiveMessage",
            {
                "QueueUrl": queue_url,
                "MaxNumberOfMessages": max_messages,
                "WaitTimeSeconds": wait_seconds,
                "VisibilityTimeout": visibility_seconds,
                "MessageSystemAttributeNames": ["ApproximateReceiveCount"],
            },
            wait_seconds,
        )
        return list(reply.get("Messages") or [])

    async def delete_message_batch(
        self, queue_url: str, handles: Sequence[str]
    ) -> dict[int, str | None]:
        """DeleteMessageBatch: position of each handle -> None if deleted, else the error code."""
        entries = [{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)]
        reply = await self.call("DeleteMessageBatch", {"QueueUrl": queue_url, "Entries": entries})
        outcome: dict[int, str | None] = {int(e["Id"]): None for e in reply.get("Successful") or []}
        outcome.update({int(e["Id"]): str(e.get("Code")) for e in reply.get("Failed") or []})
        return outcome


def _entry(body: str, group: str | None, delay_seconds: int = 0) -> dict[str, Any]:
    delay: dict[str, Any] = {"DelaySeconds": delay_seconds} if delay_seconds else {}
    if group is None:
        return {"MessageBody": body, **delay}
    return {"MessageBody": body, "MessageGroupId": group, "MessageDeduplicationId": body}


def _call_error(status: int, headers: Mapping[str, str], body: bytes) -> SqsCallError:
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = {}
    parsed = parsed if isinstance(parsed, dict) else {}
    message = str(parsed.get("message") or parsed.get("Message") or body[:200])
    if headers.get(QUERY_ERROR_HEADER):
        return SqsCallError(headers[QUERY_ERROR_HEADER].split(";")[0], status, message)
    if parsed.get("__type"):
        return SqsCallError(str(parsed["__type"]).rsplit("#", 1)[-1], status, message)
    return SqsCallError(f"HTTP{status}", status, message)


def is_fifo(queue_url: str) -> bool:
    return queue_url.endswith(".fifo")


def run_client(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a client process's main coroutine, on uvloop when it is installed."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coroutine)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(coroutine)


# --- a run's queues ----------------------------------------------------------------------------


async def create_queues(endpoint: str, names: Sequence[str], visibility: int) -> list[str]:
    """One queue per name with this visibility timeout (FIFO where the name ends in .fifo),
    created one after another; their URLs."""
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        return [
            await client.create_queue(name, {
                "VisibilityTimeout": str(visibility),
                **({"FifoQueue": "true"} if is_fifo(name) else {}),
            })
            for name in names
        ]


async def count_and_delete_queues(endpoint: str, queue_urls: Sequence[str]) -> int:
    """Messages still in the queues (visible or in flight); then the queues are deleted."""
    left = 0
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        for url in queue_urls:
            attributes = await client.queue_attributes(
                url, ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
            )
            left += sum(int(value) for value in attributes.values())
            await client.delete_queue(url)
    return left


# --- consumers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PollPlan:
    """How a pool of long-polling consumers behaves."""

    queue_urls: Sequence[str]  # poll i uses queue_urls[i % len(queue_urls)]
    polls: int  # concurrent long polls
    max_messages: int = 10  # poll i asks for 1 + i % max_messages
    wait_seconds: int = 20
    visibility_seconds: int = 30
    ramp_seconds: float = 0.0  # polls start spread over this long


class ConsumerPool:
    """`plan.polls` tasks, each: ReceiveMessage (long poll), record, DeleteMessageBatch,
    repeat until stopped."""

    def __init__(self, client: SqsJsonClient, ledger: DeliveryLedger, plan: PollPlan) -> None:
        self._client = client
        self._ledger = ledger
        self._plan = plan
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.started_polls = 0

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._poll(index), name=f"poll-{index}")
            for index in range(self._plan.polls)
        ]

    async def ramped(self) -> None:
        """Return once every task has sent its first ReceiveMessage."""
        while self.started_polls < self._plan.polls:
            await asyncio.sleep(0.05)

    async def stop(self, grace_seconds: float) -> int:
        """Start no new poll; give those in flight `grace_seconds` to be answered (and their
        messages deleted), then cancel the rest. Returns how many were cancelled."""
        self._stopping.set()
        if not self._tasks:
            return 0
        _, pending = await asyncio.wait(self._tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        return len(pending)

    async def _poll(self, index: int) -> None:
        plan = self._plan
        queue_url = plan.queue_urls[index % len(plan.queue_urls)]
        max_messages = 1 + index % plan.max_messages
        if plan.ramp_seconds:
            await asyncio.sleep(plan.ramp_seconds * index / plan.polls)
        first = True
        while not self._stopping.is_set():
            requested = time.time()
            if first:
                self.started_polls += 1
                first = False
            try:
                messages = await self._client.receive_message(
                    queue_url, max_messages, plan.wait_seconds, plan.visibility_seconds
                )
            except CALL_ERRORS as exc:
                self._ledger.record_error("ReceiveMessage", error_code(exc))
                await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
                continue
            answered = time.time()
            self._ledger.record_receive(queue_url, messages, requested, answered,
                                        plan.visibility_seconds)
            if messages:
                await delete_batch(self._client, self._ledger, queue_url, messages)


async def delete_batch(
    client: SqsJsonClient, ledger: DeliveryLedger, queue_url: str,
    messages: Sequence[Mapping[str, Any]],
) -> None:
    """DeleteMessageBatch of received messages; each entry's outcome goes to the ledger."""
    requested = time.time()
    try:
        outcome = await client.delete_message_batch(
            queue_url, [m["ReceiptHandle"] for m in messages]
        )
    except CALL_ERRORS as exc:
        code = error_code(exc)
        ledger.record_error("DeleteMessageBatch", code)
        answered = time.time()
        for message in messages:
            ledger.record_delete(DeleteOutcome(message["MessageId"], requested, answered, code))
        return
    answered = time.time()
    ledger.record_duration("DeleteMessageBatch", answered - requested)
    for position, message in enumerate(messages):
        error = outcome.get(position, "NoEntryInAnswer")
        if error is not None:
            ledger.record_error("DeleteMessageBatch entry", error)
        ledger.record_delete(DeleteOutcome(message["MessageId"], requested, answered, error))


# --- producers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendPlan:
    """Producer p sends to queue_urls[p % len(queue_urls)]; bodies are `<run>-<p>-<n>`.
    On a FIFO queue each producer is a message group of its own, deduplicated by body."""

    queue_urls: Sequence[str]
    messages: int  # in all, split evenly over the producers
    producers: int
    run_id: str


async def send_messages(
    client: SqsJsonClient, ledger: DeliveryLedger, plan: SendPlan,
    stopping: asyncio.Event | None = None,
) -> None:
    """Run the producers to the end of their messages (or until `stopping` is set)."""
    share, extra = divmod(plan.messages, plan.producers)
    await asyncio.gather(*(
        _produce(client, ledger, plan, producer, share + (producer < extra), stopping)
        for producer in range(plan.producers)
    ))


async def _produce(
    client: SqsJsonClient, ledger: DeliveryLedger, plan: SendPlan, producer: int, count: int,
    stopping: asyncio.Event | None,
) -> None:
    queue_url = plan.queue_urls[producer % len(plan.queue_urls)]
    group = f"{plan.run_id}-p{producer}" if is_fifo(queue_url) else None
    bodies = (f"{plan.run_id}-{producer}-{n}" for n in range(count))
    # Alternate one SendMessage with one SendMessageBatch of 2, 3, ... 10 messages.
    sizes = itertools.cycle([1, 2, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1, 9, 1, 10])
    while stopping is None or not stopping.is_set():
        chunk = list(itertools.islice(bodies, next(sizes)))
        if not chunk:
            return
        await send_chunk(client, ledger, queue_url, chunk, group)


async def send_chunk(
    client: SqsJsonClient, ledger: DeliveryLedger, queue_url: str, bodies: Sequence[str],
    group: str | None = None, delay_seconds: int = 0,
) -> None:
    """One SendMessage (one body) or one SendMessageBatch (several), recorded in `ledger`;
    after a failed call it pauses `PAUSE_AFTER_ERROR_SECONDS` (the bodies are not resent)."""
    if len(bodies) == 1:
        await _send_one(client, ledger, queue_url, bodies[0], group, delay_seconds)
    else:
        await _send_batch(client, ledger, queue_url, list(bodies), group, delay_seconds)


async def _send_one(
    client: SqsJsonClient, ledger: DeliveryLedger, queue_url: str, body: str, group: str | None,
    delay_seconds: int = 0,
) -> None:
    requested = time.time()
    try:
        message_id = await client.send_message(queue_url, body, group, delay_seconds)
    except CALL_ERRORS as exc:
        ledger.record_error("SendMessage", error_code(exc))
        await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
        return
    answered = time.time()
    ledger.record_duration("SendMessage", answered - requested)
    ledger.record_acknowledged(
        Acknowledged(message_id, body, queue_url, requested, answered, delay_seconds)
    )


async def _send_batch(
    client: SqsJsonClient, ledger: DeliveryLedger, queue_url: str, bodies: list[str],
    group: str | None, delay_seconds: int = 0,
) -> None:
    requested = time.time()
    try:
        stored, refused = await client.send_message_batch(
            queue_url, bodies, group, delay_seconds
        )
    except CALL_ERRORS as exc:
        ledger.record_error("SendMessageBatch", error_code(exc))
        await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
        return
    answered = time.time()
    ledger.record_duration("SendMessageBatch", answered - requested)
    for body, message_id in stored.items():
        ledger.record_acknowledged(
            Acknowledged(message_id, body, queue_url, requested, answered, delay_seconds)
        )
    for code in refused.values():
        ledger.record_error("SendMessageBatch entry", code)


async def wait_until_deleted(ledger: DeliveryLedger, seconds: float) -> bool:
    """Wait until every acknowledged message has been deleted; False after `seconds`."""
    deadline = time.monotonic() + seconds
    while ledger.undeleted_count():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True
