"""The SQS wire layer: both protocols (AWS JSON 1.0 and query/XML) over `QueueService`.

`create_api_app` / `add_sqs_routes` (in `app.py`) are the entry points; everything else here
is pure code over strings, bytes and model values. Nothing in this package imports Redis,
Cassandra or a storage adapter.
"""

from __future__ import annotations

from cqs.sqs_api.app import ApiSettings, add_sqs_routes, create_api_app

__all__ = ["ApiSettings", "add_sqs_routes", "create_api_app"]
