"""A Redis that stalls (SIGSTOP, data kept) while one API process sends and another receives.

Issue 26's first finding: two `cqs serve` processes share one Redis and one Cassandra;
B only takes sends, A only receives. Sends through B during the stall are stored in
Cassandra and acknowledged, but B's cache adds fail. The cache must then be repaired
(refilled from Cassandra) whichever process serves the queue next, or those messages are
never delivered. Each test has its own redis-server (paused here) and the module its own
Cassandra node. Checked by message id: none lost, none handed out again before its
visibility timeout (the refill keeps what consumers hold in flight), none after its delete.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter

import pytest

from tests.resilience.conftest import (
    FaultyRedis,
    Ledger,
    StartApi,
    sqs_client,
    wait_until,
)

SENDS = 600
PRODUCERS = 3
CONSUMERS = 2
VISIBILITY = 30  # longer than the test's drain, so any second receipt counts as early
STALL_SECONDS = 4.0
# A consumer's work on a batch before it deletes it: longer than the stall, so batches
# received just before it are still held when the cache is reset after it.
HOLD_SECONDS = STALL_SECONDS + 2.0
HOLDING_CONSUMERS = 20


@pytest.mark.timeout(120)
def test_sends_through_one_process_during_a_redis_stall_all_reach_a_receiver_on_another(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """A receives throughout, holding each batch a moment before deleting it, as workers
    do; B's cache adds fail during the stall, so once Redis answers B resets the queue's
    cache to be refilled from Cassandra. The refill keeps what A holds in flight, and A's
    deletes that the cache missed during the stall are applied: nothing is handed out again
    before its visibility timeout.
    The stall is timed on the wall clock because SIGSTOP is: it must last longer than
    the Redis socket timeout (1 s), so that the sender's process sees its cache adds fail
    and answers from Cassandra alone, and it must fall inside the sends (started 1 s into
    them, which take well over 5 s at this pace).
    Wall clock: a stall of STALL_SECONDS under steady load is the fault injected; the hold
    before a delete is the consumers' work, which keeps messages in flight at the reset."""
    receiver, sender = start_api(), start_api()
    queue = f"stall-{uuid.uuid4().hex[:10]}"
    sqs_b = sqs_client(sender.url)
    url_b = sqs_b.create_queue(QueueName=queue)["QueueUrl"]
    url_a = sqs_client(receiver.url).get_queue_url(QueueName=queue)["QueueUrl"]
    ledger = Ledger()
    stop_receiving = threading.Event()
    left = iter(range(SENDS))
    left_lock = threading.Lock()

    def produce() -> None:
        sqs = sqs_client(sender.url)
        while True:
            with left_lock:
                if next(left, None) is None:
                    return
            while ledger.send(sqs, url_b) is None:  # retried until acknowledged, as SDKs do
                time.sleep(0.05)
            time.sleep(0.02)

    def consume() -> None:
        sqs = sqs_client(receiver.url)
        while not stop_receiving.is_set():
            batch = ledger.receive(sqs, url_a, visibility=VISIBILITY, wait=1, via=receiver.url)
            if batch:
                time.sleep(HOLD_SECONDS)
            for message in batch:
                ledger.delete(sqs, url_a, message)

    producers = [threading.Thread(target=produce, daemon=True) for _ in range(PRODUCERS)]
    consumers = [
        threading.Thread(target=consume, daemon=True) for _ in range(HOLDING_CONSUMERS)
    ]
    for thread in producers + consumers:
        thread.start()
    try:
        time.sleep(1.0)
        fault_redis.pause()
        time.sleep(STALL_SECONDS)
        fault_redis.resume()
        for thread in producers:
            thread.join(timeout=60)
        # Acknowledged messages reach A within a few seconds of the last send once the
        # cache is repaired; 30 s of quiet is the "never came".
        wait_until(lambda: not ledger.lost(), 30, pause=0.5)
    finally:
        fault_redis.resume()
        stop_receiving.set()
        for thread in consumers:
            thread.join(timeout=30)

    early = ledger.early_redeliveries()
    print(ledger.summary())
    print(f"handed out again before the visibility timeout: {len(early)}: {early[:10]}")
    assert len(ledger.acknowledged) == SENDS, ledger.summary()
    lost = ledger.lost()
    assert not lost, f"lost {len(lost)} of {SENDS} acknowledged sends: {lost[:10]}"
    assert not ledger.unexpected()
    assert not ledger.resurrected()
    assert not early, f"{len(early)} handed out again before their visibility timeout"


