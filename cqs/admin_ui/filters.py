"""The Jinja filters of the console's templates: times, durations, byte sizes, compact JSON,
a queue name as one URL path segment.

Owns how the console writes a timestamp, a duration and a size (pages and presenters call
these too, so a figure reads the same everywhere). Pure functions over the standard
library; imports nothing of cqs or aiohttp.
"""

from __future__ import annotations

import datetime
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

NOTHING = "—"  # shown for a figure that is not known


def ms_time(ms: int | float | str | None) -> str:
    """Epoch milliseconds as a UTC time to the millisecond."""
    if ms in (None, "", 0, "0"):
        return NOTHING
    moment = datetime.datetime.fromtimestamp(int(float(ms)) / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def s_time(seconds: int | str | None) -> str:
    """Epoch seconds (as the queue timestamps are) as a UTC time."""
    if seconds in (None, ""):
        return NOTHING
    moment = datetime.datetime.fromtimestamp(int(seconds), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(seconds: float | int | str | None) -> str:
    """Seconds in the two largest units that matter: "12 s", "3 min 4 s", "2 d 5 h"."""
    if seconds is None or seconds == "":
        return NOTHING
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


def byte_size(value: int | str | None) -> str:
    """A size in bytes in binary units: "512 B", "1.5 KiB"."""
    if value in (None, ""):
        return NOTHING
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if amount < 1024 or unit == "TiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} TiB"


def compact_json(value: Any) -> str:
    """JSON without spaces, for data attributes the page's script reads."""
    return json.dumps(value, separators=(",", ":"))


def queue_path(name: str) -> str:
    """A queue name as one path segment of a console URL: a consumer group's name
    (`<queue>/<group>`) keeps its slash as %2F, so `/queues/{name}` routes still match."""
    return urllib.parse.quote(name, safe="")


TEMPLATE_FILTERS: dict[str, Callable[..., str]] = {
    "ms_time": ms_time,
    "s_time": s_time,
    "duration": duration,
    "bytes": byte_size,
    "tojson_compact": compact_json,
    "queue_path": queue_path,
}
