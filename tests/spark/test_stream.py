"""`spark.readStream.format("cqs")`: every message reaches the sink, and leaves the queue
only once its micro-batch is committed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from tests.spark.conftest import (
    queue_counts,
    repeated,
    send_messages,
    unique_name,
    wait_for,
)

pytestmark = pytest.mark.timeout(300)


def test_available_now_drains_exactly_the_messages_sent_and_empties_the_queue(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue()
    sent = send_messages(sqs, url, 230)
    output = str(tmp_path / "out")

    query = (
        spark_session.readStream.format("cqs").options(**cqs_options)
        .option("queueName", name).option("maxMessagesPerBatch", "100").load()
        .writeStream.format("parquet").option("path", output)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True).start()
    )
    query.awaitTermination(240)

    assert not query.isActive
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [100, 100, 30]
    ids = [r.message_id for r in spark_session.read.parquet(output).select("message_id").collect()]
    assert repeated(ids) == {}
    assert set(ids) == set(sent)
    assert queue_counts(sqs, url) == (0, 0)


def test_processing_time_trigger_consumes_messages_as_they_arrive(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue()
    table = unique_name("arrivals_").replace("-", "_")
    query = (
        spark_session.readStream.format("cqs").options(**cqs_options)
        .option("queueName", name).load()
        .writeStream.format("memory").queryName(table)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second").start()
    )
    try:
        def consumed() -> list[str]:
            return [r.message_id for r in spark_session.table(table).collect()]

        first = send_messages(sqs, url, 30, prefix="first")
        assert wait_for(lambda: len(consumed()) >= 30, 90), len(consumed())
        second = send_messages(sqs, url, 25, prefix="second")
        assert wait_for(lambda: len(consumed()) >= 55, 90), len(consumed())
        # The last batch is deleted when the next trigger finds it committed.
        assert wait_for(lambda: queue_counts(sqs, url) == (0, 0), 30), queue_counts(sqs, url)
    finally:
        query.stop()

    ids = consumed()
    assert repeated(ids) == {}
    assert set(ids) == set(first) | set(second)


def test_a_stream_stopped_mid_run_and_restarted_from_its_checkpoint_loses_nothing(
    spark_session: SparkSession, sqs: Any, cqs_options: dict[str, str],
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue()
    sent = send_messages(sqs, url, 200)
    output, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def start(**trigger: Any) -> Any:
        return (
            spark_session.readStream.format("cqs").options(**cqs_options)
            .option("queueName", name).option("maxMessagesPerBatch", "20")
            .option("visibilityTimeout", "20").load()
            .writeStream.format("parquet").option("path", output)
            .option("checkpointLocation", checkpoint).trigger(**trigger).start()
        )

    first = start(processingTime="0 seconds")
    assert wait_for(lambda: len(list((tmp_path / "checkpoint" / "commits").glob("[0-9]*"))) >= 2,
                    120)
    first.stop()
    visible, in_flight = queue_counts(sqs, url)
    assert 0 < visible + in_flight < 200, "the stop did not happen mid-run"

    # Messages the stopped run held are back (released at stop, or after their timeout).
    assert wait_for(lambda: queue_counts(sqs, url)[1] == 0, 40), queue_counts(sqs, url)
    second = start(availableNow=True)
    second.awaitTermination(240)

    ids = {r.message_id for r in spark_session.read.parquet(output).select("message_id").collect()}
    assert ids == set(sent)
    assert queue_counts(sqs, url) == (0, 0)
