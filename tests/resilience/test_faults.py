"""Fault injection on real processes: Redis SIGKILL under load, API process SIGKILL, and
several API processes (cross-process long-poll wake-up, `cqs serve --workers`).

Each test has its own redis-server; the module has its own Cassandra node (none of these
tests hurts it). Every check is by message id: each acknowledged send is received at least
once; duplicates are counted and bounded, never required to be zero across processes.
Cassandra outages are in `test_cassandra_faults.py`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.request
import uuid
from typing import Any

import pytest
from redis import Redis

from cqs.domain.model import CacheState
from cqs.redis_cache.keys import SWEEPER_KEY
from tests.resilience.conftest import (
    CALL_BOUND_SECONDS,
    FaultyRedis,
    Ledger,
    StartApi,
    Workload,
    cache_state,
    child_pids,
    group_by_endpoint,
    pids_listening_on,
    sqs_client,
    wait_until,
)


def unique_queue(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.mark.timeout(150)
def test_nothing_acknowledged_is_lost_when_redis_is_killed_under_load(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Wall clock: load runs 4 s, Redis is down 5 s and load goes on 3 s: the fault's shape."""
    first, second = start_api(), start_api()
    queue = unique_queue("redis-kill")
    sqs_first, sqs_second = sqs_client(first.url), sqs_client(second.url)
    url_first = sqs_first.create_queue(QueueName=queue)["QueueUrl"]
    url_second = sqs_second.get_queue_url(QueueName=queue)["QueueUrl"]
    ledger = Ledger()
    load = Workload(
        ledger, [(first.url, url_first), (second.url, url_second)],
        producers=2, consumers=2, visibility=5,
    )
    load.start()
    try:
        time.sleep(4)
        with ledger.lock:
            in_flight_at_crash = len(load.in_flight)
        killed_at = time.monotonic()
        fault_redis.kill()
        time.sleep(5)
        fault_redis.restart()
        # The cache refills by itself as the load keeps using the queue; a fill of a few
        # hundred messages takes well under a second, so 10 s is ample.
        refilled = wait_until(
            lambda: cache_state(fault_redis.url, queue) is CacheState.READY, 10, pause=0.2
        )
        refilled_at = time.monotonic()
        time.sleep(3)
        drained = load.drain(60)
    finally:
        load.stop()

    served_while_degraded = sum(1 for r in ledger.receipts if killed_at <= r.at <= refilled_at)
    duplicates = ledger.duplicates()
    print(ledger.summary())
    print(
        f"in flight at the crash: {in_flight_at_crash}; receipts between the kill and the "
        f"refill: {served_while_degraded}; refill took {refilled_at - killed_at - 5:.1f} s "
        f"after the restart; duplicate ids (first 10): {sorted(duplicates)[:10]}; handed out "
        f"again before the visibility timeout: {len(ledger.early_redeliveries())}, of which "
        f"by the same process: {ledger.early_redeliveries(same_endpoint=True)}"
    )
    errors = ledger.errors()
    assert not [e for e in errors if e.startswith("SendMessage:")], errors
    # A delete whose pooled Redis connection died with the server, answered once Redis is
    # back (the probe answers), gets a retryable 503 that SDKs retry; never a lost message.
    assert set(errors) <= {
        "DeleteMessage:ReceiptHandleIsInvalid", "DeleteMessage:ServiceUnavailable"
    }, errors
    assert drained, f"lost {len(ledger.lost())} acknowledged messages: {ledger.lost()[:10]}"
    assert not ledger.unexpected()
    assert refilled, "the cache of the queue was not refilled after Redis came back"
    assert sum(duplicates.values()) <= in_flight_at_crash + served_while_degraded
    assert not ledger.resurrected()
    same_process = ledger.early_redeliveries(same_endpoint=True)
    timeline = {
        message_id: [
            (r.via[-5:], round(r.asked - killed_at, 2), round(r.at - killed_at, 2))
            for r in ledger.receipts if r.message_id == message_id
        ]
        for message_id, _ in same_process
    }
    assert not same_process, (
        "handed out again by the same process within its visibility timeout "
        f"(endpoint, asked, answered; seconds after the kill; restart at 5.0, refilled at "
        f"{refilled_at - killed_at:.1f}): {timeline}"
    )
    slowest = ledger.slowest()
    assert slowest is not None and slowest.seconds <= CALL_BOUND_SECONDS, slowest


