"""Consumer groups (#19) on the console: a queue's groups on its page, a group's own page
facts, and creating and deleting a group.

Owns what the queue page shows of the queue's groups (each group's filter policy,
visibility timeout, dead-letter queue and counts, read through the same service methods
the `CqsExtensions.*ConsumerGroup` actions and GetQueueAttributes call) and what a group's
page shows of its queue and filter. A group is the queue `<queue>/<group>`, so everything
else on its page (figures, attributes, messages, purge, delete) is the queue page's.
Imports aiohttp, the console's own modules, the service, the pure group-name rule and the
errors; never a storage port or an adapter.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from cqs.admin_ui import audit, forms, presenters
from cqs.admin_ui.console import AdminConsole, console_of
from cqs.admin_ui.pages.common import act, flash, queue_name_of, queue_url
from cqs.domain import group_names
from cqs.domain.errors import QueueDoesNotExist
from cqs.domain.extension_model import ConsumerGroup
from cqs.service import COUNT_ATTRIBUTES

GROUPS_ANCHOR = "#groups"


def can_have_groups(name: str, fifo: bool) -> bool:
    """Standard queues have groups; FIFO queues and groups themselves do not."""
    return not fifo and group_names.split_group_queue_name(name) is None


async def group_rows(console: AdminConsole, name: str) -> list[dict[str, Any]]:
    """The queue's groups as its page lists them, each described as its own page is."""
    service = console.service
    groups = await service.list_consumer_groups(service.home.queue(name))

    async def row(group: ConsumerGroup) -> dict[str, Any] | None:
        queue_name = group_names.group_queue_name(group.queue_name, group.group_name)
        try:
            described = await service.describe_queue(service.home.queue(queue_name))
        except QueueDoesNotExist:
            return None  # deleted since the list was read
        return presenters.group_row(group, described)

    rows = await asyncio.gather(*(row(group) for group in groups))
    return [found for found in rows if found is not None]


async def group_counts(console: AdminConsole, name: str) -> list[dict[str, Any]]:
    """The counts of the queue's groups, for the page's live refresh (the API's counts, as
    the page's own figures)."""
    service = console.service
    names = (await console.consumer_groups()).get(name, [])

    async def counts(group: str) -> dict[str, Any] | None:
        try:
            found = await service.get_queue_attributes(
                service.home.queue(group), list(COUNT_ATTRIBUTES)
            )
        except QueueDoesNotExist:
            return None
        return {"name": group, **presenters.counts(found)}

    rows = await asyncio.gather(*(counts(group) for group in names))
    return [found for found in rows if found is not None]


async def group_of(console: AdminConsole, name: str) -> dict[str, Any] | None:
    """For a group's page: its queue and its filter policy; None for a queue's page."""
    parts = group_names.split_group_queue_name(name)
    if parts is None:
        return None
    service = console.service
    queue_name, group_name = parts
    try:
        groups = await service.list_consumer_groups(service.home.queue(queue_name))
    except QueueDoesNotExist:
        groups = []
    policy = next((g.filter_policy for g in groups if g.group_name == group_name), None)
    return {
        "queue": queue_name,
        "group": group_name,
        "filter_policy": presenters.pretty_filter_policy(policy),
    }


async def create_group(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    form = await request.post()
    group_name = forms.text(form, "GroupName").strip()
    audit.detail(request, "group " + group_name)
    service = console.service
    try:
        attributes = forms.group_attributes(form, lambda dlq: service.queue_arn(
            service.home.queue(dlq)
        ))
    except forms.FormError as error:
        audit.refused(request, "FormError")
        await flash(request, "error", str(error))
        raise web.HTTPSeeOther(queue_url(name) + GROUPS_ANCHOR) from None
    try:
        return await act(
            request,
            service.create_consumer_group(service.home.queue(name), group_name, attributes),
            f"Consumer group {group_name} created.", GROUPS_ANCHOR,
        )
    finally:
        console.forget_names()  # the queue list's group counts


async def delete_group(request: web.Request) -> web.Response:
    console = console_of(request)
    name = queue_name_of(request)
    group_name = forms.text(await request.post(), "GroupName").strip()
    audit.detail(request, "group " + group_name)
    service = console.service
    try:
        return await act(
            request, service.delete_consumer_group(service.home.queue(name), group_name),
            f"Consumer group {group_name} deleted.", GROUPS_ANCHOR,
        )
    finally:
        console.forget_names()

