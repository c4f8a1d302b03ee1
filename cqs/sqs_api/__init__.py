"""The SQS wire layer: both protocols (AWS JSON 1.0 and query/XML) over `QueueService`.

`create_api_app` / `add_sqs_routes` (in `app.py`) are the entry points; the protocol code is
pure code over strings, bytes and model values. Beside it, what serving HTTP needs:
`signatures` and `credentials` (who may call: SigV4 and the credentials file),
`http_server` (the listening socket with read timeouts) and `clock_route` (the test-only
route that advances the service's clock). Imports the service and the domain; never Redis,
Cassandra, a storage adapter, a storage port or `cqs.service.inspection`.
"""

from __future__ import annotations

from cqs.sqs_api.app import ApiSettings, add_sqs_routes, create_api_app

__all__ = ["ApiSettings", "add_sqs_routes", "create_api_app"]
