"""cqs: an Amazon-SQS-compatible queue service (aiohttp API, Redis cache, Cassandra store)."""

__version__ = "0.1.0"
