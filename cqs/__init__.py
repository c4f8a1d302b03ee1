"""cqs: an Amazon-SQS-compatible queue service (aiohttp API, Redis cache, Cassandra store).

The top level holds the layers' packages (docs/architecture.md draws them: `domain`, `ports`,
`service`, `sqs_api`, `admin_ui`, the adapters `redis_cache` and `cassandra_store`,
`revisibility_worker`, `observability`, `operations`, `embedded`, and the `client`), plus
the composition root (`main`, `settings`) and `__main__`. This module imports nothing; the
import contracts between the packages are in `.importlinter`.
"""

__version__ = "0.1.0"
