"""The floor: a minimal in-memory SQS server in Python, the least a Python server can cost.

One aiohttp process, AWS JSON 1.0 only (`X-Amz-Target: AmazonSQS.<Action>`), no signature
check, no durability, no validation beyond what a well-behaved client needs. It serves what
benchmarks/peer_throughput.py's scenarios call: ListQueues, CreateQueue, GetQueueUrl,
SendMessage, SendMessageBatch, ReceiveMessage (long polls, VisibilityTimeout,
ApproximateReceiveCount), DeleteMessage, DeleteMessageBatch, ChangeMessageVisibility and
GetQueueAttributes (the approximate counts). Standard queues only: a `.fifo` name is
refused. It still does the work every SQS server must: a message id and a receipt handle
per delivery, the MD5 of each body, visibility timeouts and long polls. Whatever cqs
spends above this per message is the price of durability, of the full API and of its
own overhead; peer_throughput.py reports that ratio.

    python benchmarks/floor_server.py --port 9324
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import heapq
import json
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ACCOUNT = "000000000000"
JSON_TYPE = "application/x-amz-json-1.0"
MAX_WAIT_SECONDS = 20
DEFAULT_VISIBILITY_SECONDS = 30


class SqsError(Exception):
    """A refused call: `code` is the query-protocol code, `json_type` the JSON `__type`."""

    def __init__(self, code: str, json_type: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.json_type = json_type


def no_such_queue() -> SqsError:
    return SqsError("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist",
                    "The specified queue does not exist.")


def invalid_receipt() -> SqsError:
    return SqsError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid",
                    "The input receipt handle is invalid.")


@dataclass
class Message:
    message_id: str
    body: str
    md5: str
    sent_at: float
    receive_count: int = 0
    receipt: str | None = None  # the current delivery's handle, None while visible
    visible_at: float = 0.0


@dataclass
class Queue:
    """Visible messages in a deque, in-flight ones in a heap of (visible again at, id); a
    message deleted or re-hidden while in flight leaves a stale entry that is skipped. A
    receipt handle is `<message id>/<receive count>`, so no map of handles is kept."""

    name: str
    visibility_seconds: int = DEFAULT_VISIBILITY_SECONDS
    messages: dict[str, Message] = field(default_factory=dict)
    visible: deque[str] = field(default_factory=deque)
    in_flight: list[tuple[float, str]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def send(self, body: str) -> Message:
        message = Message(str(uuid.uuid4()), body, hashlib.md5(body.encode()).hexdigest(),
                          time.time())
        self.messages[message.message_id] = message
        self.visible.append(message.message_id)
        self.arrived.set()
        return message

    def release_expired(self, now: float) -> None:
        while self.in_flight and self.in_flight[0][0] <= now:
            visible_at, message_id = heapq.heappop(self.in_flight)
            message = self.messages.get(message_id)
            if message is not None and message.visible_at == visible_at:
                message.receipt = None
                self.visible.append(message_id)

    def take(self, count: int, visibility: int) -> list[Message]:
        now = time.monotonic()
        self.release_expired(now)
        taken: list[Message] = []
        while self.visible and len(taken) < count:
            message = self.messages.get(self.visible.popleft())
            if message is None:
                continue
            message.receive_count += 1
            message.receipt = f"{message.message_id}/{message.receive_count}"
            message.visible_at = now + visibility
            heapq.heappush(self.in_flight, (message.visible_at, message.message_id))
            taken.append(message)
        if not self.visible:
            self.arrived.clear()
        return taken

    def delete(self, receipt: str) -> None:
        """Any handle of the message deletes it; one of a message already deleted is
        accepted, as SQS does."""
        message_id, slash, count = receipt.partition("/")
        if not slash or not count.isdigit():
            raise invalid_receipt()
        self.messages.pop(message_id, None)

    def change_visibility(self, receipt: str, seconds: int) -> None:
        message = self.messages.get(receipt.partition("/")[0])
        if message is None or message.receipt != receipt:
            raise invalid_receipt()
        message.visible_at = time.monotonic() + seconds
        heapq.heappush(self.in_flight, (message.visible_at, message.message_id))
        if seconds == 0:
            self.arrived.set()

    def counts(self) -> dict[str, str]:
        self.release_expired(time.monotonic())
        visible = sum(1 for message_id in self.visible if message_id in self.messages)
        return {
            "ApproximateNumberOfMessages": str(visible),
            "ApproximateNumberOfMessagesNotVisible": str(len(self.messages) - visible),
            "ApproximateNumberOfMessagesDelayed": "0",
        }


class Floor:
    """The queues and one method per action: a request's JSON in, the answer's JSON out."""

    def __init__(self) -> None:
        self.queues: dict[str, Queue] = {}

    def queue(self, request: dict[str, Any]) -> Queue:
        queue = self.queues.get(str(request.get("QueueUrl", "")).rsplit("/", 1)[-1])
        if queue is None:
            raise no_such_queue()
        return queue

    async def list_queues(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        prefix = request.get("QueueNamePrefix", "")
        return {"QueueUrls": [f"{base}/{name}" for name in self.queues if name.startswith(prefix)]}

    async def create_queue(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        name = request["QueueName"]
        attributes = request.get("Attributes") or {}
        if name.endswith(".fifo") or attributes.get("FifoQueue") == "true":
            raise SqsError("InvalidParameterValue", "InvalidParameterValue",
                           "The floor server has standard queues only.")
        if name not in self.queues:
            seconds = int(attributes.get("VisibilityTimeout", DEFAULT_VISIBILITY_SECONDS))
            self.queues[name] = Queue(name, seconds)
        return {"QueueUrl": f"{base}/{name}"}

    async def get_queue_url(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        if request.get("QueueName") not in self.queues:
            raise no_such_queue()
        return {"QueueUrl": f"{base}/{request['QueueName']}"}

    async def send_message(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        message = self.queue(request).send(request["MessageBody"])
        return {"MessageId": message.message_id, "MD5OfMessageBody": message.md5}

    async def send_message_batch(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        queue = self.queue(request)
        successful = []
        for entry in request["Entries"]:
            message = queue.send(entry["MessageBody"])
            successful.append({"Id": entry["Id"], "MessageId": message.message_id,
                               "MD5OfMessageBody": message.md5})
        return {"Successful": successful, "Failed": []}

    async def receive_message(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        queue = self.queue(request)
        count = int(request.get("MaxNumberOfMessages", 1))
        visibility = int(request.get("VisibilityTimeout", queue.visibility_seconds))
        wait = min(int(request.get("WaitTimeSeconds", 0)), MAX_WAIT_SECONDS)
        deadline = time.monotonic() + wait
        messages = queue.take(count, visibility)
        while not messages and (left := deadline - time.monotonic()) > 0:
            # Woken by a send; an expiring visibility timeout is seen within a second.
            try:
                await asyncio.wait_for(queue.arrived.wait(), min(left, 1.0))
            except TimeoutError:
                pass
            messages = queue.take(count, visibility)
        wanted = set(request.get("MessageSystemAttributeNames") or ())
        wanted |= set(request.get("AttributeNames") or ())
        return {"Messages": [self.rendered(m, wanted) for m in messages]}

    @staticmethod
    def rendered(message: Message, wanted: set[str]) -> dict[str, Any]:
        answer: dict[str, Any] = {"MessageId": message.message_id, "ReceiptHandle": message.receipt,
                                  "MD5OfBody": message.md5, "Body": message.body}
        if wanted:
            every = "All" in wanted
            attributes = {}
            if every or "ApproximateReceiveCount" in wanted:
                attributes["ApproximateReceiveCount"] = str(message.receive_count)
            if every or "SentTimestamp" in wanted:
                attributes["SentTimestamp"] = str(int(message.sent_at * 1000))
            answer["Attributes"] = attributes
        return answer

    async def delete_message(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        self.queue(request).delete(request["ReceiptHandle"])
        return {}

    async def delete_message_batch(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        queue = self.queue(request)
        successful, failed = [], []
        for entry in request["Entries"]:
            try:
                queue.delete(entry["ReceiptHandle"])
                successful.append({"Id": entry["Id"]})
            except SqsError as exc:
                failed.append({"Id": entry["Id"], "Code": exc.code, "SenderFault": True,
                               "Message": str(exc)})
        return {"Successful": successful, "Failed": failed}

    async def change_message_visibility(
        self, request: dict[str, Any], base: str
    ) -> dict[str, Any]:
        self.queue(request).change_visibility(
            request["ReceiptHandle"], int(request["VisibilityTimeout"])
        )
        return {}

    async def get_queue_attributes(self, request: dict[str, Any], base: str) -> dict[str, Any]:
        queue = self.queue(request)
        attributes = {**queue.counts(), "VisibilityTimeout": str(queue.visibility_seconds)}
        names = set(request.get("AttributeNames") or ["All"])
        if "All" not in names:
            attributes = {k: v for k, v in attributes.items() if k in names}
        return {"Attributes": attributes}


def snake(action: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in action).lstrip("_")


Action = Callable[[dict[str, Any], str], Awaitable[dict[str, Any]]]


def make_app() -> web.Application:
    floor = Floor()
    actions: dict[str, Action] = {
        action: getattr(floor, snake(action))
        for action in (
            "ListQueues", "CreateQueue", "GetQueueUrl", "SendMessage", "SendMessageBatch",
            "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
            "GetQueueAttributes",
        )
    }

    async def handle(request: web.Request) -> web.Response:
        target = request.headers.get("X-Amz-Target", "")
        action = actions.get(target.removeprefix("AmazonSQS."))
        if action is None:
            return error(SqsError("InvalidAction", "InvalidAction", f"Not served: {target}"))
        base = f"http://{request.host}/{ACCOUNT}"
        try:
            answer = await action(json.loads(await request.read()), base)
        except SqsError as exc:
            return error(exc)
        except (KeyError, ValueError, TypeError) as exc:
            return error(SqsError("InvalidParameterValue", "InvalidParameterValue", repr(exc)))
        return web.Response(body=json.dumps(answer).encode(), content_type=JSON_TYPE)

    app = web.Application(client_max_size=2**20 + 4096)
    app.router.add_post("/", handle)
    return app


def error(exc: SqsError) -> web.Response:
    return web.Response(
        status=400, content_type=JSON_TYPE,
        body=json.dumps({"__type": f"com.amazonaws.sqs#{exc.json_type}",
                         "message": str(exc)}).encode(),
        headers={"x-amzn-query-error": f"{exc.code};Sender"},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9324)
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="uvloop (as cqs serve uses by default) or the standard loop")
    args = parser.parse_args()
    loop_factory = None
    if args.event_loop == "uvloop":
        import uvloop

        loop_factory = uvloop.new_event_loop
    web.run_app(make_app(), host=args.host, port=args.port, print=None,
                access_log=None, loop=loop_factory() if loop_factory else None)


if __name__ == "__main__":
    main()
