"""Spark's automatic discovery of the `cqs` data source.

Spark 4 registers every top-level module whose name starts with `pyspark_` and that
defines `DefaultSource`, a DataSource subclass, under that class's `name()`, the first time
a session looks up a Python data source. Installing cqs installs this module next to the
`spark` package, so `format("cqs")` works without `spark.dataSource.register`.
"""

from __future__ import annotations

from spark.source import CqsDataSource as DefaultSource

__all__ = ["DefaultSource"]
