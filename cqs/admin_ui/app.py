"""The console's aiohttp sub-app: what it is built from, its middlewares, its lifetime.

Owns building the sub-app (templates and their filters, static files, session, login,
audit and CSRF middlewares, security headers, error pages, the routes) and mounting it under
`PREFIX`, and the background task that samples the history. Imports aiohttp,
aiohttp-jinja2, aiohttp-session, the console's own modules and the errors; never a
storage port, Redis, Cassandra or an adapter.
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

from cqs.admin_ui.audit import audit_middleware
from cqs.admin_ui.auth import DeferredCookieStorage, csrf_middleware, login_required_middleware
from cqs.admin_ui.console import CONSOLE_KEY, PREFIX, AdminConsole
from cqs.admin_ui.filters import TEMPLATE_FILTERS
from cqs.admin_ui.pages.common import error_page
from cqs.admin_ui.routes import add_routes
from cqs.domain.errors import CqsError, QueueDoesNotExist, StorageError

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).parent
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
    " connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


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
        filters=TEMPLATE_FILTERS,
    )
    aiohttp_session.setup(admin, DeferredCookieStorage(
        console.session_key, path=PREFIX, max_age_seconds=console.sessions.lifetime_seconds
    ))
    admin.middlewares.extend([
        security_headers_middleware,
        login_required_middleware(console.sessions, prefix=PREFIX, public=_is_public),
        audit_middleware(skip=frozenset({"login", "logout"})),  # they log who themselves
        csrf_middleware(),
        error_page_middleware,
    ])
    add_routes(admin)
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
        return await error_page(request, 404, "No such queue", error)
    except StorageError as error:
        return await error_page(request, 503, "Storage unavailable", error)
    except CqsError as error:
        return await error_page(request, 400, "Request refused", error)


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
