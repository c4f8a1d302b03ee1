"""One queue's page (and the JSON its refresh polls) and what it changes: attributes, tags,
purging, deleting.

Owns reading the queue through `QueueService.describe_queue` (its type, attributes, tags
and dead-letter queue, already interpreted) and its live figures, and the forms of the
page. Every change goes through the same service method the SQS handlers call, so the
API's validation and error texts apply. Imports aiohttp, the console's own modules, the
service and the errors; never a storage port or an adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from cqs.admin_ui import audit, forms, presenters
from cqs.admin_ui.console import PREFIX, AdminConsole, console_of
from cqs.admin_ui.pages import groups
from cqs.admin_ui.pages.common import (
    act,
    dead_letter_links,
    described,
    flash,
    queue_name_of,
    queue_url,
    render,
    short_name_list,
)
from cqs.domain.errors import CqsError, QueueDoesNotExist
from cqs.domain.model import MessageMoveTask
from cqs.service import COUNT_ATTRIBUTES
from cqs.service.timers import TIMER_QUEUE_ATTRIBUTES

MOVE_TASKS_SHOWN = 10


async def _live_figures(
    console: AdminConsole, name: str, *, polled: bool = False
) -> dict[str, Any]:
    """Counts (the API's: Cassandra's count while the cache is not filled), cache state,
    oldest message age, owner, source queues, move tasks and the last hour's history.

    A page asks ListDeadLetterSourceQueues (which reads every queue); its live refresh
    (`polled`) uses the inspector's dead-letter links, re-read every few seconds.
    """
    service = console.service
    counts = await service.get_queue_attributes(
        service.home.queue(name), [*COUNT_ATTRIBUTES, *TIMER_QUEUE_ATTRIBUTES]
    )
    snapshot = await console.statistics.read([name])
    if polled:
        links = await dead_letter_links(console)
        sources = sorted(source for source, dlq in links.items() if dlq == name)
    else:
        sources, _ = await service.list_dead_letter_source_queues(
            service.home.queue(name), None, None
        )
    tasks: list[MessageMoveTask] = []
    if sources:
        tasks = await service.list_message_move_tasks(
            service.queue_arn(service.home.queue(name)), MOVE_TASKS_SHOWN
        )
    totals = (await asyncio.to_thread(console.hub.exposition.queue_totals)).get(name, {})
    return presenters.live_figures(
        name, counts, snapshot,
        server=console.inspector.server_label_for(name),
        sources=sources,
        tasks=tasks,
        history=console.history,
        totals=totals,
    )


async def queue_detail(request: web.Request) -> web.Response:
    return await _queue_page(request, queue_name_of(request))


async def _queue_page(
    request: web.Request,
    name: str,
    *,
    attribute_error: str | None = None,
    typed: Mapping[str, str] | None = None,
    status: int = 200,
) -> web.Response:
    console = console_of(request)
    queue = await console.service.describe_queue(console.service.home.queue(name))
    live = await _live_figures(console, name)
    return await render(request, "queue.html", {
        "nav": "queues",
        "name": name,
        "fifo": queue.fifo,
        "attributes": queue.attributes,
        "read_only": presenters.read_only_attributes(queue.attributes),
        "fields": [f for f in forms.EDITABLE_ATTRIBUTES if queue.fifo or not f.fifo_only],
        "typed": typed or {},
        "attribute_error": attribute_error,
        "tags": queue.tags,
        "dead_letter_queue": queue.dead_letter_queue,
        "max_receive_count": queue.max_receive_count,
        "live": live,
        # The move task's destination: a select while the list is short, a text field beyond.
        "queue_names": await short_name_list(console) if live["sources"] else None,
        # Consumer groups (#19): a queue's groups, or the queue and filter of a group.
        "groups": (
            await groups.group_rows(console, name)
            if groups.can_have_groups(name, queue.fifo) else None
        ),
        "group": await groups.group_of(console, name),
        "dlq_choices": await short_name_list(console),
    }, status)


async def queue_detail_json(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    live = await _live_figures(console, name, polled=True)
    live["groups"] = await groups.group_counts(console, name)  # consumer groups (#19)
    return web.json_response(live)


async def set_attributes(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    form = await request.post()
    queue = await console.service.describe_queue(console.service.home.queue(name))
    changed = forms.changed_attributes(form, queue.attributes, queue.fifo)
    audit.detail(request, ",".join(sorted(changed)) or "nothing changed")
    if not changed:
        await flash(request, "ok", "Nothing changed.")
        raise web.HTTPSeeOther(queue_url(name) + "#attributes")
    try:
        await console.service.set_queue_attributes(console.service.home.queue(name), changed)
    except QueueDoesNotExist:
        raise
    except CqsError as error:
        audit.refused(request, type(error).__name__)
        typed = {key: forms.text(form, key) for key in form}
        return await _queue_page(
            request, name, attribute_error=described(error), typed=typed, status=400
        )
    if "RedrivePolicy" in changed:
        console.forget_names()
    await flash(request, "ok", "Saved " + ", ".join(sorted(changed)) + ".")
    raise web.HTTPSeeOther(queue_url(name) + "#attributes")


async def tag_queue(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    form = await request.post()
    try:
        tags = forms.parse_tags(forms.text(form, "tags"))
    except forms.FormError as error:
        audit.refused(request, "FormError")
        await flash(request, "error", str(error))
        raise web.HTTPSeeOther(queue_url(name) + "#tags") from None
    audit.detail(request, "tags " + ",".join(sorted(tags)))
    if not tags:
        audit.refused(request, "no tags typed")
        await flash(request, "error", "Type at least one tag as key=value.")
        raise web.HTTPSeeOther(queue_url(name) + "#tags")
    return await act(
        request, console.service.tag_queue(console.service.home.queue(name), tags),
        "Tagged " + ", ".join(sorted(tags)) + ".", "#tags",
    )


async def untag_queue(request: web.Request) -> web.Response:
    console = console_of(request)
    key = forms.text(await request.post(), "key")
    audit.detail(request, "tag " + key)
    return await act(
        request, console.service.untag_queue(
            console.service.home.queue(queue_name_of(request)), [key]
        ),
        f"Removed tag {key}.", "#tags",
    )


async def purge_queue(request: web.Request) -> web.Response:
    service = console_of(request).service
    purging = service.purge_queue(service.home.queue(queue_name_of(request)))
    return await act(request, purging, "Queue purged.")


# --- deleting a queue ---------------------------------------------------------------------


async def delete_form(request: web.Request) -> web.Response:
    name = queue_name_of(request)
    service = console_of(request).service
    await service.get_queue_url(service.home.queue(name))  # 404 for a missing queue
    return await render(request, "delete.html", {"nav": "queues", "name": name, "error": None})


async def delete_queue(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    typed = forms.text(await request.post(), "confirm_name").strip()
    if typed != name:
        audit.refused(request, "the typed name did not match")
        return await render(request, "delete.html", {
            "nav": "queues", "name": name,
            "error": "Type the queue's name exactly to delete it.",
        }, 400)
    await console.service.delete_queue(console.service.home.queue(name))
    console.forget_names()
    await flash(request, "ok", f"Queue {name} deleted.")
    raise web.HTTPSeeOther(PREFIX + "/")
