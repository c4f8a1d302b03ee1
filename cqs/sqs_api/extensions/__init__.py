"""cqs's actions beyond SQS, on the JSON protocol as `X-Amz-Target: CqsExtensions.<Action>`.

Each feature keeps its handlers in its own module here (`groups`, `peek`, `schedule`) with
the same signature as the SQS handlers (`handlers.Handler`); this package merges their
tables into `EXTENSION_HANDLERS`, which the endpoint consults only for JSON requests whose
target carries the extension prefix. The SQS actions stay exactly as AWS defines them.

Imports the other `sqs_api` modules and the service, as `handlers` does: never aiohttp,
Redis or Cassandra.
"""

from __future__ import annotations

from collections.abc import Mapping

from cqs.sqs_api.extensions import groups, peek, schedule
from cqs.sqs_api.handlers import Handler

EXTENSION_HANDLERS: Mapping[str, Handler] = {
    **groups.HANDLERS,
    **peek.HANDLERS,
    **schedule.HANDLERS,
}
