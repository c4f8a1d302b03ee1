"""`/metrics`, `/stats/queues`, `/health` and `/ready` of a real `cqs serve` process, after a
scripted boto3 workload and through a Redis outage (the server has a Redis of its own)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cqs.embedded.redis_server import EmbeddedRedis
from cqs.observability.health import REDIS_DOWN_MODE
from cqs.observability.metrics import RECORDED, sample_names
from cqs.observability.stats import DEFAULT_TTL_SECONDS as STATS_TTL_SECONDS
from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.observability.conftest import Scrape, get_json, scrape, sqs_client, wait_for


class RestartableRedis:
    """A redis-server that can be stopped and started again on the same port."""

    def __init__(self, work_dir: Path) -> None:
        self._work_dir = work_dir
        self._server = EmbeddedRedis(work_dir / "redis-0")
        self._server.start()
        self.port = self._server.port
        self._starts = 1

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def label(self) -> str:
        return f"127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self._server.stop()

    def start(self) -> None:
        self._server = EmbeddedRedis(self._work_dir / f"redis-{self._starts}", port=self.port)
        self._server.start()
        self._starts += 1


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableRedis]:
    redis = RestartableRedis(tmp_path_factory.mktemp("observed-redis"))
    yield redis
    redis.stop()


@pytest.fixture(scope="module")
def server(own_redis: RestartableRedis, start_cqs_server: StartServer) -> CqsProcess:
    return start_cqs_server([own_redis.url])


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def redrive_policy(dead_letter_queue: str, max_receive_count: int) -> str:
    arn = f"arn:aws:sqs:us-east-1:000000000000:{dead_letter_queue}"
    return json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": max_receive_count})


def delta(after: Scrape, before: Scrape, name: str, **labels: str) -> float:
    return after.value(name, **labels) - before.value(name, **labels)


def test_scraped_metrics_equal_the_counts_of_a_scripted_workload(server: CqsProcess) -> None:
    """Wall clock: per-queue figures are cached 2 s on the server's monotonic clock."""
    sqs = sqs_client(server.url)
    dead_letters_name, source_name, delayed_name = unique("dlq"), unique("src"), unique("old")
    sqs.create_queue(QueueName=dead_letters_name)
    source = sqs.create_queue(
        QueueName=source_name,
        Attributes={"RedrivePolicy": redrive_policy(dead_letters_name, 1)},
    )["QueueUrl"]
    old = sqs.create_queue(QueueName=delayed_name)["QueueUrl"]
    sqs.send_message(QueueUrl=old, MessageBody="waiting since the start")
    before = scrape(server.url)
    before_at = time.monotonic()

    sqs.send_message(QueueUrl=source, MessageBody="one")
    sqs.send_message_batch(
        QueueUrl=source,
        Entries=[{"Id": str(i), "MessageBody": f"batch {i}"} for i in range(4)],
    )
    received: list[dict[str, Any]] = []
    receive_calls = 0
    while len(received) < 5 and receive_calls < 20:
        receive_calls += 1
        received += sqs.receive_message(
            QueueUrl=source, MaxNumberOfMessages=10, VisibilityTimeout=60
        ).get("Messages", [])
    assert len(received) == 5
    sqs.delete_message(QueueUrl=source, ReceiptHandle=received[0]["ReceiptHandle"])
    sqs.delete_message_batch(
        QueueUrl=source,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                 for i, m in enumerate(received[1:3])],
    )
    # Received once already with maxReceiveCount 1: the next receive moves it to the DLQ.
    sqs.change_message_visibility(
        QueueUrl=source, ReceiptHandle=received[3]["ReceiptHandle"], VisibilityTimeout=0
    )
    assert sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=10).get("Messages", []) == []
    receive_calls += 1
    with pytest.raises(ClientError):
        sqs.get_queue_url(QueueName=unique("missing"))
    sqs.send_message(QueueUrl=old, MessageBody="later", DelaySeconds=60)
    # Past the 2 s the per-queue figures are cached (which also ages the oldest message).
    time.sleep(max(0.0, STATS_TTL_SECONDS + 0.1 - (time.monotonic() - before_at)))

    after = scrape(server.url)
    assert after.value("cqs_messages_sent_total", queue=source_name) == 5
    assert after.value("cqs_messages_received_total", queue=source_name, source="cache") == 5
    assert after.value("cqs_messages_received_total", queue=source_name, source="store") == 0
    assert after.value("cqs_messages_deleted_total", queue=source_name) == 3
    assert after.value("cqs_messages_moved_to_dead_letter_queue_total", queue=source_name) == 1
    assert delta(after, before, "cqs_cache_hits_total") == receive_calls
    assert delta(after, before, "cqs_cache_misses_total") == 0

    requests = "cqs_api_requests_total"
    assert delta(after, before, requests, action="SendMessage", outcome="success") == 2
    assert delta(after, before, requests, action="SendMessageBatch", outcome="success") == 1
    assert delta(after, before, requests, action="ReceiveMessage", outcome="success") == (
        receive_calls
    )
    assert delta(after, before, requests, action="DeleteMessage", outcome="success") == 1
    assert delta(
        after, before, requests,
        action="GetQueueUrl", outcome="AWS.SimpleQueueService.NonExistentQueue",
    ) == 1
    assert delta(
        after, before, "cqs_api_request_duration_seconds_count", action="ReceiveMessage"
    ) == receive_calls

    assert after.value("cqs_queue_visible_messages", queue=source_name) == 0
    assert after.value("cqs_queue_in_flight_messages", queue=source_name) == 1
    assert after.value("cqs_queue_visible_messages", queue=dead_letters_name) == 1
    assert after.value("cqs_queue_visible_messages", queue=delayed_name) == 1
    assert after.value("cqs_queue_delayed_messages", queue=delayed_name) == 1
    assert after.value("cqs_queue_oldest_message_age_seconds", queue=delayed_name) >= 1.0
    assert after.value("cqs_queue_oldest_message_age_seconds", queue=source_name) == 0
    assert after.value("cqs_queue_cache_state", queue=source_name, state="ready") == 1
    assert after.value("cqs_queue_cache_state", queue=source_name, state="unavailable") == 0

    assert after.value(
        "cqs_backend_request_duration_seconds_count", backend="redis", operation="receive"
    ) >= receive_calls
    assert after.value("cqs_backend_request_duration_seconds_count", backend="cassandra") > 0
    assert after.value("cqs_backend_errors_total") == 0
    assert after.value("cqs_revisibility_sweep_duration_seconds_count") > 0
    assert after.value("cqs_worker_processes") == 1
    assert after.value("process_resident_memory_bytes") > 0
    assert after.matching("python_info")

    cqs_series = {name for name in after.names() if name.startswith("cqs_")}
    assert cqs_series <= sample_names(), "every exposed metric is in the catalogue"
    unlabelled = {s for m in RECORDED if not m.labels for s in m.sample_names}
    assert unlabelled <= after.names(), "metrics without labels are exposed from the start"


