"""The cluster page and the JSON its refresh polls: Redis servers, Cassandra, processes.

Owns gathering the cluster view (the `QueueInspector` port), the readiness check and the
revisibility lag (the observability hub) into one answer. Imports aiohttp, the console's
own modules and the observability hub through the console; never a storage port or an
adapter.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from cqs.admin_ui import presenters
from cqs.admin_ui.console import AdminConsole, console_of
from cqs.admin_ui.pages.common import render

CLUSTER_REFRESH_SECONDS = 3


async def _cluster(console: AdminConsole) -> dict[str, Any]:
    view = await console.inspector.cluster()
    readiness = None
    if console.hub.attached is not None:
        readiness = (await console.hub.attached.readiness.check()).body
    families = await asyncio.to_thread(console.hub.exposition.recorded_families)
    return presenters.cluster(view, readiness, presenters.revisibility_lag(families))


async def cluster_page(request: web.Request) -> web.Response:
    cluster = await _cluster(console_of(request))
    return await render(request, "cluster.html", {
        "nav": "cluster", "cluster": cluster, "shown": presenters.CLUSTER_QUEUES_SHOWN,
        "live_seconds": CLUSTER_REFRESH_SECONDS,
    })


async def cluster_json(request: web.Request) -> web.Response:
    return web.json_response(await _cluster(console_of(request)))
