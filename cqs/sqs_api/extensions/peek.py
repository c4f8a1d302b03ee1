"""Extension actions for peek and replay: `CqsExtensions.<Action>` handlers.

Imports the service, model values and the other `sqs_api` modules: never aiohttp, Redis or
Cassandra.
"""

from __future__ import annotations

from collections.abc import Mapping

from cqs.sqs_api.handlers import Handler

HANDLERS: Mapping[str, Handler] = {}
