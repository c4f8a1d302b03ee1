"""A tiny Celery app for the Celery-over-cqs test: its worker runs as a child process.

The broker is cqs through kombu's SQS transport (boto3 for the client side, kombu's pycurl
connection inside the worker); `record` appends its argument to a file so the test sees
what the worker ran. Configured through environment variables set by the test.
"""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery

app = Celery("celery_probe", broker=os.environ.get("PROBE_BROKER_URL", "sqs://x:x@127.0.0.1:9324"))
app.conf.update(
    broker_transport_options={
        "region": "us-east-1",
        "is_secure": False,
        "queue_name_prefix": os.environ.get("PROBE_QUEUE_PREFIX", ""),
        "visibility_timeout": 30,
        "wait_time_seconds": 1,
        "polling_interval": 0.1,
    },
    broker_connection_retry_on_startup=True,
    task_default_queue="tasks",
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
)


@app.task(name="record")
def record(value: str) -> str:
    with Path(os.environ["PROBE_OUTPUT"]).open("a") as output:
        output.write(value + "\n")
    return value
