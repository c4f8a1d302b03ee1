"""1,000 concurrent 20-second long polls on one server process.

Owns issue 16's acceptance figure for long polls: one real `cqs serve` process (no workers)
holds 1,000 ReceiveMessage calls with WaitTimeSeconds=20 open at once, over 10 queues, from
1,000 connections of an aiohttp client in the test process. While they wait, plain requests
(a send and an immediate receive on another queue) are timed; then 200 messages are sent,
20 per polled queue. Every message must reach exactly one poll (none lost, none twice), each
such poll answers at once, and every other poll ends empty with 200 after its 20 s. The
server's resident memory and open descriptors are recorded (printed with -s; the figures
are in docs/operations.md). Must not import cqs.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import time
from collections import Counter
from typing import Any

import aiohttp
import pytest

from .conftest import JSON_CONTENT_TYPE, unique_name

POLLS = 1_000
QUEUES = 10
MESSAGES_PER_QUEUE = 20
WAIT_SECONDS = 20
MiB = 1024 * 1024
# A plain request under 1,000 waiting polls: interactive speed, not queued behind them.
PLAIN_REQUEST_BOUND_SECONDS = 0.5


def proc_figures(pid: int) -> tuple[int, int]:
    """(VmRSS bytes, open file descriptors) of a process."""
    import os

    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def server(redis_server: Any, start_cqs_server: Any) -> Any:
    return start_cqs_server([redis_server.url])


@pytest.fixture(autouse=True)
def enough_descriptors() -> None:
    """The test process holds 1,000 client sockets: raise its soft limit if it is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = POLLS + 500
    if soft < wanted:
        assert hard == resource.RLIM_INFINITY or hard >= wanted, f"hard limit {hard} too low"
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


class Sqs:
    """Raw AWS JSON 1.0 calls over one aiohttp session (no pool limit)."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: str) -> None:
        self._session = session
        self._endpoint = endpoint

    async def call(self, action: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        async with self._session.post(
            self._endpoint + "/", json=body,
            headers={"Content-Type": JSON_CONTENT_TYPE, "X-Amz-Target": f"AmazonSQS.{action}"},
        ) as response:
            return response.status, await response.json(content_type=None)


async def waiting_polls(session: aiohttp.ClientSession, endpoint: str) -> float:
    async with session.get(endpoint + "/metrics") as response:
        text = await response.text()
    for line in text.splitlines():
        if line.startswith("cqs_api_long_polls_waiting"):
            return float(line.split()[-1])
    return 0.0


async def scenario(server: Any) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=WAIT_SECONDS + 30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        sqs = Sqs(session, server.url)
        urls = [
            (await sqs.call("CreateQueue", {"QueueName": unique_name()}))[1]["QueueUrl"]
            for _ in range(QUEUES)
        ]
        side_url = (await sqs.call("CreateQueue", {"QueueName": unique_name()}))[1]["QueueUrl"]
        before = proc_figures(server.pid)

        async def poll(url: str) -> tuple[int, list[str], float]:
            started = time.monotonic()
            status, body = await sqs.call("ReceiveMessage", {
                "QueueUrl": url, "WaitTimeSeconds": WAIT_SECONDS, "VisibilityTimeout": 300,
                "MaxNumberOfMessages": 1,
            })
            ids = [message["MessageId"] for message in body.get("Messages", [])]
            return status, ids, time.monotonic() - started

        polls_started = time.monotonic()
        polls = [asyncio.create_task(poll(urls[i % QUEUES])) for i in range(POLLS)]
        while await waiting_polls(session, server.url) < POLLS:
            assert time.monotonic() - polls_started < 15, "the polls did not all start waiting"
            await asyncio.sleep(0.2)
        opened_seconds = time.monotonic() - polls_started
        waiting = proc_figures(server.pid)

        plain: list[float] = []
        for index in range(20):
            started = time.monotonic()
            sent_status, _ = await sqs.call(
                "SendMessage", {"QueueUrl": side_url, "MessageBody": f"side {index}"}
            )
            got_status, got = await sqs.call("ReceiveMessage", {"QueueUrl": side_url})
            plain.append(time.monotonic() - started)
            assert (sent_status, got_status) == (200, 200)
            assert len(got.get("Messages", [])) == 1

        sent_at = time.monotonic()
        sends = [
            sqs.call("SendMessage", {"QueueUrl": url, "MessageBody": f"m{n}"})
            for url in urls for n in range(MESSAGES_PER_QUEUE)
        ]
        sent = [body["MessageId"] for status, body in await asyncio.gather(*sends)]
        results = await asyncio.gather(*polls)
        leftovers = [
            (await sqs.call("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10}))[1]
            for url in urls
        ]
        return {
            "before": before, "waiting": waiting, "after": proc_figures(server.pid),
            "opened_seconds": opened_seconds, "plain": plain, "sent": sent,
            "sent_after_seconds": sent_at - polls_started, "results": results,
            "leftovers": [m for body in leftovers for m in body.get("Messages", [])],
            "wall_seconds": time.monotonic() - polls_started,
        }


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_thousand_20_second_long_polls_on_one_process(server: Any) -> None:
    figures = asyncio.run(scenario(server))
    results = figures["results"]
    delivered = Counter(message_id for _, ids, _ in results for message_id in ids)
    with_message = [seconds for _, ids, seconds in results if ids]
    empty = [seconds for _, ids, seconds in results if not ids]

    assert [status for status, _, _ in results] == [200] * POLLS
    assert set(delivered) == set(figures["sent"])  # none lost ...
    assert max(delivered.values()) == 1  # ... none twice
    assert figures["leftovers"] == []
    assert len(with_message) == QUEUES * MESSAGES_PER_QUEUE
    # A message's poll answered once it came, long before its 20 s were up.
    assert max(with_message) < figures["sent_after_seconds"] + 5
    assert len(empty) == POLLS - QUEUES * MESSAGES_PER_QUEUE
    assert min(empty) >= WAIT_SECONDS - 0.5 and max(empty) < WAIT_SECONDS + 5
    assert max(figures["plain"]) < PLAIN_REQUEST_BOUND_SECONDS, figures["plain"]
    (rss_before, fds_before), (rss_waiting, fds_waiting) = figures["before"], figures["waiting"]
    assert fds_waiting - fds_before >= POLLS  # one connection per poll, all held at once
    print(
        f"\n{POLLS} polls waiting after {figures['opened_seconds']:.1f} s;"
        f" RSS {rss_before / MiB:.1f} -> {rss_waiting / MiB:.1f} MiB"
        f" (+{(rss_waiting - rss_before) / MiB:.1f}), fds {fds_before} -> {fds_waiting};"
        f" send+receive under load: median {statistics.median(figures['plain']) * 1000:.1f} ms,"
        f" max {max(figures['plain']) * 1000:.1f} ms; messages answered within"
        f" {max(with_message) - figures['sent_after_seconds']:.2f} s of the sends;"
        f" empty polls ended {min(empty):.2f}-{max(empty):.2f} s;"
        f" RSS after {figures['after'][0] / MiB:.1f} MiB; wall {figures['wall_seconds']:.1f} s"
    )
