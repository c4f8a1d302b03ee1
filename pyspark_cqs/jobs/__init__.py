"""Spark jobs a team runs against cqs queues, each runnable with `spark-submit <file> --help`.

`queue_to_parquet`: drain a queue continuously into Parquet partitioned by date, exactly
once per message id. `dlq_report`: counts and samples of a dead-letter queue by an error
attribute. Options come from the command line; nothing assumes local mode. Imports pyspark
and this package's data source; nothing of the cqs server.
"""
