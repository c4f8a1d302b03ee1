"""PySpark Python data sources (format "cqs") that read and write queues over the SQS API."""
