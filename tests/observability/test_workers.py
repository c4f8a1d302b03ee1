"""`cqs serve --workers 2`: a scrape through either worker shows the whole server's totals,
also after a worker dies and the supervisor replaces it."""

from __future__ import annotations

import http.client
import json
import os
import signal
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.observability.conftest import Scrape, sqs_client, wait_for

SENDS_PER_WORKER = 2


@pytest.fixture(scope="module")
def two_workers(redis_server: object, start_cqs_server: StartServer) -> CqsProcess:
    server = start_cqs_server(
        [redis_server.url], extra_args=["--workers", "2"]  # type: ignore[attr-defined]
    )
    wait_for(lambda: len(worker_pids(server, 20)) == 2, "both workers to answer")
    return server


@contextmanager
def worker_connection(server: CqsProcess) -> Iterator[tuple[http.client.HTTPConnection, int]]:
    """A fresh keep-alive connection and the pid of the worker the kernel gave it to."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.request("GET", "/health")
        response = connection.getresponse()
        assert response.status == 200
        yield connection, int(json.loads(response.read())["pid"])
    finally:
        connection.close()


def worker_pids(server: CqsProcess, attempts: int) -> set[int]:
    pids: set[int] = set()
    for _ in range(attempts):
        try:
            with worker_connection(server) as (_, pid):
                pids.add(pid)
        except OSError:
            pass
    return pids


def send(connection: http.client.HTTPConnection, queue_url: str, body: str) -> None:
    connection.request(
        "POST", "/",
        body=json.dumps({"QueueUrl": queue_url, "MessageBody": body}),
        headers={"X-Amz-Target": "AmazonSQS.SendMessage",
                 "Content-Type": "application/x-amz-json-1.0"},
    )
    response = connection.getresponse()
    response.read()
    assert response.status == 200


def scrape_through(connection: http.client.HTTPConnection) -> Scrape:
    from prometheus_client.parser import text_string_to_metric_families

    connection.request("GET", "/metrics")
    response = connection.getresponse()
    text = response.read().decode()
    assert response.status == 200
    families = list(text_string_to_metric_families(text))
    return Scrape([s for f in families for s in f.samples], {f.name: f.type for f in families})


def scrapes_through_each_worker(server: CqsProcess) -> dict[int, Scrape]:
    scrapes: dict[int, Scrape] = {}
    for _ in range(40):
        with worker_connection(server) as (connection, pid):
            scrapes[pid] = scrape_through(connection)
        if len(scrapes) == 2:
            break
    assert len(scrapes) == 2, "both workers answered a scrape"
    return scrapes


def test_every_scrape_through_any_worker_shows_the_whole_servers_totals(
    two_workers: CqsProcess,
) -> None:
    name = "workers-" + uuid.uuid4().hex[:10]
    queue_url = sqs_client(two_workers.url).create_queue(QueueName=name)["QueueUrl"]
    sent_by: Counter[int] = Counter()
    for attempt in range(60):
        if len(sent_by) == 2 and min(sent_by.values()) >= SENDS_PER_WORKER:
            break
        with worker_connection(two_workers) as (connection, pid):
            if sent_by[pid] < SENDS_PER_WORKER:
                send(connection, queue_url, f"message {attempt}")
                sent_by[pid] += 1
    assert len(sent_by) == 2 and min(sent_by.values()) == SENDS_PER_WORKER
    total = sum(sent_by.values())

    for pid, scrape in scrapes_through_each_worker(two_workers).items():
        assert scrape.value("cqs_messages_sent_total", queue=name) == total, pid
        assert scrape.value(
            "cqs_api_requests_total", action="SendMessage", outcome="success"
        ) == total
        assert scrape.value("cqs_queue_visible_messages", queue=name) == total
        assert scrape.value("cqs_worker_processes") == 2
        memory_pids = {s.labels["pid"] for s in scrape.matching("process_resident_memory_bytes")}
        assert memory_pids == {str(p) for p in sent_by}

    # A worker dies: the supervisor replaces it; what it counted stays in the totals.
    victim = next(iter(sent_by))
    os.kill(victim, signal.SIGKILL)
    wait_for(
        lambda: (pids := worker_pids(two_workers, 20)) and len(pids) == 2 and victim not in pids,
        "the supervisor to replace the killed worker",
    )
    for scrape in scrapes_through_each_worker(two_workers).values():
        assert scrape.value("cqs_messages_sent_total", queue=name) == total
        assert scrape.value("cqs_worker_processes") == 2
        assert str(victim) not in {
            s.labels["pid"] for s in scrape.matching("process_resident_memory_bytes")
        }


def test_workers_get_no_secret_in_their_environment_or_command_line(
    two_workers: CqsProcess,
) -> None:
    """The supervisor got its receipt secret as a flag (the fixture's `--receipt-secret`);
    its workers get it on their stdin, so `ps e` and /proc show it for neither, and a
    message received through one worker is deleted through the other (same secret)."""
    pids = worker_pids(two_workers, 20)
    assert len(pids) == 2
    for pid in pids:
        environment = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        command_line = open(f"/proc/{pid}/cmdline", "rb").read()
        assert not [v for v in environment if v.startswith(b"CQS_RECEIPT_SECRET=")]
        assert b"test-secret" not in b"\0".join(environment) + command_line
    sqs = sqs_client(two_workers.url)
    url = sqs.create_queue(QueueName="secrets-" + uuid.uuid4().hex[:10])["QueueUrl"]
    for number in range(6):  # new connections: both workers take part
        sqs.send_message(QueueUrl=url, MessageBody=f"m{number}")
    received = 0
    for _ in range(20):
        for message in sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", []):
            sqs_client(two_workers.url).delete_message(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"]
            )
            received += 1
        if received >= 6:
            break
    assert received == 6
