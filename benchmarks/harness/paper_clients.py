"""The client side of benchmarks/paper_load.py: one client process's share of the CQS
paper's load test (10 queues, 2 senders and 2 receivers per queue, 45 ms of processing per
received message) at one send goal.

Owns `LoadPlan` (what a process runs: its queues, the goal, the timings), `ShareResult`
(what it saw) and `run_share`, the process's entry point (spawned: a module-level function
with picklable arguments and result). Per queue of the share:

- senders (open loop): each owns a fixed schedule, one SendMessage every
  1 / (goal / senders) seconds from `start_at` to `start_at + seconds`, fired on time
  whether or not earlier sends were answered, so a server that falls behind shows as a
  lower achieved rate, not as a slower schedule. At most `in_flight_per_sender` sends of a
  sender are open at once (so a stalled server does not get thousands of sockets); a slot
  that finds them all open is counted as missed, not sent later;
- receivers: short polls (WaitTimeSeconds 0, as the paper's empty-receive percentages
  imply) in a loop; each received message is processed (an asyncio sleep of 45 ms) in a
  task of its own and then deleted with DeleteMessage, while the receiver polls again, up to
  `slots_per_receiver` messages in processing at once (then it waits for a slot).
  Receivers go on after the send window until every message this process sent was deleted,
  or `drain_seconds` passed.

Everything goes into a DeliveryLedger (benchmarks/harness/delivery_ledger.py), which the parent
merges to judge each message id. Imports aiohttp through benchmarks/harness/sqs_wire.py and the
ledger; never cqs.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.delivery_ledger import Acknowledged, DeleteOutcome, DeliveryLedger
from benchmarks.harness.sqs_wire import (
    CALL_ERRORS,
    PAUSE_AFTER_ERROR_SECONDS,
    SqsJsonClient,
    client_session,
    error_code,
    run_client,
)


@dataclass(frozen=True)
class LoadPlan:
    queue_urls: tuple[str, ...]  # this process's queues
    goal_per_queue: float  # messages per queue per second, over all the queue's senders
    senders_per_queue: int
    receivers_per_queue: int
    start_at: float  # wall clock: the send window opens (all processes alike)
    seconds: float  # the send window's length
    drain_seconds: float  # how long receivers may go on after it to empty the queues
    processing_seconds: float  # simulated work per received message
    receive_max: int  # MaxNumberOfMessages
    wait_seconds: int  # WaitTimeSeconds
    visibility_seconds: int
    in_flight_per_sender: int
    slots_per_receiver: int
    body_bytes: int
    run_id: str


@dataclass
class ShareResult:
    ledger: DeliveryLedger
    send_slots: int = 0  # scheduled sends in the window
    missed_slots: int = 0  # scheduled sends skipped: all of the sender's sends were open
    receives_in_window: int = 0  # ReceiveMessage answers that arrived in the send window
    empty_in_window: int = 0  # of those, with no message
    calls_in_window: int = 0  # every answered call (send, receive, delete) in the window
    client_cpu_seconds: float = 0.0  # this process's CPU time over the window and drain
    drained: bool = True  # every message this process sent was deleted within the bound


def run_share(endpoint: str, plan: LoadPlan) -> ShareResult:
    """A client process's entry point: run its share, return what it saw."""
    result = ShareResult(DeliveryLedger())
    run_client(_Share(endpoint, plan, result).run())
    return result


