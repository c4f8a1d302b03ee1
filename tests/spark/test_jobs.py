"""The jobs in pyspark_cqs/jobs, end to end against a real cqs server.

The pipeline job runs first as a user runs it: `spark-submit` in a fresh process, from a
regular (non-editable) install of cqs, in a directory that is not the source checkout, so
`format("cqs")` resolves only if Spark discovers the installed `pyspark_cqs` package by
itself. It is killed (SIGKILL, JVM and driver) mid-run and restarted from its checkpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pyspark_cqs.jobs import dlq_report, queue_to_parquet
from tests.spark.conftest import CREDENTIALS, queue_counts, repeated, send_messages, wait_for

pytestmark = pytest.mark.timeout(420)

ROOT = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def install_cqs(target: Path) -> Path:
    """`pip install --no-deps --target` of this checkout, as a wheel install lays it out."""
    source = target / "src"
    source.mkdir(parents=True)
    for name in ("setup.cfg", "setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("cqs", "pyspark_cqs"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    site = target / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         str(source)],
        check=True, capture_output=True, timeout=180,
    )
    assert (site / "pyspark_cqs" / "__init__.py").is_file()
    assert (site / "pyspark_cqs" / "jobs").is_dir()
    # The wheel installs only names that are cqs's own: no top-level `spark` or `admin_ui`.
    assert not (site / "spark").exists() and not (site / "admin_ui").exists()
    return site


def job_credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    variables = {"AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
                 "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"]}
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return variables


def test_pipeline_job_killed_mid_run_and_restarted_writes_every_message_once(
    spark_session: SparkSession, sqs: Any, cqs_endpoint: str,
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, url = make_queue()
    sent = send_messages(sqs, url, 240, prefix="order")
    output, checkpoint = tmp_path / "orders", tmp_path / "checkpoint"
    arguments = [
        "--endpoint", cqs_endpoint, "--queue-name", name,
        "--output", str(output), "--checkpoint", str(checkpoint),
        "--visibility-timeout", "10",
    ]
    site = install_cqs(tmp_path / "install")
    environment = {**os.environ, **job_credentials(monkeypatch),
                   "PYTHONPATH": str(site), "PYSPARK_PYTHON": sys.executable}
    log = (tmp_path / "spark-submit.log").open("wb")
    submitted = subprocess.Popen(
        [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=2",
         str(site / "pyspark_cqs" / "jobs" / "queue_to_parquet.py"),
         *arguments, "--max-messages-per-batch", "30", "--trigger-seconds", "0"],
        cwd=tmp_path, env=environment, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        committed = wait_for(lambda: (checkpoint / "commits" / "1").exists(), 240)
    finally:
        os.killpg(submitted.pid, signal.SIGKILL)
        submitted.wait()
    printed = (tmp_path / "spark-submit.log").read_text(errors="replace")
    assert committed, printed[-3000:]
    assert "cqs data source: known to this session" in printed, printed[-3000:]
    visible, in_flight = queue_counts(sqs, url)
    assert visible + in_flight > 0, "the job had drained the queue before it was killed"

    # What the killed run held comes back after its 10 s visibility timeout.
    assert wait_for(lambda: queue_counts(sqs, url)[1] == 0, 60), queue_counts(sqs, url)
    queue_to_parquet.run(
        spark_session,
        queue_to_parquet.parse_args(
            [*arguments, "--available-now", "--max-messages-per-batch", "500"]
        ),
    )

    written = spark_session.read.parquet(str(output))
    ids = [r.message_id for r in written.select("message_id").collect()]
    assert repeated(ids) == {}
    assert set(ids) == set(sent)
    assert {r.date.isoformat() for r in written.select("date").distinct().collect()} == {
        p.name.removeprefix("date=") for p in output.glob("date=*")
    }
    assert queue_counts(sqs, url) == (0, 0)


def test_dlq_report_counts_and_samples_by_error_attribute_and_leaves_the_queue_intact(
    spark_session: SparkSession, sqs: Any, cqs_endpoint: str,
    make_queue: Callable[..., tuple[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wall clock: 2 ms between sends give distinct SentTimestamps (the shared server's clock)."""
    name, url = make_queue()
    bodies: dict[str, list[str]] = {"timeout": [], "bad-json": [], "(none)": []}
    for i, error in enumerate(["timeout"] * 5 + ["bad-json"] * 3 + [None] * 2):
        body = f"payload-{i}-" + "x" * 300
        attributes = {} if error is None else {
            "error": {"DataType": "String", "StringValue": error}}
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageAttributes=attributes)
        bodies[error or "(none)"].append(body)
        time.sleep(0.002)  # distinct SentTimestamps, so "oldest" is well defined
    job_credentials(monkeypatch)

    rows = dlq_report.run(spark_session, dlq_report.parse_args([
        "--endpoint", cqs_endpoint, "--queue-name", name, "--samples", "2",
        "--sample-chars", "20", "--output", str(tmp_path / "report"),
    ]))

    assert [(r["error"], r["messages"]) for r in rows] == [
        ("timeout", 5), ("bad-json", 3), ("(none)", 2)]
    for r in rows:
        assert r["samples"] == [b[:20] for b in bodies[r["error"]][:2]]
        assert r["max_receive_count"] == 0  # never received: the peek is no receive
        assert r["first_sent"] <= r["last_sent"]
    written = [json.loads(line) for f in (tmp_path / "report").glob("part-*.json")
               for line in f.read_text().splitlines()]
    assert sorted((w["error"], w["messages"]) for w in written) == [
        ("(none)", 2), ("bad-json", 3), ("timeout", 5)]
    assert queue_counts(sqs, url) == (10, 0)
