"""What a benchmark's clients share: a boto3 SQS client for an endpoint, an open-file limit
raised for thousands of sockets, and how a parent takes what its client processes report.
"""

from __future__ import annotations

import queue
import resource
import time
from collections.abc import Iterator
from typing import Any

import boto3
from botocore.config import Config


def sqs_client(
    endpoint: str, attempts: int = 1, read_timeout: float = 30, pool: int = 10
) -> Any:
    """A boto3 SQS client for `endpoint` with dummy credentials; `attempts` 1 means an
    error is seen, not retried; `pool` caps its HTTP connections."""
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(
            retries={"total_max_attempts": attempts},
            connect_timeout=5,
            read_timeout=read_timeout,
            max_pool_connections=pool,
        ),
    )


def arrivals(channel: Any, seconds: float) -> Iterator[Any]:
    """What arrives on `channel` (a multiprocessing queue) within `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            yield channel.get(timeout=left)
        except queue.Empty:
            return


def raise_open_file_limit(wanted: int) -> int:
    """Raise this process's open-file limit (inherited by the children it starts, the
    server among them) towards `wanted`, as far as the hard limit allows; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft
