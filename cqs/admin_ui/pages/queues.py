"""The queue list (its page and the JSON its refresh polls) and creating a queue.

Owns paging and filtering the list by prefix, gathering each listed queue's figures,
badges and owner, and the new-queue form. Imports aiohttp, the console's own modules, the
service and the errors; never a storage port or an adapter.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from cqs.admin_ui import audit, forms, presenters
from cqs.admin_ui.console import AdminConsole, console_of
from cqs.admin_ui.pages.common import (
    dead_letter_links,
    described,
    flash,
    int_query,
    is_fifo,
    queue_url,
    render,
    short_name_list,
)
from cqs.domain.errors import CqsError, QueueDoesNotExist, StorageError

PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50


async def _listing(request: web.Request) -> dict[str, Any]:
    prefix = request.query.get("prefix", "").strip()
    size = int_query(request, "size", DEFAULT_PAGE_SIZE)
    size = size if size in PAGE_SIZES else DEFAULT_PAGE_SIZE
    names = [name for name in await console_of(request).queue_names() if name.startswith(prefix)]
    pages = max(1, math.ceil(len(names) / size))
    page = min(max(1, int_query(request, "page", 1)), pages)
    return {
        "prefix": prefix,
        "size": size,
        "page": page,
        "pages": pages,
        "total": len(names),
        "names": names[(page - 1) * size : page * size],
    }


async def _fifo_or_gone(console: AdminConsole, name: str) -> bool:
    """A queue deleted since the list was read, or not readable now, shows no FIFO badge."""
    try:
        return await is_fifo(console.service, name)
    except (QueueDoesNotExist, StorageError):
        return False


async def _queue_rows(console: AdminConsole, names: list[str]) -> list[dict[str, Any]]:
    snapshot = await console.statistics.read(names)
    links = await dead_letter_links(console)
    dead_letter_queues = set(links.values())
    fifo = await asyncio.gather(*(_fifo_or_gone(console, name) for name in names))
    groups = await console.consumer_groups()
    return [
        presenters.queue_row(
            name,
            snapshot,
            fifo=is_fifo_queue,
            is_dead_letter_queue=name in dead_letter_queues,
            dead_letter_queue=links.get(name),
            server=console.inspector.server_label_for(name),
            history=console.history,
            group_count=len(groups.get(name, ())),
        )
        for name, is_fifo_queue in zip(names, fifo, strict=True)
    ]


async def queue_list(request: web.Request) -> web.Response:
    listing = await _listing(request)
    rows = await _queue_rows(console_of(request), listing["names"])
    return await render(request, "queues.html", {
        "nav": "queues", "listing": listing, "rows": rows, "page_sizes": PAGE_SIZES,
    })


async def queue_list_json(request: web.Request) -> web.Response:
    listing = await _listing(request)
    rows = await _queue_rows(console_of(request), listing["names"])
    return web.json_response({
        "total": listing["total"], "page": listing["page"], "pages": listing["pages"],
        "queues": rows,
    })


# --- creating a queue ---------------------------------------------------------------------


async def new_queue_form(request: web.Request) -> web.Response:
    return await _new_queue_page(request, {}, None)


async def _new_queue_page(
    request: web.Request, typed: Mapping[str, str], error: str | None, status: int = 200
) -> web.Response:
    return await render(request, "queue_new.html", {
        "nav": "new",
        "typed": typed,
        "error": error,
        "fields": forms.CREATE_NUMBER_ATTRIBUTES,
        # A select for the dead-letter queue while the list is short, a text field beyond.
        "dlq_choices": await short_name_list(console_of(request)),
    }, status)


async def create_queue(request: web.Request) -> web.Response:
    console = console_of(request)
    form = await request.post()
    typed = {key: forms.text(form, key) for key in form}
    name = forms.text(form, "QueueName").strip()
    audit.target(request, name)
    try:
        dead_letter_queue = forms.text(form, "DeadLetterQueue").strip()
        service = console.service
        arn = (
            service.queue_arn(service.home.queue(dead_letter_queue)) if dead_letter_queue else None
        )
        attributes = forms.create_attributes(form, arn)
        tags = forms.parse_tags(forms.text(form, "Tags"))
        await service.create_queue(service.home.queue(name), attributes, tags)
    except (forms.FormError, CqsError) as error:
        audit.refused(request, type(error).__name__)
        return await _new_queue_page(request, typed, described(error), 400)
    console.forget_names()
    await flash(request, "ok", f"Queue {name} created.")
    raise web.HTTPSeeOther(queue_url(name))
