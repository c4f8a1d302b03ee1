"""A queue's messages: sending one, browsing them, and one message in full.

Owns the send form (sent through `QueueService.send_message`, so the API's validation and
error texts apply) and the peeking pages, which read through the service's peek (the
mechanism of CqsExtensions.PeekMessages, shown here with in-flight and delayed messages
too): messages are looked at, never received. Imports aiohttp, the console's own modules,
the service, the model and the errors; never a storage port or an adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from cqs.admin_ui import audit, forms, presenters
from cqs.admin_ui.console import console_of
from cqs.admin_ui.pages.common import (
    described,
    error_page,
    flash,
    int_query,
    is_fifo,
    queue_name_of,
    queue_url,
    render,
)
from cqs.domain.errors import CqsError, InvalidParameterValue, QueueDoesNotExist
from cqs.domain.extension_model import PeekRequest

PEEK_SIZES = (10, 20, 50, 100)  # each at most cqs.ports.inspection.MAX_PEEK
DEFAULT_PEEK_SIZE = 20
ATTRIBUTE_ROWS_SHOWN = 3  # empty message attribute rows the send form offers at least
EMPTY_ATTRIBUTE_ROW = ("", "String", "")


# --- sending ------------------------------------------------------------------------------


async def send_form(request: web.Request) -> web.Response:
    return await _send_page(request, {}, None)


async def _send_page(
    request: web.Request, typed: Mapping[str, Any], error: str | None, status: int = 200
) -> web.Response:
    name = queue_name_of(request)
    fifo = await is_fifo(console_of(request).service, name)
    rows = list(typed.get("rows", [])) or [EMPTY_ATTRIBUTE_ROW]
    return await render(request, "send.html", {
        "nav": "queues",
        "name": name,
        "fifo": fifo,
        "typed": typed,
        "rows": rows + [EMPTY_ATTRIBUTE_ROW] * max(0, ATTRIBUTE_ROWS_SHOWN - len(rows)),
        "types": forms.MESSAGE_ATTRIBUTE_TYPES,
        "error": error,
    }, status)


async def send_message(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    form = await request.post()
    try:
        sent = await console.service.send_message(
            console.service.home.queue(name), forms.send_request(form)
        )
    except QueueDoesNotExist:
        raise
    except (forms.FormError, CqsError) as error:
        audit.refused(request, type(error).__name__)
        typed: dict[str, Any] = {key: forms.text(form, key) for key in form}
        typed["rows"] = list(zip(
            [str(v) for v in form.getall("attr_name", [])],
            [str(v) for v in form.getall("attr_type", [])],
            [str(v) for v in form.getall("attr_value", [])],
            strict=False,
        ))
        return await _send_page(request, typed, described(error), 400)
    audit.detail(request, "message " + sent.message_id)  # its id, never its body
    await flash(
        request, "ok", f"Message {sent.message_id} sent.",
        f"{queue_url(name)}/messages/{sent.message_id}",
    )
    raise web.HTTPSeeOther(queue_url(name) + "/send")


# --- browsing messages --------------------------------------------------------------------


async def browse_messages(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    size = int_query(request, "size", DEFAULT_PEEK_SIZE)
    size = size if size in PEEK_SIZES else DEFAULT_PEEK_SIZE
    position = request.query.get("position") or None
    page_number = max(1, int_query(request, "page", 1))
    try:
        page = await console.service.peek_messages(
            console.service.home.queue(name),
            PeekRequest(max_number_of_messages=size, next_token=position, visible_only=False),
        )
    except InvalidParameterValue as error:
        return await error_page(request, 400, "Bad page position", error)
    return await render(request, "messages.html", {
        "nav": "queues",
        "name": name,
        "messages": [presenters.message_row(peeked) for peeked in page.messages],
        "next_position": page.next_position,
        "page_number": page_number,
        "size": size,
        "sizes": PEEK_SIZES,
        "fifo": await is_fifo(console.service, name),
    })


async def show_message(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    message_id = request.match_info["message_id"]
    peeked = await console.service.peek_message(console.service.home.queue(name), message_id)
    if peeked is None:
        return await error_page(
            request, 404, "No such message",
            f"Message {message_id} is not in queue {name}: deleted, expired, or never sent.",
        )
    return await render(request, "message.html", {
        "nav": "queues",
        "name": name,
        "message": peeked.message,
        "state": peeked.state,
        "system": presenters.system_attributes(peeked),
        "message_attributes": presenters.message_attributes(peeked.message.message_attributes),
        "pretty": presenters.pretty_json(peeked.message.body),
    })
