"""kombu's SQS transport and a Celery worker use cqs as their broker, unmodified.

kombu publishes with boto3 (AWS JSON 1.0) and, inside a Celery worker, receives with its
own pycurl connection; both must see cqs as SQS: queues created on demand, messages
delivered once, acknowledged messages deleted.

JSON only (`json_only`): kombu and Celery bring their own SQS clients, which speak AWS JSON
1.0 whatever this suite's `sqs` fixture speaks; a [query] run would repeat the same traffic.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kombu import Connection

from tests.wire import celery_probe
from tests.wire.conftest import wait_for

pytestmark = pytest.mark.json_only

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT_OPTIONS = {"region": "us-east-1", "is_secure": False, "wait_time_seconds": 1}


def broker_url(endpoint: str) -> str:
    return f"sqs://x:x@{urlsplit(endpoint).netloc}"


def queue_counts(sqs: Any, name: str) -> tuple[int, int]:
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


def test_a_kombu_simple_queue_puts_gets_and_acknowledges(cqs_endpoint: str, sqs: Any) -> None:
    name = "kombu-" + uuid.uuid4().hex[:10]
    with Connection(broker_url(cqs_endpoint), transport_options=TRANSPORT_OPTIONS) as connection:
        queue = connection.SimpleQueue(name)
        queue.put({"order": 1, "item": "tea"})
        queue.put({"order": 2, "item": "cake"})
        first = queue.get(timeout=10)
        second = queue.get(timeout=10)
        payloads = sorted([first.payload, second.payload], key=lambda p: p["order"])
        assert payloads == [{"order": 1, "item": "tea"}, {"order": 2, "item": "cake"}]
        first.ack()
        second.ack()
        queue.close()

    assert queue_counts(sqs, name) == (0, 0)


def test_a_kombu_message_not_acknowledged_comes_back(cqs_endpoint: str, sqs: Any) -> None:
    name = "kombu-" + uuid.uuid4().hex[:10]
    with Connection(broker_url(cqs_endpoint), transport_options=TRANSPORT_OPTIONS) as connection:
        queue = connection.SimpleQueue(name)
        queue.put("lost worker")
        taken = queue.get(timeout=10)
        taken.requeue()  # kombu hands it back: visibility 0
        again = queue.get(timeout=10)
        assert again.payload == "lost worker"
        again.ack()
        queue.close()
    assert queue_counts(sqs, name) == (0, 0)


def test_a_celery_worker_runs_every_task_once(
    cqs_endpoint: str, sqs: Any, tmp_path: Path
) -> None:
    """Wall clock: a duplicate run cannot be waited for, so the worker gets 2 s more to show one."""
    prefix = "celery-" + uuid.uuid4().hex[:8] + "-"
    output = tmp_path / "ran.txt"
    output.touch()
    env = {
        **os.environ,
        "PROBE_BROKER_URL": broker_url(cqs_endpoint),
        "PROBE_QUEUE_PREFIX": prefix,
        "PROBE_OUTPUT": str(output),
    }
    # This process only publishes; the worker child reads the same settings from `env`.
    celery_probe.app.conf.broker_url = env["PROBE_BROKER_URL"]
    celery_probe.app.conf.broker_transport_options = {
        **celery_probe.app.conf.broker_transport_options, "queue_name_prefix": prefix
    }
    values = [f"task-{n}" for n in range(30)]
    for value in values:
        celery_probe.record.delay(value)

    log = (tmp_path / "worker.log").open("ab")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.wire.celery_probe", "worker",
         "--pool", "solo", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        ran_all = wait_for(lambda: len(output.read_text().split()) >= len(values), 60)
        time.sleep(2)  # a duplicate, if any, would run now
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    log_tail = (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
    assert ran_all, log_tail

    assert Counter(output.read_text().split()) == Counter(values), log_tail
    assert queue_counts(sqs, prefix + "tasks") == (0, 0)