def test_queue_statistics_json_shows_figures_and_totals_per_queue(server: CqsProcess) -> None:
    sqs = sqs_client(server.url)
    name = unique("stats")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    for body in ("a", "b", "c"):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    message = sqs.receive_message(QueueUrl=url, VisibilityTimeout=60)["Messages"][0]
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    status, one = get_json(f"{server.url}/stats/queues/{name}")
    assert status == 200
    assert (one["visible_messages"], one["in_flight_messages"]) == (2, 0)
    assert one["cache_state"] == "ready" and one["serving_from"] == "redis"
    assert one["totals"]["sent"] == 3 and one["totals"]["deleted"] == 1
    assert one["attributes"]["QueueArn"].endswith(":" + name)

    def listed() -> dict[str, Any] | None:
        status, every = get_json(f"{server.url}/stats/queues")
        assert status == 200
        return next((q for q in every["queues"] if q["name"] == name), None)

    entry = wait_for(listed, "the new queue in /stats/queues")  # names are cached briefly
    assert entry["totals"]["received"] == 1
    assert get_json(f"{server.url}/stats/queues/{unique('missing')}")[0] == 404


def test_readiness_flips_to_503_while_redis_is_down_and_back_when_it_returns(
    server: CqsProcess, own_redis: RestartableRedis
) -> None:
    """Wall clock: seconds served from the store are real time, and that is counted."""
    sqs = sqs_client(server.url)
    name = unique("outage")
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="before")
    sqs.send_message(QueueUrl=url, MessageBody="before too")
    status, ready = get_json(server.url + "/ready")
    assert status == 200
    assert ready == {"status": "ready", "redis": {own_redis.label: "ok"}, "cassandra": "ok"}
    before = scrape(server.url)

    own_redis.stop()
    try:
        status, degraded = wait_for(
            lambda: (r := get_json(server.url + "/ready"))[0] == 503 and r,
            "readiness to report the Redis outage",
        )
        assert degraded["status"] == "degraded"
        assert degraded["mode"] == REDIS_DOWN_MODE
        assert degraded["redis"] == {own_redis.label: "unreachable"}
        assert degraded["cassandra"] == "ok"
        assert get_json(server.url + "/health")[0] == 200

        sqs.send_message(QueueUrl=url, MessageBody="during")  # Cassandra takes it
        from_store = len(sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60
        ).get("Messages", []))
        time.sleep(0.3)  # a second pass in Return-From-Cassandra mode accrues its time
        from_store += len(sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60
        ).get("Messages", []))
        assert from_store == 3

        during = wait_for(
            lambda: (s := scrape(server.url)).value(
                "cqs_queue_cache_state", queue=name, state="unavailable"
            ) == 1 and s,
            "the queue's cache state to show the outage",
        )
        assert during.value("cqs_messages_sent_total", queue=name) == 3
        assert during.value("cqs_messages_received_total", queue=name, source="store") == 3
        # Each delivery from Cassandra may repeat one still in flight: counted by reason.
        assert during.value(
            "cqs_messages_redelivered_total", queue=name, reason="store_fallback"
        ) == 3
        assert delta(during, before, "cqs_cache_misses_total") == 2
        assert during.value("cqs_cache_serving_from_store_seconds_total", queue=name) >= 0.3
        assert during.value("cqs_backend_errors_total", backend="redis") > 0
        assert during.matching("cqs_queue_visible_messages", queue=name) == []
    finally:
        own_redis.start()

    wait_for(lambda: get_json(server.url + "/ready")[0] == 200, "readiness to recover")
    # The next receive finds the cache empty and refills it from Cassandra.
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=60)
    refilled = wait_for(
        lambda: (s := scrape(server.url)).value(
            "cqs_queue_cache_state", queue=name, state="ready"
        ) == 1 and s,
        "the refilled cache",
    )
    assert delta(refilled, before, "cqs_cache_fills_total", outcome="completed") >= 1
    assert delta(refilled, before, "cqs_cache_fill_messages_total") >= 3
    assert refilled.value("cqs_cache_fills_in_progress") == 0
    assert refilled.value("cqs_queue_in_flight_messages", queue=name) == 3
