"""Starting and cancelling message move tasks from a dead-letter queue's page.

Owns the two forms of the queue page's redrive panel; the tasks themselves run in the
service (StartMessageMoveTask, CancelMessageMoveTask). Imports aiohttp, the console's own
modules and the service's answers; never a storage port or an adapter.
"""

from __future__ import annotations

from aiohttp import web

from cqs.admin_ui import audit, forms
from cqs.admin_ui.console import console_of
from cqs.admin_ui.pages.common import act, queue_name_of


async def start_move_task(request: web.Request) -> web.Response:
    service = console_of(request).service
    form = await request.post()
    destination = forms.text(form, "destination").strip()
    rate_text = forms.text(form, "rate").strip()
    audit.detail(request, f"to {destination or 'the source queues'}"
                 + (f" at {rate_text}/s" if rate_text else ""))

    async def start() -> None:
        if rate_text and not rate_text.isdigit():
            raise forms.FormError("Messages per second must be a whole number.")
        await service.start_message_move_task(
            service.queue_arn(service.home.queue(queue_name_of(request))),
            service.queue_arn(service.home.queue(destination)) if destination else None,
            int(rate_text) if rate_text else None,
        )

    return await act(request, start(), "Message move task started.", "#redrive")


async def cancel_move_task(request: web.Request) -> web.Response:
    console = console_of(request)
    handle = forms.text(await request.post(), "handle")
    audit.detail(request, "task " + handle)

    async def cancel() -> None:
        await console.service.cancel_message_move_task(handle)

    return await act(request, cancel(), "Cancelling the message move task.", "#redrive")
