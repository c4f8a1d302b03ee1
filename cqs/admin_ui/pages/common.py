"""What every page module shares: rendering with the common context, flashes, error pages,
queue URLs, query numbers, and the few reads several pages make.

Owns the context every template gets (prefix, CSRF token, user, flashes, refresh period),
how a service error reads on a page, and running a queue action that ends in a redirect
with its outcome flashed. Imports aiohttp, aiohttp-jinja2, aiohttp-session, the console's
own modules, the service and the errors; never a storage port or an adapter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from aiohttp_session import get_session

from cqs.admin_ui import audit, forms
from cqs.admin_ui.auth import csrf_token
from cqs.admin_ui.console import PREFIX, AdminConsole, console_of
from cqs.admin_ui.filters import queue_path
from cqs.domain.errors import CqsError, QueueDoesNotExist, StorageError
from cqs.service import QueueService

SELECT_LIMIT = 500  # queue names offered in a select; a text field beyond


async def render(
    request: web.Request, template: str, context: Mapping[str, Any], status: int = 200
) -> web.Response:
    """A page, with what every page needs: the CSRF token, the user, pending flashes."""
    session = await get_session(request)
    flashes = session.pop("flash", []) if "flash" in session else []
    page = {
        "prefix": PREFIX,
        "csrf_token": csrf_token(session),
        "user": console_of(request).sessions.user_of(session),
        "flashes": flashes,
        "refresh_seconds": console_of(request).refresh_seconds,
        "nav": "",
        **context,
    }
    return aiohttp_jinja2.render_template(template, request, page, status=status)


async def flash(request: web.Request, kind: str, text: str, link: str = "") -> None:
    """A message for the next page this browser shows (kind: ok | error), maybe with a
    link to what it is about."""
    session = await get_session(request)
    session["flash"] = [*session.get("flash", []), [kind, text, link]]


def described(error: CqsError | forms.FormError) -> str:
    """An error as the console shows it: the SQS error's name and the API's message, or
    what the form lacks."""
    if isinstance(error, forms.FormError):
        return str(error)
    return f"{type(error).__name__}: {error.message or str(error)}"


async def error_page(
    request: web.Request, status: int, title: str, error: CqsError | str
) -> web.Response:
    text = described(error) if isinstance(error, CqsError) else error
    return await render(request, "error.html", {"title": title, "message": text}, status)


def queue_name_of(request: web.Request) -> str:
    return request.match_info["name"]


def queue_url(name: str) -> str:
    return f"{PREFIX}/queues/{queue_path(name)}"


def int_query(request: web.Request, key: str, default: int) -> int:
    try:
        return int(request.query.get(key, default))
    except ValueError:
        return default


async def act(
    request: web.Request, action: Awaitable[object], done: str, anchor: str = ""
) -> web.Response:
    """Run one queue action; flash its outcome (or the API's refusal); back to the queue."""
    try:
        await action
    except QueueDoesNotExist:
        raise
    except (CqsError, forms.FormError) as error:
        audit.refused(request, type(error).__name__)
        await flash(request, "error", described(error))
    else:
        await flash(request, "ok", done)
    raise web.HTTPSeeOther(queue_url(queue_name_of(request)) + anchor)


async def short_name_list(console: AdminConsole) -> list[str] | None:
    """Every queue name, for a select; None when there are too many for one. Read fresh,
    not from the pages' 2-s copy: a queue created a moment ago must be there to choose."""
    names = await console.queue_names(max_age_seconds=0)
    return names if len(names) <= SELECT_LIMIT else None


async def dead_letter_links(console: AdminConsole) -> dict[str, str]:
    """Source queue -> its dead-letter queue; none while the catalog does not answer (the
    badges are left out rather than the whole page)."""
    try:
        return await console.inspector.dead_letter_links()
    except StorageError:
        return {}


async def is_fifo(service: QueueService, name: str) -> bool:
    """Whether the queue is FIFO, as the service knows it (without reading its counts, as
    `describe_queue` would)."""
    attributes = await service.get_queue_attributes(service.home.queue(name), ["FifoQueue"])
    return attributes.get("FifoQueue") == "true"
