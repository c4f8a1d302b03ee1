"""The queue-to-Parquet job submitted to a real Spark standalone cluster.

`spark-submit --master spark://...` against a master with two workers (tests/spark/
standalone.py), as docs/spark.md shows it: the driver runs in the `spark-submit` process,
the executors on the workers, and the `pyspark_cqs/` package reaches them as a `--py-files` zip
built from this checkout. One submission, so the test costs one cluster start plus one job:
40-70 s on a two-core machine (6-15 s for the cluster, 31-42 s for `spark-submit`), about
120 s when other work loads the cores.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.dataset
import pytest

from tests.spark.conftest import CREDENTIALS, queue_counts, repeated, send_messages, wait_for
from tests.spark.standalone import ROOT, StandaloneCluster, source_archive

pytestmark = pytest.mark.timeout(420)

MESSAGES = 1000
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
APP_ID = re.compile(r"Connected to Spark cluster with app ID (\S+)")


def test_queue_to_parquet_job_on_a_standalone_cluster_writes_each_message_once_and_empties_the_queue(
    spark_standalone: StandaloneCluster, sqs: Any, cqs_endpoint: str,
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path,
) -> None:
    name, url = make_queue()
    sent = send_messages(sqs, url, MESSAGES, prefix="order")
    assert len(sent) == MESSAGES
    output, checkpoint = tmp_path / "orders", tmp_path / "checkpoint"
    command = [
        str(SPARK_SUBMIT), "--master", spark_standalone.master_url,
        "--py-files", str(source_archive(tmp_path / "cqs-spark.zip")),
        "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2",
        str(ROOT / "pyspark_cqs" / "jobs" / "queue_to_parquet.py"),
        "--endpoint", cqs_endpoint, "--queue-name", name,
        "--output", str(output), "--checkpoint", str(checkpoint), "--available-now",
    ]
    environment = {**spark_standalone.env,
                   "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
                   "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"]}
    log_path = tmp_path / "spark-submit.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        submitted = subprocess.Popen(
            command, cwd=tmp_path, env=environment, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            returncode = submitted.wait(300)
        finally:
            if submitted.poll() is None:
                os.killpg(submitted.pid, signal.SIGKILL)
                submitted.wait()
    submit_seconds = time.monotonic() - started
    printed = log_path.read_text(errors="replace")
    assert returncode == 0, printed[-4000:]
    assert "cqs data source:" in printed, printed[-4000:]
    print(f"master up in {spark_standalone.timings['master']:.1f} s, "
          f"workers registered in {spark_standalone.timings['workers']:.1f} s, "
          f"spark-submit of {MESSAGES} messages took {submit_seconds:.1f} s")

    # N messages in, N rows out: each message id once, with its body.
    table = pyarrow.dataset.dataset(output, format="parquet", partitioning="hive").to_table(
        columns=["message_id", "body"])
    rows = table.to_pylist()
    assert len(rows) == MESSAGES
    assert repeated([r["message_id"] for r in rows]) == {}
    assert {r["message_id"]: r["body"] for r in rows} == sent
    # The job deletes what it wrote once the micro-batch is committed.
    assert queue_counts(sqs, url) == (0, 0)

    # It ran on the cluster: the master lists it as a finished application, and each worker
    # ran one of its executors, whose log shows the tasks it finished.
    found = APP_ID.search(printed)
    assert found, printed[-4000:]
    app_id = found.group(1)
    assert wait_for(lambda: any(a["id"] == app_id for a in
                                spark_standalone.status()["completedapps"]), 30)
    app = next(a for a in spark_standalone.status()["completedapps"] if a["id"] == app_id)
    assert (app["name"], app["state"]) == ("cqs-queue-to-parquet", "FINISHED")
    # A worker moves its executor to "finished" only after the master has marked the app
    # finished, so wait for both workers to catch up.
    def each_worker_finished_one_executor() -> bool:
        workers = spark_standalone.worker_status()
        return len(workers) == 2 and all(
            [e["appid"] for e in worker["finishedexecutors"]].count(app_id) == 1
            for worker in workers)
    assert wait_for(each_worker_finished_one_executor, 30), spark_standalone.worker_status()
    task_logs = [path.read_text(errors="replace")
                 for work_dir in spark_standalone.worker_dirs
                 for path in (work_dir / app_id).glob("*/stderr")]
    assert len(task_logs) == 2
    assert any("Finished task" in text for text in task_logs)
