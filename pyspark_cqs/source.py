"""The `cqs` data source: what `format("cqs")` resolves to.

Owns the DataSource class Spark instantiates with the user's options on the driver. It
parses the options once (a bad option fails before any task starts) and builds the peek
reader, the stream reader, or the writers. `pyspark_cqs.DefaultSource` is this class, which
is how Spark finds it without `spark.dataSource.register` (see docs/spark.md).
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from pyspark_cqs.options import OptionError, ReadOptions, WriteOptions
from pyspark_cqs.peek import PeekReader
from pyspark_cqs.rows import MESSAGE_SCHEMA, RowLayout
from pyspark_cqs.stream import QueueStreamReader
from pyspark_cqs.writer import QueueStreamWriter, QueueWriter

SHORT_NAME = "cqs"


class CqsDataSource(DataSource):
    """Read, stream and write SQS queues (cqs or any SQS endpoint) through boto3."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> StructType:
        return MESSAGE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return PeekReader(ReadOptions.parse(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return QueueStreamReader(ReadOptions.parse(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = WriteOptions.parse(self.options)
        _refuse_overwrite(overwrite)
        return QueueWriter(options, RowLayout.of(schema, options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = WriteOptions.parse(self.options)
        _refuse_overwrite(overwrite)
        return QueueStreamWriter(options, RowLayout.of(schema, options))


def _refuse_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise OptionError(
            "a queue can only be appended to: use mode('append') (write) or "
            "outputMode('append') (writeStream)"
        )
