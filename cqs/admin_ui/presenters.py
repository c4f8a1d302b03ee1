"""What the console's templates and scripts are given: answers turned into plain dicts.

Owns the shape of every row and panel the pages show (a queue in the list, a queue's live
figures, a move task, a peeked message, the cluster, a consumer group) and the wording of states. Pure
functions: no request, no I/O, no aiohttp. Imports the model, the inspector port's values,
the statistics snapshot, the console's filters and history, and the pure move-task handle
and ARN helpers of `cqs.domain.dead_letter_policy` and `cqs.domain.arns` (the SQS handlers use the same
ones) and the service's COUNT_ATTRIBUTES; never a service call, a storage port or an
adapter.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client.core import Metric

from cqs.admin_ui.filters import NOTHING, byte_size, duration, ms_time, s_time
from cqs.admin_ui.history import QueueHistory
from cqs.domain.arns import queue_name_from_arn
from cqs.domain.dead_letter_policy import DEAD_LETTER_SOURCE_ATTRIBUTE, task_handle
from cqs.domain.extension_model import ConsumerGroup
from cqs.domain.model import (
    CacheState,
    MessageAttributeValue,
    MessageMoveTask,
    QueueDescription,
    Redelivery,
)
from cqs.observability.stats import QueueSnapshot
from cqs.ports.inspection import ClusterView, PeekedMessage
from cqs.service import COUNT_ATTRIBUTES
from cqs.service.timers import EARLIEST_DUE_ATTRIBUTE, SCHEDULED_COUNT_ATTRIBUTE

BODY_PREVIEW_CHARACTERS = 160
SPARKLINE_POINTS = 30
CLUSTER_QUEUES_SHOWN = 50
REVISIBILITY_LAG_METRIC = "cqs_revisibility_lag_seconds"
READ_ONLY_ATTRIBUTES = (
    "QueueArn", "CreatedTimestamp", "LastModifiedTimestamp", "FifoQueue", *COUNT_ATTRIBUTES,
)
CACHE_STATE_LABELS = {
    CacheState.READY: "filled",
    CacheState.FILLING: "filling (served from Cassandra)",
    CacheState.ABSENT: "served from Cassandra",
    CacheState.UNAVAILABLE: "Redis unreachable (served from Cassandra)",
}
FIFO_FIELD_LABELS = {
    "group_id": "MessageGroupId",
    "deduplication_id": "MessageDeduplicationId",
    "sequence_number": "SequenceNumber",
}


def _cache_state(snapshot: QueueSnapshot, name: str) -> CacheState:
    figures = snapshot.queues.get(name)
    return figures.state if figures is not None else CacheState.UNAVAILABLE


# --- queues -------------------------------------------------------------------------------


def queue_row(
    name: str,
    snapshot: QueueSnapshot,
    *,
    fifo: bool,
    is_dead_letter_queue: bool,
    dead_letter_queue: str | None,
    server: str,
    history: QueueHistory,
    group_count: int = 0,
) -> dict[str, Any]:
    """What the queue list shows of a queue: figures, badges, owner, sparkline, how many
    consumer groups it has."""
    figures = snapshot.queues.get(name)
    state = _cache_state(snapshot, name)
    counted = figures if state in (CacheState.READY, CacheState.FILLING) else None
    return {
        "name": name,
        "fifo": fifo,
        "dlq": is_dead_letter_queue,
        "dead_letter_queue": dead_letter_queue,
        "state": state.value,
        "state_label": CACHE_STATE_LABELS[state],
        "partial": state is CacheState.FILLING,
        "visible": counted.visible if counted is not None else None,
        "in_flight": counted.in_flight if counted is not None else None,
        "delayed": counted.delayed if counted is not None else None,
        "oldest_age_seconds": (
            round(snapshot.oldest_age_seconds(name), 1)
            if counted is not None and counted.visible else None
        ),
        "server": server,
        "spark": sparkline(history.series(name)["sent_per_second"]),
        "groups": group_count,
    }


def sparkline(rates: Sequence[float | None]) -> list[float | None]:
    """Messages sent per second over the last hour, in at most SPARKLINE_POINTS points."""
    if not rates:
        return []
    group = max(1, math.ceil(len(rates) / SPARKLINE_POINTS))
    points: list[float | None] = []
    for start in range(0, len(rates), group):
        known = [rate for rate in rates[start : start + group] if rate is not None]
        points.append(round(sum(known) / len(known), 3) if known else None)
    return points


def read_only_attributes(attributes: Mapping[str, str]) -> list[tuple[str, str]]:
    """The attributes the queue page shows but no form changes, in a fixed order."""
    return [(key, attributes[key]) for key in READ_ONLY_ATTRIBUTES if key in attributes]


def live_figures(
    name: str,
    counts: Mapping[str, str],
    snapshot: QueueSnapshot,
    *,
    server: str,
    sources: list[str],
    tasks: Sequence[MessageMoveTask],
    history: QueueHistory,
    totals: Mapping[str, float],
) -> dict[str, Any]:
    """The queue page's figures that refresh: counts (the API's), cache state, oldest
    message age, owner, source queues, move tasks and the last hour's history."""
    figures = snapshot.queues.get(name)
    state = _cache_state(snapshot, name)
    return {
        "name": name,
        "visible": int(counts["ApproximateNumberOfMessages"]),
        "in_flight": int(counts["ApproximateNumberOfMessagesNotVisible"]),
        "delayed": int(counts["ApproximateNumberOfMessagesDelayed"]),
        # Timer messages (#19) still waiting in Cassandra, and when the first is due.
        "scheduled": int(counts.get(SCHEDULED_COUNT_ATTRIBUTE, "0")),
        "earliest_scheduled": s_time(counts.get(EARLIEST_DUE_ATTRIBUTE)),
        "state": state.value,
        "state_label": CACHE_STATE_LABELS[state],
        "oldest_age_seconds": (
            round(snapshot.oldest_age_seconds(name), 1)
            if figures is not None and state is CacheState.READY and figures.visible else None
        ),
        "server": server,
        "sources": sources,
        "tasks": [move_task(task) for task in tasks],
        "history": history.series(name),
        "history_interval_seconds": history.interval_seconds,
        # Since the server started, across its processes (the metrics' totals).
        "redeliveries": {
            reason.value: int(totals.get(f"redelivered_{reason.value}", 0))
            for reason in Redelivery
        },
    }


