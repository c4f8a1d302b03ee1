"""The observability routes: `/metrics`, `/health`, `/ready`, `/stats/queues[/{name}]`.

Owns their HTTP answers: Prometheus text format for `/metrics`, JSON for the rest. They are
plain routes beside the SQS ones (the SQS error and telemetry middlewares leave them alone)
and are not SQS requests: they are not counted in `cqs_api_requests_total`. Imports aiohttp,
the hub and the other observability modules; never an adapter.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from cqs.domain.errors import QueueDoesNotExist, StorageError
from cqs.observability.health import Answer, liveness, starting
from cqs.observability.hub import ObservabilityHub
from cqs.observability.stats import QueueSnapshot, queue_view, statistics_view

log = logging.getLogger(__name__)

HUB_KEY = web.AppKey("cqs_observability", ObservabilityHub)


def add_observability_routes(app: web.Application, hub: ObservabilityHub) -> None:
    app[HUB_KEY] = hub
    app.router.add_get("/metrics", metrics_endpoint)
    app.router.add_get("/health", health_endpoint)
    app.router.add_get("/ready", ready_endpoint)
    app.router.add_get("/stats/queues", queues_endpoint)
    app.router.add_get("/stats/queues/{name}", queue_endpoint)


def _json(answer: Answer) -> web.Response:
    return web.json_response(answer.body, status=answer.status)


async def _snapshot(hub: ObservabilityHub) -> QueueSnapshot | None:
    if hub.attached is None:
        return None
    try:
        return await hub.attached.statistics.snapshot()
    except Exception:  # a scrape must still show every other metric
        log.warning("per-queue statistics unavailable for this scrape", exc_info=True)
        return None


async def metrics_endpoint(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    snapshot = await _snapshot(hub)
    # Reading every worker's files and rendering thousands of series: off the event loop.
    body = await asyncio.to_thread(hub.exposition.render, snapshot)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def health_endpoint(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    return _json(liveness(hub.started_at, hub.version))


async def ready_endpoint(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    if hub.attached is None:
        return _json(starting())
    return _json(await hub.attached.readiness.check())


async def queues_endpoint(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    snapshot = await _snapshot(hub)
    if snapshot is None:
        return _json(Answer(503, {"status": "statistics unavailable"}))
    totals = await asyncio.to_thread(hub.exposition.queue_totals)
    return web.json_response(statistics_view(snapshot, totals))


async def queue_endpoint(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    if hub.attached is None:
        return _json(starting())
    name = request.match_info["name"]
    try:
        service = hub.attached.service
        attributes = await service.get_queue_attributes(service.home.queue(name), ["All"])
        snapshot = await hub.attached.statistics.read([name])
    except QueueDoesNotExist:
        return _json(Answer(404, {"error": "QueueDoesNotExist", "queue": name}))
    except StorageError as error:
        return _json(Answer(503, {"error": "ServiceUnavailable", "message": str(error)}))
    totals = await asyncio.to_thread(hub.exposition.queue_totals)
    view = queue_view(name, snapshot, totals.get(name, {}))
    view["attributes"] = attributes
    view["taken_ms"] = snapshot.taken_ms
    return web.json_response(view)
