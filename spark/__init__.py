"""PySpark Python data sources (format "cqs") that read and write queues over the SQS API.

`spark.read.format("cqs")` peeks at a queue, `spark.readStream.format("cqs")` consumes it
at least once, `df.write` / `df.writeStream` with `format("cqs")` send rows as messages.
Spark finds the source by itself through the top-level `pyspark_cqs` module; `register`
does it by hand for a session that cannot see that module. The jobs a team runs are in
`spark.jobs`. See docs/spark.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(session: SparkSession) -> None:
    """Register the `cqs` data source with one session (only needed when auto-discovery
    cannot see the `pyspark_cqs` module, e.g. from a source checkout on a bare PYTHONPATH)."""
    from spark.source import CqsDataSource

    session.dataSource.register(CqsDataSource)