def move_task(task: MessageMoveTask) -> dict[str, Any]:
    destination = queue_name_from_arn(task.destination_arn) if task.destination_arn else None
    return {
        "handle": task_handle(task),
        "status": task.status.value,
        "active": task.status.active,
        "cancellable": task.status.value == "RUNNING",
        "moved": task.moved,
        "to_move": task.to_move,
        "started_ms": task.started_ms,
        "started": ms_time(task.started_ms),
        "destination": destination,
        "rate": task.max_per_second,
        "failure_reason": task.failure_reason,
    }


# --- messages -----------------------------------------------------------------------------


def message_row(peeked: PeekedMessage) -> dict[str, Any]:
    """A peeked message as a row of the message list."""
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
        "group_id": message.group_id,
    }


def system_attributes(peeked: PeekedMessage) -> dict[str, str]:
    """A message's system attributes as the message page lists them, with what the cache
    knows (receives) and the FIFO fields."""
    message = peeked.message
    shown = {
        "SenderId": message.sender_id,
        "SentTimestamp": f"{message.sent_timestamp_ms} ({ms_time(message.sent_timestamp_ms)})",
        "ApproximateReceiveCount": (
            "unknown (the cache does not hold it)" if peeked.receive_count is None
            else str(peeked.receive_count)
        ),
        "ApproximateFirstReceiveTimestamp": (
            f"{peeked.first_receive_ms} ({ms_time(peeked.first_receive_ms)})"
            if peeked.first_receive_ms else "never received"
        ),
        "MD5OfMessageBody": message.md5_of_body,
    }
    if message.md5_of_message_attributes:
        shown["MD5OfMessageAttributes"] = message.md5_of_message_attributes
    for key, label in FIFO_FIELD_LABELS.items():
        value = getattr(message, key)
        if value is not None:
            shown[label] = str(value)
    for key, value in message.system_attributes.items():
        # The hidden attribute a dead-lettered message keeps its source queue's ARN in.
        label = "Dead-letter source queue" if key == DEAD_LETTER_SOURCE_ATTRIBUTE else key
        shown[label] = value.string_value or ""
    if message.visible_at_ms > message.sent_timestamp_ms:
        shown["Delayed until"] = ms_time(message.visible_at_ms)
    return shown