@pytest.mark.timeout(120)
def test_a_process_does_not_hand_out_again_what_it_delivered_before_a_redis_crash(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Wall clock: receives go on through a 3 s outage and until the holds are near their end."""
    hold = 12
    server = start_api()
    sqs = sqs_client(server.url)
    url = sqs.create_queue(QueueName=unique_queue("remembers"))["QueueUrl"]
    ledger = Ledger()
    for _ in range(20):
        assert ledger.send(sqs, url)
    held: set[str] = set()
    while len(held) < 10:
        held.update(m["MessageId"] for m in ledger.receive(
            sqs, url, visibility=hold, wait=0, count=10 - len(held)
        ))
    held_until = min(r.asked for r in ledger.receipts) + hold

    fault_redis.kill()
    outage_ends = time.monotonic() + 3
    while time.monotonic() < outage_ends:  # served from Cassandra meanwhile
        ledger.receive(sqs, url, visibility=hold, wait=0)
        time.sleep(0.1)
    fault_redis.restart()
    while time.monotonic() < held_until - 1:  # refilled cache, same process
        ledger.receive(sqs, url, visibility=hold, wait=0)
        time.sleep(0.1)

    handed_out_early = ledger.early_redeliveries()
    # After their timeouts everything comes back, and nothing was lost.
    deadline = time.monotonic() + 40
    while ledger.lost() or not held <= {r.message_id for r in ledger.receipts if r.at > held_until}:
        if time.monotonic() > deadline:
            break
        for message in ledger.receive(sqs, url, visibility=30, wait=1):
            ledger.delete(sqs, url, message)
    print(ledger.summary(), "early:", handed_out_early)
    assert not handed_out_early
    assert not ledger.lost()
    assert held <= {r.message_id for r in ledger.receipts if r.at > held_until}
    assert ledger.errors() == {}


@pytest.mark.timeout(120)
def test_messages_held_by_a_killed_api_process_come_back_through_another_after_their_timeout(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    timeout = 3
    redis = Redis.from_url(fault_redis.url, decode_responses=True)
    doomed = start_api()  # alone at first, so it takes the revisibility sweep lease
    assert wait_until(lambda: redis.get(SWEEPER_KEY) is not None, 10)
    doomed_sweeper = redis.get(SWEEPER_KEY)
    # Its long polls re-check the queue only every 10 s: a quick return needs the sweep.
    survivor = start_api("--long-poll-recheck-seconds", "10")
    queue = unique_queue("api-kill")
    sqs_doomed, sqs_survivor = sqs_client(doomed.url), sqs_client(survivor.url)
    url_doomed = sqs_doomed.create_queue(QueueName=queue)["QueueUrl"]
    url_survivor = sqs_survivor.get_queue_url(QueueName=queue)["QueueUrl"]
    ledger = Ledger()
    for _ in range(20):
        assert ledger.send(sqs_survivor, url_survivor)
    while len(ledger.receipts) < 20:
        ledger.receive(sqs_doomed, url_doomed, visibility=timeout, wait=0, via="doomed")
    first_hidden = min(r.asked for r in ledger.receipts)
    assert redis.get(SWEEPER_KEY) == doomed_sweeper, "the sweep lease moved before the kill"
    doomed.kill()

    first_return: float | None = None
    deadline = time.monotonic() + 30
    while ledger.lost() or len(ledger.receipts) < 40:
        if time.monotonic() > deadline:
            break
        messages = ledger.receive(
            sqs_survivor, url_survivor, visibility=30, wait=20, via="survivor"
        )
        if messages and first_return is None:
            first_return = time.monotonic()
        for message in messages:
            ledger.delete(sqs_survivor, url_survivor, message)
    returned = group_by_endpoint(ledger.receipts)["survivor"]
    sweeper_after = redis.get(SWEEPER_KEY)
    redis.close()
    print(
        ledger.summary(),
        f"first return {None if first_return is None else round(first_return - first_hidden, 2)}"
        " s after the first receive on the killed process",
    )
    assert sorted(returned) == sorted(ledger.acknowledged), "not every message came back once"
    assert not ledger.early_redeliveries(), "handed out again before the visibility timeout"
    assert sweeper_after not in (None, doomed_sweeper), "no survivor took over the sweep"
    assert first_return is not None
    # Well before the survivor's own 10-s re-check: its sweep took over and woke the poll.
    assert first_return - first_hidden < timeout + 2 + 2
    assert ledger.errors() == {}


def long_poll_in_thread(sqs: Any, url: str, results: dict[str, Any]) -> threading.Thread:
    def poll() -> None:
        reply = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20, MaxNumberOfMessages=1)
        results["messages"] = reply.get("Messages", [])
        results["returned_at"] = time.monotonic()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread


def long_polls_waiting(endpoint: str) -> float:
    """The server's `cqs_api_long_polls_waiting` gauge."""
    with urllib.request.urlopen(endpoint + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(
        float(line.split()[-1]) for line in text.splitlines()
        if line.startswith("cqs_api_long_polls_waiting")
    )


@pytest.mark.timeout(120)
def test_a_long_poll_wakes_when_a_message_is_sent_through_another_process(
    start_api: StartApi,
) -> None:
    """Wall clock: how soon the waiting poll returns after the send is what is measured."""
    # Re-checks every 10 s: only the cross-process wake-up can explain a quick return.
    waiting = start_api("--long-poll-recheck-seconds", "10")
    sending = start_api("--long-poll-recheck-seconds", "10")
    queue = unique_queue("wake")
    sqs_waiting, sqs_sending = sqs_client(waiting.url), sqs_client(sending.url)
    url_waiting = sqs_waiting.create_queue(QueueName=queue)["QueueUrl"]
    url_sending = sqs_sending.get_queue_url(QueueName=queue)["QueueUrl"]
    delays = []
    for round_number in range(3):
        results: dict[str, Any] = {}
        thread = long_poll_in_thread(sqs_waiting, url_waiting, results)
        assert wait_until(lambda: long_polls_waiting(waiting.url) >= 1, 15)  # found nothing
        assert "returned_at" not in results
        sent_at = time.monotonic()
        sqs_sending.send_message(QueueUrl=url_sending, MessageBody=f"wake-{round_number}")
        thread.join(25)
        assert [m["Body"] for m in results["messages"]] == [f"wake-{round_number}"]
        sqs_waiting.delete_message(
            QueueUrl=url_waiting, ReceiptHandle=results["messages"][0]["ReceiptHandle"]
        )
        delays.append(round(results["returned_at"] - sent_at, 3))
    print("wake-up after send (s):", delays)
    assert max(delays) < 1.0


def worker_pids(supervisor_pid: int, port: int) -> list[int]:
    return sorted(pids_listening_on(child_pids(supervisor_pid), port))


@pytest.mark.timeout(120)
def test_a_supervisor_replaces_a_killed_worker_and_the_port_keeps_answering(
    start_api: StartApi,
) -> None:
    supervisor = start_api("--workers", "2")
    sqs = sqs_client(supervisor.url)
    url = sqs.create_queue(QueueName=unique_queue("workers"))["QueueUrl"]
    ledger = Ledger()
    for _ in range(10):
        assert ledger.send(sqs, url)
    assert wait_until(lambda: len(worker_pids(supervisor.pid, supervisor.port)) == 2, 20), (
        f"expected 2 workers listening on {supervisor.port}, children "
        f"{child_pids(supervisor.pid)}"
    )
    workers = worker_pids(supervisor.pid, supervisor.port)
    os.kill(workers[0], signal.SIGKILL)

    def replaced() -> bool:
        current = worker_pids(supervisor.pid, supervisor.port)
        return len(current) == 2 and workers[0] not in current

    replacement_seen = wait_until(replaced, 30, pause=0.3)
    after_kill = Ledger(run=ledger.run + "k")
    fresh = sqs_client(supervisor.url)  # no kept-alive connection to the dead worker
    for _ in range(20):
        after_kill.send(fresh, url)
    print(
        "workers before", workers, "after", worker_pids(supervisor.pid, supervisor.port),
        "errors after the kill", dict(after_kill.errors()),
    )
    assert replacement_seen, "the supervisor did not start a replacement worker"
    assert after_kill.errors() == {}
    ledger.acknowledged.update(after_kill.acknowledged)
    deadline = time.monotonic() + 30
    while ledger.lost() and time.monotonic() < deadline:
        for message in ledger.receive(fresh, url, visibility=10, wait=1):
            ledger.delete(fresh, url, message)
    assert not ledger.lost()
    assert ledger.errors() == {}
    assert supervisor.process is not None and supervisor.process.poll() is None
