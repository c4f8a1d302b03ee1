"""The README's first command: `cqs serve` with nothing configured runs on embedded services.

Starts `python -m cqs serve` with no Redis URLs and no Cassandra hosts, in an empty working
directory with a relative data dir, uses it through boto3, stops it with SIGTERM and checks
that the embedded redis-server and Cassandra (5.0, its log says so) it started stopped with it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from cqs.embedded.ports import free_port


def child_pids(parent: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.timeout(150)
def test_serve_with_nothing_configured_starts_and_stops_embedded_redis_and_cassandra(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "cqs", "serve", "--port", str(port), "--data-dir", "data"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
        stdout=log, stderr=subprocess.STDOUT,
    )
    sqs: Any = boto3.client(
        "sqs", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
        aws_access_key_id="x", aws_secret_access_key="x",
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                sqs.list_queues()
                break
            except Exception:
                assert server.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "cqs serve did not answer in 90 s"
                time.sleep(0.5)
        backends = child_pids(server.pid)
        assert len(backends) == 2, "expected an embedded redis-server and a Cassandra JVM"

        url = sqs.create_queue(QueueName="embedded")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="hello from the embedded default")
        messages = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5)["Messages"]
        assert [m["Body"] for m in messages] == ["hello from the embedded default"]
        assert (tmp_path / "data" / "redis").is_dir()
        assert (tmp_path / "data" / "cassandra-5.0").is_dir()
        log_text = (tmp_path / "serve.log").read_text()
        assert re.search(r"Cassandra 5\.0\.\d+, protocol v5", log_text), log_text[-3000:]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert server.returncode == 0
    for pid in backends:
        deadline = time.monotonic() + 20
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(pid), f"embedded backend {pid} outlived cqs serve"