def message_attributes(
    attributes: Mapping[str, MessageAttributeValue],
) -> list[tuple[str, str, str]]:
    """(name, data type, value) by name; binary values in base64."""
    return [
        (key, value.data_type,
         value.string_value if value.string_value is not None
         else base64.b64encode(value.binary_value or b"").decode())
        for key, value in sorted(attributes.items())
    ]


def pretty_json(body: str) -> str | None:
    """The body indented, when it is a JSON object or array; None otherwise."""
    if not body.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return None


# --- cluster ------------------------------------------------------------------------------


def revisibility_lag(families: Iterable[Metric]) -> dict[str, float]:
    """The revisibility lag histogram of this deployment's processes: passes and mean."""
    total = count = 0.0
    for family in families:
        if family.name != REVISIBILITY_LAG_METRIC:
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
    return {"passes": count, "mean_seconds": total / count if count else 0.0}


def cluster(
    view: ClusterView, readiness: Any, revisibility: Mapping[str, float]
) -> dict[str, Any]:
    """The cluster page: Redis servers, Cassandra, processes, readiness and the lag."""
    return {
        "taken_ms": view.taken_ms,
        "queue_count": view.queue_count,
        "readiness": readiness,
        "revisibility": revisibility,
        "redis": [
            {
                "name": server.name,
                "reachable": server.reachable,
                "figures": dict(server.figures),
                "queue_count": len(server.queues),
                "queues": server.queues[:CLUSTER_QUEUES_SHOWN],
                "lag_ms": server.revisibility_lag_ms,
                "memory": server.figures.get("used_memory_human", NOTHING),
                # This process's command pool: calls running / waiting for a slot, of its size.
                "pool": (
                    f"{server.figures['pool_in_use']} / {server.figures['pool_waiting']} "
                    f"of {server.figures['pool_size']}"
                    if "pool_size" in server.figures else NOTHING
                ),
                "memory_peak": server.figures.get("used_memory_peak_human", NOTHING),
                "maxmemory": (
                    server.figures.get("maxmemory_human", NOTHING)
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
                "rss": byte_size(process.rss_bytes),
                "cpu_seconds": process.cpu_seconds,
                "uptime": duration(process.uptime_seconds),
            }
            for process in view.processes
        ],
    }


# --- consumer groups (#19) ------------------------------------------------------------------


def counts(attributes: Mapping[str, str]) -> dict[str, int]:
    """Visible, in-flight and delayed counts from GetQueueAttributes' answer."""
    return {
        "visible": int(attributes.get("ApproximateNumberOfMessages", "0")),
        "in_flight": int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
        "delayed": int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
    }


def pretty_filter_policy(policy: str | None) -> str | None:
    """A filter policy indented for reading; None for a group that takes every message."""
    if policy is None:
        return None
    try:
        return json.dumps(json.loads(policy), indent=2, ensure_ascii=False)
    except ValueError:
        return policy


def group_row(group: ConsumerGroup, described: QueueDescription) -> dict[str, Any]:
    """What a queue's page lists of one of its groups."""
    return {
        "name": described.name,  # `<queue>/<group>`: the group's own page
        "group": group.group_name,
        "filter_policy": pretty_filter_policy(group.filter_policy),
        "visibility_timeout": described.attributes.get("VisibilityTimeout", ""),
        "dead_letter_queue": described.dead_letter_queue,
        "max_receive_count": described.max_receive_count,
        **counts(described.attributes),
    }