@pytest.mark.timeout(60)
def test_a_send_stored_while_redis_is_slow_is_acknowledged_once_and_delivered(
    fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """Redis pauses for 2 s while a send is stored: its cache add times out (1 s socket
    timeout), then the probe (2 s timeout) is answered once Redis resumes, so the server
    reads it as back-pressure, not an outage. The message is in Cassandra by then: the send
    must be acknowledged (a 503 makes the client send a second copy) and the message
    delivered once. Timed on the wall clock because SIGSTOP is: 2 s falls between the
    socket timeout and the socket timeout plus the probe's."""
    server = start_api()
    sqs = sqs_client(server.url)
    url = sqs.create_queue(QueueName=f"slow-add-{uuid.uuid4().hex[:10]}")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="warm-up")  # queue known, cache READY
    warm = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=warm[0]["ReceiptHandle"])
    ledger = Ledger()

    fault_redis.pause()
    sender = threading.Thread(target=ledger.send, args=(sqs, url), daemon=True)
    sender.start()
    time.sleep(2.0)
    fault_redis.resume()
    sender.join(timeout=30)

    assert ledger.errors() == Counter(), ledger.errors()
    assert len(ledger.acknowledged) == 1
    deadline = time.monotonic() + 20
    while ledger.lost() and time.monotonic() < deadline:
        for message in ledger.receive(sqs, url, visibility=30, wait=1, via=server.url):
            ledger.delete(sqs, url, message)
    assert not ledger.lost(), "the acknowledged send was never delivered"
    assert ledger.duplicates() == {}


BACKLOG = 400
RECEIVING_SERVERS = 2
POLLS_PER_SERVER = 4
RECEIVE_STALL_SECONDS = 6.0
RECEIVE_VISIBILITY = 60  # longer than the whole test: any second receipt of an id is early


@pytest.mark.timeout(150)
@pytest.mark.parametrize("fault", ["stall", "crash"])
def test_two_receiving_processes_hand_out_each_message_once_through_a_redis_fault(
    fault: str, fault_redis: FaultyRedis, start_api: StartApi
) -> None:
    """A backlog waits in the queue; Redis stalls (SIGSTOP, data kept) or crashes (then
    restarts empty); long polls on two processes take the backlog (each delivery deleted
    at once, as consumers do). A message one process handed out must not be handed out by
    the other, nor again from the cache once Redis answers. Checked by message id: none
    lost, none handed out again before its visibility timeout, none after its delete.

    - stall: a Redis that does not answer may still hold its data and hand it out to
      others (a cut link looks the same), so nothing is handed out from Cassandra in its
      place: no receive is answered with messages before Redis resumes.
    - crash: the cache is gone with its Redis, so both processes serve the queue from
      Cassandra, each delivery claimed there; the refill loads claimed ones in flight.
    Wall clock: the fault must outlast the Redis socket timeout (1 s) so that receives
    meet it, and it is the fault injected."""
    servers = [start_api() for _ in range(RECEIVING_SERVERS)]
    queue = f"{fault}-receive-{uuid.uuid4().hex[:10]}"
    url = sqs_client(servers[0].url).create_queue(QueueName=queue)["QueueUrl"]
    ledger = Ledger()

    def produce(count: int) -> None:
        sqs = sqs_client(servers[0].url)
        for _ in range(count):
            while ledger.send(sqs, url) is None:
                time.sleep(0.05)

    producers = [threading.Thread(target=produce, args=(BACKLOG // 4,)) for _ in range(4)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(timeout=60)
    assert len(ledger.acknowledged) == BACKLOG, ledger.summary()

    stop_receiving = threading.Event()

    def consume(server_url: str) -> None:
        sqs = sqs_client(server_url)
        while not stop_receiving.is_set():
            for message in ledger.receive(
                sqs, url, visibility=RECEIVE_VISIBILITY, wait=1, via=server_url
            ):
                ledger.delete(sqs, url, message)

    consumers = [
        threading.Thread(target=consume, args=(server.url,), daemon=True)
        for server in servers for _ in range(POLLS_PER_SERVER)
    ]  # fmt: skip
    faulted_at = time.monotonic()
    if fault == "stall":
        fault_redis.pause()
    else:
        fault_redis.kill()
    try:
        for thread in consumers:
            thread.start()
        time.sleep(RECEIVE_STALL_SECONDS)
        healed_at = time.monotonic()
        if fault == "stall":
            fault_redis.resume()
        else:
            fault_redis.restart()
        wait_until(lambda: not ledger.lost(), 60, pause=0.5)
    finally:
        if fault == "stall":
            fault_redis.resume()
        stop_receiving.set()
        for thread in consumers:
            thread.join(timeout=30)

    early = ledger.early_redeliveries()
    served = Counter(receipt.via for receipt in ledger.receipts)
    during = Counter(receipt.via for receipt in ledger.receipts if receipt.at < healed_at)
    print(ledger.summary())
    print(f"receipts by server {dict(served)}, during the fault {dict(during)};"
          f" handed out again early: {len(early)}: {early[:10]}")
    print(f"Redis {fault} at 0.00 s, healed at {healed_at - faulted_at:.2f} s")
    for message_id, _ in early[:10]:
        for receipt in ledger.receipts_of(message_id):
            print(f"  {message_id} via {receipt.via}: asked {receipt.asked - faulted_at:.2f} s,"
                  f" answered {receipt.at - faulted_at:.2f} s")
    lost = ledger.lost()
    assert not lost, f"lost {len(lost)} of {BACKLOG}: {lost[:10]}"
    assert len(served) == RECEIVING_SERVERS, "one process served everything: no contention"
    if fault == "stall":
        assert not during, "messages handed out from Cassandra while Redis held them"
    else:
        assert len(during) == RECEIVING_SERVERS, "not both processes served from Cassandra"
    assert not early, f"{len(early)} handed out again before their visibility timeout"
    assert not ledger.resurrected()
    assert not ledger.unexpected()