class _Share:
    def __init__(self, endpoint: str, plan: LoadPlan, result: ShareResult) -> None:
        self._endpoint = endpoint
        self._plan = plan
        self._result = result
        self._ledger = result.ledger
        self._window_end = plan.start_at + plan.seconds
        self._receiving = True
        self._client: SqsJsonClient | None = None

    @property
    def client(self) -> SqsJsonClient:
        assert self._client is not None
        return self._client

    def _answered(self, now: float) -> bool:
        """Count an answered call; True if it arrived inside the send window."""
        inside = self._plan.start_at <= now < self._window_end
        self._result.calls_in_window += inside
        return inside

    async def run(self) -> None:
        plan = self._plan
        async with client_session() as session:
            self._client = SqsJsonClient(session, self._endpoint)
            await asyncio.sleep(max(0.0, plan.start_at - time.time()))
            cpu_before = time.process_time()
            receivers = [
                asyncio.create_task(self._receive(url))
                for url in plan.queue_urls for _ in range(plan.receivers_per_queue)
            ]
            await asyncio.gather(*(
                self._send(url, sender)
                for url in plan.queue_urls for sender in range(plan.senders_per_queue)
            ))
            deadline = time.monotonic() + plan.drain_seconds
            while self._ledger.undeleted_count():
                if time.monotonic() > deadline:
                    self._result.drained = False
                    break
                await asyncio.sleep(0.1)
            self._receiving = False
            await asyncio.gather(*receivers)
            self._result.client_cpu_seconds = time.process_time() - cpu_before

    # --- senders -----------------------------------------------------------------------

    async def _send(self, queue_url: str, sender: int) -> None:
        plan = self._plan
        interval = plan.senders_per_queue / plan.goal_per_queue
        name = f"{plan.run_id}-{queue_url.rsplit('/', 1)[-1]}-s{sender}"
        padding = "x" * max(0, plan.body_bytes - len(name) - 12)
        open_sends: set[asyncio.Task[None]] = set()
        # Stagger the senders so that their slots do not all fall on the same instant.
        offset = interval * sender / plan.senders_per_queue
        for n in itertools.count():
            due = plan.start_at + offset + n * interval
            if due >= self._window_end:
                break
            if (wait := due - time.time()) > 0:
                await asyncio.sleep(wait)
            self._result.send_slots += 1
            if len(open_sends) >= plan.in_flight_per_sender:
                self._result.missed_slots += 1
                continue
            task = asyncio.create_task(self._send_one(queue_url, f"{name}-{n}-{padding}"))
            open_sends.add(task)
            task.add_done_callback(open_sends.discard)
        await asyncio.gather(*open_sends)

    async def _send_one(self, queue_url: str, body: str) -> None:
        requested = time.time()
        try:
            message_id = await self.client.send_message(queue_url, body)
        except CALL_ERRORS as exc:
            self._ledger.record_error("SendMessage", error_code(exc))
            return
        answered = time.time()
        self._answered(answered)
        self._ledger.record_duration("SendMessage", answered - requested)
        self._ledger.record_acknowledged(
            Acknowledged(message_id, body, queue_url, requested, answered)
        )

    # --- receivers ---------------------------------------------------------------------

    async def _receive(self, queue_url: str) -> None:
        plan = self._plan
        slots = asyncio.Semaphore(plan.slots_per_receiver)
        processing: set[asyncio.Task[None]] = set()
        while self._receiving:
            await slots.acquire()  # a free processing slot before asking for more work
            slots.release()
            requested = time.time()
            try:
                messages = await self.client.receive_message(
                    queue_url, plan.receive_max, plan.wait_seconds, plan.visibility_seconds
                )
            except CALL_ERRORS as exc:
                self._ledger.record_error("ReceiveMessage", error_code(exc))
                await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
                continue
            answered = time.time()
            inside = self._answered(answered)
            self._result.receives_in_window += inside
            self._ledger.record_receive(queue_url, messages, requested, answered,
                                        plan.visibility_seconds)
            if not messages:
                self._result.empty_in_window += inside
                continue
            for message in messages:
                await slots.acquire()
                task = asyncio.create_task(self._process(queue_url, message, slots))
                processing.add(task)
                task.add_done_callback(processing.discard)
        await asyncio.gather(*processing)

    async def _process(
        self, queue_url: str, message: Mapping[str, Any], slots: asyncio.Semaphore
    ) -> None:
        try:
            await asyncio.sleep(self._plan.processing_seconds)
            requested = time.time()
            try:
                await self.client.call(
                    "DeleteMessage",
                    {"QueueUrl": queue_url, "ReceiptHandle": message["ReceiptHandle"]},
                )
            except CALL_ERRORS as exc:
                code = error_code(exc)
                self._ledger.record_error("DeleteMessage", code)
                self._ledger.record_delete(
                    DeleteOutcome(message["MessageId"], requested, time.time(), code)
                )
                return
            answered = time.time()
            self._answered(answered)
            self._ledger.record_duration("DeleteMessage", answered - requested)
            self._ledger.record_delete(DeleteOutcome(message["MessageId"], requested, answered))
        finally:
            slots.release()
