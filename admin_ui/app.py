"""The console's aiohttp sub-app: what it is built from, its middlewares, its lifetime.

Owns `AdminConsole` (the parts the pages use: the service and the statistics through the
observability hub, the inspector, the credentials, the per-process history), building the
sub-app (templates, static files, session, login and CSRF middlewares, security headers,
error pages) and mounting it under `/admin`, and the background task that samples the
history. Imports aiohttp, aiohttp-jinja2, aiohttp-session, the service, the inspector and
the observability hub; never Redis, Cassandra or an adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp_jinja2
import aiohttp_session
import jinja2
from aiohttp import web
from aiohttp.typedefs import Handler

from admin_ui import views
from admin_ui.auth import (
    AdminCredentials,
    DeferredCookieStorage,
    csrf_middleware,
    login_required_middleware,
)
from admin_ui.history import QueueHistory, Sample
from cqs.errors import CqsError, QueueDoesNotExist, StorageError, StorageUnavailable
from cqs.inspection import QueueInspector
from cqs.model import CacheState
from cqs.observability.hub import ObservabilityHub
from cqs.observability.stats import QueueStatistics
from cqs.service import QueueService

log = logging.getLogger(__name__)

PREFIX = "/admin"
PACKAGE_DIR = Path(__file__).parent
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class AdminConsole:
    """Everything the console's pages use. The storage-backed parts (the service and the
    statistics, through the hub; the inspector and the session secret) arrive with
    `attach` once storage is connected."""

    def __init__(
        self,
        hub: ObservabilityHub,
        credentials: AdminCredentials,
        *,
        history: QueueHistory | None = None,
        refresh_seconds: float = 2.0,
    ) -> None:
        self.hub = hub
        self.credentials = credentials
        self.history = history or QueueHistory()
        self.refresh_seconds = refresh_seconds
        self._inspector: QueueInspector | None = None
        self._session_key: bytes | None = None
        self._names: tuple[float, list[str]] | None = None

    def attach(self, inspector: QueueInspector, shared_secret: bytes) -> None:
        self._inspector = inspector
        self._session_key = self.credentials.session_key(shared_secret)

    def detach(self) -> None:
        self._inspector = None

    def session_key(self) -> bytes | None:
        return self._session_key

    @property
    def service(self) -> QueueService:
        if self.hub.attached is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self.hub.attached.service

    @property
    def statistics(self) -> QueueStatistics:
        if self.hub.attached is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self.hub.attached.statistics

    @property
    def inspector(self) -> QueueInspector:
        if self._inspector is None:
            raise StorageUnavailable("The server is starting or stopping.")
        return self._inspector

    async def queue_names(self, max_age_seconds: float = 2.0) -> list[str]:
        """Every queue name through ListQueues (1000 a call, following NextToken); shared
        for `max_age_seconds` by every page and refresh of this process."""
        loop = asyncio.get_running_loop()
        if self._names is not None and loop.time() - self._names[0] < max_age_seconds:
            return self._names[1]
        names: list[str] = []
        token: str | None = None
        while True:
            page, token = await self.service.list_queues(None, 1000, token)
            names.extend(page)
            if token is None:
                break
        self._names = (loop.time(), names)
        return names

    def forget_names(self) -> None:
        """A queue was created or deleted here: list again on next use."""
        self._names = None
        if self._inspector is not None:
            self._inspector.forget_links()

    async def sample(self) -> None:
        """One history sample of every queue (figures and the sent/received totals)."""
        if self.hub.attached is None:
            return
        # A read of its own: the metrics' snapshot and its cached queue names are left to
        # the scrapes (sampling through them would hide a new queue from /metrics for a while).
        snapshot = await self.hub.attached.statistics.read(await self.queue_names())
        totals = await asyncio.to_thread(self.hub.exposition.queue_totals)
        samples = {}
        for name, figures in snapshot.queues.items():
            if figures.state is CacheState.UNAVAILABLE:
                continue
            counted = totals.get(name, {})
            samples[name] = Sample(
                figures.visible, figures.in_flight, figures.delayed,
                int(counted.get("sent", 0)), int(counted.get("received", 0)),
            )
        self.history.record(snapshot.taken_ms, samples)


CONSOLE_KEY = web.AppKey("cqs_admin_console", AdminConsole)


def mount_admin_console(app: web.Application, console: AdminConsole) -> None:
    """Serve the console under `/admin` of `app` (and send `/admin` to `/admin/`)."""
    app.add_subapp(PREFIX, create_admin_app(console))

    async def to_console(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(PREFIX + "/")

    app.router.add_get(PREFIX, to_console)


def create_admin_app(console: AdminConsole) -> web.Application:
    admin = web.Application()
    admin[CONSOLE_KEY] = console
    aiohttp_jinja2.setup(
        admin,
        loader=jinja2.FileSystemLoader(PACKAGE_DIR / "templates"),
        autoescape=jinja2.select_autoescape(["html"], default_for_string=True),
        undefined=jinja2.StrictUndefined,
        filters=views.TEMPLATE_FILTERS,
    )
    aiohttp_session.setup(admin, DeferredCookieStorage(console.session_key, path=PREFIX))
    admin.middlewares.extend([
        security_headers_middleware,
        login_required_middleware(console.credentials, prefix=PREFIX, public=_is_public),
        csrf_middleware(),
        error_page_middleware,
    ])
    views.add_routes(admin)
    admin.router.add_static("/static", PACKAGE_DIR / "static", name="static")
    admin.cleanup_ctx.append(_history_sampling)
    return admin


def _is_public(request: web.Request) -> bool:
    return request.path in (PREFIX + "/login",) or request.path.startswith(PREFIX + "/static/")


@web.middleware
async def security_headers_middleware(
    request: web.Request, handler: Handler
) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _secure(exc)
        raise
    _secure(response)
    return response


def _secure(response: web.StreamResponse) -> None:
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("Cache-Control", "no-store")


@web.middleware
async def error_page_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Errors no page handled itself: a missing queue is a 404, storage trouble a 503, any
    other service error (a refused request) a 400, each with the service's message."""
    try:
        return await handler(request)
    except QueueDoesNotExist as error:
        return await views.error_page(request, 404, "No such queue", error)
    except StorageError as error:
        return await views.error_page(request, 503, "Storage unavailable", error)
    except CqsError as error:
        return await views.error_page(request, 400, "Request refused", error)


async def _history_sampling(admin: web.Application) -> AsyncIterator[None]:
    console = admin[CONSOLE_KEY]

    async def run() -> None:
        while True:
            try:
                await console.sample()
            except asyncio.CancelledError:
                raise
            except Exception:  # a missed sample leaves a gap in the charts, nothing more
                log.debug("admin console history sample failed", exc_info=True)
            await asyncio.sleep(console.history.interval_seconds)

    task = asyncio.create_task(run(), name="admin-console-history")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
