"""The clients of the multi-host fault runs: paced producers and long polls, one thread per host.

Owns `HostClients`: the SQS clients that sit on one API host (as a load balancer's share
would), a thread inside the host's network namespace running one event loop. Its producers
send a fixed number of messages, paced evenly over a given time, through the host's sending
servers (alternating SendMessage and SendMessageBatch, every third chunk with a DelaySeconds
of 2 on a standard queue; on a FIFO queue each producer is a message group deduplicated by
body); its long polls (`ConsumerPool`) receive and delete
through the host's receiving servers. Every call is recorded in the host's own
`DeliveryLedger` (benchmarks/harness/delivery_ledger.py: lost, early duplicates, deliveries after
delete); `merged` joins the hosts' ledgers for the verdict, and `order_violations` checks
FIFO order within each group.

Reuses the load tools' JSON client and consumer pool (benchmarks/harness/sqs_wire.py); imports
the network for `enter`; never cqs (it sees the servers only over HTTP).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.harness.delivery_ledger import DeliveryLedger
from benchmarks.harness.sqs_wire import (
    ConsumerPool,
    PollPlan,
    SqsJsonClient,
    client_session,
    is_fifo,
    run_client,
    send_chunk,
)
from tests.hosts.network import Host, enter

# One SendMessage, then a SendMessageBatch of 5, and so on.
_CHUNK_SIZES = (1, 5, 1, 10)
# Every third chunk to a standard queue waits this long (DelaySeconds) before delivery: the
# checker counts deliveries before it.
_DELAY_EVERY, DELAY_SECONDS = 3, 2


@dataclass(frozen=True)
class HostJob:
    """What one host's clients do."""

    host: Host
    send_endpoints: Sequence[str]  # servers on this host that take sends
    receive_endpoints: Sequence[str]  # servers on this host that take receives
    queue_urls: Sequence[str]
    messages: int  # sent by this host in all, over `send_seconds`
    send_seconds: float
    producers_per_endpoint: int
    polls_per_endpoint: int
    wait_seconds: int
    visibility_seconds: int
    run_id: str


class HostClients:
    """One host's producers and long polls, in a thread inside the host's namespace."""

    def __init__(self, job: HostJob) -> None:
        self.job = job
        self.ledger = DeliveryLedger()
        self.producers_done = threading.Event()
        self.failure: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"clients-{job.host.name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def request_stop(self) -> None:
        """Stop polling: polls in flight get a second to answer, then they are cancelled
        (called once every acknowledged message was received)."""
        self._stopping.set()

    def join(self, seconds: float) -> None:
        self._thread.join(seconds)

    def _run(self) -> None:
        try:
            enter(self.job.host.namespace)
            run_client(self._main())
        except BaseException as exc:  # reported by the scenario, which checks `failure`
            self.failure = exc
            self.producers_done.set()

    async def _main(self) -> None:
        job = self.job
        async with client_session() as session:
            pools = [
                ConsumerPool(SqsJsonClient(session, endpoint), self.ledger, PollPlan(
                    job.queue_urls, job.polls_per_endpoint, wait_seconds=job.wait_seconds,
                    visibility_seconds=job.visibility_seconds, ramp_seconds=1.0,
                ))
                for endpoint in job.receive_endpoints
            ]
            for pool in pools:
                pool.start()
            producers = [
                (SqsJsonClient(session, endpoint), n)
                for endpoint in job.send_endpoints for n in range(job.producers_per_endpoint)
            ]
            began = time.monotonic()
            await asyncio.gather(*(
                self._produce(client, index, len(producers), began)
                for index, (client, _) in enumerate(producers)
            ))
            self.producers_done.set()
            while not self._stopping.is_set():
                await asyncio.sleep(0.1)
            for pool in pools:
                await pool.stop(grace_seconds=1.0)

    async def _produce(self, client: SqsJsonClient, index: int, producers: int,
                       began: float) -> None:
        """Producer `index` of `producers`: its share of the messages, each chunk sent when
        its first message falls due on an even pace over `send_seconds`."""
        job = self.job
        share = job.messages // producers + (index < job.messages % producers)
        queue_url = job.queue_urls[index % len(job.queue_urls)]
        group = f"{job.run_id}-{job.host.name}-p{index}" if is_fifo(queue_url) else None
        interval = job.send_seconds / max(1, share)
        sizes = itertools.cycle(_CHUNK_SIZES)
        sent = chunks = 0
        while sent < share:
            size = min(next(sizes), share - sent)
            due = began + (sent + index / producers) * interval
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            bodies = [f"{job.run_id}-{job.host.name}-{index}-{n}" for n in range(sent, sent + size)]
            delay = DELAY_SECONDS if group is None and chunks % _DELAY_EVERY == 2 else 0
            await send_chunk(client, self.ledger, queue_url, bodies, group, delay)
            sent += size
            chunks += 1


def merged(ledgers: Sequence[DeliveryLedger]) -> DeliveryLedger:
    whole = DeliveryLedger()
    for ledger in ledgers:
        whole.absorb(ledger)
    return whole


def undelivered(clients: Sequence[HostClients]) -> int:
    """Acknowledged ids no host has received yet (read while the clients run: copies of
    their lists, which other threads only append to)."""
    acknowledged = {a.message_id for c in clients for a in list(c.ledger.acknowledged)}
    delivered = {d.message_id for c in clients for d in list(c.ledger.deliveries)}
    return len(acknowledged - delivered)


def order_violations(ledger: DeliveryLedger) -> int:
    """FIFO: acknowledged messages first delivered after a message of their group that was
    sent later. Bodies are `<run>-<host>-<producer>-<n>`, a group per producer."""
    acknowledged = {a.message_id: a.body for a in ledger.acknowledged}
    seen: set[str] = set()
    highest: dict[str, int] = {}
    violations = 0
    # Stable sort: messages of one answer keep the order the server gave them in.
    for delivery in sorted(ledger.deliveries, key=lambda d: d.answered_at):
        body = acknowledged.get(delivery.message_id)
        if body is None or delivery.message_id in seen:
            continue
        seen.add(delivery.message_id)
        group, _, number = body.rpartition("-")
        if int(number) < highest.get(group, -1):
            violations += 1
        highest[group] = max(highest.get(group, -1), int(number))
    return violations
