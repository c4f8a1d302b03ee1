"""Fixtures of the Spark suite: one local[2] SparkSession, and queues on a real cqs server.

The server is the session's `cqs_endpoint` (tests/fixtures/cqs_server.py: real Redis, real
Cassandra, a real `cqs serve`). The SparkSession is started once for the whole run (about
4 s on an idle machine, much more on a busy one) with the test's own Python for its
workers. It registers the `cqs` source by hand: whether Spark finds it by itself depends on
how cqs is installed, which test_discovery.py checks in a fresh process.

`spark_standalone` is a real Spark standalone cluster (tests/spark/standalone.py: a master
and two workers, about 2 GB), started only by the tests that ask for it, once per run.

Tests see queues as a user does: through boto3 and through `format("cqs")`.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from pyspark.sql import SparkSession

from tests.spark.standalone import StandaloneCluster

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "spark-tests", "aws_secret_access_key": "spark-tests"}


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    # Workers must run this interpreter (pyspark, boto3 and cqs live in it), not `python3`.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("cqs-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from pyspark_cqs import register

    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GB each); a cluster that does not come up fails."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), workers=2)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def sqs(cqs_endpoint: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=cqs_endpoint, region_name=REGION,
        config=Config(retries={"total_max_attempts": 3}, read_timeout=40), **CREDENTIALS,
    )


@pytest.fixture(scope="session")
def cqs_options(cqs_endpoint: str) -> dict[str, str]:
    """The options every `format("cqs")` in these tests needs besides the queue."""
    return {
        "endpoint": cqs_endpoint,
        "region": REGION,
        "accessKeyId": CREDENTIALS["aws_access_key_id"],
        "secretAccessKey": CREDENTIALS["aws_secret_access_key"],
    }


def unique_name(prefix: str = "spark-") -> str:
    return prefix + uuid.uuid4().hex[:12]


@pytest.fixture
def make_queue(sqs: Any) -> Iterator[Callable[..., tuple[str, str]]]:
    """Create a uniquely named queue; returns (name, url). Deleted after the test."""
    created: list[str] = []

    def make(fifo: bool = False, **attributes: str) -> tuple[str, str]:
        name = unique_name() + (".fifo" if fifo else "")
        if fifo:
            attributes["FifoQueue"] = "true"
        url = str(sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
        created.append(url)
        return name, url

    yield make
    for url in created:
        try:
            sqs.delete_queue(QueueUrl=url)
        except ClientError:
            pass


def send_messages(
    sqs: Any, url: str, count: int, prefix: str = "m", **entry_fields: Any
) -> dict[str, str]:
    """Send `count` messages in batches of 10; returns message id -> body."""
    sent: dict[str, str] = {}
    for start in range(0, count, 10):
        entries = [
            {"Id": str(n), "MessageBody": f"{prefix}-{start + n}", **entry_fields}
            for n in range(min(10, count - start))
        ]
        answer = sqs.send_message_batch(QueueUrl=url, Entries=entries)
        assert not answer.get("Failed"), answer["Failed"]
        bodies = {e["Id"]: e["MessageBody"] for e in entries}
        sent.update({r["MessageId"]: bodies[r["Id"]] for r in answer["Successful"]})
    return sent


def drain(sqs: Any, url: str, quiet_receives: int = 3) -> list[dict[str, Any]]:
    """Receive and delete everything the queue holds (until `quiet_receives` empty answers)."""
    messages: list[dict[str, Any]] = []
    empty = 0
    while empty < quiet_receives:
        got = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
            MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            empty += 1
            continue
        empty = 0
        messages.extend(got)
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                     for n, m in enumerate(got)],
        )
    return messages


def queue_counts(sqs: Any, url: str) -> tuple[int, int]:
    """(visible, in flight) as GetQueueAttributes reports them."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


def wait_for(condition: Callable[[], bool], seconds: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(every)
    return True


def repeated(values: list[str]) -> dict[str, int]:
    """Values that occur more than once, with their counts (empty when all are unique)."""
    return {value: n for value, n in Counter(values).items() if n > 1}
