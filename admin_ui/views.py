"""The console's pages and the JSON their scripts poll.

Owns each route's handler: reading the request, calling `QueueService` (every change to a
queue goes through the same method the SQS handlers call, so the API's validation and
error texts apply), the read-only `QueueInspector` and the statistics, and rendering a
template or JSON. State-changing routes are POST only; the CSRF middleware has checked
them before they run. Imports aiohttp, aiohttp-jinja2, aiohttp-session, the console's
other modules and the service side of cqs; never Redis, Cassandra or an adapter.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp_jinja2
from aiohttp import web
from aiohttp_session import get_session, new_session

from admin_ui import forms
from admin_ui.auth import (
    USER_KEY,
    csrf_token,
    safe_next,
    start_session,
)
from cqs import redrive
from cqs.errors import CqsError, InvalidParameterValue, QueueDoesNotExist, StorageError
from cqs.inspection import ClusterView, PeekedMessage
from cqs.model import CacheState, MessageMoveTask, Redelivery

if TYPE_CHECKING:
    from admin_ui.app import AdminConsole

PREFIX = "/admin"
PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
PEEK_SIZES = (10, 20, 50, 100)
DEFAULT_PEEK_SIZE = 20
BODY_PREVIEW_CHARACTERS = 160
SPARKLINE_POINTS = 30
CLUSTER_QUEUES_SHOWN = 50
CLUSTER_REFRESH_SECONDS = 3
FAILED_LOGIN_DELAY_SECONDS = 0.5
SELECT_LIMIT = 500  # queue names offered in a select; a text field beyond
COUNT_ATTRIBUTES = (
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
)
READ_ONLY_ATTRIBUTES = (
    "QueueArn", "CreatedTimestamp", "LastModifiedTimestamp", "FifoQueue", *COUNT_ATTRIBUTES,
)
CACHE_STATE_LABELS = {
    CacheState.READY: "filled",
    CacheState.FILLING: "filling (served from Cassandra)",
    CacheState.ABSENT: "served from Cassandra",
    CacheState.UNAVAILABLE: "Redis unreachable (served from Cassandra)",
}


def _console(request: web.Request) -> AdminConsole:
    from admin_ui.app import CONSOLE_KEY

    return request.app[CONSOLE_KEY]


def add_routes(admin: web.Application) -> None:
    route = admin.router
    route.add_get("/", queue_list, name="queues")
    route.add_get("/api/queues", queue_list_json)
    route.add_get("/new-queue", new_queue_form)
    route.add_post("/new-queue", create_queue)
    route.add_get("/queues/{name}", queue_detail)
    route.add_get("/api/queues/{name}", queue_detail_json)
    route.add_post("/queues/{name}/attributes", set_attributes)
    route.add_post("/queues/{name}/tags", tag_queue)
    route.add_post("/queues/{name}/untag", untag_queue)
    route.add_post("/queues/{name}/purge", purge_queue)
    route.add_get("/queues/{name}/delete", delete_form)
    route.add_post("/queues/{name}/delete", delete_queue)
    route.add_get("/queues/{name}/send", send_form)
    route.add_post("/queues/{name}/send", send_message)
    route.add_get("/queues/{name}/messages", browse_messages)
    route.add_get("/queues/{name}/messages/{message_id}", show_message)
    route.add_post("/queues/{name}/move-tasks", start_move_task)
    route.add_post("/queues/{name}/move-tasks/cancel", cancel_move_task)
    route.add_get("/cluster", cluster_page)
    route.add_get("/api/cluster", cluster_json)
    route.add_get("/login", login_form)
    route.add_post("/login", login)
    route.add_post("/logout", logout)


# --- template helpers ---------------------------------------------------------------------


def _ms_time(ms: int | float | str | None) -> str:
    if ms in (None, "", 0, "0"):
        return "—"
    moment = datetime.datetime.fromtimestamp(int(float(ms)) / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def _s_time(seconds: int | str | None) -> str:
    if seconds in (None, ""):
        return "—"
    moment = datetime.datetime.fromtimestamp(int(seconds), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(seconds: float | int | str | None) -> str:
    if seconds is None or seconds == "":
        return "—"
    value = float(seconds)
    if value < 60:
        return f"{value:.0f} s" if value >= 10 or value == int(value) else f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s"


def _bytes(value: int | str | None) -> str:
    if value in (None, ""):
        return "—"
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} TiB"


TEMPLATE_FILTERS = {
    "ms_time": _ms_time,
    "s_time": _s_time,
    "duration": _duration,
    "bytes": _bytes,
    "tojson_compact": lambda value: json.dumps(value, separators=(",", ":")),
}


async def render(
    request: web.Request, template: str, context: Mapping[str, Any], status: int = 200
) -> web.Response:
    """A page, with what every page needs: the CSRF token, the user, pending flashes."""
    session = await get_session(request)
    flashes = session.pop("flash", []) if "flash" in session else []
    console = _console(request)
    page = {
        "prefix": PREFIX,
        "csrf_token": csrf_token(session),
        "user": session.get(USER_KEY),
        "flashes": flashes,
        "refresh_seconds": console.refresh_seconds,
        "nav": "",
        **context,
    }
    return aiohttp_jinja2.render_template(template, request, page, status=status)


async def flash(request: web.Request, kind: str, text: str, link: str = "") -> None:
    """A message for the next page this browser shows (kind: ok | error), maybe with a
    link to what it is about."""
    session = await get_session(request)
    session["flash"] = [*session.get("flash", []), [kind, text, link]]


def described(error: CqsError) -> str:
    """An error as the console shows it: the SQS error's name and the API's message."""
    return f"{type(error).__name__}: {error.message or str(error)}"


async def error_page(
    request: web.Request, status: int, title: str, error: CqsError | str
) -> web.Response:
    text = described(error) if isinstance(error, CqsError) else error
    return await render(request, "error.html", {"title": title, "message": text}, status)


def _name(request: web.Request) -> str:
    return request.match_info["name"]


def _queue_url(name: str) -> str:
    return f"{PREFIX}/queues/{name}"


# --- queue list ---------------------------------------------------------------------------


def _int_query(request: web.Request, key: str, default: int) -> int:
    try:
        return int(request.query.get(key, default))
    except ValueError:
        return default


async def _listing(request: web.Request) -> dict[str, Any]:
    console = _console(request)
    prefix = request.query.get("prefix", "").strip()
    size = _int_query(request, "size", DEFAULT_PAGE_SIZE)
    size = size if size in PAGE_SIZES else DEFAULT_PAGE_SIZE
    names = [name for name in await console.queue_names() if name.startswith(prefix)]
    pages = max(1, math.ceil(len(names) / size))
    page = min(max(1, _int_query(request, "page", 1)), pages)
    return {
        "prefix": prefix,
        "size": size,
        "page": page,
        "pages": pages,
        "total": len(names),
        "names": names[(page - 1) * size : page * size],
    }


async def queue_rows(console: AdminConsole, names: list[str]) -> list[dict[str, Any]]:
    """What the queue list shows of each queue: figures, badges, owner, sparkline."""
    snapshot = await console.statistics.read(names)
    links = await _links(console)
    dead_letter_queues = set(links.values())
    rows: list[dict[str, Any]] = []
    for name in names:
        figures = snapshot.queues.get(name)
        state = figures.state if figures is not None else CacheState.UNAVAILABLE
        counted = figures is not None and state in (CacheState.READY, CacheState.FILLING)
        rows.append({
            "name": name,
            "fifo": name.endswith(".fifo"),
            "dlq": name in dead_letter_queues,
            "dead_letter_queue": links.get(name),
            "state": state.value,
            "state_label": CACHE_STATE_LABELS[state],
            "partial": state is CacheState.FILLING,
            "visible": figures.visible if counted and figures else None,
            "in_flight": figures.in_flight if counted and figures else None,
            "delayed": figures.delayed if counted and figures else None,
            "oldest_age_seconds": (
                round(snapshot.oldest_age_seconds(name), 1)
                if counted and figures and figures.visible else None
            ),
            "server": console.inspector.server_of(name),
            "spark": sparkline(console, name),
        })
    return rows


async def _links(console: AdminConsole) -> dict[str, str]:
    """Source queue -> its dead-letter queue; none while the catalog does not answer (the
    badges are left out rather than the whole page)."""
    try:
        return await console.inspector.dead_letter_links()
    except StorageError:
        return {}


def sparkline(console: AdminConsole, name: str) -> list[float | None]:
    """Messages sent per second over the last hour, in at most SPARKLINE_POINTS points."""
    rates = console.history.series(name)["sent_per_second"]
    if not rates:
        return []
    group = max(1, math.ceil(len(rates) / SPARKLINE_POINTS))
    points: list[float | None] = []
    for start in range(0, len(rates), group):
        known = [rate for rate in rates[start : start + group] if rate is not None]
        points.append(round(sum(known) / len(known), 3) if known else None)
    return points


async def queue_list(request: web.Request) -> web.Response:
    console = _console(request)
    listing = await _listing(request)
    rows = await queue_rows(console, listing["names"])
    return await render(request, "queues.html", {
        "nav": "queues", "listing": listing, "rows": rows, "page_sizes": PAGE_SIZES,
    })


async def queue_list_json(request: web.Request) -> web.Response:
    console = _console(request)
    listing = await _listing(request)
    rows = await queue_rows(console, listing["names"])
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
    console = _console(request)
    return await render(request, "queue_new.html", {
        "nav": "new",
        "typed": typed,
        "error": error,
        "fields": forms.CREATE_NUMBER_ATTRIBUTES,
        # A select for the dead-letter queue while the list is short, a text field beyond.
        "dlq_choices": await _short_name_list(console),
    }, status)


async def _short_name_list(console: AdminConsole) -> list[str] | None:
    """Every queue name, for a select; None when there are too many for one."""
    names = await console.queue_names()
    return names if len(names) <= SELECT_LIMIT else None


async def create_queue(request: web.Request) -> web.Response:
    console = _console(request)
    form = await request.post()
    typed = {key: forms.text(form, key) for key in form}
    name = forms.text(form, "QueueName").strip()
    try:
        dead_letter_queue = forms.text(form, "DeadLetterQueue").strip()
        arn = console.service.queue_arn(dead_letter_queue) if dead_letter_queue else None
        attributes = forms.create_attributes(form, arn)
        tags = forms.parse_tags(forms.text(form, "Tags"))
        await console.service.create_queue(name, attributes, tags)
    except forms.FormError as error:
        return await _new_queue_page(request, typed, str(error), 400)
    except CqsError as error:
        return await _new_queue_page(request, typed, described(error), 400)
    console.forget_names()
    await flash(request, "ok", f"Queue {name} created.")
    raise web.HTTPSeeOther(_queue_url(name))


# --- queue detail -------------------------------------------------------------------------


def _task_view(task: MessageMoveTask) -> dict[str, Any]:
    destination = (
        redrive.queue_name_from_arn(task.destination_arn) if task.destination_arn else None
    )
    return {
        "handle": redrive.task_handle(task),
        "status": task.status.value,
        "active": task.status.active,
        "cancellable": task.status.value == "RUNNING",
        "moved": task.moved,
        "to_move": task.to_move,
        "started_ms": task.started_ms,
        "started": _ms_time(task.started_ms),
        "destination": destination,
        "rate": task.max_per_second,
        "failure_reason": task.failure_reason,
    }


async def _live_figures(
    console: AdminConsole, name: str, *, polled: bool = False
) -> dict[str, Any]:
    """Counts (the API's: Cassandra's count while the cache is not filled), cache state,
    oldest message age, owner, source queues, move tasks and the last hour's history.

    A page asks ListDeadLetterSourceQueues (which reads every queue); its live refresh
    (`polled`) uses the inspector's dead-letter links, re-read every few seconds.
    """
    counts = await console.service.get_queue_attributes(name, list(COUNT_ATTRIBUTES))
    snapshot = await console.statistics.read([name])
    figures = snapshot.queues.get(name)
    state = figures.state if figures is not None else CacheState.UNAVAILABLE
    if polled:
        sources = sorted(s for s, dlq in (await _links(console)).items() if dlq == name)
    else:
        sources, _ = await console.service.list_dead_letter_source_queues(name, None, None)
    tasks: list[dict[str, Any]] = []
    if sources:
        found = await console.service.list_message_move_tasks(
            console.service.queue_arn(name), 10
        )
        tasks = [_task_view(task) for task in found]
    totals = (await asyncio.to_thread(console.hub.exposition.queue_totals)).get(name, {})
    return {
        "name": name,
        "visible": int(counts["ApproximateNumberOfMessages"]),
        "in_flight": int(counts["ApproximateNumberOfMessagesNotVisible"]),
        "delayed": int(counts["ApproximateNumberOfMessagesDelayed"]),
        "state": state.value,
        "state_label": CACHE_STATE_LABELS[state],
        "oldest_age_seconds": (
            round(snapshot.oldest_age_seconds(name), 1)
            if figures is not None and state is CacheState.READY and figures.visible else None
        ),
        "server": console.inspector.server_of(name),
        "sources": sources,
        "tasks": tasks,
        "history": console.history.series(name),
        "history_interval_seconds": console.history.interval_seconds,
        # Since the server started, across its processes (the metrics' totals).
        "redeliveries": {
            reason.value: int(totals.get(f"redelivered_{reason.value}", 0))
            for reason in Redelivery
        },
    }


async def queue_detail(request: web.Request) -> web.Response:
    return await _queue_page(request, _name(request))


async def _queue_page(
    request: web.Request,
    name: str,
    *,
    attribute_error: str | None = None,
    typed: Mapping[str, str] | None = None,
    status: int = 200,
) -> web.Response:
    console = _console(request)
    service = console.service
    attributes = await service.get_queue_attributes(name, ["All"])
    live = await _live_figures(console, name)
    policy = redrive.parse_redrive_policy(attributes.get("RedrivePolicy"))
    fifo = attributes.get("FifoQueue") == "true" or name.endswith(".fifo")
    return await render(request, "queue.html", {
        "nav": "queues",
        "name": name,
        "fifo": fifo,
        "attributes": attributes,
        "read_only": [(key, attributes[key]) for key in READ_ONLY_ATTRIBUTES if key in attributes],
        "fields": [f for f in forms.EDITABLE_ATTRIBUTES if fifo or not f.fifo_only],
        "typed": typed or {},
        "attribute_error": attribute_error,
        "tags": await service.list_queue_tags(name),
        "dead_letter_queue": (
            redrive.queue_name_from_arn(policy.dead_letter_target_arn) if policy else None
        ),
        "max_receive_count": policy.max_receive_count if policy else None,
        "live": live,
        # The move task's destination: a select while the list is short, a text field beyond.
        "queue_names": await _short_name_list(console) if live["sources"] else None,
    }, status)


async def queue_detail_json(request: web.Request) -> web.Response:
    return web.json_response(
        await _live_figures(_console(request), _name(request), polled=True)
    )


async def set_attributes(request: web.Request) -> web.Response:
    console = _console(request)
    name = _name(request)
    form = await request.post()
    current = await console.service.get_queue_attributes(name, ["All"])
    fifo = current.get("FifoQueue") == "true"
    changed = forms.changed_attributes(form, current, fifo)
    if not changed:
        await flash(request, "ok", "Nothing changed.")
        raise web.HTTPSeeOther(_queue_url(name) + "#attributes")
    try:
        await console.service.set_queue_attributes(name, changed)
    except QueueDoesNotExist:
        raise
    except CqsError as error:
        typed = {key: forms.text(form, key) for key in form}
        return await _queue_page(
            request, name, attribute_error=described(error), typed=typed, status=400
        )
    if "RedrivePolicy" in changed:
        console.forget_names()
    await flash(request, "ok", "Saved " + ", ".join(sorted(changed)) + ".")
    raise web.HTTPSeeOther(_queue_url(name) + "#attributes")


async def _act(request: web.Request, action: Any, done: str, anchor: str = "") -> web.Response:
    """Run one queue action; flash its outcome (or the API's refusal); back to the queue."""
    name = _name(request)
    try:
        await action
    except QueueDoesNotExist:
        raise
    except (CqsError, forms.FormError) as error:
        text = described(error) if isinstance(error, CqsError) else str(error)
        await flash(request, "error", text)
    else:
        await flash(request, "ok", done)
    raise web.HTTPSeeOther(_queue_url(name) + anchor)


async def tag_queue(request: web.Request) -> web.Response:
    console = _console(request)
    form = await request.post()
    try:
        tags = forms.parse_tags(forms.text(form, "tags"))
    except forms.FormError as error:
        await flash(request, "error", str(error))
        raise web.HTTPSeeOther(_queue_url(_name(request)) + "#tags") from None
    if not tags:
        await flash(request, "error", "Type at least one tag as key=value.")
        raise web.HTTPSeeOther(_queue_url(_name(request)) + "#tags")
    return await _act(
        request, console.service.tag_queue(_name(request), tags),
        "Tagged " + ", ".join(sorted(tags)) + ".", "#tags",
    )


async def untag_queue(request: web.Request) -> web.Response:
    console = _console(request)
    key = forms.text(await request.post(), "key")
    return await _act(
        request, console.service.untag_queue(_name(request), [key]), f"Removed tag {key}.",
        "#tags",
    )


async def purge_queue(request: web.Request) -> web.Response:
    console = _console(request)
    return await _act(request, console.service.purge_queue(_name(request)), "Queue purged.")


async def start_move_task(request: web.Request) -> web.Response:
    console = _console(request)
    service = console.service
    form = await request.post()
    destination = forms.text(form, "destination").strip()
    rate_text = forms.text(form, "rate").strip()

    async def start() -> None:
        if rate_text and not rate_text.isdigit():
            raise forms.FormError("Messages per second must be a whole number.")
        await service.start_message_move_task(
            service.queue_arn(_name(request)),
            service.queue_arn(destination) if destination else None,
            int(rate_text) if rate_text else None,
        )

    return await _act(request, start(), "Message move task started.", "#redrive")


async def cancel_move_task(request: web.Request) -> web.Response:
    console = _console(request)
    handle = forms.text(await request.post(), "handle")

    async def cancel() -> None:
        await console.service.cancel_message_move_task(handle)

    return await _act(request, cancel(), "Cancelling the message move task.", "#redrive")


# --- deleting a queue ---------------------------------------------------------------------


async def delete_form(request: web.Request) -> web.Response:
    name = _name(request)
    await _console(request).service.get_queue_url(name)  # 404 for a missing queue
    return await render(request, "delete.html", {"nav": "queues", "name": name, "error": None})


async def delete_queue(request: web.Request) -> web.Response:
    console = _console(request)
    name = _name(request)
    typed = forms.text(await request.post(), "confirm_name").strip()
    if typed != name:
        return await render(request, "delete.html", {
            "nav": "queues", "name": name,
            "error": "Type the queue's name exactly to delete it.",
        }, 400)
    await console.service.delete_queue(name)
    console.forget_names()
    await flash(request, "ok", f"Queue {name} deleted.")
    raise web.HTTPSeeOther(PREFIX + "/")


# --- sending ------------------------------------------------------------------------------


async def send_form(request: web.Request) -> web.Response:
    return await _send_page(request, {}, None)


async def _send_page(
    request: web.Request, typed: Mapping[str, Any], error: str | None, status: int = 200
) -> web.Response:
    name = _name(request)
    attributes = await _console(request).service.get_queue_attributes(name, ["FifoQueue"])
    rows = list(typed.get("rows", [])) or [("", "String", "")]
    return await render(request, "send.html", {
        "nav": "queues",
        "name": name,
        "fifo": attributes.get("FifoQueue") == "true" or name.endswith(".fifo"),
        "typed": typed,
        "rows": rows + [("", "String", "")] * max(0, 3 - len(rows)),
        "types": forms.MESSAGE_ATTRIBUTE_TYPES,
        "error": error,
    }, status)


async def send_message(request: web.Request) -> web.Response:
    console = _console(request)
    name = _name(request)
    form = await request.post()
    try:
        sent = await console.service.send_message(name, forms.send_request(form))
    except QueueDoesNotExist:
        raise
    except (forms.FormError, CqsError) as error:
        typed: dict[str, Any] = {key: forms.text(form, key) for key in form}
        typed["rows"] = list(zip(
            [str(v) for v in form.getall("attr_name", [])],
            [str(v) for v in form.getall("attr_type", [])],
            [str(v) for v in form.getall("attr_value", [])],
            strict=False,
        ))
        text = described(error) if isinstance(error, CqsError) else str(error)
        return await _send_page(request, typed, text, 400)
    await flash(
        request, "ok", f"Message {sent.message_id} sent.",
        f"{_queue_url(name)}/messages/{sent.message_id}",
    )
    raise web.HTTPSeeOther(_queue_url(name) + "/send")


# --- browsing messages --------------------------------------------------------------------


def _message_view(peeked: PeekedMessage) -> dict[str, Any]:
    message = peeked.message
    body = message.body
    return {
        "id": message.message_id,
        "sent_ms": message.sent_timestamp_ms,
        "preview": body[:BODY_PREVIEW_CHARACTERS]
        + ("…" if len(body) > BODY_PREVIEW_CHARACTERS else ""),
        "size": len(body.encode("utf-8")),
        "attribute_count": len(message.message_attributes),
        "state": peeked.state,
        "receive_count": peeked.receive_count,
        "group_id": getattr(message, "group_id", None),
    }


async def browse_messages(request: web.Request) -> web.Response:
    console = _console(request)
    name = _name(request)
    size = _int_query(request, "size", DEFAULT_PEEK_SIZE)
    size = size if size in PEEK_SIZES else DEFAULT_PEEK_SIZE
    position = request.query.get("position") or None
    page_number = max(1, _int_query(request, "page", 1))
    try:
        page = await console.inspector.peek(name, position, size)
    except InvalidParameterValue as error:
        return await error_page(request, 400, "Bad page position", error)
    return await render(request, "messages.html", {
        "nav": "queues",
        "name": name,
        "messages": [_message_view(peeked) for peeked in page.messages],
        "next_position": page.next_position,
        "page_number": page_number,
        "size": size,
        "sizes": PEEK_SIZES,
        "fifo": name.endswith(".fifo"),
    })


def _pretty_json(body: str) -> str | None:
    if not body.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return None


async def show_message(request: web.Request) -> web.Response:
    console = _console(request)
    name = _name(request)
    message_id = request.match_info["message_id"]
    peeked = await console.inspector.message(name, message_id)
    if peeked is None:
        return await error_page(
            request, 404, "No such message",
            f"Message {message_id} is not in queue {name}: deleted, expired, or never sent.",
        )
    message = peeked.message
    system = {
        "SenderId": message.sender_id,
        "SentTimestamp": f"{message.sent_timestamp_ms} ({_ms_time(message.sent_timestamp_ms)})",
        "ApproximateReceiveCount": (
            "unknown (the cache does not hold it)" if peeked.receive_count is None
            else str(peeked.receive_count)
        ),
        "ApproximateFirstReceiveTimestamp": (
            f"{peeked.first_receive_ms} ({_ms_time(peeked.first_receive_ms)})"
            if peeked.first_receive_ms else "never received"
        ),
        "MD5OfMessageBody": message.md5_of_body,
    }
    if message.md5_of_message_attributes:
        system["MD5OfMessageAttributes"] = message.md5_of_message_attributes
    for key in ("group_id", "deduplication_id", "sequence_number"):
        value = getattr(message, key, None)
        if value is not None:
            label = {"group_id": "MessageGroupId", "deduplication_id": "MessageDeduplicationId",
                     "sequence_number": "SequenceNumber"}[key]
            system[label] = str(value)
    for key, value in message.system_attributes.items():
        if key == redrive.DEAD_LETTER_SOURCE_ATTRIBUTE:
            system["Dead-letter source queue"] = value.string_value or ""
        else:
            system[key] = value.string_value or ""
    if message.visible_at_ms > message.sent_timestamp_ms:
        system["Delayed until"] = _ms_time(message.visible_at_ms)
    attributes = [
        (key, value.data_type,
         value.string_value if value.string_value is not None
         else base64.b64encode(value.binary_value or b"").decode())
        for key, value in sorted(message.message_attributes.items())
    ]
    return await render(request, "message.html", {
        "nav": "queues",
        "name": name,
        "message": message,
        "state": peeked.state,
        "system": system,
        "message_attributes": attributes,
        "pretty": _pretty_json(message.body),
    })


# --- cluster ------------------------------------------------------------------------------


def _lag_figures(console: AdminConsole) -> dict[str, float]:
    """The revisibility lag histogram of this deployment's processes: passes and mean."""
    total = count = 0.0
    for family in console.hub.exposition.recorded_families():
        if family.name != "cqs_revisibility_lag_seconds":
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
    return {"passes": count, "mean_seconds": total / count if count else 0.0}


async def _cluster_view(console: AdminConsole) -> dict[str, Any]:
    view: ClusterView = await console.inspector.cluster()
    readiness = None
    if console.hub.attached is not None:
        readiness = (await console.hub.attached.readiness.check()).body
    lag = await asyncio.to_thread(_lag_figures, console)
    return {
        "taken_ms": view.taken_ms,
        "queue_count": view.queue_count,
        "readiness": readiness,
        "revisibility": lag,
        "redis": [
            {
                "name": server.name,
                "reachable": server.reachable,
                "figures": dict(server.figures),
                "queue_count": len(server.queues),
                "queues": server.queues[:CLUSTER_QUEUES_SHOWN],
                "lag_ms": server.revisibility_lag_ms,
                "memory": server.figures.get("used_memory_human", "—"),
                # This process's command pool: calls running / waiting for a slot, of its size.
                "pool": (
                    f"{server.figures['pool_in_use']} / {server.figures['pool_waiting']} "
                    f"of {server.figures['pool_size']}"
                    if "pool_size" in server.figures else "—"
                ),
                "memory_peak": server.figures.get("used_memory_peak_human", "—"),
                "maxmemory": (
                    server.figures.get("maxmemory_human", "—")
                    if server.figures.get("maxmemory", "0") != "0" else "no limit"
                ),
            }
            for server in view.redis
        ],
        "cassandra": {
            "reachable": view.cassandra.reachable,
            "figures": {
                key: value.rsplit(".", 1)[-1] if key == "partitioner" else value
                for key, value in view.cassandra.figures.items()
            },
            "error": view.cassandra.error,
        },
        "processes": [
            {
                "pid": process.pid,
                "this_process": process.this_process,
                "rss": _bytes(process.rss_bytes),
                "cpu_seconds": process.cpu_seconds,
                "uptime": _duration(process.uptime_seconds),
            }
            for process in view.processes
        ],
    }


async def cluster_page(request: web.Request) -> web.Response:
    cluster = await _cluster_view(_console(request))
    return await render(request, "cluster.html", {
        "nav": "cluster", "cluster": cluster, "shown": CLUSTER_QUEUES_SHOWN,
        "live_seconds": CLUSTER_REFRESH_SECONDS,
    })


async def cluster_json(request: web.Request) -> web.Response:
    return web.json_response(await _cluster_view(_console(request)))


# --- logging in and out -------------------------------------------------------------------


async def login_form(request: web.Request) -> web.Response:
    session = await get_session(request)
    next_url = safe_next(request.query.get("next"), PREFIX)
    if session.get(USER_KEY) == _console(request).credentials.user:
        raise web.HTTPFound(next_url)
    return await render(request, "login.html", {
        "next": next_url, "error": None, "typed_user": "",
        "logged_out": "logged_out" in request.query,
    })


async def login(request: web.Request) -> web.Response:
    console = _console(request)
    form = await request.post()
    user = forms.text(form, "user")
    next_url = safe_next(forms.text(form, "next"), PREFIX)
    if not console.credentials.check(user, forms.text(form, "password")):
        await asyncio.sleep(FAILED_LOGIN_DELAY_SECONDS)  # slows down guessing
        return await render(request, "login.html", {
            "next": next_url, "error": "Wrong user name or password.", "typed_user": user,
            "logged_out": False,
        }, 401)
    session = await new_session(request)
    start_session(session, console.credentials.user)
    raise web.HTTPSeeOther(next_url)


async def logout(request: web.Request) -> web.Response:
    session = await get_session(request)
    session.invalidate()
    raise web.HTTPSeeOther(PREFIX + "/login?logged_out=1")
