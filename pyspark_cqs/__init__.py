"""PySpark Python data sources (format "cqs") that read and write queues over the SQS API.

`spark.read.format("cqs")` peeks at a queue, `spark.readStream.format("cqs")` consumes it
at least once, `df.write` / `df.writeStream` with `format("cqs")` send rows as messages.
The jobs a team runs are in `pyspark_cqs.jobs`. See docs/spark.md.

Spark finds the source by itself: it imports every top-level module whose name starts with
`pyspark_` and registers its `DefaultSource`, so this package is named for that lookup (and
installs no other top-level name). `register` does it by hand for a session that cannot
see the package. Imports pyspark and boto3; of cqs only the extension client
(`cqs.client`, for peeks at consumed messages), never the server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark_cqs.source import CqsDataSource as DefaultSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DefaultSource", "register"]


def register(session: SparkSession) -> None:
    """Register the `cqs` data source with one session (only needed when auto-discovery
    cannot see the `pyspark_cqs` package, e.g. from a source checkout on a bare PYTHONPATH)."""
    session.dataSource.register(DefaultSource)
