"""What the jobs share: the queue arguments of their command lines and the data source setup.

Owns the command-line names of the `cqs` options (endpoint, region, credentials, queue) and
`ensure_source`, which registers the data source for the session when Spark's own
discovery cannot see the `pyspark_cqs` package (code shipped with --py-files, or a
development checkout).
"""

from __future__ import annotations

import argparse
import os

from pyspark.sql import SparkSession

# Credentials are read from these variables rather than flags: flags show in `ps`.
ACCESS_KEY_VARIABLE = "AWS_ACCESS_KEY_ID"
SECRET_KEY_VARIABLE = "AWS_SECRET_ACCESS_KEY"


def add_queue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoint", help="SQS endpoint URL, e.g. http://cqs.internal:9324 "
                        "(default: AWS's endpoint for the region)")
    parser.add_argument("--region", default="us-east-1")
    queue = parser.add_mutually_exclusive_group(required=True)
    queue.add_argument("--queue-name")
    queue.add_argument("--queue-url")
    parser.add_argument("--parallel-receivers", type=int, default=4,
                        help="ReceiveMessage calls in flight at once on the driver")
    parser.add_argument("--wait-time-seconds", type=int, default=1,
                        help="long-poll wait of each ReceiveMessage")


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The `cqs` options named by the command line; credentials come from the driver's
    environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) or boto3's usual chain."""
    options = {
        "region": args.region,
        "parallelReceivers": str(args.parallel_receivers),
        "waitTimeSeconds": str(args.wait_time_seconds),
    }
    if args.endpoint:
        options["endpoint"] = args.endpoint
    if args.queue_url:
        options["queueUrl"] = args.queue_url
    else:
        options["queueName"] = args.queue_name
    access_key = os.environ.get(ACCESS_KEY_VARIABLE)
    secret_key = os.environ.get(SECRET_KEY_VARIABLE)
    if access_key and secret_key:
        options["accessKeyId"] = access_key
        options["secretAccessKey"] = secret_key
    return options


def ensure_source(spark: SparkSession) -> str:
    """Make `format("cqs")` resolvable in this session; say how it was found."""
    try:
        # Resolving a streaming relation looks the format up without touching the queue.
        spark.readStream.format("cqs").option("queueName", "-").load()
        return "cqs data source: known to this session"
    except Exception as exc:
        if "DATA_SOURCE_NOT_FOUND" not in str(exc):
            raise
    from pyspark_cqs import register

    register(spark)
    return "cqs data source: registered for this session (Spark did not find pyspark_cqs)"
